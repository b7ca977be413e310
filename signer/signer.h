// signer.h — Signer: the one capability the signing code needs from a key (Tink PublicKeySign).
// Callers hold a Signer; they never see a PKCS#11 session or handle.
#ifndef CLAWGUARD_SIGNER_SIGNER_H_
#define CLAWGUARD_SIGNER_SIGNER_H_

#include <openssl/evp.h>

#include <string>
#include <string_view>

#include "clawguard/bundle.h"
#include "clawguard/error.h"

namespace clawguard::signer {

class Signer {
 public:
  virtual ~Signer() = default;
  // Sign signs |message|: for kEcdsaP256Sha256 a DER ECDSA signature over SHA-256(message), for
  // kEd25519 the 64-byte Ed25519 signature over message itself. Implementations say which
  // reasons they return and whether they are thread-safe.
  virtual Result<std::string> Sign(std::string_view message) = 0;
  // public_key is the key's public half; owned by the Signer (get0 semantics).
  virtual EVP_PKEY* public_key() const = 0;
  virtual SigAlgorithm algorithm() const = 0;
};

}  // namespace clawguard::signer

#endif  // CLAWGUARD_SIGNER_SIGNER_H_
