// lossy_proxy.cpp — see lossy_proxy.h. Plain POSIX sockets and poll(): one accept thread and
// one thread per connection, all woken by one eventfd when Stop begins.
#include "e2e/support/lossy_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

namespace clawguard::host::testing {
namespace {

constexpr size_t kChunk = 16 * 1024;
// A relayed write that cannot finish within this (a peer that stopped reading) ends the
// connection, so Stop never waits on a blocked send.
constexpr timeval kSendGuard{5, 0};

// TuneSocket sets TCP_NODELAY (small requests and answers go out at once) and the send guard.
void TuneSocket(int fd) {
  const int one = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  (void)::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &kSendGuard, sizeof(kSendGuard));
}

// SendAll writes all of |data| to |fd| (blocking); false if the peer went away.
bool SendAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// ReadSome reads what is available; <= 0 on EOF or error (EINTR retried).
ssize_t ReadSome(int fd, char* buf, size_t size) {
  for (;;) {
    const ssize_t n = ::recv(fd, buf, size, 0);
    if (n < 0 && errno == EINTR) continue;
    return n;
  }
}

int ConnectLoopback(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  TuneSocket(fd);
  return fd;
}

void CloseFd(int* fd) {
  if (*fd >= 0) ::close(*fd);
  *fd = -1;
}

}  // namespace

Result<std::unique_ptr<LossyProxy>> LossyProxy::Create(LossyProxyOptions options) {
  if (options.upstream_port == 0)
    return Status(Reason::kConfigInvalid, "lossy proxy: upstream_port is required");
  if (options.loss_percent < 0 || options.loss_percent > 100) {
    return Status(Reason::kConfigInvalid, "lossy proxy: loss_percent must be 0..100, found " +
                                              std::to_string(options.loss_percent));
  }
  if (options.max_connections == 0)
    return Status(Reason::kConfigInvalid, "lossy proxy: max_connections is 0");
  std::unique_ptr<LossyProxy> proxy(new LossyProxy(options));
  proxy->rng_.seed(options.seed);
  proxy->loss_percent_ = options.loss_percent;
  proxy->wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (proxy->wake_fd_ < 0)
    return Status(Reason::kInternal, std::string("lossy proxy: eventfd: ") + strerror(errno));
  proxy->listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (proxy->listen_fd_ < 0)
    return Status(Reason::kInternal, std::string("lossy proxy: socket: ") + strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(proxy->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(proxy->listen_fd_, 128) != 0 ||
      ::getsockname(proxy->listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return Status(Reason::kInternal,
                  std::string("lossy proxy: listen on 127.0.0.1:0: ") + strerror(errno));
  }
  proxy->port_ = ntohs(addr.sin_port);
  try {
    proxy->accept_thread_ = std::thread([p = proxy.get()] { p->AcceptLoop(); });
  } catch (const std::exception& e) {
    return Status(Reason::kInternal, std::string("lossy proxy: thread: ") + e.what());
  }
  return proxy;
}

LossyProxy::~LossyProxy() {
  Stop();
  CloseFd(&listen_fd_);
  CloseFd(&wake_fd_);
}

std::string LossyProxy::base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

void LossyProxy::SetLossPercent(int percent) { loss_percent_ = std::clamp(percent, 0, 100); }

LossyProxyCounts LossyProxy::counts() const {
  std::lock_guard lock(mu_);
  return counts_;
}

void LossyProxy::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  const uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!::write(wake_fd_, &one, sizeof(one));
  if (accept_thread_.joinable()) accept_thread_.join();
  // No new connection threads from here on: join them all (they may still take mu_ to count).
  std::list<Conn> conns;
  {
    std::lock_guard lock(mu_);
    conns.splice(conns.end(), conns_);
  }
  for (Conn& c : conns) {
    if (c.thread.joinable()) c.thread.join();
  }
}

LossyProxy::Action LossyProxy::Draw() {
  std::lock_guard lock(mu_);
  const uint64_t roll = rng_() % 100;
  const uint64_t kind =
      rng_() % 3;  // drawn every time, so the sequence does not depend on the loss
  if (roll >= static_cast<uint64_t>(loss_percent_.load())) {
    ++counts_.forwarded;
    return Action::kForward;
  }
  switch (kind) {
    case 0: ++counts_.dropped; return Action::kDrop;
    case 1: ++counts_.stalled; return Action::kStall;
    default: ++counts_.answers_lost; return Action::kLoseAnswer;
  }
}

void LossyProxy::ReapFinished() {
  for (auto it = conns_.begin(); it != conns_.end();) {
    if (it->done) {
      it->thread.join();  // it has left Serve's last use of mu_
      it = conns_.erase(it);
    } else {
      ++it;
    }
  }
}

void LossyProxy::AcceptLoop() {
  for (;;) {
    std::array<pollfd, 2> fds{pollfd{listen_fd_, POLLIN, 0}, pollfd{wake_fd_, POLLIN, 0}};
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;  // Stop
    if ((fds[0].revents & POLLIN) == 0) continue;
    int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    TuneSocket(client);
    std::lock_guard lock(mu_);
    ReapFinished();
    if (stopped_ || conns_.size() >= options_.max_connections) {
      ++counts_.refused;
      ::close(client);
      continue;
    }
    Conn& conn = conns_.emplace_back();
    try {
      conn.thread = std::thread([this, client, c = &conn] { Serve(client, c); });
    } catch (const std::exception&) {
      ::close(client);
      conns_.pop_back();
    }
  }
}

void LossyProxy::Serve(int client_fd, Conn* self) {
  int client = client_fd;
  int upstream = -1;
  Action action = Draw();
  if (action == Action::kForward || action == Action::kLoseAnswer) {
    upstream = ConnectLoopback(options_.upstream_port);
    if (upstream < 0) action = Action::kDrop;  // the upstream is gone: behave like a dead link
  }
  bool answered = false;  // answer bytes were relayed since the client last sent bytes
  std::vector<char> buf(kChunk);
  while (action != Action::kDrop) {
    std::array<pollfd, 3> fds{pollfd{wake_fd_, POLLIN, 0}, pollfd{client, POLLIN, 0},
                              pollfd{upstream, POLLIN, 0}};
    const nfds_t n = upstream >= 0 ? 3 : 2;
    if (::poll(fds.data(), n, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents != 0) break;  // Stop
    if (fds[1].revents != 0) {
      const ssize_t got = ReadSome(client, buf.data(), buf.size());
      if (got <= 0) break;  // the client gave up (its timeout) or finished
      if (answered) {
        // A new request on a kept-alive connection: a new exchange, a new draw.
        answered = false;
        action = Draw();
        if (action == Action::kDrop) break;
        if (action == Action::kStall) CloseFd(&upstream);
      }
      if (action != Action::kStall && !SendAll(upstream, buf.data(), static_cast<size_t>(got)))
        break;
    }
    if (n == 3 && fds[2].revents != 0) {
      const ssize_t got = ReadSome(upstream, buf.data(), buf.size());
      if (got <= 0) {
        if (action == Action::kForward) break;  // the upstream closed: so does the client's link
        CloseFd(&upstream);                     // a lost answer stays lost: hold the client
        continue;
      }
      if (action == Action::kForward) {
        if (!SendAll(client, buf.data(), static_cast<size_t>(got))) break;
        answered = true;
      }
    }
  }
  CloseFd(&upstream);
  CloseFd(&client);
  self->done = true;  // last statement: ReapFinished may join from here on
}

}  // namespace clawguard::host::testing
