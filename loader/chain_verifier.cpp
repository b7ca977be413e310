// chain_verifier.cpp — see chain_verifier.h for the rule, its order and its deviations.
#include "chain_verifier.h"

#include <openssl/x509_vfy.h>

#include <new>
#include <set>

#include "clawguard/limits.h"
#include "x509_util.h"

namespace clawguard {

bool IsRelaxable(Reason r) {
  switch (r) {
    case Reason::kPublisherNotAllowed:
    case Reason::kNotAllowlisted:
    case Reason::kAllowlistExpired:
    case Reason::kCertExpired:
    case Reason::kCertRevoked:
    case Reason::kVersionRollback: return true;
    default: return false;
  }
}

namespace {

// VerifyState collects what the verify callback saw: the first relaxable and the first
// non-relaxable error. WARNING: the callback returns 1 for time and revocation errors so that
// OpenSSL keeps walking the chain; the decision is taken afterwards from this state.
struct VerifyState {
  int relaxable_error = X509_V_OK;
  int relaxable_depth = -1;
  int hard_error = X509_V_OK;
  int hard_depth = -1;
};

Reason ReasonOfVerifyError(int err) {
  switch (err) {
    case X509_V_ERR_CERT_HAS_EXPIRED:
    case X509_V_ERR_CERT_NOT_YET_VALID:
    case X509_V_ERR_CRL_HAS_EXPIRED:
    case X509_V_ERR_CRL_NOT_YET_VALID: return Reason::kCertExpired;
    case X509_V_ERR_CERT_REVOKED: return Reason::kCertRevoked;
    default: return Reason::kChainUntrusted;
  }
}

int VerifyCallback(int ok, X509_STORE_CTX* ctx) {
  if (ok == 1) return 1;
  auto* state = static_cast<VerifyState*>(X509_STORE_CTX_get_app_data(ctx));
  const int err = X509_STORE_CTX_get_error(ctx);
  const int depth = X509_STORE_CTX_get_error_depth(ctx);
  if (state == nullptr) return 0;
  if (ReasonOfVerifyError(err) != Reason::kChainUntrusted) {
    if (state->relaxable_error == X509_V_OK) {
      state->relaxable_error = err;
      state->relaxable_depth = depth;
    }
    return 1;
  }
  if (state->hard_error == X509_V_OK) {
    state->hard_error = err;
    state->hard_depth = depth;
  }
  return 0;
}

// kChainSecurityLevel is OpenSSL's security level for certificate chains
// (SSL_CTX_set_security_level semantics: level 2 = 112-bit security).
constexpr int kChainSecurityLevel = 2;

std::string VerifyErrorText(int err, int depth) {
  std::string text = std::string(X509_verify_cert_error_string(err)) + " (certificate at depth " +
                     std::to_string(depth) + ", 0 = leaf)";
  switch (err) {
    case X509_V_ERR_CA_KEY_TOO_SMALL:
    case X509_V_ERR_EE_KEY_TOO_SMALL:
      text +=
          "; security level 2 requires RSA and DSA keys of at least 2048 bits and EC keys of at "
          "least 224 bits";
      break;
    case X509_V_ERR_CA_MD_TOO_WEAK:
      text += "; security level 2 refuses SHA-1 and MD5 certificate signatures";
      break;
    default: break;
  }
  return text;
}

}  // namespace

Result<std::unique_ptr<ChainVerifier>> ChainVerifier::Create(const TrustPolicy& policy,
                                                             const Clock& clock) {
  if (policy.roots().empty()) return Status(Reason::kConfigInvalid, "trust policy has no roots");
  return std::unique_ptr<ChainVerifier>(new ChainVerifier(policy, clock));
}

Status ChainVerifier::CheckChain(X509* leaf,
                                 const std::vector<ossl::UniquePtr<X509>>& intermediates,
                                 std::vector<X509*>& chain_out,
                                 ossl::UniquePtr<STACK_OF(X509)>& chain_owner) const {
  ossl::UniquePtr<X509_STORE> store(X509_STORE_new());
  ossl::UniquePtr<STACK_OF(X509)> untrusted(sk_X509_new_null());
  ossl::UniquePtr<X509_STORE_CTX> ctx(X509_STORE_CTX_new());
  if (!store || !untrusted || !ctx)
    return Status(Reason::kInternal, "out of memory: " + ossl::GetSslErrors());
  for (const auto& root : policy_.roots()) {
    // X509_STORE_add_cert takes its own reference (up-ref); the policy keeps ownership of root.
    if (X509_STORE_add_cert(store.get(), root.get()) != 1) {
      return Status(Reason::kInternal, "cannot add a pinned root: " + ossl::GetSslErrors());
    }
  }
  for (const auto& crl : policy_.crls()) {
    // X509_STORE_add_crl up-refs the CRL; the policy keeps ownership.
    if (X509_STORE_add_crl(store.get(), crl.get()) != 1) {
      return Status(Reason::kInternal, "cannot add a CRL: " + ossl::GetSslErrors());
    }
  }
  for (const auto& c : intermediates) {
    // push1 up-refs: the stack owns its own references, freed by its deleter.
    if (sk_X509_push(untrusted.get(), c.get()) <= 0 || X509_up_ref(c.get()) != 1) {
      return Status(Reason::kInternal, "cannot build the untrusted stack: " + ossl::GetSslErrors());
    }
  }
  // X509_STORE_CTX_init borrows store, leaf and untrusted: they outlive ctx here.
  if (X509_STORE_CTX_init(ctx.get(), store.get(), leaf, untrusted.get()) != 1) {
    return Status(Reason::kInternal, "X509_STORE_CTX_init failed: " + ossl::GetSslErrors());
  }
  // get0: the param is owned by ctx.
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx.get());
  X509_VERIFY_PARAM_set_time(param, static_cast<time_t>(clock_.NowSeconds()));
  // Security level 2 (112-bit): refuses RSA/DSA keys under 2048 bits anywhere in the chain and
  // SHA-1/MD5 signatures on every certificate below the trust anchor (whose self-signature
  // carries no trust: the pin does). X509_V_ERR_*_KEY_TOO_SMALL / X509_V_ERR_CA_MD_TOO_WEAK are
  // hard errors → kChainUntrusted.
  X509_VERIFY_PARAM_set_auth_level(param, kChainSecurityLevel);
  unsigned long flags = X509_V_FLAG_X509_STRICT;
  if (!policy_.crls().empty()) flags |= X509_V_FLAG_CRL_CHECK;
  if (X509_VERIFY_PARAM_set_flags(param, flags) != 1) {
    return Status(Reason::kInternal, "cannot set verify flags: " + ossl::GetSslErrors());
  }
  VerifyState state;
  X509_STORE_CTX_set_app_data(ctx.get(), &state);
  X509_STORE_CTX_set_verify_cb(ctx.get(), VerifyCallback);
  const int rc = X509_verify_cert(ctx.get());
  const std::string ssl_errors = ossl::GetSslErrors();
  if (rc != 1 || state.hard_error != X509_V_OK) {
    const int err =
        state.hard_error != X509_V_OK ? state.hard_error : X509_STORE_CTX_get_error(ctx.get());
    const int depth = state.hard_error != X509_V_OK ? state.hard_depth
                                                    : X509_STORE_CTX_get_error_depth(ctx.get());
    return Status(Reason::kChainUntrusted,
                  "chain does not verify to a pinned root: " + VerifyErrorText(err, depth) +
                      (ssl_errors.empty() ? "" : " [" + ssl_errors + "]"));
  }
  // get1: we own the returned stack (and its references).
  chain_owner.reset(X509_STORE_CTX_get1_chain(ctx.get()));
  if (!chain_owner)
    return Status(Reason::kInternal, "no chain after verification: " + ossl::GetSslErrors());
  for (int i = 0; i < sk_X509_num(chain_owner.get()); ++i)
    chain_out.push_back(sk_X509_value(chain_owner.get(), i));
  if (state.relaxable_error != X509_V_OK) {
    return Status(ReasonOfVerifyError(state.relaxable_error),
                  VerifyErrorText(state.relaxable_error, state.relaxable_depth));
  }
  return Status::Ok();
}

Status ChainVerifier::CheckPolicy(X509* leaf, const std::vector<X509*>& chain,
                                  const std::string& keyid, const Statement& st,
                                  const std::function<Status(Status)>& relax) const {
  // 6. policy revocation lists: certificate digests over the whole chain (either ECDSA signature
  // form: x509util::CertificateDigests), then the key — by its canonical keyid or the digest of
  // any other encoding of it (x509util::RevokedKeyEntry).
  for (size_t i = 0; i < chain.size() && !policy_.revoked_certificates().empty(); ++i) {
    // The issuer of the last certificate (the pinned root) is itself.
    X509* issuer = i + 1 < chain.size() ? chain[i + 1] : chain[i];
    auto digests = x509util::CertificateDigests(chain[i], issuer);
    if (!digests.ok()) {
      return digests.error().WithContext("keyid " + keyid + ": certificate at depth " +
                                         std::to_string(i) + " (" +
                                         x509util::SubjectText(chain[i]) + ")");
    }
    for (const std::string& h : *digests) {
      if (policy_.revoked_certificates().count(h) == 0) continue;
      CLAWGUARD_RETURN_IF_ERROR(relax(Status(
          Reason::kCertRevoked, "keyid " + keyid + ": certificate " + h + " (depth " +
                                    std::to_string(i) + ") is revoked by the trust policy")));
      break;
    }
  }
  CLAWGUARD_ASSIGN_OR_RETURN(std::optional<std::string> listed,
                             x509util::RevokedKeyEntry(leaf, policy_.revoked_keys()));
  if (listed) {
    CLAWGUARD_RETURN_IF_ERROR(relax(
        Status(Reason::kCertRevoked,
               "key " + keyid + " is revoked by the trust policy" +
                   (*listed == keyid ? std::string()
                                     : " (listed as " + *listed + ", another encoding of it)"))));
  }
  // 7. publisher: exactly one subject O, equal to the predicate's, allowed for the name.
  // get0: the subject name is owned by the leaf.
  X509_NAME* subject = X509_get_subject_name(leaf);
  std::vector<std::string> orgs;
  for (int i = X509_NAME_get_index_by_NID(subject, NID_organizationName, -1); i >= 0;
       i = X509_NAME_get_index_by_NID(subject, NID_organizationName, i)) {
    // get0: the entry and its data are owned by the name.
    ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i));
    unsigned char* raw = nullptr;
    const int len = ASN1_STRING_to_UTF8(&raw, data);  // allocates |raw|; owned by |utf8|
    const ossl::UniqueBuffer utf8(raw);
    if (len < 0)
      return Status(Reason::kPublisherNotAllowed,
                    "leaf subject O is not valid text: " + ossl::GetSslErrors());
    orgs.emplace_back(reinterpret_cast<const char*>(utf8.get()), static_cast<size_t>(len));
  }
  if (orgs.size() != 1) {
    return relax(Status(Reason::kPublisherNotAllowed,
                        "keyid " + keyid + ": leaf subject must have exactly one O, found " +
                            std::to_string(orgs.size())));
  }
  if (orgs[0] != st.publisher) {
    return relax(Status(Reason::kPublisherNotAllowed,
                        "keyid " + keyid + ": leaf subject O '" + orgs[0] +
                            "' is not the predicate's publisher '" + st.publisher + "'"));
  }
  if (!policy_.PublisherMaySign(orgs[0], st.name)) {
    return relax(Status(Reason::kPublisherNotAllowed, "publisher '" + orgs[0] +
                                                          "' may not sign plugin '" + st.name +
                                                          "' (trust policy publishers)"));
  }
  return Status::Ok();
}

Status ChainVerifier::CheckOne(const Bundle& bundle, const BundleSignature& sig,
                               const Statement& st, const std::string& pae,
                               std::vector<Relaxation>& relaxed,
                               std::vector<std::string>& warnings) const {
  const bool audit = policy_.mode() == PolicyMode::kAudit;
  // relax: in audit mode a relaxable failure is recorded and the walk goes on.
  const std::function<Status(Status)> relax = [&](Status s) -> Status {
    if (audit && IsRelaxable(s.reason())) {
      relaxed.push_back({s.reason(), s.message()});
      return Status::Ok();
    }
    return s;
  };
  // 1. keyid ↔ certificates (cheap, before any crypto).
  auto certs_it = bundle.certificates.find(sig.keyid);
  if (certs_it == bundle.certificates.end() || certs_it->second.empty()) {
    return Status(Reason::kBundleInvalid, "no certificates in the bundle for keyid " + sig.keyid);
  }
  CLAWGUARD_ASSIGN_OR_RETURN(auto leaf,
                             ParseCertificateDer(certs_it->second[0], Reason::kBundleInvalid));
  std::vector<ossl::UniquePtr<X509>> intermediates;
  for (size_t i = 1; i < certs_it->second.size(); ++i) {
    CLAWGUARD_ASSIGN_OR_RETURN(auto c,
                               ParseCertificateDer(certs_it->second[i], Reason::kBundleInvalid));
    intermediates.push_back(std::move(c));
  }
  // get0: the key is owned by the leaf certificate.
  EVP_PKEY* key = X509_get0_pubkey(leaf.get());
  if (key == nullptr)
    return Status(Reason::kAlgorithmRefused, "leaf public key unreadable: " + ossl::GetSslErrors());
  auto leaf_keyid = KeyIdOf(key);
  if (!leaf_keyid.ok()) return leaf_keyid.error().WithContext("keyid " + sig.keyid + ": leaf key");
  const std::string& keyid = *leaf_keyid;
  if (keyid != sig.keyid) {
    return Status(Reason::kBundleInvalid, "signature keyid " + sig.keyid +
                                              " is not the canonical keyid of the leaf's key (" +
                                              keyid +
                                              ": the sha256 of its canonical SubjectPublicKeyInfo, "
                                              "ARCHITECTURE.md \"Keyid\")");
  }
  // 2. algorithm.
  CLAWGUARD_ASSIGN_OR_RETURN(SigAlgorithm alg, AlgorithmOfKey(key));
  (void)alg;
  // 3. the signature over PAE, before anything the signed content could choose the reason of.
  Status sv = VerifySignature(key, pae, sig.sig);
  if (!sv.ok()) return sv.WithContext("keyid " + keyid);
  // 4. chain.
  std::vector<X509*> chain;
  ossl::UniquePtr<STACK_OF(X509)> chain_owner;
  Status chain_status = CheckChain(leaf.get(), intermediates, chain, chain_owner);
  CLAWGUARD_RETURN_IF_ERROR(
      relax(chain_status.ok() ? chain_status : chain_status.WithContext("keyid " + keyid)));
  // 5. code-signing profile of the leaf and of every issuer above it.
  if (Status s = x509util::CheckCodeSigningLeaf(leaf.get()); !s.ok())
    return s.WithContext("keyid " + keyid);
  if (Status s = x509util::CheckIssuersPermitCodeSigning(chain); !s.ok())
    return s.WithContext("keyid " + keyid);
  // 6–7. the trust policy's lists.
  CLAWGUARD_RETURN_IF_ERROR(CheckPolicy(leaf.get(), chain, keyid, st, relax));
  // A counting leaf close to expiry is a warning.
  if (auto not_after =
          x509util::AsnTimeToUnix(X509_get0_notAfter(leaf.get()))) {  // get0: owned by leaf
    const int64_t left = *not_after - clock_.NowSeconds();
    if (left >= 0 && left < limits::kLeafExpiryWarningSeconds) {
      warnings.push_back("leaf of keyid " + keyid + " expires at " + FormatRfc3339Utc(*not_after) +
                         " (within 30 days)");
    }
  }
  return Status::Ok();
}

Result<ChainResult> ChainVerifier::Verify(const Bundle& bundle, const Statement& statement) const {
  try {
    return VerifyCounting(bundle, statement);
  } catch (const std::bad_alloc&) {
    return Status(Reason::kInternal, "out of memory while verifying the signatures");
  } catch (const std::exception& e) {
    return Status(Reason::kInternal,
                  std::string("unexpected error while verifying the signatures: ") + e.what());
  }
}

Result<ChainResult> ChainVerifier::VerifyCounting(const Bundle& bundle,
                                                  const Statement& statement) const {
  ChainResult out;
  const std::string pae = Pae(bundle.payload_type, bundle.payload);
  std::set<std::string> counted;
  std::optional<Status> first_failure;
  for (const auto& sig : bundle.signatures) {
    std::vector<Relaxation> relaxed;
    std::vector<std::string> warnings;
    Status s = CheckOne(bundle, sig, statement, pae, relaxed, warnings);
    if (!s.ok()) {
      if (s.reason() == Reason::kInternal) return s;
      if (!first_failure) first_failure = s;
      out.ignored.push_back(s.ToString());
      continue;
    }
    if (!counted.insert(sig.keyid).second) {
      out.ignored.push_back("keyid " + sig.keyid + " signed twice; counted once");
      continue;
    }
    out.signers.push_back(sig.keyid);
    for (auto& r : relaxed) out.relaxations.push_back(std::move(r));
    for (auto& w : warnings) out.warnings.push_back(std::move(w));
  }
  if (static_cast<int64_t>(counted.size()) < policy_.threshold()) {
    if (first_failure) return *first_failure;
    return Status(Reason::kThresholdNotMet, std::to_string(counted.size()) +
                                                " distinct key(s) signed; the policy requires " +
                                                std::to_string(policy_.threshold()));
  }
  return out;
}

}  // namespace clawguard
