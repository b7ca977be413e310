// chain_verifier.h — ChainVerifier: the counting rule of ARCHITECTURE.md "Verification".
//
// Verify walks every signature of an in-toto bundle and decides whether it counts. Cheap
// structural checks come first, then the signature, and only then any check whose outcome a
// forger could steer with content he wrote (validity dates, revocation, publisher): a signature
// that is not by its leaf's key is kSignatureInvalid whatever else the bundle claims.
//   1. keyid has certificates in the bundle, they parse, and keyid == KeyIdOf(leaf key), the
//      canonical keyid (bundle.h CanonicalSpkiDer)                 → kBundleInvalid
//      (an inconsistent bundle is malformed, not a bad signature);
//   2. AlgorithmOfKey(leaf) is ECDSA P-256 or Ed25519                → kAlgorithmRefused;
//   3. the signature verifies over PAE(payloadType, payload) with the leaf key
//                                                                    → kSignatureInvalid;
//   4. X509_verify_cert to a pinned root, untrusted = the bundle's intermediates,
//      X509_V_FLAG_X509_STRICT, security level 2 (X509_VERIFY_PARAM_set_auth_level: RSA/DSA
//      keys ≥ 2048 bits, EC ≥ 224 bits, no SHA-1 or MD5 certificate signatures below the
//      root), time = Clock, default purpose, CRL_CHECK (leaf) when the policy has CRLs:
//      expired/not-yet-valid (cert or CRL) → kCertExpired, revoked → kCertRevoked, anything
//      else → kChainUntrusted;
//   5. code-signing profile (x509_util.h): the leaf has EKU codeSigning, keyUsage
//      digitalSignature when present, is not a CA; every certificate above it that carries an
//      EKU extension lists codeSigning (anyExtendedKeyUsage is refused)  → kChainUntrusted;
//   6. no chain certificate sha256, and neither the keyid nor the leaf's SPKI as encoded, in
//      the policy's revoked lists                                       → kCertRevoked;
//   7. leaf subject has exactly one O, equal to the predicate's publisher, and the policy lets it
//      sign the predicate's name                                         → kPublisherNotAllowed.
// Distinct keys count once (by canonical keyid: one key certified twice, in two encodings, has
// one keyid, and ParseBundle refuses a keyid that signs twice). Fewer than the threshold → the
// first failing signature's reason, or kThresholdNotMet when every present signature passed.
// In audit mode a signature failing only relaxable reasons (kCertExpired, kCertRevoked,
// kPublisherNotAllowed) still counts and the relaxations are returned; steps 1–3 and 5, and
// every kChainUntrusted of step 4, are never relaxed.
//
// Deviations from RFC 5280 path validation as OpenSSL 3.0 implements it: the code-signing
// profile of step 5 is checked by us (no code-signing purpose in 3.0); CRLs are checked for the
// leaf only (the policy's certificate pins cover intermediates); the policy's pinned roots are
// the only trust anchors (the system store is never consulted). Thread-safe (const after
// Create); Verify does not throw.
#ifndef CLAWGUARD_LOADER_CHAIN_VERIFIER_H_
#define CLAWGUARD_LOADER_CHAIN_VERIFIER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "clawguard/bundle.h"
#include "clawguard/clock.h"
#include "clawguard/error.h"
#include "trust_policy.h"

namespace clawguard {

// Relaxation records a check that audit mode let pass.
struct Relaxation {
  Reason reason = Reason::kOk;
  std::string detail;
};

// ChainResult is what Verify found when enough signatures counted.
struct ChainResult {
  std::vector<std::string> signers;     // keyids that counted, in bundle order
  std::vector<Relaxation> relaxations;  // audit mode only
  std::vector<std::string> warnings;    // e.g. leaves expiring within 30 days
  std::vector<std::string> ignored;     // signatures that did not count (and why), for the log
};

class ChainVerifier {
 public:
  // Create borrows |policy| and |clock|; both must outlive the verifier.
  static Result<std::unique_ptr<ChainVerifier>> Create(const TrustPolicy& policy,
                                                       const Clock& clock);

  // Verify applies the counting rule to |bundle| whose statement is |statement|. Returns the
  // first failing signature's reason (see the header comment) when the threshold is not met.
  Result<ChainResult> Verify(const Bundle& bundle, const Statement& statement) const;

 private:
  ChainVerifier(const TrustPolicy& policy, const Clock& clock) : policy_(policy), clock_(clock) {}
  // CheckOne runs steps 1–7 for one signature; relaxable failures are added to |relaxed| in
  // audit mode instead of returned.
  Status CheckOne(const Bundle& bundle, const BundleSignature& sig, const Statement& st,
                  const std::string& pae, std::vector<Relaxation>& relaxed,
                  std::vector<std::string>& warnings) const;
  // VerifyCounting is Verify's body (Verify turns any exception into a Status).
  Result<ChainResult> VerifyCounting(const Bundle& bundle, const Statement& statement) const;
  // CheckPolicy runs steps 6–7 (the trust policy's own lists) on a verified chain.
  Status CheckPolicy(X509* leaf, const std::vector<X509*>& chain, const std::string& keyid,
                     const Statement& st, const std::function<Status(Status)>& relax) const;
  Status CheckChain(X509* leaf, const std::vector<ossl::UniquePtr<X509>>& intermediates,
                    std::vector<X509*>& chain_out,
                    ossl::UniquePtr<STACK_OF(X509)>& chain_owner) const;

  const TrustPolicy& policy_;
  const Clock& clock_;
};

// IsRelaxable is true for the reasons audit mode may relax.
bool IsRelaxable(Reason r);

}  // namespace clawguard

#endif  // CLAWGUARD_LOADER_CHAIN_VERIFIER_H_
