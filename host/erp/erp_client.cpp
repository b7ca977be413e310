// erp_client.cpp — ErpClient on Boost.Beast (see erp_client.h). Each pooled connection owns a
// private io_context, used to connect (bounded by the stream's own timeout) and for https. A
// plain-HTTP exchange (write, read the header, read the body) runs Beast's synchronous algorithms
// on PollingStream: non-blocking send and receive, poll() with what is left of the call's one
// deadline. An https exchange starts each async operation and runs the io_context until it
// completes, bounded by one deadline timer armed once per call, which cancels the socket's
// pending operation when it fires. Beast stays in this file (pimpl).
#include "host/erp/erp_client.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <mutex>
#include <vector>
// GCC 12 reports -Wnull-dereference inside Asio's scheduler after inlining (a false positive in
// a system header); it is silenced for the Boost headers only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#pragma GCC diagnostic pop

#include "clawguard/limits.h"
#include "clawguard/ossl.h"
#include "host/erp/erp_resolve.h"
#include "runtime/fiber.h"

namespace clawguard::host {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using SteadyTime = std::chrono::steady_clock::time_point;

constexpr std::string_view kFailurePrefix = "erp_";

struct Target {
  bool tls = false;
  std::string host;  // without brackets
  uint16_t port = 0;
  std::string prefix;  // "" or "/prefix" (no trailing slash)
  std::string host_header;
};

Result<Target> ParseBaseUrl(std::string_view url) {
  const auto bad = [&](std::string_view why) {
    return Status(Reason::kConfigInvalid, "erp.base_url \"" + std::string(url) + "\": " + std::string(why));
  };
  Target t;
  std::string_view rest;
  if (url.starts_with("https://")) {
    t.tls = true;
    rest = url.substr(8);
  } else if (url.starts_with("http://")) {
    rest = url.substr(7);
  } else {
    return bad("must start with http:// or https://");
  }
  if (rest.find_first_of("?#@ \r\n\t") != std::string_view::npos) return bad("no query, fragment or userinfo");
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view prefix = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad("unclosed [");
    t.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') return bad("junk after ]");
    if (!after.empty()) port = after.substr(1);
  } else {
    const size_t colon = authority.find(':');
    t.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (t.host.empty()) return bad("no host");
  unsigned value = t.tls ? 443 : 80;
  if (!port.empty()) {
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) return bad("bad port");
  }
  t.port = static_cast<uint16_t>(value);
  t.prefix = std::string(prefix);
  const bool v6 = t.host.find(':') != std::string::npos;
  t.host_header = (v6 ? "[" + t.host + "]" : t.host) + ":" + std::to_string(t.port);
  return t;
}

Status Failure(ErpFailure kind, std::string_view method, std::string_view path, std::string_view what) {
  return Status(Reason::kInternal, std::string(kFailurePrefix) + std::string(ErpFailureName(kind)) + ": " +
                                       std::string(method) + " " + std::string(path) + ": " + std::string(what));
}

bool HasControl(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
  }
  return false;
}

// ResolveEndpoints resolves the ERP's host before |deadline| (host/erp/erp_resolve.h): a lookup that
// does not finish in time is kTimeout, one that finds nothing kConnect.
Result<std::vector<tcp::endpoint>> ResolveEndpoints(const Target& target, SteadyTime deadline, std::string_view method,
                                                   std::string_view path) {
  Resolution r = ResolveBefore(target.host, target.port, deadline);
  switch (r.outcome) {
    case Resolution::Outcome::kFound: break;
    case Resolution::Outcome::kTimedOut:
      return Failure(ErpFailure::kTimeout, method, path, "name resolution of " + target.host + " timed out");
    case Resolution::Outcome::kFailed:
    case Resolution::Outcome::kBusy:
      return Failure(ErpFailure::kConnect, method, path, "cannot resolve " + target.host + ": " + r.detail);
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
    return Failure(ErpFailure::kConnect, method, path, "cannot resolve " + target.host + ": no usable address");
  }
  return endpoints;
}

// The stream is bound to the io_context's concrete executor type rather than the type-erased
// any_io_executor of beast::tcp_stream: its timer and I/O operations then copy a pointer instead of
// building and destroying an erased executor each time (as in http_server.cpp).
using ClientStream = beast::basic_stream<tcp, asio::io_context::executor_type>;

// PollingStream is Beast's SyncReadStream/SyncWriteStream over a connected TCP socket, every
// operation bounded by one deadline: it sends and receives without blocking (MSG_DONTWAIT) and
// waits in poll() for the rest. A plain-HTTP exchange then costs a send, a poll and a receive;
// the io_context path costs a timerfd update, the send, a blocking epoll_wait, the receive and two
// empty epoll_waits to reap the completions (decision 0018).
class PollingStream {
 public:
  PollingStream(int fd, fiber::FdWatch& watch, SteadyTime deadline) : fd_(fd), watch_(watch), deadline_(deadline) {}

  template <class Buffers>
  size_t read_some(const Buffers& buffers, beast::error_code& ec) {
    return Transfer(buffers, /*send=*/false, ec);
  }
  template <class Buffers>
  size_t read_some(const Buffers& buffers) {
    return OrThrow([&](beast::error_code& ec) { return Transfer(buffers, /*send=*/false, ec); });
  }
  template <class Buffers>
  size_t write_some(const Buffers& buffers, beast::error_code& ec) {
    return Transfer(buffers, /*send=*/true, ec);
  }
  template <class Buffers>
  size_t write_some(const Buffers& buffers) {
    return OrThrow([&](beast::error_code& ec) { return Transfer(buffers, /*send=*/true, ec); });
  }

 private:
  // Iovecs holds the first buffers of a sequence (the rest go in a later call, as with any
  // partial read or write).
  struct Iovecs {
    static constexpr size_t kMax = 64;  // as Asio's own socket operations (a header is ~12 buffers)
    iovec v[kMax];
    size_t count = 0;
    template <class Buffers>
    explicit Iovecs(const Buffers& buffers) {
      for (auto it = asio::buffer_sequence_begin(buffers); it != asio::buffer_sequence_end(buffers) && count < kMax;
           ++it) {
        const auto b = *it;
        if (b.size() == 0) continue;
        v[count].iov_base = const_cast<void*>(static_cast<const void*>(b.data()));
        v[count].iov_len = b.size();
        ++count;
      }
    }
  };

  // Transfer sends |buffers| (|send|) or receives into them, without blocking; it waits in poll()
  // (bounded by the deadline) while the socket is not ready. A receive waits first: the answer is
  // never there before it is waited for. End of stream is asio::error::eof.
  template <class Buffers>
  size_t Transfer(const Buffers& buffers, bool send, beast::error_code& ec) {
    ec = {};
    Iovecs iov(buffers);
    if (iov.count == 0) return 0;
    const short ready = send ? POLLOUT : POLLIN;
    if (!send && !Wait(ready, ec)) return 0;
    for (;;) {
      msghdr msg{};
      msg.msg_iov = iov.v;
      msg.msg_iovlen = iov.count;
      const ssize_t n = send ? ::sendmsg(fd_, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) : ::recvmsg(fd_, &msg, MSG_DONTWAIT);
      if (n > 0 || (n == 0 && send)) return static_cast<size_t>(n);
      if (n == 0) {
        ec = asio::error::eof;
        return 0;
      }
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        ec = beast::error_code(errno, boost::system::system_category());
        return 0;
      }
      if (!Wait(ready, ec)) return 0;
    }
  }
  template <class Fn>
  static size_t OrThrow(Fn fn) {
    beast::error_code ec;
    const size_t n = fn(ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }

  // Wait polls for |events| until the deadline: false with |ec| = timeout when it passed.
  bool Wait(short events, beast::error_code& ec) {
    for (;;) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        ec = beast::error::timeout;
        return false;
      }
      // poll() on a thread; through the carrier's epoll on a fiber (the carrier runs others
      // meanwhile), where the connection stays registered between waits (fiber::FdWatch).
      const int n = watch_.Wait(fd_, events, static_cast<int>(std::min<int64_t>(left.count(), INT_MAX)));
      if (n > 0) return true;  // ready, or an error/hang-up the next send or receive reports
      if (n < 0 && errno != EINTR) {
        ec = beast::error_code(errno, boost::system::system_category());
        return false;
      }
    }
  }

  int fd_;
  fiber::FdWatch& watch_;
  SteadyTime deadline_;
};

// Connection is one TCP (or TLS) connection with its own io_context. Used by one thread at a time.
class Connection {
 public:
  Connection(const Target& target, ssl::context* tls) : target_(target) {
    if (tls) {
      tls_.emplace(ioc_, *tls);
    } else {
      plain_.emplace(ioc_);
    }
  }

  ClientStream& Lowest() { return tls_ ? beast::get_lowest_layer(*tls_) : *plain_; }
  bool connected() const { return connected_; }
  bool tls() const { return tls_.has_value(); }

  // Connect resolves (ResolveEndpoints), connects and (for https) handshakes with hostname
  // verification, all before |deadline|.
  Status Connect(SteadyTime deadline, std::string_view method, std::string_view path) {
    beast::error_code ec;
    CLAWGUARD_ASSIGN_OR_RETURN(std::vector<tcp::endpoint> endpoints, ResolveEndpoints(target_, deadline, method, path));
    Lowest().expires_at(deadline);
    ec = Run([&](auto done) { Lowest().async_connect(endpoints, [done](beast::error_code e, const tcp::endpoint&) { done(e); }); });
    if (ec == beast::error::timeout) return Failure(ErpFailure::kTimeout, method, path, "connect timed out");
    if (ec) return Failure(ErpFailure::kConnect, method, path, "cannot connect to " + target_.host_header + ": " + ec.message());
    beast::error_code opt_ec;
    Lowest().socket().set_option(tcp::no_delay(true), opt_ec);
    if (tls_) {
      SSL* ssl_handle = tls_->native_handle();
      beast::error_code addr_ec;
      asio::ip::make_address(target_.host, addr_ec);
      if (addr_ec) {
        // SNI only for names (RFC 6066 §3); SSL_set1_host copies the name (set1).
        // The subject CN is never used as a name (RFC 9525 §6.3), only subjectAltName.
        SSL_set_hostflags(ssl_handle, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS | X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
        if (SSL_set_tlsext_host_name(ssl_handle, target_.host.c_str()) != 1 ||
            SSL_set1_host(ssl_handle, target_.host.c_str()) != 1) {
          return Failure(ErpFailure::kTls, method, path, "cannot set the TLS host name: " + ossl::GetSslErrors());
        }
      } else if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_handle), target_.host.c_str()) != 1) {
        return Failure(ErpFailure::kTls, method, path, "cannot set the TLS peer address: " + ossl::GetSslErrors());
      }
      tls_->set_verify_mode(ssl::verify_peer);
      Lowest().expires_at(deadline);
      ec = Run([&](auto done) { tls_->async_handshake(ssl::stream_base::client, done); });
      if (ec == beast::error::timeout) return Failure(ErpFailure::kTimeout, method, path, "TLS handshake timed out");
      if (ec) {
        std::string why = ec.message();
        const long verify = SSL_get_verify_result(ssl_handle);
        if (verify != X509_V_OK) why += " (certificate: " + std::string(X509_verify_cert_error_string(verify)) + ")";
        ossl::GetSslErrors();  // drained; the reason is in |why|
        return Failure(ErpFailure::kTls, method, path, "TLS handshake with " + target_.host_header + " failed: " + why);
      }
    }
    Lowest().expires_never();  // exchanges are bounded by deadline_ (ArmDeadline), not the stream's timer
    connected_ = true;
    return Status::Ok();
  }

  // Exchange writes |req| and reads the answer. |*got_some| tells whether any answer byte came.
  // Plain HTTP runs on PollingStream; https on the io_context (OpenSSL's stream needs it).
  Result<ErpReply> Exchange(http::request<http::string_body>& req, SteadyTime deadline, std::string_view method,
                            std::string_view path, bool* got_some) {
    *got_some = false;
    if (!tls_) {
      PollingStream stream(plain_->socket().native_handle(), watch_, deadline);
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
          return Run([&](auto done) { http::async_write(*tls_, r, [done](beast::error_code e, size_t) { done(e); }); });
        },
        [&](auto& parser) {
          return Run([&](auto done) {
            http::async_read_header(*tls_, buffer_, parser, [done](beast::error_code e, size_t) { done(e); });
          });
        },
        [&](auto& parser) {
          return Run([&](auto done) {
            http::async_read(*tls_, buffer_, parser, [done](beast::error_code e, size_t) { done(e); });
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

  bool reusable() const { return reusable_; }
  // stray is true when bytes followed the last answer (the connection is not reused).
  bool stray() const { return stray_; }

  // IdleState tells what arrived on a pooled connection since its last answer.
  enum class IdleState { kClean, kClosed, kStray };
  // CheckIdle looks at the socket without blocking, before a pooled connection is reused: nothing
  // → kClean; end of stream or an error → kClosed (the ERP closed it: normal for keep-alive);
  // any byte → kStray (an answer nobody asked for, e.g. a second answer to the last request).
  // Over https a byte is a TLS record, which TlsAfterAnswer decrypts: application data → kStray,
  // as over plain HTTP; a close_notify (the ERP's idle close) → kClosed, without suspending
  // keep-alive; records that carry no data (a late session ticket) and nothing after → kClean.
  // Nothing can wait inside the TLS layer here: the answer's own check left it empty.
  IdleState CheckIdle() {
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

 private:
  // ExchangeWith writes |req| and reads the answer with the three operations given (each returns
  // an error_code; beast::error::timeout once the deadline passed).
  template <class Write, class ReadHeader, class Read>
  Result<ErpReply> ExchangeWith(http::request<http::string_body>& req, std::string_view method, std::string_view path,
                                bool* got_some, Write write, ReadHeader read_header, Read read) {
    beast::error_code ec = write(req);
    if (ec == beast::error::timeout) return Failure(ErpFailure::kTimeout, method, path, "sending timed out");
    if (ec) return Failure(ErpFailure::kProtocol, method, path, "connection lost while sending: " + ec.message());

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
        return Failure(ErpFailure::kProtocol, method, path, "the ERP answered 101 (switching protocols): refused");
      }
      if (status < 100) {
        return Failure(ErpFailure::kProtocol, method, path, "the ERP answered status " + std::to_string(status));
      }
      if (interim + 1 > kMaxErpInterimAnswers) {
        return Failure(ErpFailure::kProtocol, method, path,
                       "more than " + std::to_string(kMaxErpInterimAnswers) + " interim (1xx) answers");
      }
    }
    const uint64_t limit = limits::kMaxErpResponseBody;
    if (!ec && parser->content_length() && *parser->content_length() > limit) ec = http::error::body_limit;
    if (!ec && !parser->is_done()) ec = read(*parser);
    if (!ec && parser->get().body().size() > limit) ec = http::error::body_limit;
    got_any = got_any || parser->got_some();
    *got_some = *got_some || got_any;
    if (ec == beast::error::timeout) return Failure(ErpFailure::kTimeout, method, path, "no answer before the deadline");
    if (ec == http::error::body_limit || ec == http::error::header_limit) {
      return Failure(ErpFailure::kProtocol, method, path, "answer over the size limit");
    }
    if (ec) return Failure(ErpFailure::kProtocol, method, path, "no complete answer: " + ec.message());
    auto& msg = parser->get();
    ErpReply reply;
    reply.status = static_cast<int>(msg.result_int());
    for (const auto& field : msg) reply.headers.Add(std::string(field.name_string()), std::string(field.value()));
    reply.body = std::move(msg.body());
    // Pooled only after one complete, well-framed answer with nothing after it: bytes already
    // read past its end are no answer to any request of ours (a second answer, or garbage), and
    // the next call on this connection would read them as its own.
    stray_ = buffer_.size() != 0;
    reusable_ = msg.keep_alive() && !stray_;
    return reply;
  }

  // After tells what a TLS connection holds past the end of its last answer.
  enum class After {
    kNothing,  // nothing anywhere: the connection may be reused
    kData,     // application data (or a part of a record): bytes nobody asked for
    kClosed,   // a close_notify, the end of the stream, or a TLS error: the connection is over
  };

  // TlsAfterAnswer reads past the answer without waiting: one byte of application data, through
  // the whole TLS stack, so whatever is there — plaintext OpenSSL decrypted and holds
  // (SSL_pending), records in OpenSSL's or Asio's TLS input buffers, bytes on the socket — is
  // processed in order. Records that carry no data (session tickets, key updates) are consumed;
  // the read then waits for the socket, and is cancelled (kNothing), unless a record was left
  // half-read (SSL_has_pending): a part of an answer nobody asked for (kData). Not for a
  // connection with an operation in flight.
  After TlsAfterAnswer() {
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

  // ArmDeadline starts the exchange's one timer. When it fires it cancels what the socket has
  // pending; Run then reports beast::error::timeout for that operation and for every later one.
  // Each arming has a number: a wait that completed for an earlier exchange (its handler may run
  // during this one) is ignored.
  void ArmDeadline(SteadyTime deadline) {
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

  // Run starts one async operation and runs the private io_context until it completes. Handlers
  // left over from an earlier Run (a cancelled deadline wait) run here first and do nothing.
  template <class Start>
  beast::error_code Run(Start start) {
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

  const Target& target_;
  asio::io_context ioc_{1};
  asio::basic_waitable_timer<std::chrono::steady_clock, asio::wait_traits<std::chrono::steady_clock>,
                             asio::io_context::executor_type>
      deadline_{ioc_.get_executor()};
  uint64_t armed_ = 0;      // the number of the latest ArmDeadline
  bool timed_out_ = false;  // the current exchange's deadline fired
  std::optional<ClientStream> plain_;
  std::optional<beast::ssl_stream<ClientStream>> tls_;
  beast::flat_buffer buffer_;
  fiber::FdWatch watch_;  // the plain socket's registrations with carriers' epolls
  bool connected_ = false;
  bool reusable_ = false;
  bool stray_ = false;
};

}  // namespace

std::string_view ErpFailureName(ErpFailure failure) {
  switch (failure) {
    case ErpFailure::kTimeout: return "timeout";
    case ErpFailure::kConnect: return "connect";
    case ErpFailure::kTls: return "tls";
    case ErpFailure::kProtocol: return "protocol";
  }
  return "protocol";
}

std::optional<ErpFailure> ErpFailureOf(const Status& status) {
  if (status.ok() || status.reason() != Reason::kInternal) return std::nullopt;
  for (ErpFailure f : {ErpFailure::kTimeout, ErpFailure::kConnect, ErpFailure::kTls, ErpFailure::kProtocol}) {
    const std::string prefix = std::string(kFailurePrefix) + std::string(ErpFailureName(f)) + ": ";
    if (status.message().starts_with(prefix)) return f;
  }
  return std::nullopt;
}

struct ErpClient::Impl {
  Target target;
  std::chrono::milliseconds timeout{0};
  SecretBytes auth;
  bool keep_alive = true;
  std::optional<ssl::context> tls;  // declared before the pool: connections point into it
  std::mutex mu;
  std::vector<std::unique_ptr<Connection>> idle;  // guarded by mu

  // Acquire takes an idle connection (unless |fresh|) that nothing arrived on since its last
  // answer (CheckIdle), or makes a new, unconnected one. A pooled connection with stray bytes is
  // closed and suspends keep-alive (Suspend).
  std::unique_ptr<Connection> Acquire(bool fresh, bool* reused) {
    *reused = false;
    while (!fresh) {
      std::unique_ptr<Connection> c;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (idle.empty()) break;
        c = std::move(idle.back());
        idle.pop_back();
      }
      switch (c->CheckIdle()) {
        case Connection::IdleState::kClean: *reused = true; return c;
        case Connection::IdleState::kStray: Suspend(); break;
        case Connection::IdleState::kClosed: break;
      }
    }
    return std::make_unique<Connection>(target, tls ? &*tls : nullptr);
  }

  // Release pools |c| after a complete answer, unless keep-alive is suspended or the pool is full;
  // a connection with stray bytes after its answer is closed and suspends keep-alive.
  void Release(std::unique_ptr<Connection> c) {
    if (c->stray()) {
      Suspend();
      return;
    }
    if (!keep_alive || !c->reusable() || Suspended()) return;
    std::lock_guard<std::mutex> lock(mu);
    if (idle.size() < limits::kMaxErpIdleConnections) idle.push_back(std::move(c));
  }

  // Suspend stops pooling for kErpKeepAliveSuspendMs and closes every idle connection: an ERP that
  // sent bytes nobody asked for may send more, and a late extra answer on a reused connection
  // would be read as the next call's own (HTTP/1.1 answers carry no request id).
  void Suspend() {
    const int64_t until = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now().time_since_epoch())
                              .count() +
                          kErpKeepAliveSuspendMs;
    keepalive_suspended_until_ms.store(until);
    std::vector<std::unique_ptr<Connection>> dropped;
    std::lock_guard<std::mutex> lock(mu);
    dropped.swap(idle);
  }
  bool Suspended() const {
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
    return now < keepalive_suspended_until_ms.load();
  }
  std::atomic<int64_t> keepalive_suspended_until_ms{0};  // steady clock, ms
};

ErpClient::ErpClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ErpClient::~ErpClient() = default;

Result<std::unique_ptr<ErpClient>> ErpClient::Create(ErpClientOptions options) {
  try {
    CLAWGUARD_ASSIGN_OR_RETURN(Target target, ParseBaseUrl(options.base_url));
    if (options.timeout <= std::chrono::milliseconds::zero()) {
      return Status(Reason::kConfigInvalid, "erp.timeout must be positive");
    }
    if (HasControl(InsecureSecretAccess::View(options.auth))) {
      return Status(Reason::kConfigInvalid, "erp.auth holds a control character");  // value not echoed
    }
    auto impl = std::make_unique<Impl>();
    if (target.tls) {
      if (options.ca_file.empty()) return Status(Reason::kConfigInvalid, "erp.ca is required for https");
      ssl::context ctx(ssl::context::tls_client);
      beast::error_code ec;
      ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                          ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::no_compression,
                      ec);
      if (ec || SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION) != 1) {
        return Status(Reason::kInternal, "TLS client setup failed: " + ossl::GetSslErrors());
      }
      // Only the configured CA: the system store is never consulted.
      ctx.load_verify_file(options.ca_file, ec);
      if (ec) {
        std::string why = ossl::GetSslErrors();
        return Status(Reason::kConfigInvalid,
                      "erp.ca " + options.ca_file + " unusable: " + (why.empty() ? ec.message() : why));
      }
      ctx.set_verify_mode(ssl::verify_peer);
      impl->tls.emplace(std::move(ctx));
    }
    impl->target = std::move(target);
    impl->timeout = options.timeout;
    impl->auth = std::move(options.auth);
    impl->keep_alive = options.keep_alive;
    return std::unique_ptr<ErpClient>(new ErpClient(std::move(impl)));
  } catch (const std::exception& e) {
    return Status(Reason::kInternal, std::string("ERP client setup failed: ") + e.what());
  }
}

Result<ErpReply> ErpClient::Send(std::string_view method, std::string_view path, const HttpHeaders& headers,
                                 std::string_view body) {
  try {
    if (method.empty() || HasControl(method) || method.find(' ') != std::string_view::npos) {
      return Failure(ErpFailure::kProtocol, "?", path, "bad method");
    }
    if (!path.starts_with("/") || HasControl(path) || path.find_first_of(" #") != std::string_view::npos) {
      return Failure(ErpFailure::kProtocol, method, "?", "path must start with / and hold no space, # or control");
    }
    const auto deadline = std::chrono::steady_clock::now() + impl_->timeout;
    http::request<http::string_body> req;
    req.method_string(beast::string_view(method.data(), method.size()));
    req.target(impl_->target.prefix + std::string(path));
    req.version(11);
    req.set(http::field::host, impl_->target.host_header);
    for (const auto& [name, value] : headers) {
      if (AsciiCaseEqual(name, "host") || AsciiCaseEqual(name, "content-length") ||
          AsciiCaseEqual(name, "transfer-encoding") || AsciiCaseEqual(name, "connection") ||
          AsciiCaseEqual(name, "authorization")) {
        continue;
      }
      if (name.empty() || HasControl(name) || HasControl(value) || name.find_first_of(" :") != std::string::npos) {
        return Failure(ErpFailure::kProtocol, method, path, "a header name or value is malformed");
      }
      req.insert(name, value);
    }
    if (!impl_->auth.empty()) {
      const std::string_view auth = InsecureSecretAccess::View(impl_->auth);
      req.set(http::field::authorization, beast::string_view(auth.data(), auth.size()));
    }
    req.body() = std::string(body);
    req.keep_alive(impl_->keep_alive);
    req.prepare_payload();

    const bool repeatable = headers.Has("Idempotency-Key") || method == "GET" || method == "HEAD" ||
                            method == "PUT" || method == "DELETE" || method == "OPTIONS";
    for (int attempt = 0;; ++attempt) {
      bool reused = false;
      auto conn = impl_->Acquire(/*fresh=*/attempt > 0, &reused);
      // On a fiber (fiber.h), what waits inside Asio's own io_context — name resolution, connect,
      // the TLS handshake and every https exchange — runs on a helper thread while the fiber is
      // parked; a plain-HTTP exchange waits through the carrier's epoll (PollingStream::Wait).
      if (!conn->connected()) {
        Status connected = Status::Ok();
        fiber::RunBlocking([&] { connected = conn->Connect(deadline, method, path); });
        CLAWGUARD_RETURN_IF_ERROR(connected);
      }
      bool got_some = false;
      Result<ErpReply> reply = Status(Reason::kInternal, "not sent");
      if (conn->tls()) {
        fiber::RunBlocking([&] { reply = conn->Exchange(req, deadline, method, path, &got_some); });
      } else {
        reply = conn->Exchange(req, deadline, method, path, &got_some);
      }
      if (reply.ok()) {
        impl_->Release(std::move(conn));
        return reply;
      }
      // A kept-alive connection the ERP had closed: send once more on a fresh connection, but
      // only a call that may be repeated (idempotent method or an Idempotency-Key).
      const bool stale = reused && !got_some && ErpFailureOf(reply.error()) == ErpFailure::kProtocol;
      if (!stale || !repeatable || attempt > 0) return reply;
    }
  } catch (const std::exception& e) {
    return Failure(ErpFailure::kProtocol, method, path, std::string("unexpected failure: ") + e.what());
  }
}

}  // namespace clawguard::host
