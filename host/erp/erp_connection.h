// erp_connection.h — ErpConnection: one TCP (or TLS) connection of the ERP client, with a private
// io_context used to connect (bounded by the stream's own timeout) and for https. A plain-HTTP
// exchange (write, read the header, read the body) runs Beast's synchronous algorithms on
// ErpPollingStream: non-blocking send and receive, poll() with what is left of the call's one
// deadline. An https exchange starts each async operation and runs the io_context until it
// completes, bounded by one deadline timer armed once per call, which cancels the socket's
// pending operation when it fires. Only the ERP client (erp_client.cpp) uses it; Beast stays
// out of every other header of the room.
#ifndef CLAWGUARD_HOST_ERP_ERP_CONNECTION_H_
#define CLAWGUARD_HOST_ERP_ERP_CONNECTION_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>
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

#include "clawguard/error.h"
#include "host/erp/erp_client.h"
#include "host/erp/erp_target.h"
#include "runtime/fiber.h"

namespace clawguard::host {

// The stream is bound to the io_context's concrete executor type rather than the type-erased
// any_io_executor of beast::tcp_stream: its timer and I/O operations then copy a pointer instead of
// building and destroying an erased executor each time (as in http_server.cpp).
using ErpClientStream =
    boost::beast::basic_stream<boost::asio::ip::tcp, boost::asio::io_context::executor_type>;

// ErpConnection is one TCP (or TLS) connection with its own io_context. Used by one thread at a
// time.
class ErpConnection {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;

  ErpConnection(const ErpTarget& target, boost::asio::ssl::context* tls) : target_(target) {
    if (tls) {
      tls_.emplace(ioc_, *tls);
    } else {
      plain_.emplace(ioc_);
    }
  }

  ErpClientStream& Lowest() { return tls_ ? boost::beast::get_lowest_layer(*tls_) : *plain_; }
  bool connected() const { return connected_; }
  bool tls() const { return tls_.has_value(); }

  // Connect resolves (ResolveEndpoints), connects and (for https) handshakes with hostname
  // verification, all before |deadline|.
  Status Connect(SteadyTime deadline, std::string_view method, std::string_view path);

  // Exchange writes |req| and reads the answer. |*got_some| tells whether any answer byte came.
  // Plain HTTP runs on ErpPollingStream; https on the io_context (OpenSSL's stream needs it).
  Result<ErpReply> Exchange(boost::beast::http::request<boost::beast::http::string_body>& req,
                            SteadyTime deadline, std::string_view method, std::string_view path,
                            bool* got_some);

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
  IdleState CheckIdle();

 private:
  // ExchangeWith writes |req| and reads the answer with the three operations given (each returns
  // an error_code; beast::error::timeout once the deadline passed).
  template <class Write, class ReadHeader, class Read>
  Result<ErpReply> ExchangeWith(boost::beast::http::request<boost::beast::http::string_body>& req,
                                std::string_view method, std::string_view path, bool* got_some,
                                Write write, ReadHeader read_header, Read read);

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
  After TlsAfterAnswer();

  // ArmDeadline starts the exchange's one timer. When it fires it cancels what the socket has
  // pending; Run then reports beast::error::timeout for that operation and for every later one.
  // Each arming has a number: a wait that completed for an earlier exchange (its handler may run
  // during this one) is ignored.
  void ArmDeadline(SteadyTime deadline);

  // Run starts one async operation and runs the private io_context until it completes. Handlers
  // left over from an earlier Run (a cancelled deadline wait) run here first and do nothing.
  template <class Start>
  boost::beast::error_code Run(Start start);

  const ErpTarget& target_;
  boost::asio::io_context ioc_{1};
  boost::asio::basic_waitable_timer<std::chrono::steady_clock,
                                    boost::asio::wait_traits<std::chrono::steady_clock>,
                                    boost::asio::io_context::executor_type>
      deadline_{ioc_.get_executor()};
  uint64_t armed_ = 0;      // the number of the latest ArmDeadline
  bool timed_out_ = false;  // the current exchange's deadline fired
  std::optional<ErpClientStream> plain_;
  std::optional<boost::beast::ssl_stream<ErpClientStream>> tls_;
  boost::beast::flat_buffer buffer_;
  fiber::FdWatch watch_;  // the plain socket's registrations with carriers' epolls
  bool connected_ = false;
  bool reusable_ = false;
  bool stray_ = false;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_ERP_ERP_CONNECTION_H_
