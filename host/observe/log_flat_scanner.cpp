// log_flat_scanner.cpp — see log_flat_scanner.h.
#include "host/observe/log_flat_scanner.h"

#include <algorithm>
#include <vector>

#include "host/observe/json_log.h"
#include "host/observe/log_json_text.h"

namespace clawguard::host {
namespace {

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
    if (s_.compare(i_, w.size(), w) != 0 || end >= s_.size() || (s_[end] != ',' && s_[end] != '}'))
      return false;
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
            const int d = (h >= '0' && h <= '9')   ? h - '0'
                          : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                          : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                                   : -1;
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

}  // namespace

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

}  // namespace clawguard::host
