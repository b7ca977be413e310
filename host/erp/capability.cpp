// capability.cpp — template compilation and exact-path matching.
#include "host/erp/capability.h"

#include "clawguard/limits.h"

namespace clawguard::host {
namespace {

bool IsParamChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '~' || c == '-';
}

bool IsLiteralChar(char c) { return IsParamChar(c) || c == '.'; }

bool IsParamName(std::string_view s) {
  if (s.empty() || !((s[0] >= 'a' && s[0] <= 'z') || s[0] == '_')) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

bool IsAllowedMethod(std::string_view m) {
  return m == "GET" || m == "POST" || m == "PUT" || m == "PATCH" || m == "DELETE";
}

// Split cuts "/a/b" into {"a", "b"} (the leading '/' is required by the callers).
std::vector<std::string_view> Split(std::string_view path) {
  std::vector<std::string_view> out;
  path.remove_prefix(1);
  while (true) {
    const size_t slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

}  // namespace

bool IsSafeErpPath(std::string_view path) {
  if (path.empty() || path[0] != '/' || path.size() > limits::kMaxErpPathLength) return false;
  if (path.find_first_of("%?#") != std::string_view::npos) return false;
  for (std::string_view seg : Split(path)) {
    if (seg.empty() || seg == "." || seg == "..") return false;
    for (char c : seg) {
      if (!IsLiteralChar(c)) return false;
    }
  }
  return true;
}

Result<CapabilitySet> CapabilitySet::Create(const std::vector<std::string>& capabilities) {
  std::vector<Template> out;
  for (const std::string& cap : capabilities) {
    const auto bad = [&](const std::string& why) {
      return Status(Reason::kManifestInvalid, "capability '" + cap + "': " + why);
    };
    const size_t sp = cap.find(' ');
    if (sp == std::string::npos) return bad("expected 'METHOD /path'");
    Template t{cap, cap.substr(0, sp), {}};
    if (!IsAllowedMethod(t.method))
      return bad("method must be one of GET, POST, PUT, PATCH, DELETE");
    const std::string_view path = std::string_view(cap).substr(sp + 1);
    if (path.empty() || path[0] != '/') return bad("path must start with '/'");
    for (std::string_view seg : Split(path)) {
      if (seg.size() >= 2 && seg.front() == '{' && seg.back() == '}') {
        if (!IsParamName(seg.substr(1, seg.size() - 2)))
          return bad("parameter names are [a-z_][a-z0-9_]*");
        t.segments.push_back(Segment{true, {}});
        continue;
      }
      if (seg.empty() || seg == "." || seg == "..") return bad("empty, '.' or '..' segment");
      for (char c : seg) {
        if (!IsLiteralChar(c)) return bad("literal segments are [A-Za-z0-9_~.-]+");
      }
      t.segments.push_back(Segment{false, std::string(seg)});
    }
    out.push_back(std::move(t));
  }
  return CapabilitySet(std::move(out));
}

std::optional<std::string_view> CapabilitySet::Match(std::string_view method,
                                                     std::string_view path) const {
  if (!IsSafeErpPath(path)) return std::nullopt;
  const std::vector<std::string_view> segs = Split(path);
  for (const Template& t : templates_) {
    if (t.method != method || t.segments.size() != segs.size()) continue;
    bool ok = true;
    for (size_t i = 0; ok && i < segs.size(); ++i) {
      if (t.segments[i].is_param) {
        for (char c : segs[i]) ok = ok && IsParamChar(c);
      } else {
        ok = segs[i] == t.segments[i].literal;
      }
    }
    if (ok) return std::string_view(t.text);
  }
  return std::nullopt;
}

}  // namespace clawguard::host
