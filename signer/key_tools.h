// key_tools.h — `clawguard keys`: generate a key pair inside a token, make a CSR signed inside the
// token, and list tokens and keys. Not thread-safe (PKCS#11 sessions).
#ifndef CLAWGUARD_SIGNER_KEY_TOOLS_H_
#define CLAWGUARD_SIGNER_KEY_TOOLS_H_

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/bundle.h"
#include "clawguard/error.h"
#include "clawguard/ossl.h"
#include "clawguard/secret_bytes.h"
#include "signer/signer.h"

namespace clawguard::signer {

// ParseKeyAlgorithm maps "ecdsa-p256" / "ed25519" to a SigAlgorithm; kUsage otherwise.
Result<SigAlgorithm> ParseKeyAlgorithm(std::string_view name);
// KeyAlgorithmName is the inverse of ParseKeyAlgorithm.
std::string_view KeyAlgorithmName(SigAlgorithm alg);

struct GeneratedKey {
  std::string uri;    // pkcs11:token=…;object=…;type=private
  std::string keyid;  // KeyIdOf the public key (canonical SubjectPublicKeyInfo), as in bundles
  std::string id;     // CKA_ID (raw, 16 random bytes)
  SigAlgorithm algorithm = SigAlgorithm::kEcdsaP256Sha256;
};

// KeyProtection is how the private key is generated. The defaults are the only ones the CLI
// uses; tests use the others to produce keys that the signer must refuse.
struct KeyProtection {
  bool sensitive = true;
  bool extractable = false;
};

// GenerateKey loads |module_path|, logs in to |token| with |pin| (wiped right after C_Login) and
// generates a token key pair labelled |label| with C_GenerateKeyPair: CKA_TOKEN, CKA_PRIVATE,
// CKA_SIGN, a random 16-byte CKA_ID, CKA_SENSITIVE/CKA_EXTRACTABLE per |protection|.
// kKeyAmbiguous if any object in the token already has that label; kHsmUnavailable,
// kHsmLoginFailed as for signing.
Result<GeneratedKey> GenerateKey(const std::string& module_path, const std::string& token,
                                 const std::string& label, SigAlgorithm alg, SecretBytes pin,
                                 KeyProtection protection = {});

// ParseSubject parses "/O=acme/CN=acme release" ("\/" escapes a slash) into an X509_NAME;
// kUsage on an empty, malformed or unknown attribute.
Result<ossl::UniquePtr<X509_NAME>> ParseSubject(std::string_view subject);

// MakeCsrPem builds a PKCS#10 request for |signer|'s public key and |subject|, signs its
// to-be-signed DER with |signer| (ecdsa-with-SHA256 or ED25519), checks it with X509_REQ_verify
// and returns it as PEM. kUsage for a bad subject, kInternal if OpenSSL or the signer fails.
Result<std::string> MakeCsrPem(Signer& signer, std::string_view subject);

struct KeyListing {
  std::string label, id;    // CKA_LABEL, CKA_ID (raw bytes)
  std::string algorithm;    // "ecdsa-p256", "ed25519", "rsa", "ec-other-curve", ...
  std::string keyid;        // KeyIdOf the public key; "" when there is no public key object or
                            // KeyIdOf failed
  std::string keyid_error;  // why KeyIdOf failed ("reason: message"); "" otherwise
  std::string uri;          // the key URI to pass to --key
  bool sensitive = false, always_sensitive = false, extractable = false, never_extractable = false,
       local = false;  // meaningful only when the token was logged in
};

struct TokenListing {
  unsigned long slot = 0;
  std::string label, manufacturer, model, serial;
  bool initialized = false;
  bool logged_in = false;        // false: only public key objects were visible
  std::vector<KeyListing> keys;  // private keys when logged in, else public keys
};

// ListTokens lists every token (or only |token|) and its keys. With |pin| (requires |token|) it
// logs in and lists private keys with their flags; without, public key objects only.
Result<std::vector<TokenListing>> ListTokens(const std::string& module_path,
                                             const std::optional<std::string>& token,
                                             std::optional<SecretBytes> pin);

// ListingToJson renders listings as {"module": …, "tokens": [{label, slot, …, "keys": […]}]}.
nlohmann::json ListingToJson(const std::string& module_path,
                             const std::vector<TokenListing>& listings);

}  // namespace clawguard::signer

#endif  // CLAWGUARD_SIGNER_KEY_TOOLS_H_
