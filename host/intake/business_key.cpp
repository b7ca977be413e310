// business_key.cpp — JSON Pointer extraction: a streaming (SAX) pass that keeps no document for
// the common case, and the document-based reference for everything else.
#include "host/intake/business_key.h"

#include <charconv>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "clawguard/limits.h"
#include "clawguard/strict_json.h"

namespace clawguard::host {
namespace {

// An object with more keys than this sends the body to the reference path, so the streaming
// pass's duplicate check (a linear scan) stays O(n) per object.
constexpr size_t kMaxStreamedKeysPerObject = 64;

// PointerToken is one RFC 6901 reference token, unescaped, with its array index when it is a
// canonical decimal (no sign, no leading zero) that fits.
struct PointerToken {
  std::string name;
  std::optional<size_t> index;
};

// SplitPointer returns the tokens of |pointer|, or nullopt when it is malformed or has a token
// the reference path would treat specially (an all-digit index that overflows): those go to the
// reference path, which words the error.
std::optional<std::vector<PointerToken>> SplitPointer(std::string_view pointer) {
  std::vector<PointerToken> out;
  if (pointer.empty()) return out;
  if (pointer[0] != '/') return std::nullopt;
  size_t pos = 1;
  while (true) {
    const size_t end = std::min(pointer.find('/', pos), pointer.size());
    PointerToken t;
    for (size_t i = pos; i < end; ++i) {
      if (pointer[i] != '~') {
        t.name.push_back(pointer[i]);
      } else if (i + 1 < end && (pointer[i + 1] == '0' || pointer[i + 1] == '1')) {
        t.name.push_back(pointer[i + 1] == '0' ? '~' : '/');
        ++i;
      } else {
        return std::nullopt;
      }
    }
    const std::string& n = t.name;
    const bool digits = !n.empty() && n.find_first_not_of("0123456789") == std::string::npos;
    if (digits && (n.size() == 1 || n[0] != '0')) {
      size_t v = 0;
      const auto [p, ec] = std::from_chars(n.data(), n.data() + n.size(), v);
      if (ec != std::errc() || p != n.data() + n.size()) return std::nullopt;
      t.index = v;
    }
    out.push_back(std::move(t));
    if (end == pointer.size()) break;
    pos = end + 1;
  }
  return out;
}

// Extractor is the SAX handler. It returns false (stop) at anything the reference path would
// refuse or that it does not handle (duplicate keys, depth, too many keys), and records the
// target when it is a string or an integer. The caller trusts only a complete, clean pass.
class Extractor {
 public:
  using json = nlohmann::json;
  explicit Extractor(const std::vector<PointerToken>& tokens) : tokens_(tokens) {}

  bool null() { return Scalar(false, NoValue); }
  bool boolean(bool /*v*/) { return Scalar(false, NoValue); }
  bool number_integer(json::number_integer_t v) {
    return Scalar(true, [v] { return std::to_string(v); });
  }
  bool number_unsigned(json::number_unsigned_t v) {
    return Scalar(true, [v] { return std::to_string(v); });
  }
  bool number_float(json::number_float_t /*v*/, const json::string_t& /*s*/) {
    return Scalar(false, NoValue);
  }
  bool string(json::string_t& v) {
    return Scalar(true, [&v] { return v; });
  }
  bool binary(json::binary_t& /*v*/) { return false; }
  bool start_object(size_t /*n*/) { return Open(/*object=*/true); }
  bool start_array(size_t /*n*/) { return Open(/*object=*/false); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool key(json::string_t& k) {
    if (stack_.empty() || !stack_.back().object || DepthExceeded(stack_.size())) return false;
    Frame& f = stack_.back();
    if (f.keys.size() >= kMaxStreamedKeysPerObject) return false;
    for (const std::string& seen : f.keys) {
      if (seen == k) return false;  // duplicate key: the reference path refuses the body
    }
    f.keys.push_back(k);
    return true;
  }
  bool parse_error(size_t /*pos*/, const std::string& /*token*/,
                   const nlohmann::detail::exception& /*e*/) {
    return false;
  }

  // Found returns the target's value once the whole body was read cleanly.
  const std::optional<std::string>& found() const { return found_; }

 private:
  static std::string NoValue() { return {}; }

  struct Frame {
    bool object = false;
    bool on_path = false;
    size_t next_index = 0;
    std::vector<std::string> keys;
  };

  // The reference parser's callback is told the depth of every event; a depth over the limit is
  // refused. Its depths: a container's start at the number of containers already open, a key or
  // a scalar inside n open containers at n, a container's end at n - 1.
  static bool DepthExceeded(size_t depth) {
    return depth > static_cast<size_t>(limits::kMaxJsonDepth);
  }

  // Position reports whether the value about to start is on the pointer's path, and whether it
  // is the target; it advances the enclosing array's index.
  std::pair<bool, bool> Position() {
    const size_t n = stack_.size();
    bool matched = true;
    if (n > 0) {
      Frame& parent = stack_.back();
      if (parent.object) {
        matched =
            parent.on_path && !parent.keys.empty() && parent.keys.back() == tokens_[n - 1].name;
      } else {
        const size_t i = parent.next_index++;
        matched = parent.on_path && tokens_[n - 1].index == i;
      }
    }
    if (!matched || n > tokens_.size()) return {false, false};
    return {n < tokens_.size(), n == tokens_.size()};
  }

  // Scalar takes the value lazily: only the target's is ever turned into a string.
  template <typename Value>
  bool Scalar(bool usable, const Value& value) {
    if (DepthExceeded(stack_.size())) return false;
    const auto [on_path, target] = Position();
    (void)on_path;
    if (target) {
      if (!usable) return false;  // null, bool, float: the reference path words the refusal
      found_ = value();
    }
    return true;
  }

  bool Open(bool object) {
    if (DepthExceeded(stack_.size())) return false;
    const auto [on_path, target] = Position();
    if (target) return false;  // an object or array is not a key value
    Frame f;
    f.object = object;
    f.on_path = on_path;
    stack_.push_back(std::move(f));
    return true;
  }

  bool Close() {
    if (stack_.empty() || DepthExceeded(stack_.size() - 1)) return false;
    stack_.pop_back();
    return true;
  }

  const std::vector<PointerToken>& tokens_;
  std::vector<Frame> stack_;
  std::optional<std::string> found_;
};

}  // namespace

Result<std::string> ExtractBusinessKey(std::string_view raw_body, std::string_view pointer) {
  // The streaming pass answers only a clean success; every refusal, and anything unusual, is
  // decided and worded by the reference path (the differential fuzz target holds them equal).
  if (std::optional<std::vector<PointerToken>> tokens = SplitPointer(pointer)) {
    Extractor sax(*tokens);
    const bool clean =
        nlohmann::json::sax_parse(raw_body.begin(), raw_body.end(), &sax,
                                  nlohmann::json::input_format_t::json, /*strict=*/true,
                                  /*ignore_comments=*/false);
    if (clean && sax.found() && !sax.found()->empty() &&
        sax.found()->size() <= limits::kMaxBusinessKeyBytes) {
      return *sax.found();
    }
  }
  return ExtractBusinessKeyReference(raw_body, pointer);
}

Result<std::string> ExtractBusinessKeyReference(std::string_view raw_body,
                                                std::string_view pointer) {
  const std::string where = "business key '" + std::string(pointer) + "'";
  auto doc = ParseJsonStrict(raw_body, Reason::kIdempotencyKeyMissing, "webhook body");
  if (!doc.ok())
    return Status(Reason::kIdempotencyKeyMissing, where + ": " + doc.error().message());
  std::string value;
  try {
    const nlohmann::json::json_pointer ptr{std::string(pointer)};
    if (!doc->contains(ptr))
      return Status(Reason::kIdempotencyKeyMissing, where + " is absent from the body");
    const nlohmann::json& v = doc->at(ptr);
    if (v.is_string()) {
      value = v.get<std::string>();
    } else if (v.is_number_integer()) {  // signed or unsigned; never a float
      value = v.dump();
    } else {
      return Status(Reason::kIdempotencyKeyMissing,
                    where + " must be a string or an integer, found " + std::string(v.type_name()));
    }
  } catch (const nlohmann::json::exception& e) {
    return Status(Reason::kIdempotencyKeyMissing, where + " cannot be evaluated: " + e.what());
  }
  if (value.empty()) {
    // An empty key would make every such event one event (level 1) — refused, not keyed on.
    return Status(Reason::kIdempotencyKeyMissing, where + " is an empty string");
  }
  if (value.size() > limits::kMaxBusinessKeyBytes) {
    return Status(
        Reason::kIdempotencyKeyMissing,
        where + " is longer than " + std::to_string(limits::kMaxBusinessKeyBytes) + " bytes");
  }
  return value;
}

}  // namespace clawguard::host
