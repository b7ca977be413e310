// semver.cpp — SemVer 2.0 parsing and precedence (https://semver.org/spec/v2.0.0.html).
//
// Deviation from the spec: build metadata ("+...") is refused rather than ignored. Two builds
// that differ only in metadata have the same precedence, so a "+rebuild" could publish other
// bytes under an already-recorded version and dodge the ledger's overwrite check.
#include "clawguard/semver.h"

#include <algorithm>
#include <charconv>

namespace clawguard {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsIdentChar(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
}
bool AllDigits(std::string_view s) { return std::all_of(s.begin(), s.end(), IsDigit); }

// ParseNumber accepts a numeric identifier: digits only, no leading zero (spec item 2).
std::optional<unsigned long long> ParseNumber(std::string_view s) {
  if (s.empty() || !AllDigits(s) || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  unsigned long long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;  // overflow
  return v;
}

// SplitDots splits on '.', keeping empty pieces so that "1..2" and "a." are refused.
std::vector<std::string_view> SplitDots(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    if (dot == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, dot - start));
    start = dot + 1;
  }
}

}  // namespace

std::optional<SemVer> ParseSemVer(std::string_view text) {
  if (text.find('+') != std::string_view::npos) return std::nullopt;
  std::string_view core = text;
  std::string_view pre;
  bool has_pre = false;
  if (const size_t dash = text.find('-'); dash != std::string_view::npos) {
    core = text.substr(0, dash);
    pre = text.substr(dash + 1);
    has_pre = true;
  }
  const auto parts = SplitDots(core);
  if (parts.size() != 3) return std::nullopt;
  SemVer v;
  auto major = ParseNumber(parts[0]);
  auto minor = ParseNumber(parts[1]);
  auto patch = ParseNumber(parts[2]);
  if (!major || !minor || !patch) return std::nullopt;
  v.major = *major;
  v.minor = *minor;
  v.patch = *patch;
  if (has_pre) {
    for (std::string_view id : SplitDots(pre)) {
      if (id.empty() || !std::all_of(id.begin(), id.end(), IsIdentChar)) return std::nullopt;
      // A numeric prerelease identifier must not have leading zeros (spec item 9).
      if (AllDigits(id) && id.size() > 1 && id[0] == '0') return std::nullopt;
      v.prerelease.emplace_back(id);
    }
  }
  return v;
}

int CompareSemVer(const SemVer& a, const SemVer& b) {
  auto cmp = [](unsigned long long x, unsigned long long y) {
    return x < y ? -1 : (x > y ? 1 : 0);
  };
  if (int c = cmp(a.major, b.major)) return c;
  if (int c = cmp(a.minor, b.minor)) return c;
  if (int c = cmp(a.patch, b.patch)) return c;
  // A version without a prerelease has higher precedence than one with (spec item 11.3).
  if (a.prerelease.empty() || b.prerelease.empty()) {
    return cmp(a.prerelease.empty() ? 1 : 0, b.prerelease.empty() ? 1 : 0);
  }
  const size_t n = std::min(a.prerelease.size(), b.prerelease.size());
  for (size_t i = 0; i < n; ++i) {
    const std::string& x = a.prerelease[i];
    const std::string& y = b.prerelease[i];
    const bool xn = AllDigits(x);
    const bool yn = AllDigits(y);
    if (xn && yn) {
      // Numeric identifiers compare numerically; without leading zeros that is length, then text,
      // which also works for values beyond 64 bits.
      if (x.size() != y.size()) return x.size() < y.size() ? -1 : 1;
      if (int c = x.compare(y)) return c < 0 ? -1 : 1;
    } else if (xn != yn) {
      return xn ? -1 : 1;  // numeric identifiers sort before alphanumeric ones
    } else if (int c = x.compare(y)) {
      return c < 0 ? -1 : 1;  // ASCII order
    }
  }
  return cmp(a.prerelease.size(), b.prerelease.size());
}

}  // namespace clawguard
