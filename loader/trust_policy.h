// trust_policy.h — TrustPolicy: trust.yaml (schema clawguard/trust/v1) read strictly into an
// immutable object (ARCHITECTURE.md "Policies").
//
// TrustPolicy::Load reads the file (≤ limits::kMaxPolicyFile), refuses unknown/duplicate keys
// and wrong types, resolves relative paths against the file's folder, checks every root's DER
// sha256 against its pin, loads every CRL and refuses one that is not current by |clock|
// (nextUpdate in the past or absent), loads the allowlist signer's certificate against its pin.
// Every refusal is Reason::kConfigInvalid with "file:line:col: …". Immutable and thread-safe
// once created.
#ifndef CLAWGUARD_LOADER_TRUST_POLICY_H_
#define CLAWGUARD_LOADER_TRUST_POLICY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "clawguard/clock.h"
#include "clawguard/error.h"
#include "clawguard/ossl.h"

namespace clawguard {

inline constexpr std::string_view kTrustSchema = "clawguard/trust/v1";

enum class PolicyMode { kEnforce, kAudit };
std::string_view PolicyModeName(PolicyMode m);  // "enforce" / "audit"

// TrustLimits are the package limits of trust.yaml `limits:` (defaults from limits.h).
struct TrustLimits {
  uint64_t max_package = 0;
  uint64_t max_unpacked = 0;
  uint64_t max_entries = 0;
  uint64_t max_ratio = 0;
};

class TrustPolicy {
 public:
  // Load reads and validates |path|; |clock| decides whether each CRL is current.
  static Result<std::unique_ptr<TrustPolicy>> Load(const std::string& path, const Clock& clock);

  TrustPolicy(const TrustPolicy&) = delete;
  TrustPolicy& operator=(const TrustPolicy&) = delete;

  const std::string& path() const { return path_; }
  PolicyMode mode() const { return mode_; }
  // roots are the pinned root certificates (owned by the policy; borrow only).
  const std::vector<ossl::UniquePtr<X509>>& roots() const { return roots_; }
  // crls are the loaded, current CRLs (owned by the policy; borrow only).
  const std::vector<ossl::UniquePtr<X509_CRL>>& crls() const { return crls_; }
  int64_t threshold() const { return threshold_; }
  // revoked_certificates / revoked_keys hold lowercase hex sha256 (certificate DER / a key's
  // SubjectPublicKeyInfo DER: its canonical keyid, or another encoding —
  // x509util::RevokedKeyEntry).
  const std::set<std::string>& revoked_certificates() const { return revoked_certs_; }
  const std::set<std::string>& revoked_keys() const { return revoked_keys_; }
  // allowlist_signer is the pinned certificate whose key must sign allowlist.yaml (or null).
  X509* allowlist_signer() const { return allowlist_signer_.get(); }
  bool rollback_allowed() const { return rollback_allowed_; }
  const TrustLimits& limits() const { return limits_; }
  const std::set<std::string>& allowed_needed() const { return allowed_needed_; }
  const std::map<std::string, std::vector<std::string>>& publishers() const { return publishers_; }

  // PublisherMaySign is true when |publisher| is listed and one of its globs (fnmatch) matches
  // |name|.
  bool PublisherMaySign(const std::string& publisher, const std::string& name) const;

 private:
  struct Parts;
  explicit TrustPolicy(Parts&& p);

  const std::string path_;
  const PolicyMode mode_;
  const std::vector<ossl::UniquePtr<X509>> roots_;
  const std::vector<ossl::UniquePtr<X509_CRL>> crls_;
  const int64_t threshold_;
  const std::set<std::string> revoked_certs_;
  const std::set<std::string> revoked_keys_;
  const ossl::UniquePtr<X509> allowlist_signer_;
  const bool rollback_allowed_;
  const TrustLimits limits_;
  const std::set<std::string> allowed_needed_;
  const std::map<std::string, std::vector<std::string>> publishers_;
};

}  // namespace clawguard

#endif  // CLAWGUARD_LOADER_TRUST_POLICY_H_
