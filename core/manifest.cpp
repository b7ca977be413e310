// manifest.cpp — strict reading, validation and deterministic rendering of manifest.yaml
// (ARCHITECTURE.md "Plugin package"). One file because the reader and the two writers must
// agree field by field; it is longer than 300 lines for that reason.
#include "clawguard/manifest.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <set>

#include "clawguard/encoding.h"
#include "clawguard/limits.h"
#include "clawguard/semver.h"
#include "clawguard/strict_yaml.h"

namespace clawguard {
namespace {

constexpr Reason kInvalid = Reason::kManifestInvalid;
constexpr std::string_view kDigestPrefix = "sha256:";
constexpr std::string_view kBlockStyleHint =
    "in a flow list `[...]`, `{` starts a mapping, so `erp: [POST /orders/{id}/fulfil]` is not a "
    "list of strings: write the list in block style, one `- POST /orders/{id}/fulfil` per line";

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsControl(unsigned char c) { return c < 0x20 || c == 0x7f; }

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t pos; (pos = s.find(sep, start)) != std::string_view::npos; start = pos + 1) {
    out.push_back(s.substr(start, pos - start));
  }
  out.push_back(s.substr(start));
  return out;
}

bool IsValidRoute(std::string_view r) {
  if (r.empty() || !IsLowerAlnum(r[0])) return false;
  return std::all_of(r.begin(), r.end(),
                     [](char c) { return IsLowerAlnum(c) || c == '.' || c == '_' || c == '-'; });
}

bool IsValidDigest(std::string_view d) {
  return d.substr(0, kDigestPrefix.size()) == kDigestPrefix &&
         IsLowerHex(d.substr(kDigestPrefix.size()), 64);
}

// Found names a node's kind for "expected X, found Y" messages.
std::string Found(const YAML::Node& n) {
  if (n.IsMap()) return "a mapping";
  if (n.IsSequence()) return "a list";
  if (n.IsNull()) return "null";
  return "'" + n.Scalar() + "'";
}

Result<std::string> ReadName(YamlMap& m) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::string name, m.String("name"));
  if (!IsValidPluginName(name)) {
    return m.Error(m.node()["name"], "name",
                   "expected [a-z0-9][a-z0-9-]{0,63} (lowercase letters, digits and '-'), found '" +
                       name + "'");
  }
  return name;
}

Result<std::string> ReadVersion(YamlMap& m) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::string v, m.String("version"));
  const YAML::Node n = m.node()["version"];
  if (v.find('+') != std::string::npos) {
    return m.Error(
        n, "version",
        "'" + v +
            "' carries build metadata ('+...'), which is refused: build metadata would dodge the "
            "ledger (1.4.2+a and 1.4.2+b have the same precedence); release a new version instead");
  }
  if (!ParseSemVer(v)) {
    return m.Error(n, "version",
                   "expected a SemVer 2.0 version MAJOR.MINOR.PATCH[-PRERELEASE] without leading "
                   "zeros, found '" +
                       v + "'");
  }
  return v;
}

Result<std::string> ReadPublisher(YamlMap& m) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::string p, m.String("publisher"));
  const bool printable = std::none_of(
      p.begin(), p.end(), [](char c) { return IsControl(static_cast<unsigned char>(c)); });
  // Surrounding spaces would make "acme " differ from the certificate's O=acme in a way nobody
  // sees.
  if (p.empty() || !printable || p.front() == ' ' || p.back() == ' ') {
    return m.Error(m.node()["publisher"], "publisher",
                   "expected the signing certificate's organisation (O) as printable text without "
                   "surrounding spaces, found '" +
                       p + "'");
  }
  return p;
}

Status ReadFiles(YamlMap& root, Manifest& out) {
  CLAWGUARD_ASSIGN_OR_RETURN(YAML::Node node, root.Node("files"));
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap files,
                             YamlMap::Create(node, root.source(), "files", kInvalid));
  if (node.size() == 0)
    return files.Error(node, "", "expected at least the entry library, found an empty mapping");
  if (node.size() > limits::kMaxManifestFiles) {
    return files.Error(node, "",
                       "lists " + std::to_string(node.size()) + " files; at most " +
                           std::to_string(limits::kMaxManifestFiles) + " are allowed");
  }
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string path = it->first.Scalar();
    const YAML::Node value = it->second;
    if (!IsCanonicalPath(path)) {
      return files.Error(it->first, path,
                         "expected a canonical relative path ('/'-separated, no '.', '..' or empty "
                         "segments, no '\\', no leading '/', at most " +
                             std::to_string(limits::kMaxPathLength) + " bytes), found '" + path +
                             "'");
    }
    if (path == kManifestFileName) {
      return files.Error(
          it->first, path,
          "manifest.yaml is always the package's first entry and may not be listed in files");
    }
    if (value.IsNull()) {
      out.files.emplace(path, std::nullopt);
    } else if (value.IsScalar() && IsValidDigest(value.Scalar())) {
      out.files.emplace(path, value.Scalar());
    } else {
      return files.Error(
          value, path,
          "expected null (pack fills it in) or \"sha256:<64 lowercase hex>\", found " +
              Found(value));
    }
  }
  // "lib" and "lib/x.so" cannot both be files: one would have to be a folder when extracted.
  for (auto it = out.files.begin(); it != out.files.end(); ++it) {
    auto next = std::next(it);
    if (next != out.files.end() && next->first.starts_with(it->first + "/")) {
      return files.Error(node, "",
                         "'" + it->first + "' is listed as a file and also as the folder of '" +
                             next->first + "'");
    }
  }
  return Status::Ok();
}

Status ReadCapabilities(YamlMap& root, Manifest& out) {
  auto node = root.OptionalNode("capabilities");
  if (!node) return Status::Ok();
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap caps,
                             YamlMap::Create(*node, root.source(), "capabilities", kInvalid));
  if (auto erp = caps.OptionalNode("erp")) {
    if (!erp->IsSequence()) {
      return caps.Error(*erp, "erp",
                        "expected a list of \"METHOD /path\" strings (block style, one `- ...` per "
                        "line), found " +
                            Found(*erp));
    }
    if (erp->size() > limits::kMaxCapabilities) {
      return caps.Error(*erp, "erp",
                        "lists " + std::to_string(erp->size()) + " capabilities; at most " +
                            std::to_string(limits::kMaxCapabilities) + " are allowed");
    }
    std::set<std::string> seen;
    for (size_t i = 0; i < erp->size(); ++i) {
      const YAML::Node item = (*erp)[i];
      const std::string key = "erp[" + std::to_string(i) + "]";
      if (!item.IsScalar()) {
        const std::string hint = item.IsMap() ? "; " + std::string(kBlockStyleHint) : "";
        return caps.Error(item, key,
                          "expected a string \"METHOD /path\", found " + Found(item) + hint);
      }
      std::string why;
      if (!IsValidErpCapability(item.Scalar(), &why)) {
        return caps.Error(item, key, "'" + item.Scalar() + "' is not a capability: " + why);
      }
      if (!seen.insert(item.Scalar()).second)
        return caps.Error(item, key, "'" + item.Scalar() + "' is listed twice");
      out.erp_capabilities.push_back(item.Scalar());
    }
  }
  return caps.Finish();
}

Result<WebhookRouteSpec> ReadRoute(const YAML::Node& node, const std::string& source,
                                   const std::string& path) {
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap m, YamlMap::Create(node, source, path, kInvalid));
  WebhookRouteSpec spec;
  CLAWGUARD_ASSIGN_OR_RETURN(spec.route, m.String("route"));
  if (!IsValidRoute(spec.route)) {
    return m.Error(node["route"], "route",
                   "expected [a-z0-9][a-z0-9._-]*, found '" + spec.route + "'");
  }
  CLAWGUARD_ASSIGN_OR_RETURN(YAML::Node idem_node, m.Node("idempotency"));
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap idem,
                             YamlMap::Create(idem_node, source, path + ".idempotency", kInvalid));
  CLAWGUARD_ASSIGN_OR_RETURN(std::optional<int64_t> level, idem.OptionalInt("level", 1, 3));
  spec.level = static_cast<int>(level.value_or(2));
  if (idem.OptionalNode("business_key")) {
    CLAWGUARD_ASSIGN_OR_RETURN(std::string pointer, idem.String("business_key"));
    if (!IsValidJsonPointer(pointer)) {
      return idem.Error(
          idem_node["business_key"], "business_key",
          "expected a JSON Pointer (RFC 6901) such as /order_id ('~' only as ~0 or ~1), found '" +
              pointer + "'");
    }
    spec.business_key = pointer;
  }
  if (spec.level == 1 && !spec.business_key) {
    return idem.Error(idem_node, "level",
                      "level 1 keys the event on its business key alone, so business_key (a JSON "
                      "Pointer such as /order_id) is required");
  }
  if (idem.OptionalNode("retention")) {
    CLAWGUARD_ASSIGN_OR_RETURN(spec.retention, idem.Duration("retention"));
    if (spec.retention->count() <= 0) {
      return idem.Error(idem_node["retention"], "retention",
                        "expected a positive duration such as 7d, found '" +
                            idem_node["retention"].Scalar() + "'");
    }
    spec.retention_text = idem_node["retention"].Scalar();
  }
  CLAWGUARD_RETURN_IF_ERROR(idem.Finish());
  CLAWGUARD_RETURN_IF_ERROR(m.Finish());
  return spec;
}

Status ReadWebhooks(YamlMap& root, Manifest& out) {
  auto node = root.OptionalNode("webhooks");
  if (!node) return Status::Ok();
  if (!node->IsSequence()) {
    return root.Error(*node, "webhooks",
                      "expected a list of { route, idempotency } entries, found " + Found(*node));
  }
  std::set<std::string> routes;
  for (size_t i = 0; i < node->size(); ++i) {
    const std::string path = "webhooks[" + std::to_string(i) + "]";
    CLAWGUARD_ASSIGN_OR_RETURN(WebhookRouteSpec spec, ReadRoute((*node)[i], root.source(), path));
    if (!routes.insert(spec.route).second) {
      return root.Error((*node)[i], path,
                        "route '" + spec.route + "' is declared twice; each route appears once");
    }
    out.webhooks.push_back(std::move(spec));
  }
  return Status::Ok();
}

Result<Manifest> ParseManifestChecked(std::string_view text, const std::string& source) {
  if (text.size() > limits::kMaxManifest) {
    return Status(kInvalid, source + ": manifest is " + std::to_string(text.size()) +
                                " bytes; the limit is " + std::to_string(limits::kMaxManifest));
  }
  auto doc = ParseYamlStrict(text, source, kInvalid);
  if (!doc) {
    Status s = doc.error();
    // yaml-cpp words this error several ways; make sure every flow-list `{` error says how to fix
    // it.
    const bool flow_brace =
        text.find('[') != std::string_view::npos && text.find('{') != std::string_view::npos;
    if (flow_brace && s.message().find("YAML syntax error") != std::string::npos &&
        s.message().find("block style") == std::string::npos) {
      return Status(kInvalid, s.message() + " (" + std::string(kBlockStyleHint) + ")");
    }
    return s;
  }
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap root, YamlMap::Create(doc->root, source, "", kInvalid));
  Manifest m;
  CLAWGUARD_ASSIGN_OR_RETURN(std::string schema, root.String("schema"));
  if (schema != kManifestSchema) {
    return root.Error(doc->root["schema"], "schema",
                      "expected " + std::string(kManifestSchema) + ", found '" + schema + "'");
  }
  CLAWGUARD_ASSIGN_OR_RETURN(m.name, ReadName(root));
  CLAWGUARD_ASSIGN_OR_RETURN(m.version, ReadVersion(root));
  CLAWGUARD_ASSIGN_OR_RETURN(m.publisher, ReadPublisher(root));
  CLAWGUARD_ASSIGN_OR_RETURN(m.abi, root.Int("abi", 1, UINT32_MAX));
  CLAWGUARD_ASSIGN_OR_RETURN(m.entry, root.String("entry"));
  CLAWGUARD_RETURN_IF_ERROR(ReadFiles(root, m));
  if (m.files.count(m.entry) == 0) {
    return root.Error(doc->root["entry"], "entry",
                      "'" + m.entry + "' must be one of the paths listed under files");
  }
  CLAWGUARD_RETURN_IF_ERROR(ReadCapabilities(root, m));
  CLAWGUARD_RETURN_IF_ERROR(ReadWebhooks(root, m));
  CLAWGUARD_RETURN_IF_ERROR(root.Finish());
  return m;
}

// RetentionText is the retention as written, or its value in the largest exact unit.
std::string RetentionText(const WebhookRouteSpec& w) {
  if (w.retention_text) return *w.retention_text;
  const int64_t ms = w.retention->count();
  for (auto [unit, size] :
       {std::pair{"d", 86'400'000LL}, {"h", 3'600'000LL}, {"m", 60'000LL}, {"s", 1000LL}}) {
    if (ms % size == 0) return std::to_string(ms / size) + unit;
  }
  return std::to_string(ms) + "ms";
}

// PlainIsSafe: the string reads back as the same string under YAML 1.1 and 1.2 rules when
// written unquoted (no null/bool words, no numbers, no indicators). Others are double-quoted.
bool PlainIsSafe(const std::string& s) {
  static const std::set<std::string> kSpecial = {"null", "true", "false", "yes", "no",
                                                 "on",   "off",  "y",     "n"};
  if (s.empty() || s.back() == ' ') return false;
  std::string lower = s;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (kSpecial.count(lower)) return false;
  const auto ok = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '/' ||
           c == '-' || c == '{' || c == '}' || c == '~' || c == ' ';
  };
  if (!std::all_of(s.begin(), s.end(), ok)) {
    // A ':' is plain-safe unless it ends the text or a space follows it ("sha256:9f86..." is fine).
    for (size_t i = 0; i < s.size(); ++i) {
      if (ok(s[i])) continue;
      if (s[i] != ':' || i + 1 == s.size() || s[i + 1] == ' ') return false;
    }
  }
  if (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '/') return true;
  // Digit first: only SemVer versions ("1.4.2" is no YAML number) and durations ("7d").
  return std::isdigit(static_cast<unsigned char>(s[0])) && (ParseSemVer(s) || ParseDurationText(s));
}

void EmitString(YAML::Emitter& e, const std::string& s) {
  if (PlainIsSafe(s))
    e << s;
  else
    e << YAML::DoubleQuoted << s;
}

}  // namespace

Result<Manifest> ParseManifest(std::string_view yaml_text, const std::string& source) {
  try {
    return ParseManifestChecked(yaml_text, source);
  } catch (const std::exception& e) {  // yaml-cpp node access; public APIs do not throw
    return Status(kInvalid, source + ": cannot read the manifest: " + e.what());
  }
}

bool IsCanonicalPath(std::string_view path) {
  if (path.empty() || path.size() > limits::kMaxPathLength) return false;
  if (std::any_of(path.begin(), path.end(),
                  [](char c) { return c == '\\' || IsControl(static_cast<unsigned char>(c)); })) {
    return false;
  }
  for (std::string_view seg : Split(path, '/')) {  // a leading '/' gives an empty first segment
    if (seg.empty() || seg == "." || seg == "..") return false;
  }
  return true;
}

bool IsValidPluginName(std::string_view name) {
  if (name.empty() || name.size() > 64 || !IsLowerAlnum(name[0])) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return IsLowerAlnum(c) || c == '-'; });
}

bool IsValidErpCapability(std::string_view cap, std::string* why) {
  auto fail = [why](std::string msg) {
    if (why) *why = std::move(msg);
    return false;
  };
  static const std::set<std::string_view> kMethods = {"GET", "POST", "PUT", "PATCH", "DELETE"};
  const size_t space = cap.find(' ');
  if (space == std::string_view::npos) return fail("expected \"METHOD /path\" with one space");
  const std::string_view method = cap.substr(0, space);
  const std::string_view path = cap.substr(space + 1);
  if (kMethods.count(method) == 0)
    return fail("the method must be one of GET, POST, PUT, PATCH, DELETE");
  if (path.empty() || path[0] != '/') return fail("the path must start with '/'");
  if (path.find_first_of("%?# ") != std::string_view::npos)
    return fail("the path may not contain '%', '?', '#' or spaces");
  if (path.find("//") != std::string_view::npos) return fail("the path may not contain '//'");
  std::set<std::string_view> names;
  for (std::string_view seg : Split(path.substr(1), '/')) {
    if (seg.empty()) return fail("the path has an empty segment (a trailing '/'?)");
    if (seg.front() == '{') {
      const std::string_view name = seg.substr(1, seg.size() - 2);
      const bool ok =
          seg.size() >= 3 && seg.back() == '}' &&
          (name[0] == '_' || (name[0] >= 'a' && name[0] <= 'z')) &&
          std::all_of(name.begin(), name.end(), [](char c) { return IsLowerAlnum(c) || c == '_'; });
      if (!ok)
        return fail("'" + std::string(seg) +
                    "' is not a {name} segment with name [a-z_][a-z0-9_]*");
      if (!names.insert(name).second) return fail("'{" + std::string(name) + "}' appears twice");
      continue;
    }
    const bool literal = std::all_of(seg.begin(), seg.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '~' || c == '.' ||
             c == '-';
    });
    if (!literal)
      return fail("segment '" + std::string(seg) + "' must be [A-Za-z0-9_~.-]+ or a whole {name}");
    if (seg == "." || seg == "..") return fail("'.' and '..' segments are not allowed");
  }
  return true;
}

bool IsValidJsonPointer(std::string_view p) {
  if (!p.empty() && p[0] != '/') return false;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '~' && (i + 1 >= p.size() || (p[i + 1] != '0' && p[i + 1] != '1'))) return false;
  }
  return true;
}

std::string PackageFileName(const Manifest& m) { return m.name + "-" + m.version + ".claw"; }

nlohmann::json ManifestToJson(const Manifest& m) {
  nlohmann::json files = nlohmann::json::object();
  for (const auto& [path, digest] : m.files)
    files[path] = digest ? nlohmann::json(*digest) : nlohmann::json(nullptr);
  nlohmann::json webhooks = nlohmann::json::array();
  for (const auto& w : m.webhooks) {
    nlohmann::json idem = {{"level", w.level}};
    if (w.business_key) idem["business_key"] = *w.business_key;
    if (w.retention) idem["retention"] = RetentionText(w);
    webhooks.push_back({{"route", w.route}, {"idempotency", std::move(idem)}});
  }
  return {{"schema", kManifestSchema},
          {"name", m.name},
          {"version", m.version},
          {"publisher", m.publisher},
          {"abi", m.abi},
          {"entry", m.entry},
          {"files", std::move(files)},
          {"capabilities", {{"erp", m.erp_capabilities}}},
          {"webhooks", std::move(webhooks)}};
}

std::string RenderManifestYaml(const Manifest& m) {
  YAML::Emitter e;
  e.SetIndent(2);
  e.SetNullFormat(YAML::LowerNull);
  e << YAML::BeginMap;
  e << YAML::Key << "schema" << YAML::Value << std::string(kManifestSchema);
  e << YAML::Key << "name" << YAML::Value;
  EmitString(e, m.name);
  e << YAML::Key << "version" << YAML::Value;
  EmitString(e, m.version);
  e << YAML::Key << "publisher" << YAML::Value;
  EmitString(e, m.publisher);
  e << YAML::Key << "abi" << YAML::Value << m.abi;
  e << YAML::Key << "entry" << YAML::Value;
  EmitString(e, m.entry);
  e << YAML::Key << "files" << YAML::Value << YAML::BeginMap;
  for (const auto& [path, digest] : m.files) {
    e << YAML::Key;
    EmitString(e, path);
    e << YAML::Value;
    if (digest)
      EmitString(e, *digest);
    else
      e << YAML::Null;
  }
  e << YAML::EndMap;
  if (!m.erp_capabilities.empty()) {
    // Block style always: in a flow list the `{` of a {name} segment would start a mapping.
    e << YAML::Key << "capabilities" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "erp" << YAML::Value << YAML::Block << YAML::BeginSeq;
    for (const auto& cap : m.erp_capabilities) EmitString(e, cap);
    e << YAML::EndSeq << YAML::EndMap;
  }
  if (!m.webhooks.empty()) {
    e << YAML::Key << "webhooks" << YAML::Value << YAML::Block << YAML::BeginSeq;
    for (const auto& w : m.webhooks) {
      e << YAML::BeginMap << YAML::Key << "route" << YAML::Value;
      EmitString(e, w.route);
      e << YAML::Key << "idempotency" << YAML::Value << YAML::BeginMap;
      e << YAML::Key << "level" << YAML::Value << w.level;
      if (w.business_key) {
        e << YAML::Key << "business_key" << YAML::Value;
        EmitString(e, *w.business_key);
      }
      if (w.retention) {
        e << YAML::Key << "retention" << YAML::Value;
        EmitString(e, RetentionText(w));
      }
      e << YAML::EndMap << YAML::EndMap;
    }
    e << YAML::EndSeq;
  }
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

}  // namespace clawguard
