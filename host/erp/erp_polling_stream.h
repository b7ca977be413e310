// erp_polling_stream.h — ErpPollingStream: Beast's SyncReadStream/SyncWriteStream over a
// connected TCP socket, for the ERP client's plain-HTTP exchanges (erp_connection.h).
#ifndef CLAWGUARD_HOST_ERP_ERP_POLLING_STREAM_H_
#define CLAWGUARD_HOST_ERP_ERP_POLLING_STREAM_H_

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
// GCC 12 reports -Wnull-dereference inside Asio's scheduler after inlining (a false positive in
// a system header); it is silenced for the Boost headers only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/beast/core/error.hpp>
#pragma GCC diagnostic pop

#include "runtime/fiber.h"

namespace clawguard::host {

// ErpPollingStream is Beast's SyncReadStream/SyncWriteStream over a connected TCP socket, every
// operation bounded by one deadline: it sends and receives without blocking (MSG_DONTWAIT) and
// waits in poll() for the rest. A plain-HTTP exchange then costs a send, a poll and a receive;
// the io_context path costs a timerfd update, the send, a blocking epoll_wait, the receive and two
// empty epoll_waits to reap the completions (decision 0018).
class ErpPollingStream {
 public:
  ErpPollingStream(int fd, fiber::FdWatch& watch, std::chrono::steady_clock::time_point deadline)
      : fd_(fd), watch_(watch), deadline_(deadline) {}

  template <class Buffers>
  size_t read_some(const Buffers& buffers, boost::beast::error_code& ec) {
    return Transfer(buffers, /*send=*/false, ec);
  }
  template <class Buffers>
  size_t read_some(const Buffers& buffers) {
    return OrThrow(
        [&](boost::beast::error_code& ec) { return Transfer(buffers, /*send=*/false, ec); });
  }
  template <class Buffers>
  size_t write_some(const Buffers& buffers, boost::beast::error_code& ec) {
    return Transfer(buffers, /*send=*/true, ec);
  }
  template <class Buffers>
  size_t write_some(const Buffers& buffers) {
    return OrThrow(
        [&](boost::beast::error_code& ec) { return Transfer(buffers, /*send=*/true, ec); });
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
      for (auto it = boost::asio::buffer_sequence_begin(buffers);
           it != boost::asio::buffer_sequence_end(buffers) && count < kMax; ++it) {
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
  // never there before it is waited for. End of stream is boost::asio::error::eof.
  template <class Buffers>
  size_t Transfer(const Buffers& buffers, bool send, boost::beast::error_code& ec) {
    ec = {};
    Iovecs iov(buffers);
    if (iov.count == 0) return 0;
    const short ready = send ? POLLOUT : POLLIN;
    if (!send && !Wait(ready, ec)) return 0;
    for (;;) {
      msghdr msg{};
      msg.msg_iov = iov.v;
      msg.msg_iovlen = iov.count;
      const ssize_t n = send ? ::sendmsg(fd_, &msg, MSG_DONTWAIT | MSG_NOSIGNAL)
                             : ::recvmsg(fd_, &msg, MSG_DONTWAIT);
      if (n > 0 || (n == 0 && send)) return static_cast<size_t>(n);
      if (n == 0) {
        ec = boost::asio::error::eof;
        return 0;
      }
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        ec = boost::beast::error_code(errno, boost::system::system_category());
        return 0;
      }
      if (!Wait(ready, ec)) return 0;
    }
  }
  template <class Fn>
  static size_t OrThrow(Fn fn) {
    boost::beast::error_code ec;
    const size_t n = fn(ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }

  // Wait polls for |events| until the deadline: false with |ec| = timeout when it passed.
  bool Wait(short events, boost::beast::error_code& ec) {
    for (;;) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(
          deadline_ - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        ec = boost::beast::error::timeout;
        return false;
      }
      // poll() on a thread; through the carrier's epoll on a fiber (the carrier runs others
      // meanwhile), where the connection stays registered between waits (fiber::FdWatch).
      const int n =
          watch_.Wait(fd_, events, static_cast<int>(std::min<int64_t>(left.count(), INT_MAX)));
      if (n > 0) return true;  // ready, or an error/hang-up the next send or receive reports
      if (n < 0 && errno != EINTR) {
        ec = boost::beast::error_code(errno, boost::system::system_category());
        return false;
      }
    }
  }

  int fd_;
  fiber::FdWatch& watch_;
  std::chrono::steady_clock::time_point deadline_;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_ERP_ERP_POLLING_STREAM_H_
