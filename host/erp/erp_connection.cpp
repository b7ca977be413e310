// erp_connection.cpp — see erp_connection.h.
#include "host/erp/erp_connection.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "clawguard/limits.h"
#include "clawguard/ossl.h"
#include "host/erp/erp_polling_stream.h"
#include "host/erp/erp_resolve.h"

namespace clawguard::host {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using SteadyTime = std::chrono::steady_clock::time_point;

// ResolveEndpoints resolves the ERP's host before |deadline| (host/erp/erp_resolve.h): a lookup
// that does not finish in time is kTimeout, one that finds nothing kConnect.
Result<std::vector<tcp::endpoint>> ResolveEndpoints(const ErpTarget& target, SteadyTime deadline,
                                                    std::string_view method,
                                                    std::string_view path) {
  Resolution r = ResolveBefore(target.host, target.port, deadline);
  switch (r.outcome) {
    case Resolution::Outcome::kFound: break;
    case Resolution::Outcome::kTimedOut:
      return ErpFailureStatus(ErpFailure::kTimeout, method, path,
                              "name resolution of " + target.host + " timed out");
    case Resolution::Outcome::kFailed:
    case Resolution::Outcome::kBusy:
      return ErpFailureStatus(ErpFailure::kConnect, method, path,
                              "cannot resolve " + target.host + ": " + r.detail);
  }
  std::vector<tcp::endpoint> endpoints;
  for (const ResolvedAddress& a : r.addresses) {
    tcp::endpoint e;
    if (a.length > e.capacity()) continue;
    std::memcpy(e.data(), &a.storage, a.length);
    e.resize(a.length);
    endpoints.push_back(e);
  }
  if (endpoints.empty()) {
    return ErpFailureStatus(ErpFailure::kConnect, method, path,
                            "cannot resolve " + target.host + ": no usable address");
  }
  return endpoints;
}

}  // namespace

template <class Start>
beast::error_code ErpConnection::Run(Start start) {
  if (timed_out_) return beast::error::timeout;  // never start an operation past the deadline
  beast::error_code result;
  bool finished = false;
  start([&result, &finished](beast::error_code ec) {
    result = ec;
    finished = true;
  });
  ioc_.restart();
  while (!finished && ioc_.run_one() > 0) {
  }
  if (!finished) return asio::error::operation_aborted;
  if (timed_out_ && result) return beast::error::timeout;  // cancelled by the deadline
  return result;
}

void ErpConnection::ArmDeadline(SteadyTime deadline) {
  timed_out_ = false;
  const uint64_t armed = ++armed_;
  deadline_.expires_at(deadline);
  deadline_.async_wait([this, armed](beast::error_code ec) {
    if (ec || armed != armed_) return;  // cancelled, or an earlier exchange's
    timed_out_ = true;
    beast::error_code ignored;
    Lowest().socket().cancel(ignored);
  });
}

template <class Write, class ReadHeader, class Read>
Result<ErpReply> ErpConnection::ExchangeWith(http::request<http::string_body>& req,
                                             std::string_view method, std::string_view path,
                                             bool* got_some, Write write, ReadHeader read_header,
                                             Read read) {
  beast::error_code ec = write(req);
  if (ec == beast::error::timeout)
    return ErpFailureStatus(ErpFailure::kTimeout, method, path, "sending timed out");
  if (ec)
    return ErpFailureStatus(ErpFailure::kProtocol, method, path,
                            "connection lost while sending: " + ec.message());

  // Interim answers (1xx) come before the final one and are read and skipped (RFC 9110
  // §15.2: a client parses any number of them, and ignores those it did not ask for). 101
  // would switch the connection to another protocol: refused. Each answer gets a fresh parser
  // over the same buffer, so bytes that came with an interim answer are kept for the next.
  std::optional<http::response_parser<http::string_body>> parser;
  bool got_any = false;
  for (int interim = 0;; ++interim) {
    parser.emplace();
    parser->body_limit(limits::kMaxErpResponseBody);
    parser->header_limit(static_cast<uint32_t>(limits::kMaxErpResponseHeaders));
    if (req.method() == http::verb::head) parser->skip(true);
    // The header is read on its own first: Beast 1.74's eager parse does not report body_limit
    // when body bytes arrive in the same read as a Content-Length header over the limit.
    ec = read_header(*parser);
    got_any = got_any || parser->got_some();
    if (ec) break;
    const unsigned status = parser->get().result_int();
    if (status >= 200 && status <= 999) break;
    *got_some = true;
    if (status == 101) {
      return ErpFailureStatus(ErpFailure::kProtocol, method, path,
                              "the ERP answered 101 (switching protocols): refused");
    }
    if (status < 100) {
      return ErpFailureStatus(ErpFailure::kProtocol, method, path,
                              "the ERP answered status " + std::to_string(status));
    }
    if (interim + 1 > kMaxErpInterimAnswers) {
      return ErpFailureStatus(
          ErpFailure::kProtocol, method, path,
          "more than " + std::to_string(kMaxErpInterimAnswers) + " interim (1xx) answers");
    }
  }
  const uint64_t limit = limits::kMaxErpResponseBody;
  if (!ec && parser->content_length() && *parser->content_length() > limit)
    ec = http::error::body_limit;
  if (!ec && !parser->is_done()) ec = read(*parser);
  if (!ec && parser->get().body().size() > limit) ec = http::error::body_limit;
  got_any = got_any || parser->got_some();
  *got_some = *got_some || got_any;
  if (ec == beast::error::timeout)
    return ErpFailureStatus(ErpFailure::kTimeout, method, path, "no answer before the deadline");
  if (ec == http::error::body_limit || ec == http::error::header_limit) {
    return ErpFailureStatus(ErpFailure::kProtocol, method, path, "answer over the size limit");
  }
  if (ec)
    return ErpFailureStatus(ErpFailure::kProtocol, method, path,
                            "no complete answer: " + ec.message());
  auto& msg = parser->get();
  ErpReply reply;
  reply.status = static_cast<int>(msg.result_int());
  for (const auto& field : msg)
    reply.headers.Add(std::string(field.name_string()), std::string(field.value()));
  reply.body = std::move(msg.body());
  // Pooled only after one complete, well-framed answer with nothing after it: bytes already
  // read past its end are no answer to any request of ours (a second answer, or garbage), and
  // the next call on this connection would read them as its own.
  stray_ = buffer_.size() != 0;
  reusable_ = msg.keep_alive() && !stray_;
  return reply;
}

ErpConnection::After ErpConnection::TlsAfterAnswer() {
  char byte = 0;
  size_t got = 0;
  beast::error_code result;
  bool finished = false;
  tls_->async_read_some(asio::buffer(&byte, 1), [&](beast::error_code ec, size_t n) {
    result = ec;
    got = n;
    finished = true;
  });
  ioc_.restart();
  ioc_.poll();  // runs what is ready (the read of what is buffered or on the socket), never waits
  const bool waited = !finished;  // everything there was processed, and the read waited for more
  if (waited) {
    beast::error_code ignored;
    Lowest().socket().cancel(ignored);
    ioc_.restart();
    while (!finished && ioc_.run_one() > 0) {
    }
    if (!finished) return After::kClosed;
  }
  if (got > 0) return After::kData;
  // close_notify (eof), end of stream (stream_truncated), a TLS error, or the deadline.
  if (!waited || result != asio::error::operation_aborted) return After::kClosed;
  // The read consumed every whole record: anything left is a record cut short. SSL_pending and
  // the input BIO are empty by then; they are checked all the same (fail closed).
  SSL* ssl_handle = tls_->native_handle();
  if (SSL_pending(ssl_handle) > 0 || SSL_has_pending(ssl_handle) == 1 ||
      BIO_ctrl_pending(SSL_get_rbio(ssl_handle)) > 0) {  // get0: the BIO stays the session's
    return After::kData;
  }
  return After::kNothing;
}

Status ErpConnection::Connect(SteadyTime deadline, std::string_view method, std::string_view path) {
  beast::error_code ec;
  CLAWGUARD_ASSIGN_OR_RETURN(std::vector<tcp::endpoint> endpoints,
                             ResolveEndpoints(target_, deadline, method, path));
  Lowest().expires_at(deadline);
  ec = Run([&](auto done) {
    Lowest().async_connect(endpoints,
                           [done](beast::error_code e, const tcp::endpoint&) { done(e); });
  });
  if (ec == beast::error::timeout)
    return ErpFailureStatus(ErpFailure::kTimeout, method, path, "connect timed out");
  if (ec)
    return ErpFailureStatus(ErpFailure::kConnect, method, path,
                            "cannot connect to " + target_.host_header + ": " + ec.message());
  beast::error_code opt_ec;
  Lowest().socket().set_option(tcp::no_delay(true), opt_ec);
  if (tls_) {
    SSL* ssl_handle = tls_->native_handle();
    beast::error_code addr_ec;
    asio::ip::make_address(target_.host, addr_ec);
    if (addr_ec) {
      // SNI only for names (RFC 6066 §3); SSL_set1_host copies the name (set1).
      // The subject CN is never used as a name (RFC 9525 §6.3), only subjectAltName.
      SSL_set_hostflags(ssl_handle,
                        X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS | X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
      if (SSL_set_tlsext_host_name(ssl_handle, target_.host.c_str()) != 1 ||
          SSL_set1_host(ssl_handle, target_.host.c_str()) != 1) {
        return ErpFailureStatus(ErpFailure::kTls, method, path,
                                "cannot set the TLS host name: " + ossl::GetSslErrors());
      }
    } else if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_handle), target_.host.c_str()) !=
               1) {
      return ErpFailureStatus(ErpFailure::kTls, method, path,
                              "cannot set the TLS peer address: " + ossl::GetSslErrors());
    }
    tls_->set_verify_mode(ssl::verify_peer);
    Lowest().expires_at(deadline);
    ec = Run([&](auto done) { tls_->async_handshake(ssl::stream_base::client, done); });
    if (ec == beast::error::timeout)
      return ErpFailureStatus(ErpFailure::kTimeout, method, path, "TLS handshake timed out");
    if (ec) {
      std::string why = ec.message();
      const long verify = SSL_get_verify_result(ssl_handle);
      if (verify != X509_V_OK)
        why += " (certificate: " + std::string(X509_verify_cert_error_string(verify)) + ")";
      ossl::GetSslErrors();  // drained; the reason is in |why|
      return ErpFailureStatus(ErpFailure::kTls, method, path,
                              "TLS handshake with " + target_.host_header + " failed: " + why);
    }
  }
  Lowest()
      .expires_never();  // exchanges are bounded by deadline_ (ArmDeadline), not the stream's timer
  connected_ = true;
  return Status::Ok();
}

Result<ErpReply> ErpConnection::Exchange(http::request<http::string_body>& req, SteadyTime deadline,
                                         std::string_view method, std::string_view path,
                                         bool* got_some) {
  *got_some = false;
  if (!tls_) {
    ErpPollingStream stream(plain_->socket().native_handle(), watch_, deadline);
    return ExchangeWith(
        req, method, path, got_some,
        [&](auto& r) {
          beast::error_code e;
          http::write(stream, r, e);
          return e;
        },
        [&](auto& parser) {
          beast::error_code e;
          http::read_header(stream, buffer_, parser, e);
          return e;
        },
        [&](auto& parser) {
          beast::error_code e;
          http::read(stream, buffer_, parser, e);
          return e;
        });
  }
  ArmDeadline(deadline);
  Result<ErpReply> reply = ExchangeWith(
      req, method, path, got_some,
      [&](auto& r) {
        return Run([&](auto done) {
          http::async_write(*tls_, r, [done](beast::error_code e, size_t) { done(e); });
        });
      },
      [&](auto& parser) {
        return Run([&](auto done) {
          http::async_read_header(*tls_, buffer_, parser,
                                  [done](beast::error_code e, size_t) { done(e); });
        });
      },
      [&](auto& parser) {
        return Run([&](auto done) {
          http::async_read(*tls_, buffer_, parser,
                           [done](beast::error_code e, size_t) { done(e); });
        });
      });
  // Over TLS bytes after the answer can hide where buffer_ does not show them: decrypted inside
  // OpenSSL, or as records not yet decrypted in the TLS layer's input. TlsAfterAnswer looks in
  // every one of them, and the socket.
  if (reply.ok() && !stray_) {
    switch (TlsAfterAnswer()) {
      case After::kNothing: break;
      case After::kData:
        stray_ = true;
        reusable_ = false;
        break;
      case After::kClosed: reusable_ = false; break;
    }
  }
  deadline_.cancel();  // its handler (operation_aborted) runs in a later Run, as a no-op
  return reply;
}

ErpConnection::IdleState ErpConnection::CheckIdle() {
  char byte = 0;
  const ssize_t n = ::recv(Lowest().socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0 && !tls_) return IdleState::kStray;
  if (n > 0) {
    switch (TlsAfterAnswer()) {
      case After::kNothing: return IdleState::kClean;
      case After::kData: return IdleState::kStray;
      case After::kClosed: return IdleState::kClosed;
    }
  }
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return IdleState::kClean;
  return IdleState::kClosed;
}

}  // namespace clawguard::host
