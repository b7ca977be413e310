// strict_yaml.h — the one reader for every YAML file ClawGuard reads.
//
// ParseYamlStrict walks the event stream before building nodes: it refuses duplicate keys
// (yaml-cpp 0.7 silently keeps the first), non-scalar keys, aliases and anchors, explicit tags,
// several documents and nesting deeper than limits::kMaxYamlDepth, each with file:line.
// YamlMap then reads one mapping by its schema: typed getters refuse wrong types (`yes` or `0x10`
// are strings, never a bool or a number; a quoted "12" is not an integer), and Finish() refuses
// keys the schema does not know. Every error is kConfigInvalid (or the reason given to Create) and
// reads "FILE:LINE:COL: what was expected, what was found, how to fix it".
#ifndef CLAWGUARD_STRICT_YAML_H_
#define CLAWGUARD_STRICT_YAML_H_

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "clawguard/error.h"

namespace clawguard {

// YamlDoc is a strictly parsed document and the name it is reported under.
struct YamlDoc {
  YAML::Node root;
  std::string source;  // file name for messages
};

// ParseYamlStrict parses |text| (one document). |reason| is the Reason of every refusal.
Result<YamlDoc> ParseYamlStrict(std::string_view text, std::string source,
                                Reason reason = Reason::kConfigInvalid);

// YamlWhere renders "source:line:col" for |node| (1-based).
std::string YamlWhere(const std::string& source, const YAML::Node& node);

// YamlMap reads one mapping by its schema. Not thread-safe.
class YamlMap {
 public:
  // Create checks that |node| is a mapping. |path| names it in messages ("limits", "plugins[2]").
  static Result<YamlMap> Create(const YAML::Node& node, const std::string& source, std::string path,
                                Reason reason = Reason::kConfigInvalid);

  bool Has(const std::string& key) const;
  // Node returns the raw node of |key| (marks it known); an error if absent.
  Result<YAML::Node> Node(const std::string& key);
  // OptionalNode returns nullopt if |key| is absent or null.
  std::optional<YAML::Node> OptionalNode(const std::string& key);

  // String accepts any scalar (plain or quoted); a mapping, sequence or null is refused.
  Result<std::string> String(const std::string& key);
  Result<std::optional<std::string>> OptionalString(const std::string& key);
  // Int accepts a plain decimal integer in [min, max].
  Result<int64_t> Int(const std::string& key, int64_t min, int64_t max);
  Result<std::optional<int64_t>> OptionalInt(const std::string& key, int64_t min, int64_t max);
  // Bool accepts plain `true` or `false` only.
  Result<bool> Bool(const std::string& key);
  // Size accepts a plain integer of bytes or N{KiB,MiB,GiB}, at most |max|.
  Result<uint64_t> Size(const std::string& key, uint64_t max);
  // Duration accepts N{ms,s,m,h,d} (a plain integer is refused: the unit must be said).
  Result<std::chrono::milliseconds> Duration(const std::string& key);
  // Enum accepts one of |allowed|.
  Result<std::string> Enum(const std::string& key, const std::set<std::string>& allowed);

  // Finish refuses every key that no getter asked for.
  Status Finish() const;
  // Error makes a refusal located at |node| ("source:line:col: path.key: message").
  Status Error(const YAML::Node& node, const std::string& key, const std::string& message) const;
  const std::string& source() const { return source_; }
  const std::string& path() const { return path_; }
  const YAML::Node& node() const { return node_; }

 private:
  // YAML::Node has no move constructor; a copy shares its document.
  YamlMap(const YAML::Node& node, std::string source, std::string path, Reason reason)
      : node_(node), source_(std::move(source)), path_(std::move(path)), reason_(reason) {}
  Result<YAML::Node> Scalar(const std::string& key, const char* expected);

  YAML::Node node_;
  std::string source_;
  std::string path_;
  Reason reason_;
  std::set<std::string> known_;
};

// ScalarIsPlain is true for an unquoted scalar (tag "?").
bool ScalarIsPlain(const YAML::Node& node);
// ParseSizeText parses "16KiB", "1MiB", "1GiB" or a plain byte count.
std::optional<uint64_t> ParseSizeText(std::string_view text);
// ParseDurationText parses "250ms", "30s", "5m", "24h", "7d".
std::optional<std::chrono::milliseconds> ParseDurationText(std::string_view text);
// FormatDuration renders |d| as ParseDurationText reads it, in the largest unit that divides it
// exactly ("7d", "1023m", "250ms"; 0 is "0s").
std::string FormatDuration(std::chrono::milliseconds d);

}  // namespace clawguard

#endif  // CLAWGUARD_STRICT_YAML_H_
