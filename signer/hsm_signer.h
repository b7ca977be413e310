// hsm_signer.h — HsmSigner: a Signer whose private key never leaves a PKCS#11 token.
//
// ECDSA P-256: SHA-256 is computed with OpenSSL (SoftHSM2 has no CKM_ECDSA_SHA256), the digest is
// signed with CKM_ECDSA and the raw r||s result is DER-encoded. Ed25519: one single-part C_Sign
// with CKM_EDDSA over the whole message (SoftHSM2 refuses multi-part EdDSA).
// The returned Signer is not thread-safe (one PKCS#11 session); make one per thread. Its Sign
// returns kInternal naming the PKCS#11 function and CKR_ code on failure.
// This header does not expose PKCS#11 types: callers hold a Signer, never a session or handle.
#ifndef CLAWGUARD_SIGNER_HSM_SIGNER_H_
#define CLAWGUARD_SIGNER_HSM_SIGNER_H_

#include <memory>
#include <string>
#include <string_view>

#include "clawguard/error.h"
#include "clawguard/secret_bytes.h"
#include "signer/signer.h"

namespace clawguard::signer {

// kPkcs11ModuleEnv names the variable that gives the module path when --module is not given.
inline constexpr const char* kPkcs11ModuleEnv = "CLAWGUARD_PKCS11_MODULE";

// ResolveModulePath returns |flag| if non-empty, else $CLAWGUARD_PKCS11_MODULE; kUsage if neither.
Result<std::string> ResolveModulePath(std::string_view flag);

class HsmSigner {
 public:
  // Create parses |key_uri| (kKeyUriInvalid) before anything else, loads |module_path|
  // (kHsmUnavailable naming the path), opens a session on the URI's token (kHsmUnavailable if
  // no token has that label), logs in with |pin| (wiped right after C_Login; kHsmLoginFailed),
  // finds the key (kKeyNotFound, kKeyAmbiguous, kAlgorithmRefused for RSA or another curve) and
  // checks its protection (kKeyExtractable; kKeyImported unless |allow_imported_key|).
  static Result<std::unique_ptr<Signer>> Create(const std::string& module_path,
                                                const std::string& key_uri, SecretBytes pin,
                                                bool allow_imported_key);
};

}  // namespace clawguard::signer

#endif  // CLAWGUARD_SIGNER_HSM_SIGNER_H_
