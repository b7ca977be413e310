// allowlist.h — Allowlist: allowlist.yaml (schema clawguard/allowlist/v1), read strictly,
// optionally signed (allowlist.yaml.sig), its entries kept in libsodium guarded memory.
//
// Allowlist::Load reads the file (≤ limits::kMaxPolicyFile) and, when the trust policy has an
// allowlist_signer, requires allowlist.yaml.sig beside it: a bundle with payloadType
// application/vnd.clawguard.allowlist+yaml whose payload is exactly the file's bytes, signed by
// the pinned signer certificate's key (found by its canonical keyid) → else kAllowlistInvalid.
// Once the signature holds, the pinned certificate is judged like a package signer's leaf
// except for the chain (the pin is its trust anchor): valid now by |clock| (notBefore ≤ now ≤
// notAfter), neither its DER sha256 in revoked.certificates nor its key in revoked.keys
// (canonical keyid or the SPKI as encoded), keyUsage digitalSignature when present, not a CA,
// an extendedKeyUsage that is present lists codeSigning → else kAllowlistInvalid saying which.
// These are never relaxed in audit mode. Any parse error is kAllowlistInvalid (file:line). The
// version is compared with the allowlist floor of the ledger's verified chain when a ledger is
// given (ReadAllowlistFloor; lower → kAllowlistInvalid, a chain that does not verify →
// kLedgerTampered); expiry is reported by expired(), so that the caller can relax it in audit
// mode. bytes_sha256() is what the ledger's allowlist row records.
//
// Entries are fixed-size records in sodium_malloc'd memory made read-only after loading
// (sodium_mprotect_readonly), freed with sodium_free. Lookup compares the digest with
// sodium_memcmp. Thread-safe once created.
#ifndef CLAWGUARD_LOADER_ALLOWLIST_H_
#define CLAWGUARD_LOADER_ALLOWLIST_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "clawguard/clock.h"
#include "clawguard/error.h"
#include "clawguard/sha256.h"
#include "clawguard/store/ledger.h"
#include "trust_policy.h"

namespace clawguard {

inline constexpr std::string_view kAllowlistSchema = "clawguard/allowlist/v1";
inline constexpr size_t kAllowlistNameMax = 64;      // plugin name bound ([a-z0-9-]{1,64})
inline constexpr size_t kAllowlistVersionMax = 128;  // SemVer text bound

class Allowlist {
 public:
  // Load reads |path| (and |path|.sig when |policy| requires a signer); |ledger| may be null
  // (the version check is then skipped, ledger_checked() false).
  static Result<std::unique_ptr<Allowlist>> Load(const std::string& path, const TrustPolicy& policy,
                                                 Ledger* ledger, const Clock& clock);
  Allowlist(const Allowlist&) = delete;
  Allowlist& operator=(const Allowlist&) = delete;

  int64_t version() const { return version_; }
  int64_t expires() const { return expires_; }
  bool expired() const { return expired_; }
  bool ledger_checked() const { return ledger_checked_; }
  // bytes_sha256 is the lowercase hex SHA-256 of the allowlist file's bytes as read.
  const std::string& bytes_sha256() const { return bytes_sha256_; }
  size_t size() const { return count_; }

  // Lookup returns Ok when (name, version, digest) is listed, else kNotAllowlisted.
  Status Lookup(const std::string& name, const std::string& version,
                const Sha256Digest& digest) const;

 private:
  struct Record;
  // SodiumFree releases memory from sodium_malloc/sodium_allocarray (sodium_free).
  struct SodiumFree {
    void operator()(void* p) const;
  };
  using Records = std::unique_ptr<Record, SodiumFree>;
  Allowlist(Records records, size_t count, int64_t version, int64_t expires, bool expired,
            bool ledger_checked, std::string bytes_sha256)
      : records_(std::move(records)),
        count_(count),
        version_(version),
        expires_(expires),
        expired_(expired),
        ledger_checked_(ledger_checked),
        bytes_sha256_(std::move(bytes_sha256)) {}

  const Records records_;  // sodium_allocarray'd array of count_ (at least one) records, read-only
  const size_t count_;
  const int64_t version_;
  const int64_t expires_;
  const bool expired_;
  const bool ledger_checked_;
  const std::string bytes_sha256_;
};

}  // namespace clawguard

#endif  // CLAWGUARD_LOADER_ALLOWLIST_H_
