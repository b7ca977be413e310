// manifest.h — the plugin manifest (manifest.yaml, schema clawguard/plugin/v1).
//
// ParseManifest reads strictly (strict_yaml.h) and validates every field of ARCHITECTURE.md
// "Plugin package": name [a-z0-9][a-z0-9-]{0,63}; version SemVer 2.0 without build metadata;
// publisher; abi ≥ 1; entry listed in files; files with canonical paths and optional
// "sha256:<64 hex>"; capabilities.erp as "METHOD /path/{name}" templates; webhooks routes.
// Every refusal is Reason::kManifestInvalid with file:line and a fix. Thread-compatible.
#ifndef CLAWGUARD_MANIFEST_H_
#define CLAWGUARD_MANIFEST_H_

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/error.h"

namespace clawguard {

inline constexpr std::string_view kManifestSchema = "clawguard/plugin/v1";
inline constexpr std::string_view kManifestFileName = "manifest.yaml";

struct WebhookRouteSpec {
  std::string route;                                   // e.g. "order.created"
  int level = 2;                                       // 1, 2 or 3
  std::optional<std::string> business_key;             // RFC 6901 JSON Pointer
  std::optional<std::chrono::milliseconds> retention;  // may only raise the host's
  // retention_text is the retention as written ("7d"): ManifestToJson and RenderManifestYaml
  // give it back unchanged, so the predicate matches the file. Set whenever retention is.
  std::optional<std::string> retention_text;

  friend bool operator==(const WebhookRouteSpec&, const WebhookRouteSpec&) = default;
};

struct Manifest {
  std::string name;
  std::string version;
  std::string publisher;
  int64_t abi = 0;
  std::string entry;
  // path → "sha256:<hex>" or nullopt (pack fills it in). Sorted by path (std::map).
  std::map<std::string, std::optional<std::string>> files;
  std::vector<std::string> erp_capabilities;  // "POST /orders/{id}/fulfil", in file order
  std::vector<WebhookRouteSpec> webhooks;     // in file order

  friend bool operator==(const Manifest&, const Manifest&) = default;
};

// ParseManifest parses and validates manifest text. |source| names it in messages.
Result<Manifest> ParseManifest(std::string_view yaml_text, const std::string& source);

// ManifestToJson renders the manifest as the predicate's "manifest" object (deterministic).
nlohmann::json ManifestToJson(const Manifest& m);

// RenderManifestYaml writes the manifest as YAML (deterministic; used by pack after filling
// in digests). ParseManifest(RenderManifestYaml(m)) == m.
std::string RenderManifestYaml(const Manifest& m);

// IsCanonicalPath: relative, '/'-separated, no '.', '..' or empty segments, no backslash,
// no NUL or control characters, at most limits::kMaxPathLength bytes.
bool IsCanonicalPath(std::string_view path);
// IsValidPluginName: [a-z0-9][a-z0-9-]{0,63}.
bool IsValidPluginName(std::string_view name);
// IsValidErpCapability: "METHOD /path" with METHOD one of GET, POST, PUT, PATCH, DELETE and each
// path segment a literal [A-Za-z0-9_~.-]+ (not "." or "..") or a "{name}" with [a-z_][a-z0-9_]*.
// On failure, |why| (if given) says what is wrong.
bool IsValidErpCapability(std::string_view capability, std::string* why = nullptr);
// IsValidJsonPointer: RFC 6901 — "" or "/"-prefixed reference tokens; "~" only as "~0" or "~1".
bool IsValidJsonPointer(std::string_view pointer);
// PackageFileName returns "NAME-VERSION.claw", the package file name pack writes.
std::string PackageFileName(const Manifest& m);

}  // namespace clawguard

#endif  // CLAWGUARD_MANIFEST_H_
