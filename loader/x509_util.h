// x509_util.h — small X.509 helpers shared inside the loader (not installed).
#ifndef CLAWGUARD_LOADER_X509_UTIL_H_
#define CLAWGUARD_LOADER_X509_UTIL_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/error.h"
#include "clawguard/ossl.h"

namespace clawguard::x509util {

// Sha256HexOfCert is the lowercase hex sha256 of |cert|'s DER (bundle.h CertificateDer, whose
// kInternal it returns when the certificate cannot be encoded).
Result<std::string> Sha256HexOfCert(X509* cert);
// ReadPemCertificates parses every certificate of a PEM text (at least one) with |reason|.
Result<std::vector<ossl::UniquePtr<X509>>> ReadPemCertificates(std::string_view pem, Reason reason,
                                                               const std::string& what);
// ReadCrl parses one CRL, PEM or DER.
Result<ossl::UniquePtr<X509_CRL>> ReadCrl(std::string_view bytes, Reason reason,
                                          const std::string& what);
// AsnTimeToUnix converts an ASN1_TIME to Unix seconds.
std::optional<int64_t> AsnTimeToUnix(const ASN1_TIME* t);

// EncodedSpkiSha256 is the lowercase hex sha256 of |cert|'s SubjectPublicKeyInfo exactly as the
// certificate encodes it (a compressed point stays compressed). kAlgorithmRefused if the
// certificate has no SubjectPublicKeyInfo that OpenSSL can encode.
Result<std::string> EncodedSpkiSha256(X509* cert);

// RevokedKeyEntry returns the entry of |revoked_keys| (trust.yaml revoked.keys) that names
// |cert|'s key, if any: its canonical keyid, the digest of any other encoding of the same key
// (KeyIdAliasesOf), or the digest of the SPKI exactly as this certificate encodes it. So a key
// revoked by a digest taken from one certificate is revoked in every other certificate of it.
// Fails closed: a key that cannot be read is an error (kAlgorithmRefused), never "not listed".
Result<std::optional<std::string>> RevokedKeyEntry(X509* cert,
                                                   const std::set<std::string>& revoked_keys);

// EkuRule says whether CheckCodeSigningLeaf requires the extendedKeyUsage extension.
enum class EkuRule {
  kRequired,   // a package signer's leaf: an EKU extension listing codeSigning
  kIfPresent,  // a pinned certificate (the allowlist signer): the pin is what trusts it, so
               // no EKU means no restriction; an EKU that is there must list codeSigning
};

// CheckCodeSigningLeaf checks the leaf profile of a code-signing certificate (RFC 5280
// §4.2.1.3, §4.2.1.9, §4.2.1.12; CA/B Forum code-signing baseline §7.1.2.3):
//   - an extendedKeyUsage extension is present (|rule| kRequired) and lists id-kp-codeSigning;
//     anyExtendedKeyUsage alone is not enough (default deny: "any" is how a certificate avoids
//     saying what it is for);
//   - keyUsage, when present, has digitalSignature;
//   - it is not a CA: no basicConstraints CA:TRUE, and nothing else OpenSSL would accept as a CA
//     (X509_check_ca: keyCertSign without basicConstraints, a v1 self-signed certificate).
// Returns kChainUntrusted naming |what| ("the leaf"), what was expected and what was found.
Status CheckCodeSigningLeaf(X509* leaf, EkuRule rule = EkuRule::kRequired,
                            std::string_view what = "the leaf");

// CheckIssuersPermitCodeSigning checks every certificate of |chain| above the leaf (index ≥ 1,
// the pinned root included): one with an extendedKeyUsage extension must list
// id-kp-codeSigning (an intermediate restricted to serverAuth cannot vouch for code). A
// certificate without the extension places no restriction (RFC 5280 leaves CA EKU undefined;
// this is the Mozilla/Microsoft "EKU chaining" rule). anyExtendedKeyUsage alone is refused.
// Returns kChainUntrusted with the depth and subject of the first offender.
Status CheckIssuersPermitCodeSigning(const std::vector<X509*>& chain);

// CertificateDigests returns the hex sha256 of |cert|'s DER and, when |issuer| signed it with
// ECDSA, of its twin: the same certificate with the signature (r, s) replaced by (r, n − s),
// which verifies just as well and can be made by anyone without a key (ECDSA malleability). So
// a revoked.certificates entry names the certificate, not one of its two signature encodings.
// Other encodings need no twin: OpenSSL re-encodes the outer SEQUENCE in DER and keeps the
// signed TBSCertificate bytes, strict mode refuses a signatureAlgorithm that differs from the
// signed one, and Ed25519 and RSA PKCS#1 v1.5 signatures are not malleable.
// No twin is made when |issuer|'s key is not EC or |cert|'s signature is not an ECDSA-Sig-Value;
// kInternal when OpenSSL fails to encode the certificate or to build its twin (fail closed: a
// digest that cannot be computed is never taken as "not revoked").
Result<std::vector<std::string>> CertificateDigests(X509* cert, X509* issuer);

// SubjectText is |cert|'s subject as one RFC 2253 line ("?" if it cannot be printed).
std::string SubjectText(X509* cert);

}  // namespace clawguard::x509util

#endif  // CLAWGUARD_LOADER_X509_UTIL_H_
