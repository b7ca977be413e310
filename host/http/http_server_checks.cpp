// http_server_checks.cpp — listen address, server options and response framing checks.
#include "host/http/http_server_checks.h"

#include <charconv>
#include <chrono>
#include <utility>

namespace clawguard::host::http_internal {
namespace {

bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

}  // namespace

// ParseHostPort splits "host:port" or "[v6]:port".
Result<Endpoint> ParseHostPort(std::string_view text) {
  const auto bad = [&] {
    return Status(Reason::kConfigInvalid,
                  "listen address \"" + std::string(text) + "\" must be host:port or [v6]:port");
  };
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return bad();
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return bad();
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) return bad();
  }
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (host.empty() || port.empty() || ec != std::errc() || end != port.data() + port.size() ||
      value > 65535) {
    return bad();
  }
  return Endpoint{std::string(host), static_cast<uint16_t>(value)};
}

bool ValidResponse(const HttpResponse& r) {
  if (r.status < 100 || r.status > 599) return false;
  for (const auto& [name, value] : r.headers) {
    if (name.empty()) return false;
    for (char c : name) {
      if (!IsTokenChar(c)) return false;
    }
    if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) return false;
  }
  return true;
}

Status ValidateServerOptions(const ServerOptions& o) {
  if (o.workers < 1 || static_cast<uint64_t>(o.workers) > limits::kMaxServerWorkers) {
    return Status(Reason::kConfigInvalid, "workers must be 1.." +
                                              std::to_string(limits::kMaxServerWorkers) + ", got " +
                                              std::to_string(o.workers));
  }
  if (o.handler_threads < 1 ||
      static_cast<uint64_t>(o.handler_threads) > limits::kMaxHandlerThreads) {
    return Status(Reason::kConfigInvalid, "handler threads must be 1.." +
                                              std::to_string(limits::kMaxHandlerThreads) +
                                              ", got " + std::to_string(o.handler_threads));
  }
  if (o.max_connections < 1 || o.max_connections_per_peer < 1 ||
      o.max_connections_per_peer > o.max_connections) {
    return Status(Reason::kConfigInvalid,
                  "max_connections must be ≥ 1 and max_connections_per_peer 1.." +
                      std::to_string(o.max_connections) + ", got " +
                      std::to_string(o.max_connections) + " and " +
                      std::to_string(o.max_connections_per_peer));
  }
  if (o.max_headers < 64 || o.max_headers > UINT32_MAX) {
    return Status(Reason::kConfigInvalid,
                  "max_headers must be 64..4GiB, got " + std::to_string(o.max_headers));
  }
  using std::chrono::milliseconds;
  for (auto [name, value] : {std::pair{"read_timeout", o.read_timeout},
                             {"write_timeout", o.write_timeout},
                             {"idle_timeout", o.idle_timeout}}) {
    if (value <= milliseconds::zero()) {
      return Status(Reason::kConfigInvalid, std::string(name) + " must be positive");
    }
  }
  return Status::Ok();
}

}  // namespace clawguard::host::http_internal
