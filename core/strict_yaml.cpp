// strict_yaml.cpp — event-level checks, then schema-typed reading of mappings.
#include "clawguard/strict_yaml.h"

#include <yaml-cpp/eventhandler.h>

#include <charconv>
#include <limits>
#include <sstream>
#include <vector>

#include "clawguard/limits.h"

namespace clawguard {
namespace {

std::string Where(const std::string& source, const YAML::Mark& m) {
  return source + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

// StrictHandler refuses what yaml-cpp would silently accept. It records the first problem only.
class StrictHandler : public YAML::EventHandler {
 public:
  explicit StrictHandler(std::string source) : source_(std::move(source)) {}

  const std::string& problem() const { return problem_; }
  int documents() const { return documents_; }

  void OnDocumentStart(const YAML::Mark&) override { ++documents_; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    CheckAnchor(mark, anchor);
    Value(mark, std::nullopt);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    Fail(mark, "aliases (*name) are not allowed; write the value out in full");
  }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    CheckAnchor(mark, anchor);
    CheckTag(mark, tag);
    Value(mark, value);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    CheckAnchor(mark, anchor);
    CheckTag(mark, tag);
    Value(mark, std::nullopt, /*is_collection=*/true);
    Push(mark, /*is_map=*/false);
  }
  void OnSequenceEnd() override { Pop(); }
  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    CheckAnchor(mark, anchor);
    CheckTag(mark, tag);
    Value(mark, std::nullopt, /*is_collection=*/true);
    Push(mark, /*is_map=*/true);
  }
  void OnMapEnd() override { Pop(); }

 private:
  struct Frame {
    bool is_map = false;
    bool expecting_key = true;
    std::set<std::string> keys;
  };

  void Fail(const YAML::Mark& mark, const std::string& what) {
    if (problem_.empty()) problem_ = Where(source_, mark) + ": " + what;
  }
  void CheckAnchor(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor)
      Fail(mark, "anchors (&name) are not allowed; write each value out in full");
  }
  void CheckTag(const YAML::Mark& mark, const std::string& tag) {
    if (!tag.empty() && tag != "?" && tag != "!") {
      Fail(mark, "explicit tags ('" + tag + "') are not allowed; remove the tag");
    }
  }
  // Value handles one node in the current frame: in a map, keys alternate with values.
  void Value(const YAML::Mark& mark, const std::optional<std::string>& scalar,
             bool is_collection = false) {
    if (stack_.empty() || !stack_.back().is_map) return;
    Frame& f = stack_.back();
    if (f.expecting_key) {
      if (is_collection || !scalar) {
        Fail(mark, "a mapping key must be a plain string");
      } else if (!f.keys.insert(*scalar).second) {
        Fail(mark,
             "duplicate key '" + *scalar +
                 "'; each key may appear once in a mapping — remove or merge the repeated one");
      }
    }
    f.expecting_key = !f.expecting_key;
  }
  void Push(const YAML::Mark& mark, bool is_map) {
    Frame f;
    f.is_map = is_map;
    stack_.push_back(std::move(f));
    if (static_cast<int>(stack_.size()) > limits::kMaxYamlDepth) {
      Fail(mark, "nesting is deeper than " + std::to_string(limits::kMaxYamlDepth) + " levels");
    }
  }
  void Pop() {
    if (!stack_.empty()) stack_.pop_back();
  }

  std::string source_;
  std::string problem_;
  std::vector<Frame> stack_;
  int documents_ = 0;
};

// FirstInvalidUtf8 returns the offset of the first byte that does not start a well-formed UTF-8
// sequence (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), or npos.
size_t FirstInvalidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto b = static_cast<unsigned char>(text[i]);
    size_t n = 0;
    unsigned lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (b < 0x80) {
      ++i;
      continue;
    } else if (b >= 0xC2 && b <= 0xDF) {
      n = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
      n = 2;
      if (b == 0xE0) lo = 0xA0;
      if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      n = 3;
      if (b == 0xF0) lo = 0x90;
      if (b == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + n >= text.size()) return i;  // truncated sequence
    for (size_t k = 1; k <= n; ++k) {
      const auto c = static_cast<unsigned char>(text[i + k]);
      if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) return i;
    }
    i += n + 1;
  }
  return std::string_view::npos;
}

// LineColumn renders the 1-based line and column of byte |offset| of |text|.
std::string LineColumn(std::string_view text, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return std::to_string(line) + ":" + std::to_string(column);
}

}  // namespace

std::string YamlWhere(const std::string& source, const YAML::Node& node) {
  return Where(source, node.Mark());
}

Result<YamlDoc> ParseYamlStrict(std::string_view text, std::string source, Reason reason) {
  // YAML is Unicode text: bytes that are not UTF-8 would reach names and publishers as they are
  // (yaml-cpp passes them through) and come back different from any JSON or YAML rendering.
  if (const size_t bad = FirstInvalidUtf8(text); bad != std::string_view::npos) {
    return Status(reason, source + ":" + LineColumn(text, bad) +
                              ": the file is not valid UTF-8 (byte offset " + std::to_string(bad) +
                              "); save it as UTF-8");
  }
  try {
    {
      std::istringstream in{std::string(text)};
      YAML::Parser parser(in);
      StrictHandler handler(source);
      // Stop at the second document: only one is allowed, and yaml-cpp 0.7 never reaches the end
      // of some inputs (",:: " yields empty documents forever; found by strict_yaml_fuzz).
      while (parser.HandleNextDocument(handler)) {
        if (!handler.problem().empty() || handler.documents() > 1) break;
      }
      if (!handler.problem().empty()) return Status(reason, handler.problem());
      if (handler.documents() != 1) {
        return Status(reason, source + ": expected exactly one YAML document, found " +
                                  std::to_string(handler.documents()));
      }
    }
    YamlDoc doc{YAML::Load(std::string(text)), std::move(source)};
    return doc;
  } catch (const YAML::Exception& e) {
    std::string hint;
    if (e.msg.find("flow") != std::string::npos || e.msg.find("end of map") != std::string::npos) {
      hint =
          " (in a flow list `[...]`, `{` starts a mapping: write lists that contain {name} in "
          "block style, one `- item` per line)";
    }
    return Status(reason, Where(source, e.mark) + ": YAML syntax error: " + e.msg + hint);
  }
}

bool ScalarIsPlain(const YAML::Node& node) { return node.IsScalar() && node.Tag() == "?"; }

std::optional<uint64_t> ParseSizeText(std::string_view text) {
  uint64_t n = 0;
  const char* b = text.data();
  const char* e = text.data() + text.size();
  auto [p, ec] = std::from_chars(b, e, n);
  if (ec != std::errc() || p == b) return std::nullopt;
  const std::string_view unit(p, static_cast<size_t>(e - p));
  uint64_t mul = 1;
  if (unit.empty() || unit == "B")
    mul = 1;
  else if (unit == "KiB")
    mul = 1024;
  else if (unit == "MiB")
    mul = limits::kMiB;
  else if (unit == "GiB")
    mul = limits::kGiB;
  else
    return std::nullopt;
  if (n > std::numeric_limits<uint64_t>::max() / mul) return std::nullopt;
  return n * mul;
}

std::string FormatDuration(std::chrono::milliseconds d) {
  const int64_t ms = d.count();
  if (ms == 0) return "0s";
  struct Unit {
    int64_t ms;
    const char* name;
  };
  for (const Unit u :
       {Unit{86'400'000, "d"}, Unit{3'600'000, "h"}, Unit{60'000, "m"}, Unit{1000, "s"}}) {
    if (ms % u.ms == 0) return std::to_string(ms / u.ms) + u.name;
  }
  return std::to_string(ms) + "ms";
}

std::optional<std::chrono::milliseconds> ParseDurationText(std::string_view text) {
  int64_t n = 0;
  const char* b = text.data();
  const char* e = text.data() + text.size();
  auto [p, ec] = std::from_chars(b, e, n);
  if (ec != std::errc() || p == b || n < 0) return std::nullopt;
  const std::string_view unit(p, static_cast<size_t>(e - p));
  int64_t mul = 0;
  if (unit == "ms")
    mul = 1;
  else if (unit == "s")
    mul = 1000;
  else if (unit == "m")
    mul = 60'000;
  else if (unit == "h")
    mul = 3'600'000;
  else if (unit == "d")
    mul = 86'400'000;
  else
    return std::nullopt;
  if (n > std::numeric_limits<int64_t>::max() / mul) return std::nullopt;
  return std::chrono::milliseconds(n * mul);
}

Result<YamlMap> YamlMap::Create(const YAML::Node& node, const std::string& source, std::string path,
                                Reason reason) {
  if (!node.IsDefined() || !node.IsMap()) {
    std::string found = !node.IsDefined()   ? "nothing"
                        : node.IsSequence() ? "a list"
                        : node.IsNull()     ? "null"
                                            : "a scalar";
    return Status(reason, (node.IsDefined() ? YamlWhere(source, node) : source) + ": " +
                              (path.empty() ? std::string("the document") : path) +
                              " must be a mapping (key: value), found " + found);
  }
  return YamlMap(node, source, std::move(path), reason);
}

Status YamlMap::Error(const YAML::Node& node, const std::string& key,
                      const std::string& message) const {
  const std::string where = node.IsDefined() ? YamlWhere(source_, node) : YamlWhere(source_, node_);
  std::string name = path_.empty() ? key : (key.empty() ? path_ : path_ + "." + key);
  return Status(reason_, where + ": " + (name.empty() ? "" : name + ": ") + message);
}

bool YamlMap::Has(const std::string& key) const { return node_[key].IsDefined(); }

Result<YAML::Node> YamlMap::Node(const std::string& key) {
  known_.insert(key);
  YAML::Node n = node_[key];
  if (!n.IsDefined()) return Error(node_, key, "required key '" + key + "' is missing");
  return n;
}

std::optional<YAML::Node> YamlMap::OptionalNode(const std::string& key) {
  known_.insert(key);
  YAML::Node n = node_[key];
  if (!n.IsDefined() || n.IsNull()) return std::nullopt;
  return n;
}

Result<YAML::Node> YamlMap::Scalar(const std::string& key, const char* expected) {
  CLAWGUARD_ASSIGN_OR_RETURN(YAML::Node n, Node(key));
  if (!n.IsScalar()) {
    return Error(n, key,
                 std::string("expected ") + expected + ", found " +
                     (n.IsMap()        ? "a mapping"
                      : n.IsSequence() ? "a list"
                                       : "null"));
  }
  return n;
}

Result<std::string> YamlMap::String(const std::string& key) {
  CLAWGUARD_ASSIGN_OR_RETURN(YAML::Node n, Scalar(key, "a string"));
  return n.Scalar();
}

Result<std::optional<std::string>> YamlMap::OptionalString(const std::string& key) {
  auto n = OptionalNode(key);
  if (!n) return std::optional<std::string>();
  if (!n->IsScalar()) return Error(*n, key, "expected a string");
  return std::optional<std::string>(n->Scalar());
}

Result<int64_t> YamlMap::Int(const std::string& key, int64_t min, int64_t max) {
  CLAWGUARD_ASSIGN_OR_RETURN(YAML::Node n, Scalar(key, "an integer"));
  const std::string& s = n.Scalar();
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  const bool decimal = !s.empty() &&
                       (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-') &&
                       !(s.size() > 1 && s[0] == '0');
  if (!ScalarIsPlain(n) || ec != std::errc() || p != s.data() + s.size() || !decimal) {
    return Error(n, key, "expected a plain decimal integer, found '" + s + "'");
  }
  if (v < min || v > max) {
    return Error(n, key,
                 "expected an integer from " + std::to_string(min) + " to " + std::to_string(max) +
                     ", found " + s);
  }
  return v;
}

Result<std::optional<int64_t>> YamlMap::OptionalInt(const std::string& key, int64_t min,
                                                    int64_t max) {
  if (!OptionalNode(key)) return std::optional<int64_t>();
  CLAWGUARD_ASSIGN_OR_RETURN(int64_t v, Int(key, min, max));
  return std::optional<int64_t>(v);
}

Result<bool> YamlMap::Bool(const std::string& key) {
  CLAWGUARD_ASSIGN_OR_RETURN(YAML::Node n, Scalar(key, "true or false"));
  if (ScalarIsPlain(n) && n.Scalar() == "true") return true;
  if (ScalarIsPlain(n) && n.Scalar() == "false") return false;
  return Error(n, key, "expected true or false, found '" + n.Scalar() + "'");
}

Result<uint64_t> YamlMap::Size(const std::string& key, uint64_t max) {
  CLAWGUARD_ASSIGN_OR_RETURN(YAML::Node n, Scalar(key, "a size"));
  auto v = ParseSizeText(n.Scalar());
  if (!v)
    return Error(n, key,
                 "expected a size such as 16KiB, 256MiB or 1GiB, found '" + n.Scalar() + "'");
  if (*v > max)
    return Error(
        n, key, "size " + n.Scalar() + " is over the maximum of " + std::to_string(max) + " bytes");
  return *v;
}

Result<std::chrono::milliseconds> YamlMap::Duration(const std::string& key) {
  CLAWGUARD_ASSIGN_OR_RETURN(YAML::Node n, Scalar(key, "a duration"));
  auto v = ParseDurationText(n.Scalar());
  if (!v)
    return Error(
        n, key,
        "expected a duration such as 250ms, 30s, 5m, 24h or 7d, found '" + n.Scalar() + "'");
  return *v;
}

Result<std::string> YamlMap::Enum(const std::string& key, const std::set<std::string>& allowed) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::string v, String(key));
  if (allowed.count(v) == 0) {
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    return Error(node_[key], key, "expected one of " + list + ", found '" + v + "'");
  }
  return v;
}

Status YamlMap::Finish() const {
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const std::string k = it->first.Scalar();
    if (known_.count(k) == 0) {
      std::string list;
      for (const auto& a : known_) list += (list.empty() ? "" : ", ") + a;
      return Error(
          it->first, "",
          "unknown key '" + k + "' (known keys: " + list + "); remove it or fix its spelling");
    }
  }
  return Status::Ok();
}

}  // namespace clawguard
