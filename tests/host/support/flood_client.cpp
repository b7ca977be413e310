// flood_client.cpp — see flood_client.h.
#include "support/flood_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace clawguard::host::testing {
namespace {

constexpr char kLorisStart[] =
    "POST /webhooks/acme-orders/order.created HTTP/1.1\r\nHost: flood\r\nX-Slow: ";

bool SendAll(int fd, const char* data, size_t len) {
  while (len > 0) {
    const ssize_t n = ::send(fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n <= 0) return false;
    data += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::unique_ptr<FloodClient> FloodClient::Open(const FloodOptions& options) {
  std::unique_ptr<FloodClient> flood(new FloodClient());
  flood->slow_loris_ = options.slow_loris;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(options.port);
  if (inet_pton(AF_INET, "127.0.0.1", &to.sin_addr) != 1 || options.sources.empty()) return nullptr;
  for (int i = 0; i < options.connections; ++i) {
    sockaddr_in from{};
    from.sin_family = AF_INET;
    const std::string& source = options.sources[static_cast<size_t>(i) % options.sources.size()];
    if (inet_pton(AF_INET, source.c_str(), &from.sin_addr) != 1 ||
        (ntohl(from.sin_addr.s_addr) >> 24) != 127) {
      return nullptr;  // loopback sources only
    }
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return nullptr;
    flood->fds_.push_back(fd);
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&from), sizeof from) != 0) return nullptr;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
      ::close(fd);
      flood->fds_.back() = -1;
      continue;
    }
    ++flood->connected_;
    if (options.slow_loris && !SendAll(fd, kLorisStart, sizeof kLorisStart - 1)) {
      ::close(fd);
      flood->fds_.back() = -1;
    }
  }
  return flood;
}

FloodClient::~FloodClient() {
  for (int fd : fds_) {
    if (fd >= 0) ::close(fd);
  }
}

FloodCount FloodClient::Count() {
  FloodCount c;
  for (int& fd : fds_) {
    if (fd < 0) {
      ++c.closed;
      continue;
    }
    pollfd p{fd, POLLIN, 0};
    bool gone = false;
    if (::poll(&p, 1, 0) > 0) {
      gone = (p.revents & (POLLHUP | POLLERR)) != 0;
      for (int reads = 0; reads < 64 && !gone; ++reads) {  // drain what the server sent, up to EOF
        char buf[512];
        const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0) continue;
        gone = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
        break;
      }
    }
    if (gone) {
      ::close(fd);
      fd = -1;
      ++c.closed;
    } else {
      ++c.open;
    }
  }
  return c;
}

void FloodClient::Trickle() {
  if (!slow_loris_) return;
  for (int& fd : fds_) {
    if (fd >= 0 && !SendAll(fd, "a", 1)) {
      ::close(fd);
      fd = -1;
    }
  }
}

}  // namespace clawguard::host::testing
