// erp_target.cpp — see erp_target.h.
#include "host/erp/erp_target.h"

#include <charconv>

namespace clawguard::host {
namespace {

constexpr std::string_view kFailurePrefix = "erp_";

}  // namespace

Result<ErpTarget> ParseErpBaseUrl(std::string_view url) {
  const auto bad = [&](std::string_view why) {
    return Status(Reason::kConfigInvalid,
                  "erp.base_url \"" + std::string(url) + "\": " + std::string(why));
  };
  ErpTarget t;
  std::string_view rest;
  if (url.starts_with("https://")) {
    t.tls = true;
    rest = url.substr(8);
  } else if (url.starts_with("http://")) {
    rest = url.substr(7);
  } else {
    return bad("must start with http:// or https://");
  }
  if (rest.find_first_of("?#@ \r\n\t") != std::string_view::npos)
    return bad("no query, fragment or userinfo");
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view prefix =
      slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
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
    if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535)
      return bad("bad port");
  }
  t.port = static_cast<uint16_t>(value);
  t.prefix = std::string(prefix);
  const bool v6 = t.host.find(':') != std::string::npos;
  t.host_header = (v6 ? "[" + t.host + "]" : t.host) + ":" + std::to_string(t.port);
  return t;
}

Status ErpFailureStatus(ErpFailure kind, std::string_view method, std::string_view path,
                        std::string_view what) {
  return Status(Reason::kInternal, std::string(kFailurePrefix) + std::string(ErpFailureName(kind)) +
                                       ": " + std::string(method) + " " + std::string(path) + ": " +
                                       std::string(what));
}

bool HasControlChar(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
  }
  return false;
}

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
  for (ErpFailure f :
       {ErpFailure::kTimeout, ErpFailure::kConnect, ErpFailure::kTls, ErpFailure::kProtocol}) {
    const std::string prefix = std::string(kFailurePrefix) + std::string(ErpFailureName(f)) + ": ";
    if (status.message().starts_with(prefix)) return f;
  }
  return std::nullopt;
}

}  // namespace clawguard::host
