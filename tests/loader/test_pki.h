// test_pki.h — header-only test PKI for the loader tests: keys, certificates and CRLs with
// fixed dates, built with the OpenSSL API (OpenSSL 3.0's `x509` has no fixed start date and
// `ca` rewrites subject DNs, so two-O subjects and exact validity windows are made here).
// Signing helpers produce real DSSE bundles over PAE with software keys.
#ifndef CLAWGUARD_TESTS_LOADER_TEST_PKI_H_
#define CLAWGUARD_TESTS_LOADER_TEST_PKI_H_

#include <openssl/core_names.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clawguard/bundle.h"
#include "clawguard/ossl.h"
#include "clawguard/sha256.h"

namespace clawguard::testing {

// Fixed dates (Unix seconds, UTC).
inline constexpr int64_t kJan2020 = 1577836800;
inline constexpr int64_t kJan2021 = 1609459200;
inline constexpr int64_t kJan2026 = 1767225600;
inline constexpr int64_t kNow = 1796083200;  // 2026-12-01T00:00:00Z: the tests' clock
inline constexpr int64_t kDec15_2026 = 1797292800;
inline constexpr int64_t kJan2030 = 1893456000;
inline constexpr int64_t kJan2031 = 1924992000;
inline constexpr int64_t kJan2036 = 2082758400;

inline void Need(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test PKI: ") + what + ": " + ossl::GetSslErrors());
}

// NewRsaKey makes an RSA key of |bits| (weak sizes included, for refusal tests).
inline ossl::UniquePtr<EVP_PKEY> NewRsaKey(size_t bits) {
  EVP_PKEY* k = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", bits);  // variadic: bits as size_t
  Need(k != nullptr, "RSA keygen");
  return ossl::UniquePtr<EVP_PKEY>(k);
}

// WithPointFormat returns a copy of the P-256 |key| that OpenSSL encodes with the point |form|
// ("compressed", "uncompressed", "hybrid"): the same key, written another way. Issue() a
// certificate for the copy to get a certificate whose SubjectPublicKeyInfo carries that form.
inline ossl::UniquePtr<EVP_PKEY> WithPointFormat(EVP_PKEY* key, const char* form) {
  ossl::UniquePtr<EVP_PKEY> copy(EVP_PKEY_dup(key));
  Need(copy != nullptr, "EVP_PKEY_dup");
  Need(EVP_PKEY_set_utf8_string_param(copy.get(), OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT,
                                      form) == 1,
       "point conversion format");
  return copy;
}

// EncodedSpkiSha256 is the hex sha256 of |cert|'s SubjectPublicKeyInfo exactly as encoded in it.
inline std::string EncodedSpkiSha256(X509* cert) {
  unsigned char* raw = nullptr;
  const int len =
      i2d_X509_PUBKEY(X509_get_X509_PUBKEY(cert), &raw);  // allocates |raw|; owned by |der|
  const ossl::UniqueBuffer der(raw);
  Need(len > 0, "i2d_X509_PUBKEY");
  return Sha256Hex(
      std::string_view(reinterpret_cast<const char*>(der.get()), static_cast<size_t>(len)));
}

inline ossl::UniquePtr<EVP_PKEY> NewKey(const char* type = "EC") {
  EVP_PKEY* k = std::string(type) == "EC"      ? EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256")
                : std::string(type) == "P-384" ? EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-384")
                                               : EVP_PKEY_Q_keygen(nullptr, nullptr, type);
  Need(k != nullptr, "keygen");
  return ossl::UniquePtr<EVP_PKEY>(k);
}

struct CertSpec {
  std::vector<std::pair<std::string, std::string>> subject = {{"O", "acme"},
                                                              {"CN", "acme release"}};
  int64_t not_before = kJan2026;
  int64_t not_after = kJan2036;
  bool ca = false;
  bool ca_flag_in_constraints = true;  // false: basicConstraints CA:FALSE on a "CA"
  int pathlen = -1;
  std::string eku = "codeSigning";  // "" = no extendedKeyUsage extension (leaves only)
  long serial = 1;
  std::string ca_eku;             // extendedKeyUsage of a CA certificate ("" = none)
  std::string key_usage;          // overrides keyUsage ("" = the default for ca, "none" = omit)
  std::string basic_constraints;  // overrides basicConstraints ("" = the default, "none" = omit)
  std::string digest = "sha256";  // the issuer's signature digest: "sha256" or "sha1"
};

inline void AddExt(X509* x, X509V3_CTX* ctx, int nid, const std::string& value) {
  ossl::UniquePtr<X509_EXTENSION> ext(X509V3_EXT_conf_nid(nullptr, ctx, nid, value.c_str()));
  Need(ext != nullptr, "X509V3_EXT_conf_nid");
  Need(X509_add_ext(x, ext.get(), -1) == 1, "X509_add_ext");  // copies |ext|
}

// Issue makes a certificate for |subject_key| signed by |issuer_key| (|issuer| null: self-signed).
inline ossl::UniquePtr<X509> Issue(const CertSpec& s, EVP_PKEY* subject_key, X509* issuer,
                                   EVP_PKEY* issuer_key) {
  ossl::UniquePtr<X509> x(X509_new());
  Need(x != nullptr, "X509_new");
  Need(X509_set_version(x.get(), X509_VERSION_3) == 1, "version");
  Need(ASN1_INTEGER_set(X509_get_serialNumber(x.get()), s.serial) == 1, "serial");
  Need(ASN1_TIME_set(X509_getm_notBefore(x.get()), static_cast<time_t>(s.not_before)) != nullptr,
       "notBefore");
  Need(ASN1_TIME_set(X509_getm_notAfter(x.get()), static_cast<time_t>(s.not_after)) != nullptr,
       "notAfter");
  ossl::UniquePtr<X509_NAME> name(X509_NAME_new());
  for (const auto& [k, v] : s.subject) {
    Need(X509_NAME_add_entry_by_txt(name.get(), k.c_str(), MBSTRING_UTF8,
                                    reinterpret_cast<const unsigned char*>(v.c_str()), -1, -1,
                                    0) == 1,
         "subject");
  }
  Need(X509_set_subject_name(x.get(), name.get()) == 1, "set subject");  // copies
  Need(X509_set_issuer_name(x.get(), issuer ? X509_get_subject_name(issuer) : name.get()) == 1,
       "set issuer");
  Need(X509_set_pubkey(x.get(), subject_key) == 1, "set pubkey");  // up-refs the key
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer ? issuer : x.get(), x.get(), nullptr, nullptr, 0);
  std::string bc = "critical,CA:FALSE";
  std::string ku = "critical,digitalSignature";
  if (s.ca) {
    bc = std::string("critical,CA:") + (s.ca_flag_in_constraints ? "TRUE" : "FALSE");
    if (s.pathlen >= 0 && s.ca_flag_in_constraints) bc += ",pathlen:" + std::to_string(s.pathlen);
    ku = "critical,keyCertSign,cRLSign";
  }
  if (!s.basic_constraints.empty()) bc = s.basic_constraints;
  if (!s.key_usage.empty()) ku = s.key_usage;
  if (bc != "none") AddExt(x.get(), &ctx, NID_basic_constraints, bc);
  if (ku != "none") AddExt(x.get(), &ctx, NID_key_usage, ku);
  const std::string& eku = s.ca ? s.ca_eku : s.eku;
  if (!eku.empty()) AddExt(x.get(), &ctx, NID_ext_key_usage, eku);
  AddExt(x.get(), &ctx, NID_subject_key_identifier, "hash");
  AddExt(x.get(), &ctx, NID_authority_key_identifier, "keyid:always");
  const bool ed = EVP_PKEY_get_id(issuer_key) == EVP_PKEY_ED25519;
  const EVP_MD* md = ed ? nullptr : s.digest == "sha1" ? EVP_sha1() : EVP_sha256();
  Need(X509_sign(x.get(), issuer_key, md) > 0, "X509_sign");
  return x;
}

inline ossl::UniquePtr<X509_CRL> MakeCrl(X509* issuer, EVP_PKEY* key,
                                         const std::vector<long>& serials, int64_t last,
                                         int64_t next) {
  ossl::UniquePtr<X509_CRL> crl(X509_CRL_new());
  Need(crl != nullptr && X509_CRL_set_version(crl.get(), 1) == 1, "CRL version");
  Need(X509_CRL_set_issuer_name(crl.get(), X509_get_subject_name(issuer)) == 1, "CRL issuer");
  const ossl::UniquePtr<ASN1_TIME> t1(ASN1_TIME_set(nullptr, static_cast<time_t>(last)));
  const ossl::UniquePtr<ASN1_TIME> t2(ASN1_TIME_set(nullptr, static_cast<time_t>(next)));
  // set1: the CRL copies both times.
  Need(X509_CRL_set1_lastUpdate(crl.get(), t1.get()) == 1 &&
           X509_CRL_set1_nextUpdate(crl.get(), t2.get()) == 1,
       "CRL times");
  for (long serial : serials) {
    ossl::UniquePtr<X509_REVOKED> r(X509_REVOKED_new());
    const ossl::UniquePtr<ASN1_INTEGER> n(ASN1_INTEGER_new());
    Need(r != nullptr && n != nullptr && ASN1_INTEGER_set(n.get(), serial) == 1, "revoked entry");
    // Both setters copy their argument.
    Need(X509_REVOKED_set_serialNumber(r.get(), n.get()) == 1 &&
             X509_REVOKED_set_revocationDate(r.get(), t1.get()) == 1,
         "revoked");
    Need(X509_CRL_add0_revoked(crl.get(), r.get()) == 1,
         "add0_revoked");  // add0: takes ownership of r
    (void)r.release();
  }
  Need(X509_CRL_sort(crl.get()) == 1, "CRL sort");
  Need(X509_CRL_sign(crl.get(), key, EVP_sha256()) > 0, "CRL sign");
  return crl;
}

inline std::string CertPem(X509* x) {
  ossl::UniquePtr<BIO> b(BIO_new(BIO_s_mem()));
  Need(PEM_write_bio_X509(b.get(), x) == 1, "PEM_write_bio_X509");
  char* p = nullptr;
  long n = BIO_get_mem_data(b.get(), &p);
  return std::string(p, static_cast<size_t>(n));
}

inline std::string CrlPem(X509_CRL* c) {
  ossl::UniquePtr<BIO> b(BIO_new(BIO_s_mem()));
  Need(PEM_write_bio_X509_CRL(b.get(), c) == 1, "PEM_write_bio_X509_CRL");
  char* p = nullptr;
  long n = BIO_get_mem_data(b.get(), &p);
  return std::string(p, static_cast<size_t>(n));
}

inline std::string CertSha256(X509* x) { return Sha256Hex(CertificateDer(x).value()); }

// EcdsaTwin returns |cert| (signed by a P-256 issuer) with its signature (r, s) replaced by
// (r, n − s): a second certificate, made without any key, that verifies like the first.
inline ossl::UniquePtr<X509> EcdsaTwin(X509* cert) {
  ossl::UniquePtr<X509> twin(X509_dup(cert));
  Need(twin != nullptr, "X509_dup");
  const ASN1_BIT_STRING* sig = nullptr;
  X509_get0_signature(&sig, nullptr, twin.get());
  const unsigned char* p = sig->data;
  ossl::UniquePtr<ECDSA_SIG> ecdsa(d2i_ECDSA_SIG(nullptr, &p, sig->length));
  Need(ecdsa != nullptr, "d2i_ECDSA_SIG");
  ossl::UniquePtr<EC_GROUP> group(EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1));
  const BIGNUM* r = nullptr;
  const BIGNUM* s = nullptr;
  ECDSA_SIG_get0(ecdsa.get(), &r, &s);
  BIGNUM* r2 = BN_dup(r);
  BIGNUM* s2 = BN_new();
  Need(r2 && s2 && BN_sub(s2, EC_GROUP_get0_order(group.get()), s) == 1, "n - s");
  ossl::UniquePtr<ECDSA_SIG> flipped(ECDSA_SIG_new());
  Need(ECDSA_SIG_set0(flipped.get(), r2, s2) == 1, "ECDSA_SIG_set0");  // takes r2, s2
  unsigned char* raw = nullptr;
  const int len = i2d_ECDSA_SIG(flipped.get(), &raw);  // allocates |raw|; owned by |der|
  const ossl::UniqueBuffer der(raw);
  auto* writable = const_cast<ASN1_BIT_STRING*>(sig);  // |twin| is ours alone
  Need(len > 0 && ASN1_BIT_STRING_set(writable, der.get(), len) == 1,
       "set the twin signature");  // copies
  writable->flags &= ~0x07;
  writable->flags |= ASN1_STRING_FLAG_BITS_LEFT;
  return twin;
}

// SignRaw signs |msg| the way ClawGuard does: ECDSA P-256 DER over SHA-256, Ed25519 raw.
inline std::string SignRaw(EVP_PKEY* key, const std::string& msg) {
  ossl::UniquePtr<EVP_MD_CTX> ctx(EVP_MD_CTX_new());
  const bool ed = EVP_PKEY_get_id(key) == EVP_PKEY_ED25519;
  Need(EVP_DigestSignInit(ctx.get(), nullptr, ed ? nullptr : EVP_sha256(), nullptr, key) == 1,
       "DigestSignInit");
  size_t len = 0;
  Need(EVP_DigestSign(ctx.get(), nullptr, &len, reinterpret_cast<const unsigned char*>(msg.data()),
                      msg.size()) == 1,
       "DigestSign size");
  std::string sig(len, '\0');
  Need(EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                      reinterpret_cast<const unsigned char*>(msg.data()), msg.size()) == 1,
       "DigestSign");
  sig.resize(len);
  return sig;
}

// SignerRef is one signer: its key and its chain (leaf first, intermediates after).
struct SignerRef {
  EVP_PKEY* key;
  std::vector<X509*> chain;
  std::string keyid_override;  // non-empty: claim another keyid
  bool corrupt = false;        // flip a bit of the signature
};

inline std::string MakeBundle(const std::string& payload_type, const std::string& payload,
                              const std::vector<SignerRef>& signers) {
  Bundle b;
  b.payload_type = payload_type;
  b.payload = payload;
  const std::string pae = Pae(payload_type, payload);
  for (const auto& s : signers) {
    // get0: owned by the leaf.
    const std::string keyid =
        s.keyid_override.empty() ? KeyIdOf(X509_get0_pubkey(s.chain[0])).value() : s.keyid_override;
    std::string sig = SignRaw(s.key, pae);
    if (s.corrupt) sig[sig.size() / 2] = static_cast<char>(sig[sig.size() / 2] ^ 0x01);
    b.signatures.push_back({keyid, sig});
    std::vector<std::string> ders;
    for (X509* c : s.chain) ders.push_back(CertificateDer(c).value());
    b.certificates[keyid] = ders;
  }
  return SerializeBundle(b);
}

}  // namespace clawguard::testing

#endif  // CLAWGUARD_TESTS_LOADER_TEST_PKI_H_
