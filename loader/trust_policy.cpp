// trust_policy.cpp — strict reading of trust.yaml (see trust_policy.h).
#include "trust_policy.h"

#include <fnmatch.h>

#include <filesystem>

#include "clawguard/encoding.h"
#include "clawguard/file_io.h"
#include "clawguard/limits.h"
#include "clawguard/strict_yaml.h"
#include "x509_util.h"

namespace clawguard {

std::string_view PolicyModeName(PolicyMode m) {
  return m == PolicyMode::kAudit ? "audit" : "enforce";
}

struct TrustPolicy::Parts {
  std::string path;
  PolicyMode mode = PolicyMode::kEnforce;
  std::vector<ossl::UniquePtr<X509>> roots;
  std::vector<ossl::UniquePtr<X509_CRL>> crls;
  int64_t threshold = 1;
  std::set<std::string> revoked_certs, revoked_keys;
  ossl::UniquePtr<X509> allowlist_signer;
  bool rollback_allowed = false;
  TrustLimits limits;
  std::set<std::string> allowed_needed;
  std::map<std::string, std::vector<std::string>> publishers;
};

TrustPolicy::TrustPolicy(Parts&& p)
    : path_(std::move(p.path)),
      mode_(p.mode),
      roots_(std::move(p.roots)),
      crls_(std::move(p.crls)),
      threshold_(p.threshold),
      revoked_certs_(std::move(p.revoked_certs)),
      revoked_keys_(std::move(p.revoked_keys)),
      allowlist_signer_(std::move(p.allowlist_signer)),
      rollback_allowed_(p.rollback_allowed),
      limits_(p.limits),
      allowed_needed_(std::move(p.allowed_needed)),
      publishers_(std::move(p.publishers)) {}

bool TrustPolicy::PublisherMaySign(const std::string& publisher, const std::string& name) const {
  auto it = publishers_.find(publisher);
  if (it == publishers_.end()) return false;
  for (const auto& glob : it->second) {
    // Plugin names hold no '/' or leading '.', so FNM_PATHNAME/FNM_PERIOD change nothing.
    if (::fnmatch(glob.c_str(), name.c_str(), 0) == 0) return true;
  }
  return false;
}

namespace {

namespace fs = std::filesystem;

std::string Resolve(const fs::path& base, const std::string& p) {
  fs::path path(p);
  return (path.is_absolute() ? path : base / path).lexically_normal().string();
}

// ReadStringList reads a sequence of scalars at |key| (absent or null → empty).
Result<std::vector<std::pair<std::string, YAML::Node>>> ReadStringList(YamlMap& m,
                                                                       const std::string& key) {
  std::vector<std::pair<std::string, YAML::Node>> out;
  auto n = m.OptionalNode(key);
  if (!n) return out;
  if (!n->IsSequence()) return m.Error(*n, key, "expected a list of strings");
  for (const auto& item : *n) {
    if (!item.IsScalar()) return m.Error(item, key, "expected a string in this list");
    out.emplace_back(item.Scalar(), item);
  }
  return out;
}

// ReadPinnedCert reads {file, sha256}: the file's first certificate DER must hash to the pin.
Result<ossl::UniquePtr<X509>> ReadPinnedCert(const YAML::Node& node, const std::string& source,
                                             const std::string& path, const fs::path& base) {
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap m, YamlMap::Create(node, source, path));
  CLAWGUARD_ASSIGN_OR_RETURN(std::string file, m.String("file"));
  CLAWGUARD_ASSIGN_OR_RETURN(std::string pin, m.String("sha256"));
  CLAWGUARD_RETURN_IF_ERROR(m.Finish());
  if (!IsLowerHex(pin, 64)) {
    return m.Error(node["sha256"], "sha256",
                   "expected 64 lowercase hex characters (sha256 of the certificate DER)");
  }
  const std::string full = Resolve(base, file);
  auto bytes = ReadFileBounded(full, limits::kMaxCertFile);
  if (!bytes)
    return m.Error(node["file"], "file", "cannot read the certificate: " + bytes.error().message());
  auto certs = x509util::ReadPemCertificates(*bytes, Reason::kConfigInvalid, full);
  if (!certs) return m.Error(node["file"], "file", certs.error().message());
  if (certs->size() != 1) {
    return m.Error(node["file"], "file",
                   "expected exactly one certificate in '" + full + "', found " +
                       std::to_string(certs->size()));
  }
  const auto actual = x509util::Sha256HexOfCert((*certs)[0].get());
  if (!actual.ok()) {
    return actual.error().WithContext("the certificate in '" + full +
                                      "', to compare with its sha256 pin");
  }
  if (*actual != pin) {
    return m.Error(node["sha256"], "sha256",
                   "pin mismatch for '" + full + "': the certificate's DER sha256 is " + *actual +
                       "; check the file or update the pin");
  }
  return std::move((*certs)[0]);
}

Status ReadLimits(YamlMap& top, TrustLimits& l) {
  l = {limits::kDefaultMaxPackage, limits::kDefaultMaxUnpacked, limits::kDefaultMaxEntries,
       limits::kDefaultMaxRatio};
  auto n = top.OptionalNode("limits");
  if (!n) return Status::Ok();
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap m, YamlMap::Create(*n, top.source(), "limits"));
  constexpr uint64_t kMaxSize = 64 * limits::kGiB;
  if (m.Has("max_package")) {
    CLAWGUARD_ASSIGN_OR_RETURN(l.max_package, m.Size("max_package", kMaxSize));
  }
  if (m.Has("max_unpacked")) {
    CLAWGUARD_ASSIGN_OR_RETURN(l.max_unpacked, m.Size("max_unpacked", kMaxSize));
  }
  if (m.Has("max_entries")) {
    CLAWGUARD_ASSIGN_OR_RETURN(int64_t v, m.Int("max_entries", 2, 1'000'000));
    l.max_entries = static_cast<uint64_t>(v);
  }
  if (m.Has("max_ratio")) {
    CLAWGUARD_ASSIGN_OR_RETURN(int64_t v, m.Int("max_ratio", 1, 1'000'000));
    l.max_ratio = static_cast<uint64_t>(v);
  }
  CLAWGUARD_RETURN_IF_ERROR(m.Finish());
  if (l.max_package == 0 || l.max_unpacked == 0) {
    return m.Error(*n, "", "max_package and max_unpacked must be above 0");
  }
  return Status::Ok();
}

Status ReadRevoked(YamlMap& top, const fs::path& base, const Clock& clock,
                   std::set<std::string>& certs, std::set<std::string>& keys,
                   std::vector<ossl::UniquePtr<X509_CRL>>& crls) {
  auto n = top.OptionalNode("revoked");
  if (!n) return Status::Ok();
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap m, YamlMap::Create(*n, top.source(), "revoked"));
  for (const char* key : {"certificates", "keys"}) {
    CLAWGUARD_ASSIGN_OR_RETURN(auto list, ReadStringList(m, key));
    for (const auto& [v, node] : list) {
      if (!IsLowerHex(v, 64))
        return m.Error(node, key, "expected 64 lowercase hex characters, found '" + v + "'");
      (std::string_view(key) == "keys" ? keys : certs).insert(v);
    }
  }
  CLAWGUARD_ASSIGN_OR_RETURN(auto crl_files, ReadStringList(m, "crls"));
  for (const auto& [file, node] : crl_files) {
    const std::string full = Resolve(base, file);
    auto bytes = ReadFileBounded(full, limits::kMaxCertFile);
    if (!bytes) return m.Error(node, "crls", "cannot read the CRL: " + bytes.error().message());
    auto crl = x509util::ReadCrl(*bytes, Reason::kConfigInvalid, full);
    if (!crl) return m.Error(node, "crls", crl.error().message());
    // get0: the times stay owned by the CRL.
    auto next = x509util::AsnTimeToUnix(X509_CRL_get0_nextUpdate(crl->get()));
    if (!next)
      return m.Error(node, "crls",
                     "CRL '" + full + "' has no nextUpdate; it cannot be known current");
    if (*next <= clock.NowSeconds()) {
      return m.Error(node, "crls",
                     "CRL '" + full + "' is stale: nextUpdate " + FormatRfc3339Utc(*next) +
                         " is in the past; fetch a current CRL");
    }
    crls.push_back(std::move(*crl));
  }
  return m.Finish();
}

Status ReadPublishers(YamlMap& top, std::map<std::string, std::vector<std::string>>& out) {
  CLAWGUARD_ASSIGN_OR_RETURN(YAML::Node n, top.Node("publishers"));
  if (!n.IsMap())
    return top.Error(n, "publishers", "expected a mapping of subject O → list of name globs");
  for (auto it = n.begin(); it != n.end(); ++it) {
    // WARNING: copy the nodes out of the iterator: `it->second` is a member of a temporary proxy,
    // and a range-for over it dangles (ASan: stack-use-after-scope).
    const YAML::Node key = it->first;
    const YAML::Node globs = it->second;
    const std::string o = key.Scalar();
    if (o.empty()) return top.Error(key, "publishers", "a publisher (subject O) must not be empty");
    if (!globs.IsSequence() || globs.size() == 0) {
      return top.Error(globs, "publishers." + o,
                       "expected a non-empty list of name globs such as [\"acme-*\"]");
    }
    for (const auto& g : globs) {
      if (!g.IsScalar() || g.Scalar().empty())
        return top.Error(g, "publishers." + o, "expected a glob string");
      out[o].push_back(g.Scalar());
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<TrustPolicy>> TrustPolicy::Load(const std::string& path,
                                                       const Clock& clock) {
  auto text = ReadFileBounded(path, limits::kMaxPolicyFile);
  if (!text) return Status(Reason::kConfigInvalid, "trust policy: " + text.error().message());
  CLAWGUARD_ASSIGN_OR_RETURN(YamlDoc doc, ParseYamlStrict(*text, path));
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap top, YamlMap::Create(doc.root, path, ""));
  const fs::path base =
      fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  Parts p;
  p.path = path;

  CLAWGUARD_ASSIGN_OR_RETURN(std::string schema, top.String("schema"));
  if (schema != kTrustSchema) {
    return top.Error(doc.root["schema"], "schema",
                     "expected '" + std::string(kTrustSchema) + "', found '" + schema + "'");
  }
  CLAWGUARD_ASSIGN_OR_RETURN(std::string mode, top.Enum("mode", {"enforce", "audit"}));
  p.mode = mode == "audit" ? PolicyMode::kAudit : PolicyMode::kEnforce;

  CLAWGUARD_ASSIGN_OR_RETURN(YAML::Node roots, top.Node("roots"));
  if (!roots.IsSequence() || roots.size() == 0) {
    return top.Error(roots, "roots", "expected a non-empty list of {file, sha256}");
  }
  for (size_t i = 0; i < roots.size(); ++i) {
    CLAWGUARD_ASSIGN_OR_RETURN(
        auto cert, ReadPinnedCert(roots[i], path, "roots[" + std::to_string(i) + "]", base));
    p.roots.push_back(std::move(cert));
  }
  CLAWGUARD_ASSIGN_OR_RETURN(std::string eku, top.Enum("require_eku", {"codeSigning"}));
  (void)eku;  // the only value: the chain verifier always requires codeSigning
  CLAWGUARD_RETURN_IF_ERROR(ReadPublishers(top, p.publishers));
  CLAWGUARD_ASSIGN_OR_RETURN(p.threshold,
                             top.Int("threshold", 1, static_cast<int64_t>(limits::kMaxSignatures)));
  CLAWGUARD_RETURN_IF_ERROR(ReadRevoked(top, base, clock, p.revoked_certs, p.revoked_keys, p.crls));

  if (auto signer = top.OptionalNode("allowlist_signer")) {
    CLAWGUARD_ASSIGN_OR_RETURN(p.allowlist_signer,
                               ReadPinnedCert(*signer, path, "allowlist_signer", base));
  }
  if (top.Has("rollback")) {
    CLAWGUARD_ASSIGN_OR_RETURN(std::string rb, top.Enum("rollback", {"refuse", "allow"}));
    p.rollback_allowed = rb == "allow";
  }
  CLAWGUARD_RETURN_IF_ERROR(ReadLimits(top, p.limits));
  if (auto elf = top.OptionalNode("elf")) {
    CLAWGUARD_ASSIGN_OR_RETURN(YamlMap em, YamlMap::Create(*elf, path, "elf"));
    CLAWGUARD_ASSIGN_OR_RETURN(auto list, ReadStringList(em, "allowed_needed"));
    for (const auto& [v, node] : list) {
      // A bare name of [A-Za-z0-9._+-]: '/' makes ld.so open a path, '$' starts a dynamic string
      // token ($ORIGIN, $LIB) that expands into one.
      const bool bare = !v.empty() && v.find_first_not_of(
                                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789._+-") == std::string::npos;
      if (!bare) {
        return em.Error(
            node, "allowed_needed",
            "expected a bare soname such as libc.so.6 (letters, digits, . _ + -), found '" + v +
                "'");
      }
      p.allowed_needed.insert(v);
    }
    CLAWGUARD_RETURN_IF_ERROR(em.Finish());
  }
  CLAWGUARD_RETURN_IF_ERROR(top.Finish());
  return std::unique_ptr<TrustPolicy>(new TrustPolicy(std::move(p)));
}

}  // namespace clawguard
