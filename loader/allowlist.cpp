// allowlist.cpp — see allowlist.h.
#include "allowlist.h"

#include <sodium.h>

#include <cstring>
#include <mutex>
#include <set>
#include <vector>

#include "clawguard/bundle.h"
#include "clawguard/encoding.h"
#include "clawguard/file_io.h"
#include "clawguard/limits.h"
#include "clawguard/secret_bytes.h"
#include "clawguard/semver.h"
#include "clawguard/strict_yaml.h"
#include "x509_util.h"

namespace clawguard {

// Record is one fixed-size allowlist entry; the text fields are NUL-padded.
struct Allowlist::Record {
  char name[kAllowlistNameMax + 1];
  char version[kAllowlistVersionMax + 1];
  unsigned char digest[32];
};

namespace {

bool SodiumReady() {
  static const bool ok = sodium_init() >= 0;  // 0 first time, 1 when already initialised
  return ok;
}

// CheckAllowlistSigner judges the pinned signer certificate the way a package signer is judged,
// except for the chain (the pin is the trust anchor): valid now by |clock|, not revoked by
// certificate digest or key, an end entity allowed to sign. Every refusal is kAllowlistInvalid.
Status CheckAllowlistSigner(X509* signer, const std::string& keyid, const TrustPolicy& policy,
                            const Clock& clock) {
  auto fail = [](const std::string& why) {
    return Status(Reason::kAllowlistInvalid, "the pinned allowlist signer " + why);
  };
  const int64_t now = clock.NowSeconds();
  // get0: both times are owned by the certificate.
  const auto not_before = x509util::AsnTimeToUnix(X509_get0_notBefore(signer));
  const auto not_after = x509util::AsnTimeToUnix(X509_get0_notAfter(signer));
  if (!not_before || !not_after) return fail("certificate has an unreadable validity period");
  if (now < *not_before) {
    return fail("certificate is not valid yet: notBefore " + FormatRfc3339Utc(*not_before) +
                ", now " + FormatRfc3339Utc(now));
  }
  if (now > *not_after) {
    return fail("certificate has expired: notAfter " + FormatRfc3339Utc(*not_after) + ", now " +
                FormatRfc3339Utc(now) +
                "; pin a current certificate in trust.yaml allowlist_signer");
  }
  const auto cert_sha = x509util::Sha256HexOfCert(signer);
  if (!cert_sha.ok()) {
    return fail("certificate cannot be checked against revoked.certificates: " +
                cert_sha.error().message());
  }
  if (policy.revoked_certificates().count(*cert_sha) != 0) {
    return fail("certificate " + *cert_sha +
                " is listed in the trust policy's revoked.certificates");
  }
  auto listed = x509util::RevokedKeyEntry(signer, policy.revoked_keys());
  if (!listed)
    return fail("key cannot be checked against revoked.keys: " + listed.error().message());
  if (*listed) {
    return fail(
        "key " + keyid + " is listed in the trust policy's revoked.keys" +
        (**listed == keyid ? std::string() : " (as " + **listed + ", another encoding of it)"));
  }
  // The code-signing leaf profile applies (keyUsage digitalSignature, not a CA, an EKU that is
  // there lists codeSigning); an EKU-less pinned certificate is not restricted (its pin trusts it).
  if (Status s =
          x509util::CheckCodeSigningLeaf(signer, x509util::EkuRule::kIfPresent, "its certificate");
      !s.ok()) {
    return fail("is refused: " + s.message());
  }
  return Status::Ok();
}

// VerifyAllowlistSignature: cheap checks, then the signature, then the signer's certificate (so
// that bytes an attacker wrote never choose the message).
Status VerifyAllowlistSignature(const std::string& path, const std::string& bytes,
                                const TrustPolicy& policy, const Clock& clock) {
  X509* signer = policy.allowlist_signer();
  const std::string sig_path = path + ".sig";
  auto sig_bytes = ReadFileBounded(sig_path, limits::kMaxBundle);
  if (!sig_bytes) {
    return Status(Reason::kAllowlistInvalid,
                  "the trust policy requires a signed allowlist but '" + sig_path +
                      "' cannot be read: " + sig_bytes.error().message());
  }
  auto bundle = ParseBundle(*sig_bytes);
  if (!bundle)
    return Status(Reason::kAllowlistInvalid, "'" + sig_path + "': " + bundle.error().message());
  if (bundle->payload_type != kAllowlistPayloadType) {
    return Status(Reason::kAllowlistInvalid, "'" + sig_path + "': payloadType is '" +
                                                 bundle->payload_type + "', expected '" +
                                                 std::string(kAllowlistPayloadType) + "'");
  }
  if (bundle->payload.size() != bytes.size() || !ConstantTimeEquals(bundle->payload, bytes)) {
    return Status(Reason::kAllowlistInvalid,
                  "'" + sig_path + "' signs other bytes than '" + path + "'");
  }
  // get0: the key is owned by the pinned certificate (owned by the trust policy).
  EVP_PKEY* key = X509_get0_pubkey(signer);
  if (key == nullptr)
    return Status(Reason::kAllowlistInvalid,
                  "allowlist signer key unreadable: " + ossl::GetSslErrors());
  auto keyid = KeyIdOf(key);
  if (!keyid)
    return Status(Reason::kAllowlistInvalid,
                  "the pinned allowlist signer's key: " + keyid.error().message());
  if (auto alg = AlgorithmOfKey(key); !alg) {
    return Status(Reason::kAllowlistInvalid,
                  "the pinned allowlist signer's key: " + alg.error().message());
  }
  const std::string pae = Pae(bundle->payload_type, bundle->payload);
  bool verified = false;
  std::string last = "no signature by the pinned allowlist signer (keyid " + *keyid + ")";
  for (const auto& s : bundle->signatures) {
    if (s.keyid != *keyid) continue;
    Status v = VerifySignature(key, pae, s.sig);
    if (v.ok()) {
      verified = true;
      break;
    }
    last = v.message();
  }
  if (!verified) return Status(Reason::kAllowlistInvalid, "'" + sig_path + "': " + last);
  return CheckAllowlistSigner(signer, *keyid, policy, clock);
}

struct Entry {
  std::string name, version;
  std::string digest;  // 32 raw bytes
};

}  // namespace

Result<std::unique_ptr<Allowlist>> Allowlist::Load(const std::string& path,
                                                   const TrustPolicy& policy, Ledger* ledger,
                                                   const Clock& clock) {
  if (!SodiumReady()) return Status(Reason::kInternal, "sodium_init failed");
  auto text = ReadFileBounded(path, limits::kMaxPolicyFile);
  if (!text) return Status(Reason::kAllowlistInvalid, "allowlist: " + text.error().message());
  if (policy.allowlist_signer() != nullptr) {
    CLAWGUARD_RETURN_IF_ERROR(VerifyAllowlistSignature(path, *text, policy, clock));
  }
  const Reason R = Reason::kAllowlistInvalid;
  CLAWGUARD_ASSIGN_OR_RETURN(YamlDoc doc, ParseYamlStrict(*text, path, R));
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap top, YamlMap::Create(doc.root, path, "", R));
  CLAWGUARD_ASSIGN_OR_RETURN(std::string schema, top.String("schema"));
  if (schema != kAllowlistSchema) {
    return top.Error(doc.root["schema"], "schema",
                     "expected '" + std::string(kAllowlistSchema) + "'");
  }
  CLAWGUARD_ASSIGN_OR_RETURN(int64_t version, top.Int("version", 1, INT64_MAX));
  CLAWGUARD_ASSIGN_OR_RETURN(std::string expires_text, top.String("expires"));
  auto expires = ParseRfc3339Utc(expires_text);
  if (!expires)
    return top.Error(doc.root["expires"], "expires",
                     "expected YYYY-MM-DDTHH:MM:SSZ, found '" + expires_text + "'");
  CLAWGUARD_ASSIGN_OR_RETURN(YAML::Node plugins, top.Node("plugins"));
  if (!plugins.IsSequence())
    return top.Error(plugins, "plugins", "expected a list of {name, version, sha256}");
  if (plugins.size() > limits::kMaxAllowlistEntries)
    return top.Error(plugins, "plugins", "too many entries");
  std::vector<Entry> entries;
  std::set<std::pair<std::string, std::string>> seen;
  for (size_t i = 0; i < plugins.size(); ++i) {
    CLAWGUARD_ASSIGN_OR_RETURN(
        YamlMap m, YamlMap::Create(plugins[i], path, "plugins[" + std::to_string(i) + "]", R));
    Entry e;
    CLAWGUARD_ASSIGN_OR_RETURN(e.name, m.String("name"));
    CLAWGUARD_ASSIGN_OR_RETURN(e.version, m.String("version"));
    CLAWGUARD_ASSIGN_OR_RETURN(std::string hex, m.String("sha256"));
    CLAWGUARD_RETURN_IF_ERROR(m.Finish());
    if (e.name.empty() || e.name.size() > kAllowlistNameMax)
      return m.Error(plugins[i]["name"], "name", "expected 1-64 characters");
    if (e.version.size() > kAllowlistVersionMax || !ParseSemVer(e.version)) {
      return m.Error(plugins[i]["version"], "version",
                     "expected a SemVer version without build metadata");
    }
    if (!IsLowerHex(hex, 64))
      return m.Error(plugins[i]["sha256"], "sha256", "expected 64 lowercase hex characters");
    e.digest = *HexDecode(hex);
    if (!seen.insert({e.name, e.version}).second) {
      return m.Error(plugins[i], "", "duplicate entry for " + e.name + " " + e.version);
    }
    entries.push_back(std::move(e));
  }
  CLAWGUARD_RETURN_IF_ERROR(top.Finish());

  // The allowlist floor is the highest allowlist row of the ledger's chain, read only from a chain
  // that verifies (deleting or lowering the row breaks the chain or the loader's anchor).
  bool ledger_checked = false;
  if (ledger != nullptr) {
    auto highest = ReadAllowlistFloor(*ledger);
    if (!highest) return highest.error();
    if (*highest && version < **highest) {
      return Status(R, path + ": allowlist version " + std::to_string(version) +
                           " is lower than version " + std::to_string(**highest) +
                           " recorded in the ledger (a rollback of the allowlist)");
    }
    ledger_checked = true;
  }

  const size_t n = entries.size();
  Records owner(static_cast<Record*>(sodium_allocarray(n == 0 ? 1 : n, sizeof(Record))));
  if (owner == nullptr)
    return Status(Reason::kInternal, "sodium_allocarray failed for the allowlist");
  Record* records = owner.get();
  std::memset(records, 0, (n == 0 ? 1 : n) * sizeof(Record));
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(records[i].name, entries[i].name.data(), entries[i].name.size());
    std::memcpy(records[i].version, entries[i].version.data(), entries[i].version.size());
    std::memcpy(records[i].digest, entries[i].digest.data(), 32);
  }
  if (sodium_mprotect_readonly(records) != 0) {
    return Status(Reason::kInternal, "sodium_mprotect_readonly failed for the allowlist");
  }
  const bool expired = *expires <= clock.NowSeconds();
  return std::unique_ptr<Allowlist>(new Allowlist(std::move(owner), n, version, *expires, expired,
                                                  ledger_checked, Sha256Hex(*text)));
}

void Allowlist::SodiumFree::operator()(void* p) const { sodium_free(p); }

Status Allowlist::Lookup(const std::string& name, const std::string& version,
                         const Sha256Digest& digest) const {
  if (name.size() <= kAllowlistNameMax && version.size() <= kAllowlistVersionMax) {
    Record key{};
    std::memcpy(key.name, name.data(), name.size());
    std::memcpy(key.version, version.data(), version.size());
    for (size_t i = 0; i < count_; ++i) {
      const Record& r = records_.get()[i];
      if (std::memcmp(r.name, key.name, sizeof(key.name)) != 0) continue;
      if (std::memcmp(r.version, key.version, sizeof(key.version)) != 0) continue;
      if (sodium_memcmp(r.digest, digest.data(), 32) == 0) return Status::Ok();
      return Status(
          Reason::kNotAllowlisted,
          name + " " + version + " is allowlisted with another sha256 than " + DigestHex(digest));
    }
  }
  return Status(Reason::kNotAllowlisted, name + " " + version + " (sha256 " + DigestHex(digest) +
                                             ") is not in the allowlist");
}

}  // namespace clawguard
