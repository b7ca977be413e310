// pkcs11_key.h — finding a signing key in a token, its protection flags and its public half.
//
// Private keys are looked up by CKA_LABEL and/or CKA_ID; the public key is the CKO_PUBLIC_KEY
// object with the same CKA_ID (EC: CKA_EC_PARAMS + CKA_EC_POINT, the point unwrapped from its DER
// OCTET STRING; Ed25519 (CKK_EC_EDWARDS): the 32-byte CKA_EC_POINT). Not thread-safe (a session).
#ifndef CLAWGUARD_SIGNER_PKCS11_KEY_H_
#define CLAWGUARD_SIGNER_PKCS11_KEY_H_

#include <p11-kit/pkcs11.h>

#include <optional>
#include <string>
#include <vector>

#include "clawguard/bundle.h"
#include "clawguard/error.h"
#include "clawguard/ossl.h"
#include "signer/pkcs11_session.h"

namespace clawguard::signer {

// KeyFlags are the private key's protection attributes (absent attributes read as false, so an
// absent CKA_EXTRACTABLE reads "not extractable" only when the token says so).
struct KeyFlags {
  bool sensitive = false, always_sensitive = false, extractable = true, never_extractable = false,
       local = false;
};

struct TokenKey {
  CK_OBJECT_HANDLE handle = CK_INVALID_HANDLE;  // the private key object
  std::string label, id;                        // CKA_LABEL, CKA_ID (raw bytes)
  std::optional<SigAlgorithm> algorithm;        // nullopt: a key type ClawGuard does not sign with
  std::string algorithm_name;                   // "ecdsa-p256", "ed25519", "rsa", "ec-other", ...
  KeyFlags flags;
  ossl::UniquePtr<EVP_PKEY> public_key;  // null when no matching public key object exists
};

// FindPrivateKey returns the single private key matching |label| and/or |id| (at least one set):
// kKeyNotFound if none (the message lists the labels present), kKeyAmbiguous if several.
// The public key must exist too (kKeyNotFound otherwise) and be P-256 or Ed25519
// (kAlgorithmRefused otherwise).
Result<TokenKey> FindPrivateKey(Pkcs11Session& session, const std::optional<std::string>& label,
                                const std::optional<std::string>& id);

// ListPrivateKeys describes every private key visible in the session (for `keys list`).
Result<std::vector<TokenKey>> ListPrivateKeys(Pkcs11Session& session);
// ListPublicKeys describes every public key object (visible without login); flags are unknown.
Result<std::vector<TokenKey>> ListPublicKeys(Pkcs11Session& session);

// CheckSigningKeyPolicy refuses a key that can be read out of the token, in this order:
//   CKA_SENSITIVE false or CKA_EXTRACTABLE true             → kKeyExtractable (always)
//   CKA_LOCAL false (imported) without |allow_imported_key| → kKeyImported
//   a local key with CKA_ALWAYS_SENSITIVE or CKA_NEVER_EXTRACTABLE false → kKeyExtractable
// WARNING (deviation, on purpose): an imported key allowed by |allow_imported_key| is not held to
// ALWAYS_SENSITIVE/NEVER_EXTRACTABLE, since a key that existed outside the token cannot meet them.
Status CheckSigningKeyPolicy(const TokenKey& key, bool allow_imported_key);

// The DER of the curve OIDs, as CKA_EC_PARAMS carries them.
std::string P256EcParams();
std::string Ed25519EcParams();

}  // namespace clawguard::signer

#endif  // CLAWGUARD_SIGNER_PKCS11_KEY_H_
