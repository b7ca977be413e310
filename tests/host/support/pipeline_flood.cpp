// pipeline_flood.cpp — see pipeline_flood.h.
#include "support/pipeline_flood.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace clawguard::host::testing {

std::unique_ptr<PipelineFlood> PipelineFlood::Open(const PipelineFloodOptions& options) {
  if (options.sources.empty() || options.connections < 0) return nullptr;
  std::unique_ptr<PipelineFlood> flood(new PipelineFlood(options));
  flood->conns_.resize(static_cast<size_t>(options.connections));
  for (size_t i = 0; i < flood->conns_.size(); ++i) {
    if (!flood->Connect(i)) return nullptr;
  }
  return flood;
}

PipelineFlood::~PipelineFlood() {
  for (Conn& c : conns_) {
    if (c.fd >= 0) ::close(c.fd);
  }
}

bool PipelineFlood::Connect(size_t slot) {
  Conn& c = conns_[slot];
  c = Conn{};
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(options_.port);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  const std::string& source = options_.sources[slot % options_.sources.size()];
  if (inet_pton(AF_INET, "127.0.0.1", &to.sin_addr) != 1 ||
      inet_pton(AF_INET, source.c_str(), &from.sin_addr) != 1 ||
      (ntohl(from.sin_addr.s_addr) >> 24) != 127) {
    return false;  // loopback sources only
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  const int one = 1;
  // Before connect: the window and the segment size are agreed in the handshake.
  if ((options_.rcvbuf > 0 &&
       ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &options_.rcvbuf, sizeof options_.rcvbuf) != 0) ||
      (options_.mss > 0 &&
       ::setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &options_.mss, sizeof options_.mss) != 0) ||
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      ::bind(fd, reinterpret_cast<const sockaddr*>(&from), sizeof from) != 0) {
    ::close(fd);
    return false;
  }
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0 &&
      errno != EINPROGRESS) {
    ::close(fd);
    ++closed_total_;
    return true;
  }
  c.fd = fd;
  ++open_;
  ++opened_total_;
  Send(c);
  return true;
}

void PipelineFlood::Send(Conn& c) {
  while (c.fd >= 0 && c.sent < options_.payload.size()) {
    const ssize_t n = ::send(c.fd, options_.payload.data() + c.sent,
                             options_.payload.size() - c.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      c.sent += static_cast<size_t>(n);
      continue;
    }
    // Not connected yet or the buffers are full: later. Anything else: the server ended it.
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOTCONN || errno == EINTR))
      return;
    Close(c, /*by_server=*/true);
  }
}

void PipelineFlood::Close(Conn& c, bool by_server) {
  if (c.fd < 0) return;
  ::close(c.fd);
  c.fd = -1;
  --open_;
  if (by_server) ++closed_total_;
}

int PipelineFlood::Pump(int wait_ms) {
  std::vector<pollfd> fds;
  std::vector<Conn*> which;
  for (Conn& c : conns_) {
    if (c.fd < 0) continue;
    const short more = c.sent < options_.payload.size() ? POLLOUT : 0;
    fds.push_back(pollfd{c.fd, static_cast<short>(POLLRDHUP | more), 0});
    which.push_back(&c);
  }
  if (!fds.empty() && ::poll(fds.data(), fds.size(), wait_ms) > 0) {
    for (size_t i = 0; i < fds.size(); ++i) {
      if ((fds[i].revents & (POLLHUP | POLLERR | POLLRDHUP)) != 0) {
        Close(*which[i], /*by_server=*/true);
      } else if ((fds[i].revents & POLLOUT) != 0) {
        Send(*which[i]);
      }
    }
  }
  return open_.load();
}

int PipelineFlood::delivered() const {
  int n = 0;
  for (const Conn& c : conns_) n += c.fd >= 0 && c.sent == options_.payload.size() ? 1 : 0;
  return n;
}

int PipelineFlood::Refill(int limit) {
  int opened = 0;
  for (size_t i = 0; i < conns_.size() && opened < limit; ++i) {
    if (conns_[i].fd >= 0) continue;
    if (!Connect(i)) break;
    ++opened;
  }
  return opened;
}

}  // namespace clawguard::host::testing
