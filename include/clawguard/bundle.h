// bundle.h — the signature bundle (NAME-VERSION.claw.sig), the in-toto statement inside it,
// DSSE's PAE, and signature verification over it. Shared by signer and loader.
//
// Bundle JSON shape: ARCHITECTURE.md "Signature bundle". ParseBundle is strict: duplicate keys,
// unknown mediaType, missing fields, bad base64, more than limits::kMaxSignatures signatures or
// limits::kMaxChainLength certificates per key, input over limits::kMaxBundle → kBundleInvalid.
// No function here throws. Thread-compatible.
#ifndef CLAWGUARD_BUNDLE_H_
#define CLAWGUARD_BUNDLE_H_

#include <openssl/evp.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/error.h"
#include "clawguard/ossl.h"

namespace clawguard {

inline constexpr std::string_view kBundleMediaType = "application/vnd.clawguard.bundle.v1+json";
inline constexpr std::string_view kInTotoPayloadType = "application/vnd.in-toto+json";
inline constexpr std::string_view kAllowlistPayloadType =
    "application/vnd.clawguard.allowlist+yaml";
inline constexpr std::string_view kStatementType = "https://in-toto.io/Statement/v1";
inline constexpr std::string_view kPluginPredicateType = "https://clawguard.dev/plugin/v1";

struct BundleSignature {
  std::string keyid;  // KeyIdOf the signer's key: hex sha256 of its canonical SubjectPublicKeyInfo
  std::string sig;    // raw signature bytes (decoded from base64)
};

struct Bundle {
  std::string payload_type;
  std::string payload;  // raw payload bytes (decoded from base64)
  std::vector<BundleSignature> signatures;
  std::map<std::string, std::vector<std::string>> certificates;  // keyid → DER certs, leaf first
};

// ParseBundle parses bundle JSON. Returns kBundleInvalid on any deviation.
Result<Bundle> ParseBundle(std::string_view json);
// SerializeBundle renders bundle JSON (2-space indent, stable key order, trailing newline).
std::string SerializeBundle(const Bundle& b);

// Pae returns DSSE v1's pre-authentication encoding:
// "DSSEv1" SP len(type) SP type SP len(payload) SP payload (lengths in ASCII decimal).
std::string Pae(std::string_view payload_type, std::string_view payload);

// Statement is the in-toto Statement v1 with the ClawGuard plugin predicate.
struct Statement {
  std::string subject_name;    // "acme-orders-1.4.2.claw"
  std::string subject_sha256;  // lowercase hex of the package
  std::string name, version, publisher;
  int64_t abi = 0;
  std::string manifest_sha256;  // lowercase hex of the exact manifest.yaml bytes
  nlohmann::json manifest;      // ManifestToJson of the parsed manifest
};

// ParseStatement parses the payload of an in-toto bundle; kBundleInvalid on any deviation
// (wrong _type or predicateType, not exactly one subject, malformed digest, wrong types).
Result<Statement> ParseStatement(std::string_view payload);
// SerializeStatement renders the statement JSON (compact, stable key order).
std::string SerializeStatement(const Statement& s);

// SigAlgorithm is what ClawGuard signs and accepts. Anything else is kAlgorithmRefused.
enum class SigAlgorithm { kEcdsaP256Sha256, kEd25519 };

// AlgorithmOfKey classifies a public key: P-256 EC → ECDSA, Ed25519 → Ed25519, anything else
// (RSA, P-384, DSA, ...) → kAlgorithmRefused.
Result<SigAlgorithm> AlgorithmOfKey(EVP_PKEY* key);

// VerifySignature checks |sig| over |message| with |key|: ECDSA P-256 takes a DER signature
// over SHA-256(message); Ed25519 a 64-byte signature over message. kSignatureInvalid if it does
// not verify (or is malformed), kAlgorithmRefused for another key type.
Status VerifySignature(EVP_PKEY* key, std::string_view message, std::string_view sig);

// CanonicalSpkiDer returns the one SubjectPublicKeyInfo DER that names |key|, however a
// certificate or token happened to encode it (one key is one key: a point written compressed in
// one certificate and uncompressed in another is still one signer for k-of-n and revocation):
//   ECDSA P-256: SEQUENCE { SEQUENCE { id-ecPublicKey, namedCurve prime256v1 },
//                BIT STRING { 04 || X || Y } } — RFC 5480 §2 with the uncompressed point of
//                SEC 1 §2.3.3; 91 bytes. The point is decoded on the P-256 group (so it is on the
//                curve) and re-encoded; compressed, hybrid and explicit-parameter forms all map
//                here.
//   Ed25519:     SEQUENCE { SEQUENCE { id-Ed25519 }, BIT STRING { 32-byte key } } — RFC 8410 §4;
//                44 bytes.
//   any other key: i2d_PUBKEY as OpenSSL encodes it. Such keys never count (AlgorithmOfKey
//                refuses them before a signature is checked); their keyid only names them in
//                messages.
// Fails closed: kAlgorithmRefused when there is no key or its public point cannot be read or is
// not on the curve, kInternal when OpenSSL cannot allocate. Thread-safe.
Result<std::string> CanonicalSpkiDer(EVP_PKEY* key);
// KeyIdOf returns the keyid of |key|: lowercase hex sha256 of CanonicalSpkiDer(key). Every
// keyid ClawGuard writes or compares (bundles, revoked.keys, allowlist signer, `inspect`,
// `keys list`) is this one. Same reasons as CanonicalSpkiDer; never an empty string.
Result<std::string> KeyIdOf(EVP_PKEY* key);
// KeyIdAliasesOf returns KeyIdOf(key) first, then for a P-256 key the hex sha256 of every other
// SubjectPublicKeyInfo encoding OpenSSL writes for it (point compressed, uncompressed or hybrid;
// named-curve or explicit parameters). For matching lists written by people, such as
// revoked.keys, where a digest may have been taken from any certificate of the key: a bundle's
// keyid must be the canonical one. Same reasons as KeyIdOf.
Result<std::vector<std::string>> KeyIdAliasesOf(EVP_PKEY* key);

// EcdsaRawToDer converts a raw r||s P-256 signature (64 bytes, as PKCS#11 CKM_ECDSA returns it)
// to DER; kSignatureInvalid if it is not 64 bytes.
Result<std::string> EcdsaRawToDer(std::string_view raw);

// ParseCertificateDer parses one DER certificate (whole input, no trailing bytes).
Result<ossl::UniquePtr<X509>> ParseCertificateDer(std::string_view der,
                                                  Reason reason = Reason::kBundleInvalid);
// ParsePemCertificates parses every certificate in a PEM text, in order (at least one).
Result<std::vector<ossl::UniquePtr<X509>>> ParsePemCertificates(std::string_view pem,
                                                                Reason reason);
// CertificateDer re-encodes |cert| as DER. kInternal when there is no certificate or OpenSSL
// cannot encode it (out of memory, or a certificate built in memory without a required field);
// never an empty string. Thread-safe.
Result<std::string> CertificateDer(X509* cert);

}  // namespace clawguard

#endif  // CLAWGUARD_BUNDLE_H_
