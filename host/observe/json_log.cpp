// json_log.cpp — structured JSON log lines with redaction (see json_log.h).
#include "host/observe/json_log.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>

#include <nlohmann/json.hpp>

#include "clawguard/encoding.h"

namespace clawguard::host {
namespace {

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }
std::string ToLower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), Lower);
  return out;
}
bool IsAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
bool IsB64(char c) { return IsAlnum(c) || c == '+' || c == '/' || c == '=' || c == '-' || c == '_'; }
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
// IsValueEnd ends a credential-looking token: whitespace, quotes, separators of lists and queries.
bool IsValueEnd(char c) { return IsSpace(c) || c == '"' || c == '\'' || c == ',' || c == ';' || c == '&' || c == '>'; }

// Words of a field name that mark it secret, and substrings that do wherever they appear.
constexpr std::string_view kSecretWords[] = {"pin", "auth", "pwd", "pass", "secret", "secrets", "password",
                                             "passwd", "token", "authorization", "cookie", "credential",
                                             "credentials", "signature", "apikey"};
constexpr std::string_view kSecretSubstrings[] = {"secret", "password", "passwd", "token", "credential",
                                                  "authoriz", "apikey", "api_key", "api-key", "private_key",
                                                  "privatekey", "cookie", "signature", "hmac_key", "signing_key",
                                                  "key_material", "pin-value", "pin_value"};
// Names that contain a secret word but name public values.
constexpr std::string_view kPublicNames[] = {"fencing_token"};

// Value-shape prefixes whose following token is replaced (matched case-insensitively).
struct ShapeRule {
  std::string_view prefix;
  bool needs_boundary;  // the prefix must not follow an alphanumeric character
  bool base64_only;     // the token is base64 characters (else: up to IsValueEnd)
};
constexpr ShapeRule kShapeRules[] = {
    {"whsec_", false, true},     {"bearer ", true, false},   {"basic ", true, false},
    {"v1,", true, true},         {"v1a,", true, true},       {"password=", false, false},
    {"passwd=", false, false},   {"pwd=", true, false},      {"pin-value=", false, false},
    {"secret=", false, false},   {"token=", false, false},   {"sslpassword=", false, false},
};

// UrlUserInfoEnd: for "scheme://user:pw@host…" starting at |i| (just after "://"), the index of
// the '@' that ends a user info holding a password, or npos.
std::size_t UrlPasswordAt(std::string_view s, std::size_t i, std::size_t* colon) {
  std::size_t end = i;
  while (end < s.size() && !IsSpace(s[end]) && s[end] != '/' && s[end] != '?' && s[end] != '#' && s[end] != '"') ++end;
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

std::string RedactShapes(std::string_view s) {
  const std::string lower = ToLower(s);
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

// AppendJsonString appends |s| as a JSON string: valid UTF-8 is kept, control characters are
// \u-escaped, and each invalid byte becomes U+FFFD.
void AppendJsonString(std::string& out, std::string_view s) {
  out.push_back('"');
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '"') out += "\\\"";
      else if (c == '\\') out += "\\\\";
      else if (c == '\n') out += "\\n";
      else if (c == '\r') out += "\\r";
      else if (c == '\t') out += "\\t";
      else if (c < 0x20 || c == 0x7f) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      } else {
        out.push_back(static_cast<char>(c));
      }
      ++i;
      continue;
    }
    std::size_t len = (c >= 0xc2 && c <= 0xdf) ? 2 : (c >= 0xe0 && c <= 0xef) ? 3 : (c >= 0xf0 && c <= 0xf4) ? 4 : 0;
    bool ok = len != 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (ok && len == 3) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);  // overlong, surrogates
    }
    if (ok && len == 4) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\\ufffd";
      ++i;
    }
  }
  out.push_back('"');
}

// AppendClipped appends already-redacted text as a JSON string, cut at kMaxLogValueBytes.
void AppendClipped(std::string& out, std::string clean) {
  if (clean.size() > kMaxLogValueBytes) {
    clean.resize(kMaxLogValueBytes);
    clean += "...[truncated]";
  }
  AppendJsonString(out, clean);
}

// AppendRedactedJson renders |v| (the value of member |name|; "" at the top) through |log|'s rules
// (see JsonLogger::RedactJsonLine).
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
        AppendRedactedJson(log, out, name, element, depth + 1);  // elements inherit the member's name
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
    case nlohmann::ordered_json::value_t::number_float:
      out += v.dump();
      return;
    case nlohmann::ordered_json::value_t::null:  // handled above
    case nlohmann::ordered_json::value_t::binary:
    case nlohmann::ordered_json::value_t::discarded:
      break;
  }
  AppendJsonString(out, kRedacted);
}

// FlatScanner reads the one shape of line the host's audit writers produce: a compact JSON object
// of ASCII members whose values are strings, integers, true, false or null. Anything else (spaces,
// nesting, numbers that are not plain integers, non-ASCII bytes, a \u escape past ASCII, duplicate
// member names, more than kMaxLogFields members, text after the object) is not its business: it
// gives up, and RedactJsonLine takes the DOM path, which decides (tests/fuzz/log_line_fuzz.cpp
// checks that both paths render every line the scanner accepts the same).
class FlatScanner {
 public:
  explicit FlatScanner(std::string_view line) : s_(line) {}

  struct Member {
    std::string name;
    enum class Kind { kString, kLiteral, kNull } kind = Kind::kNull;
    std::string text;  // the decoded string, or the literal as written (an integer, true, false)
  };
  bool Start() { return Take('{'); }
  // Returns 1 for a member, 0 at the closing brace (then the line must end), -1 when not flat.
  int Next(Member* m) {
    if (i_ < s_.size() && s_[i_] == '}') return Close();
    if (had_member_ && !Take(',')) return -1;
    had_member_ = true;
    if (!String(&m->name) || !Take(':') || i_ >= s_.size()) return -1;
    m->text.clear();
    const char c = s_[i_];
    if (c == '"') {
      m->kind = Member::Kind::kString;
      return String(&m->text) ? 1 : -1;
    }
    if (Word("null")) {
      m->kind = Member::Kind::kNull;
      return 1;
    }
    m->kind = Member::Kind::kLiteral;
    const std::size_t start = i_;
    if (Word("true") || Word("false") || Integer()) {
      m->text.assign(s_.substr(start, i_ - start));
      return 1;
    }
    return -1;
  }

 private:
  int Close() { return ++i_ == s_.size() ? 0 : -1; }
  bool Take(char c) {
    if (i_ >= s_.size() || s_[i_] != c) return false;
    ++i_;
    return true;
  }
  bool Word(std::string_view w) {
    const std::size_t end = i_ + w.size();
    if (s_.compare(i_, w.size(), w) != 0 || end >= s_.size() || (s_[end] != ',' && s_[end] != '}')) return false;
    i_ = end;
    return true;
  }
  // Integer: 0, or an optional '-' then 1–18 digits not starting with 0 (it fits an int64 and
  // nlohmann renders it back as written), followed by ',' or '}'.
  bool Integer() {
    std::size_t j = i_;
    if (j < s_.size() && s_[j] == '0') {
      ++j;
    } else {
      if (j < s_.size() && s_[j] == '-') ++j;
      const std::size_t digits = j;
      if (j >= s_.size() || s_[j] < '1' || s_[j] > '9') return false;
      while (j < s_.size() && s_[j] >= '0' && s_[j] <= '9') ++j;
      if (j - digits > 18) return false;
    }
    if (j >= s_.size() || (s_[j] != ',' && s_[j] != '}')) return false;
    i_ = j;
    return true;
  }
  bool String(std::string* out) {
    if (!Take('"')) return false;
    out->clear();
    while (i_ < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[i_++]);
      if (c == '"') return true;
      if (c < 0x20 || c >= 0x80) return false;
      if (c != '\\') {
        out->push_back(static_cast<char>(c));
        continue;
      }
      if (i_ >= s_.size()) return false;
      switch (s_[i_++]) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          if (i_ + 4 > s_.size()) return false;
          unsigned v = 0;
          for (int k = 0; k < 4; ++k) {
            const char h = s_[i_++];
            const int d = (h >= '0' && h <= '9') ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                          : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
            if (d < 0) return false;
            v = v * 16 + static_cast<unsigned>(d);
          }
          if (v >= 0x80) return false;
          out->push_back(static_cast<char>(v));
          break;
        }
        default: return false;
      }
    }
    return false;
  }

  std::string_view s_;
  std::size_t i_ = 0;
  bool had_member_ = false;
};

// RedactFlatLine renders a line FlatScanner accepts exactly as AppendRedactedJson renders its
// DOM; nullopt when the scanner gives up.
std::optional<std::string> RedactFlatLine(const JsonLogger& log, std::string_view line) {
  FlatScanner scan(line);
  if (!scan.Start()) return std::nullopt;
  std::string out = "{";
  std::vector<std::string> names;
  FlatScanner::Member m;
  for (int r = scan.Next(&m); r != 0; r = scan.Next(&m)) {
    if (r < 0 || names.size() == kMaxLogFields) return std::nullopt;
    if (std::find(names.begin(), names.end(), m.name) != names.end()) return std::nullopt;
    if (!names.empty()) out.push_back(',');
    AppendClipped(out, log.RedactText(m.name));
    out.push_back(':');
    if (m.kind == FlatScanner::Member::Kind::kNull) {
      out += "null";
    } else if (!m.name.empty() && log.IsSecretName(m.name)) {
      AppendJsonString(out, kRedacted);
    } else if (m.kind == FlatScanner::Member::Kind::kString) {
      AppendClipped(out, log.RedactText(m.text));
    } else {
      out += m.text;
    }
    names.push_back(std::move(m.name));
  }
  out.push_back('}');
  return out;
}

std::string TimeStamp(int64_t ms) {
  std::string t = FormatRfc3339Utc(ms / 1000 - (ms % 1000 < 0 ? 1 : 0));
  const int64_t frac = ((ms % 1000) + 1000) % 1000;
  char buf[8];
  std::snprintf(buf, sizeof(buf), ".%03d", static_cast<int>(frac));
  t.insert(t.size() - 1, buf);  // before the 'Z'
  return t;
}

}  // namespace

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "error";
}

LogSink StderrLogSink() {
  return [](std::string_view line) {
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
  };
}

JsonLogger::JsonLogger(Options options, LogSink sink, const Clock& clock)
    : min_level_(options.min_level), sink_(std::move(sink)), clock_(clock) {
  for (const auto& r : options.redact) redact_.push_back(ToLower(r));
  for (auto& s : options.known_secrets) {
    if (s.empty()) continue;  // nothing to find (and it would match everywhere)
    secrets_.emplace_back(Base64Encode(InsecureSecretAccess::View(s)));
    secrets_.push_back(std::move(s));
  }
  // Longest first, so a secret that contains another is scrubbed whole.
  std::sort(secrets_.begin(), secrets_.end(), [](const SecretBytes& a, const SecretBytes& b) { return a.size() > b.size(); });
}

Result<std::unique_ptr<JsonLogger>> JsonLogger::Create(Options options, LogSink sink, const Clock& clock) {
  if (!sink) return Status(Reason::kConfigInvalid, "log: a sink is required");
  if (options.redact.size() > kMaxRedactEntries) {
    return Status(Reason::kConfigInvalid, "log.redact: " + std::to_string(options.redact.size()) +
                                              " entries, at most " + std::to_string(kMaxRedactEntries));
  }
  for (const auto& r : options.redact) {
    if (r.empty()) return Status(Reason::kConfigInvalid, "log.redact: an entry is empty (it would match every field)");
  }
  return std::unique_ptr<JsonLogger>(new JsonLogger(std::move(options), std::move(sink), clock));
}

bool JsonLogger::IsSecretName(std::string_view name) const {
  const std::string lower = ToLower(name);
  for (std::string_view p : kPublicNames) {
    if (lower == p) return false;
  }
  for (std::string_view s : kSecretSubstrings) {
    if (lower.find(s) != std::string::npos) return true;
  }
  for (const auto& r : redact_) {
    if (lower.find(r) != std::string::npos) return true;
  }
  std::size_t start = 0;
  for (std::size_t i = 0; i <= lower.size(); ++i) {
    if (i == lower.size() || lower[i] == '-' || lower[i] == '_' || lower[i] == '.' || lower[i] == ' ') {
      const std::string_view word = std::string_view(lower).substr(start, i - start);
      for (std::string_view w : kSecretWords) {
        if (word == w) return true;
      }
      start = i + 1;
    }
  }
  return false;
}

std::string JsonLogger::RedactText(std::string_view text) const {
  std::string s(text);
  for (const auto& secret : secrets_) {
    const std::string_view raw = InsecureSecretAccess::View(secret);
    for (std::size_t at = s.find(raw); at != std::string::npos; at = s.find(raw, at + kRedacted.size())) {
      s.replace(at, raw.size(), kRedacted);
    }
  }
  return RedactShapes(s);
}

void JsonLogger::AppendText(std::string& out, std::string_view text) const { AppendClipped(out, RedactText(text)); }

std::string JsonLogger::RedactJsonLine(std::string_view line) const {
  if (std::optional<std::string> flat = RedactFlatLine(*this, line)) return *std::move(flat);
  return RedactJsonLineByDom(line);
}

std::string JsonLogger::RedactJsonLineByDom(std::string_view line) const {
  std::string out;
  try {
    const auto parsed = nlohmann::ordered_json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
    if (parsed.is_object()) {
      AppendRedactedJson(*this, out, "", parsed, 0);
      return out;
    }
  } catch (const std::exception&) {  // allocation failure or a nlohmann invariant: fall back below
  }
  out = "{\"event\":\"unparseable_log_line\",\"redacted\":";
  AppendText(out, line);
  out.push_back('}');
  return out;
}

void JsonLogger::AppendValue(std::string& out, std::string_view name, const LogValue& v) const {
  if (v.kind_ == LogValue::Kind::kSecret || (IsSecretName(name) && v.kind_ != LogValue::Kind::kNull)) {
    AppendJsonString(out, kRedacted);
    return;
  }
  switch (v.kind_) {
    case LogValue::Kind::kText: AppendText(out, v.text_); return;
    case LogValue::Kind::kInt: out += std::to_string(v.int_); return;
    case LogValue::Kind::kUint: out += std::to_string(v.uint_); return;
    case LogValue::Kind::kBool: out += v.int_ != 0 ? "true" : "false"; return;
    case LogValue::Kind::kNull: out += "null"; return;
    case LogValue::Kind::kDouble: {
      if (!std::isfinite(v.double_)) {
        out += "null";
        return;
      }
      char buf[64];
      auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v.double_);
      out += ec == std::errc() ? std::string(buf, end) : "null";
      return;
    }
    case LogValue::Kind::kHeaders: {
      out.push_back('{');
      std::size_t n = 0;
      for (const auto& [hname, hvalue] : *v.headers_) {
        if (n++ == kMaxLogFields) break;
        if (n > 1) out.push_back(',');
        AppendText(out, hname);
        out.push_back(':');
        AppendValue(out, hname, LogValue(hvalue));
      }
      out.push_back('}');
      return;
    }
    case LogValue::Kind::kStatus:
      out += "{\"reason\":";
      AppendJsonString(out, ReasonName(v.status_->reason()));
      out += ",\"message\":";
      AppendText(out, v.status_->message());
      out.push_back('}');
      return;
    case LogValue::Kind::kSecret: break;  // handled above
  }
  AppendJsonString(out, kRedacted);
}

std::string JsonLogger::RenderFields(LogLevel level, std::string_view event, const LogField* begin,
                                     const LogField* end) const {
  std::string out = "{\"time\":";
  AppendJsonString(out, TimeStamp(clock_.NowMillis()));
  out += ",\"level\":";
  AppendJsonString(out, LogLevelName(level));
  out += ",\"event\":";
  AppendText(out, event);
  out += ",\"fields\":{";
  std::size_t n = 0;
  for (const LogField* f = begin; f != end; ++f) {
    if (n++ == kMaxLogFields) break;
    if (n > 1) out.push_back(',');
    AppendText(out, f->name);
    out.push_back(':');
    AppendValue(out, f->name, f->value);
  }
  out += "}}\n";
  return out;
}

std::string JsonLogger::Render(LogLevel level, std::string_view event, std::initializer_list<LogField> fields) const {
  return RenderFields(level, event, fields.begin(), fields.end());
}

void JsonLogger::Write(const std::string& line) const {
  std::lock_guard<std::mutex> lock(mu_);
  sink_(line);
}

void JsonLogger::Log(LogLevel level, std::string_view event, std::initializer_list<LogField> fields) const {
  if (level < min_level_) return;
  Write(Render(level, event, fields));
}

void JsonLogger::LogStatus(LogLevel level, std::string_view event, const Status& status,
                           std::initializer_list<LogField> fields) const {
  if (level < min_level_) return;
  std::vector<LogField> all(fields);
  all.push_back({"error", LogValue(status)});
  Write(RenderFields(level, event, all.data(), all.data() + all.size()));
}

}  // namespace clawguard::host
