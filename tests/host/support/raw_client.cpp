// raw_client.cpp — see raw_client.h.
#include "support/raw_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

namespace clawguard::host::testing {

std::unique_ptr<RawConnection> RawConnection::Connect(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return nullptr;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return nullptr;
  }
  return std::unique_ptr<RawConnection>(new RawConnection(fd));
}

RawConnection::~RawConnection() { ::close(fd_); }

bool RawConnection::Send(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool RawConnection::Fill() {
  pollfd p{fd_, POLLIN, 0};
  int ready = ::poll(&p, 1, static_cast<int>(kHangGuard.count()));
  if (ready <= 0) return false;
  char chunk[8192];
  ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
  if (n <= 0) return false;
  buffer_.append(chunk, static_cast<size_t>(n));
  return true;
}

RawResponse RawConnection::ReadResponse() {
  RawResponse r;
  size_t end;
  while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
    if (!Fill()) return r;
  }
  std::string_view head(buffer_.data(), end);
  size_t line_end = head.find("\r\n");
  std::string_view status_line = head.substr(0, line_end);
  if (!status_line.starts_with("HTTP/1.") || status_line.size() < 12) return r;
  std::from_chars(status_line.data() + 9, status_line.data() + 12, r.status);
  size_t length = 0;
  while (line_end != std::string_view::npos) {
    head.remove_prefix(line_end + 2);
    line_end = head.find("\r\n");
    std::string_view line = head.substr(0, line_end);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return r;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    r.headers.Add(std::string(line.substr(0, colon)), std::string(value));
    if (AsciiCaseEqual(line.substr(0, colon), "content-length")) {
      std::from_chars(value.data(), value.data() + value.size(), length);
    }
  }
  buffer_.erase(0, end + 4);
  while (buffer_.size() < length) {
    if (!Fill()) return r;
  }
  r.body = buffer_.substr(0, length);
  buffer_.erase(0, length);
  r.ok = true;
  return r;
}

bool RawConnection::WaitForClose() {
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(kHangGuard.count()));
    if (ready <= 0) return false;  // guard passed: still open
    char chunk[8192];
    ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n <= 0) return true;  // EOF or reset
  }
}

std::string SimpleRequest(std::string_view method, std::string_view target, std::string_view body,
                          std::string_view extra) {
  std::string r =
      std::string(method) + " " + std::string(target) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  r += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  r += extra;
  r += "\r\n";
  r += body;
  return r;
}

}  // namespace clawguard::host::testing
