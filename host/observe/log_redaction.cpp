// log_redaction.cpp — see log_redaction.h.
#include "host/observe/log_redaction.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "host/observe/json_log.h"
#include "host/observe/log_json_text.h"

namespace clawguard::host {
namespace {

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }
bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
bool IsB64(char c) {
  return IsAlnum(c) || c == '+' || c == '/' || c == '=' || c == '-' || c == '_';
}
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
// IsValueEnd ends a credential-looking token: whitespace, quotes, separators of lists and queries.
bool IsValueEnd(char c) {
  return IsSpace(c) || c == '"' || c == '\'' || c == ',' || c == ';' || c == '&' || c == '>';
}

// Words of a field name that mark it secret, and substrings that do wherever they appear.
constexpr std::string_view kSecretWords[] = {
    "pin",     "auth",       "pwd",         "pass",      "secret",
    "secrets", "password",   "passwd",      "token",     "authorization",
    "cookie",  "credential", "credentials", "signature", "apikey"};
constexpr std::string_view kSecretSubstrings[] = {
    "secret",    "password", "passwd",      "token",        "credential", "authoriz",
    "apikey",    "api_key",  "api-key",     "private_key",  "privatekey", "cookie",
    "signature", "hmac_key", "signing_key", "key_material", "pin-value",  "pin_value"};
// Names that contain a secret word but name public values.
constexpr std::string_view kPublicNames[] = {"fencing_token"};

// Value-shape prefixes whose following token is replaced (matched case-insensitively).
struct ShapeRule {
  std::string_view prefix;
  bool needs_boundary;  // the prefix must not follow an alphanumeric character
  bool base64_only;     // the token is base64 characters (else: up to IsValueEnd)
};
constexpr ShapeRule kShapeRules[] = {
    {"whsec_", false, true},   {"bearer ", true, false}, {"basic ", true, false},
    {"v1,", true, true},       {"v1a,", true, true},     {"password=", false, false},
    {"passwd=", false, false}, {"pwd=", true, false},    {"pin-value=", false, false},
    {"secret=", false, false}, {"token=", false, false}, {"sslpassword=", false, false},
};

// UrlPasswordAt: for "scheme://user:pw@host…" starting at |i| (just after "://"), the index of
// the '@' that ends a user info holding a password, or npos.
std::size_t UrlPasswordAt(std::string_view s, std::size_t i, std::size_t* colon) {
  std::size_t end = i;
  while (end < s.size() && !IsSpace(s[end]) && s[end] != '/' && s[end] != '?' && s[end] != '#' &&
         s[end] != '"')
    ++end;
  const std::size_t at = s.substr(i, end - i).rfind('@');
  if (at == std::string_view::npos) return std::string_view::npos;
  const std::size_t c = s.substr(i, at).find(':');
  if (c == std::string_view::npos) return std::string_view::npos;
  *colon = i + c;
  return i + at;
}

// JwtLength returns the length of a JWT-shaped token at |i| ("eyJ" base64url '.' base64url '.'
// base64url), or 0.
std::size_t JwtLength(std::string_view s, std::size_t i) {
  if (s.substr(i, 3) != "eyJ" || (i > 0 && IsAlnum(s[i - 1]))) return 0;
  std::size_t j = i;
  int dots = 0;
  while (j < s.size() && (IsAlnum(s[j]) || s[j] == '-' || s[j] == '_' || s[j] == '.')) {
    dots += s[j] == '.' ? 1 : 0;
    ++j;
  }
  return dots >= 2 ? j - i : 0;
}

}  // namespace

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), Lower);
  return out;
}

bool IsSecretFieldName(std::string_view name, const std::vector<std::string>& redact_lower) {
  const std::string lower = AsciiLower(name);
  for (std::string_view p : kPublicNames) {
    if (lower == p) return false;
  }
  for (std::string_view s : kSecretSubstrings) {
    if (lower.find(s) != std::string::npos) return true;
  }
  for (const auto& r : redact_lower) {
    if (lower.find(r) != std::string::npos) return true;
  }
  std::size_t start = 0;
  for (std::size_t i = 0; i <= lower.size(); ++i) {
    if (i == lower.size() || lower[i] == '-' || lower[i] == '_' || lower[i] == '.' ||
        lower[i] == ' ') {
      const std::string_view word = std::string_view(lower).substr(start, i - start);
      for (std::string_view w : kSecretWords) {
        if (word == w) return true;
      }
      start = i + 1;
    }
  }
  return false;
}

std::string RedactCredentialShapes(std::string_view s) {
  const std::string lower = AsciiLower(s);
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    bool matched = false;
    for (const ShapeRule& rule : kShapeRules) {
      if (lower.compare(i, rule.prefix.size(), rule.prefix) != 0) continue;
      if (rule.needs_boundary && i > 0 && IsAlnum(s[i - 1])) continue;
      std::size_t j = i + rule.prefix.size();
      while (j < s.size() && IsSpace(s[j]) && !rule.base64_only) ++j;
      const std::size_t token = j;
      while (j < s.size() && (rule.base64_only ? IsB64(s[j]) : !IsValueEnd(s[j]))) ++j;
      if (j == token) continue;
      out.append(s.substr(i, rule.prefix.size()));
      out.append(kRedacted);
      i = j;
      matched = true;
      break;
    }
    if (matched) continue;
    if (lower.compare(i, 3, "://") == 0) {
      std::size_t colon = 0;
      const std::size_t at = UrlPasswordAt(s, i + 3, &colon);
      if (at != std::string_view::npos) {
        out.append(s.substr(i, colon + 1 - i));
        out.append("***");
        i = at;  // keep '@host…'
        continue;
      }
    }
    if (const std::size_t jwt = JwtLength(s, i); jwt != 0) {
      out.append(kRedacted);
      i += jwt;
      continue;
    }
    out.push_back(s[i++]);
  }
  return out;
}

void AppendRedactedJson(const JsonLogger& log, std::string& out, std::string_view name,
                        const nlohmann::ordered_json& v, int depth) {
  if (v.is_null()) {
    out += "null";
    return;
  }
  if ((!name.empty() && log.IsSecretName(name)) || depth > kMaxLogLineDepth) {
    AppendJsonString(out, kRedacted);
    return;
  }
  switch (v.type()) {
    case nlohmann::ordered_json::value_t::object: {
      out.push_back('{');
      bool first = true;
      for (const auto& [key, member] : v.items()) {
        if (!first) out.push_back(',');
        first = false;
        AppendClipped(out, log.RedactText(key));
        out.push_back(':');
        AppendRedactedJson(log, out, key, member, depth + 1);
      }
      out.push_back('}');
      return;
    }
    case nlohmann::ordered_json::value_t::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& element : v) {
        if (!first) out.push_back(',');
        first = false;
        AppendRedactedJson(log, out, name, element,
                           depth + 1);  // elements inherit the member's name
      }
      out.push_back(']');
      return;
    }
    case nlohmann::ordered_json::value_t::string:
      AppendClipped(out, log.RedactText(v.get_ref<const std::string&>()));
      return;
    case nlohmann::ordered_json::value_t::boolean:
    case nlohmann::ordered_json::value_t::number_integer:
    case nlohmann::ordered_json::value_t::number_unsigned:
    case nlohmann::ordered_json::value_t::number_float: out += v.dump(); return;
    case nlohmann::ordered_json::value_t::null:  // handled above
    case nlohmann::ordered_json::value_t::binary:
    case nlohmann::ordered_json::value_t::discarded: break;
  }
  AppendJsonString(out, kRedacted);
}

}  // namespace clawguard::host
