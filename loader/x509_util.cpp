// x509_util.cpp — see x509_util.h.
#include "x509_util.h"

#include <openssl/core_names.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <ctime>

#include "clawguard/bundle.h"
#include "clawguard/sha256.h"

namespace clawguard::x509util {

Result<std::string> Sha256HexOfCert(X509* cert) {
  CLAWGUARD_ASSIGN_OR_RETURN(const std::string der, CertificateDer(cert));
  return Sha256Hex(der);
}

Result<std::vector<ossl::UniquePtr<X509>>> ReadPemCertificates(std::string_view pem, Reason reason,
                                                               const std::string& what) {
  ossl::UniquePtr<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return Status(reason, what + ": cannot allocate a BIO: " + ossl::GetSslErrors());
  std::vector<ossl::UniquePtr<X509>> out;
  while (true) {
    ossl::UniquePtr<X509> cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!cert) break;
    out.push_back(std::move(cert));
  }
  // The loop ends with a "no start line" error at EOF: expected, drain it.
  const std::string errors = ossl::GetSslErrors();
  if (out.empty()) return Status(reason, what + ": no PEM certificate found (" + errors + ")");
  return out;
}

Result<ossl::UniquePtr<X509_CRL>> ReadCrl(std::string_view bytes, Reason reason,
                                          const std::string& what) {
  ossl::UniquePtr<BIO> bio(BIO_new_mem_buf(bytes.data(), static_cast<int>(bytes.size())));
  if (!bio) return Status(reason, what + ": cannot allocate a BIO: " + ossl::GetSslErrors());
  ossl::UniquePtr<X509_CRL> crl(PEM_read_bio_X509_CRL(bio.get(), nullptr, nullptr, nullptr));
  if (!crl) {
    (void)ossl::GetSslErrors();
    const unsigned char* p = reinterpret_cast<const unsigned char*>(bytes.data());
    crl.reset(d2i_X509_CRL(nullptr, &p, static_cast<long>(bytes.size())));
    if (!crl || p != reinterpret_cast<const unsigned char*>(bytes.data()) + bytes.size()) {
      return Status(reason, what + ": not a PEM or DER CRL: " + ossl::GetSslErrors());
    }
  }
  return crl;
}

std::optional<int64_t> AsnTimeToUnix(const ASN1_TIME* t) {
  if (t == nullptr) return std::nullopt;
  std::tm tm{};
  if (ASN1_TIME_to_tm(t, &tm) != 1) {
    (void)ossl::GetSslErrors();
    return std::nullopt;
  }
  return static_cast<int64_t>(timegm(&tm));
}

Result<std::string> EncodedSpkiSha256(X509* cert) {
  // get0: the X509_PUBKEY is owned by |cert|; it keeps the bytes the certificate carried.
  X509_PUBKEY* spki = X509_get_X509_PUBKEY(cert);
  if (spki == nullptr) {
    return Status(
        Reason::kAlgorithmRefused,
        "expected a SubjectPublicKeyInfo in the certificate, found none: " + ossl::GetSslErrors());
  }
  unsigned char* raw = nullptr;
  const int len = i2d_X509_PUBKEY(spki, &raw);  // allocates |raw|; owned by |der|
  const ossl::UniqueBuffer der(raw);
  if (len <= 0 || der == nullptr) {
    return Status(Reason::kAlgorithmRefused,
                  "expected the certificate's SubjectPublicKeyInfo to encode as DER, but "
                  "i2d_X509_PUBKEY failed: " +
                      ossl::GetSslErrors());
  }
  return Sha256Hex(
      std::string_view(reinterpret_cast<const char*>(der.get()), static_cast<size_t>(len)));
}

Result<std::optional<std::string>> RevokedKeyEntry(X509* cert,
                                                   const std::set<std::string>& revoked_keys) {
  if (revoked_keys.empty()) return std::optional<std::string>();
  EVP_PKEY* key = X509_get0_pubkey(cert);  // get0: owned by |cert|
  if (key == nullptr)
    return Status(Reason::kAlgorithmRefused,
                  "the certificate's key is unreadable: " + ossl::GetSslErrors());
  CLAWGUARD_ASSIGN_OR_RETURN(std::vector<std::string> aliases, KeyIdAliasesOf(key));
  CLAWGUARD_ASSIGN_OR_RETURN(std::string encoded, EncodedSpkiSha256(cert));
  aliases.push_back(std::move(encoded));
  for (const auto& a : aliases) {
    if (revoked_keys.count(a) != 0) return std::optional<std::string>(a);
  }
  return std::optional<std::string>();
}

namespace {

// EcdsaTwinDer returns |cert|'s DER with its ECDSA signature (r, s) replaced by (r, n − s), or
// nothing when |issuer|'s key is not EC (on a curve OpenSSL names) or the signature is not an
// ECDSA-Sig-Value; kInternal when OpenSSL fails to build or encode the twin.
Result<std::optional<std::string>> EcdsaTwinDer(X509* cert, X509* issuer) {
  const auto failed = [](const std::string& what) {
    return Status(Reason::kInternal,
                  "cannot build the ECDSA twin of a certificate to check revoked.certificates: " +
                      what + " failed: " + ossl::GetSslErrors());
  };
  EVP_PKEY* issuer_key = X509_get0_pubkey(issuer);  // get0: owned by |issuer|
  const ASN1_BIT_STRING* sig = nullptr;             // get0: owned by |cert|
  X509_get0_signature(&sig, nullptr, cert);
  if (issuer_key == nullptr || sig == nullptr || EVP_PKEY_get_base_id(issuer_key) != EVP_PKEY_EC) {
    (void)ossl::GetSslErrors();
    return std::optional<std::string>();  // no twin
  }
  char group_name[64] = {0};
  size_t group_len = 0;
  if (EVP_PKEY_get_utf8_string_param(issuer_key, OSSL_PKEY_PARAM_GROUP_NAME, group_name,
                                     sizeof(group_name), &group_len) != 1) {
    (void)ossl::GetSslErrors();
    return std::optional<std::string>();  // no twin
  }
  ossl::UniquePtr<EC_GROUP> group(EC_GROUP_new_by_curve_name(OBJ_txt2nid(group_name)));
  const unsigned char* p = sig->data;
  ossl::UniquePtr<ECDSA_SIG> ecdsa(d2i_ECDSA_SIG(nullptr, &p, sig->length));
  if (!group || !ecdsa || p != sig->data + sig->length) {
    (void)ossl::GetSslErrors();
    return std::optional<std::string>();  // no twin
  }
  ossl::UniquePtr<ECDSA_SIG> twin(ECDSA_SIG_new());
  if (!twin) return failed("ECDSA_SIG_new");
  ossl::UniquePtr<X509> copy(X509_dup(cert));
  if (!copy) return failed("X509_dup");
  const BIGNUM* r = nullptr;  // get0: owned by |ecdsa|
  const BIGNUM* s = nullptr;
  ECDSA_SIG_get0(ecdsa.get(), &r, &s);
  ossl::UniquePtr<BIGNUM> twin_r(BN_dup(r));
  ossl::UniquePtr<BIGNUM> twin_s(BN_new());
  // get0: the order is owned by |group|.
  if (!twin_r || !twin_s || BN_sub(twin_s.get(), EC_GROUP_get0_order(group.get()), s) != 1 ||
      ECDSA_SIG_set0(twin.get(), twin_r.get(), twin_s.get()) != 1) {  // set0: takes both on success
    return failed("computing (r, n - s)");
  }
  (void)twin_r.release();
  (void)twin_s.release();
  unsigned char* raw = nullptr;
  const int twin_len = i2d_ECDSA_SIG(twin.get(), &raw);  // allocates |raw|; owned by |twin_der|
  const ossl::UniqueBuffer twin_der(raw);
  const ASN1_BIT_STRING* copy_sig = nullptr;  // get0: owned by |copy|
  X509_get0_signature(&copy_sig, nullptr, copy.get());
  // WARNING: X509_get0_signature hands out a const pointer; |copy| is ours alone, so writing the
  // twin signature into it is safe.
  auto* writable = const_cast<ASN1_BIT_STRING*>(copy_sig);
  // ASN1_BIT_STRING_set copies the bytes: |twin_der| stays ours.
  if (twin_len <= 0 || twin_der == nullptr || writable == nullptr ||
      ASN1_BIT_STRING_set(writable, twin_der.get(), twin_len) != 1) {
    return failed("writing the twin signature");
  }
  writable->flags &= ~0x07;  // no unused bits
  writable->flags |= ASN1_STRING_FLAG_BITS_LEFT;
  auto der = CertificateDer(copy.get());
  if (!der.ok()) return der.error().WithContext("the ECDSA twin of a certificate");
  return std::optional<std::string>(std::move(der).value());
}

}  // namespace

Result<std::vector<std::string>> CertificateDigests(X509* cert, X509* issuer) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::string digest, Sha256HexOfCert(cert));
  std::vector<std::string> out{std::move(digest)};
  CLAWGUARD_ASSIGN_OR_RETURN(const std::optional<std::string> twin, EcdsaTwinDer(cert, issuer));
  if (twin) out.push_back(Sha256Hex(*twin));
  return out;
}

std::string SubjectText(X509* cert) {
  ossl::UniquePtr<BIO> bio(BIO_new(BIO_s_mem()));
  // get0: the name is owned by |cert|.
  if (!bio || X509_NAME_print_ex(bio.get(), X509_get_subject_name(cert), 0, XN_FLAG_RFC2253) < 0) {
    (void)ossl::GetSslErrors();
    return "?";
  }
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);  // borrowed from bio
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : std::string("(empty subject)");
}

namespace {

// EkuListsCodeSigning: the certificate has an EKU extension (checked by the caller) whose list
// holds id-kp-codeSigning. WARNING: OpenSSL 3.0 reports every bit for a certificate without the
// extension, so presence is always checked first (EXFLAG_XKUSAGE).
bool EkuListsCodeSigning(X509* cert) {
  return (X509_get_extended_key_usage(cert) & XKU_CODE_SIGN) != 0;
}

std::string EkuOnlyAnyNote(X509* cert) {
  return (X509_get_extended_key_usage(cert) & XKU_ANYEKU) != 0
             ? " (anyExtendedKeyUsage is not accepted in place of codeSigning)"
             : "";
}

}  // namespace

Status CheckCodeSigningLeaf(X509* leaf, EkuRule rule, std::string_view what) {
  const std::string w(what);
  const uint32_t flags = X509_get_extension_flags(leaf);  // also caches the extensions
  if ((flags & EXFLAG_INVALID) != 0) {
    return Status(Reason::kChainUntrusted, w + " has a malformed or duplicated extension");
  }
  if ((flags & EXFLAG_XKUSAGE) == 0 && rule == EkuRule::kRequired) {
    return Status(Reason::kChainUntrusted,
                  w + " has no extendedKeyUsage extension; codeSigning is required");
  }
  if ((flags & EXFLAG_XKUSAGE) != 0 && !EkuListsCodeSigning(leaf)) {
    return Status(Reason::kChainUntrusted,
                  w + "'s extendedKeyUsage lacks codeSigning" + EkuOnlyAnyNote(leaf));
  }
  if ((flags & EXFLAG_KUSAGE) != 0 && (X509_get_key_usage(leaf) & KU_DIGITAL_SIGNATURE) == 0) {
    return Status(Reason::kChainUntrusted,
                  w + "'s keyUsage lacks digitalSignature; a code-signing key must be allowed "
                      "to sign");
  }
  if ((flags & EXFLAG_CA) != 0) {
    return Status(Reason::kChainUntrusted,
                  w + " is a CA certificate (basicConstraints CA:TRUE); a signer's certificate "
                      "must not be able to issue certificates");
  }
  if (X509_check_ca(leaf) != 0) {
    return Status(Reason::kChainUntrusted,
                  w + " could act as a CA (keyCertSign without basicConstraints, or a v1 "
                      "self-signed certificate); a signer's certificate must be an end entity");
  }
  return Status::Ok();
}

Status CheckIssuersPermitCodeSigning(const std::vector<X509*>& chain) {
  for (size_t i = 1; i < chain.size(); ++i) {
    X509* c = chain[i];
    const uint32_t flags = X509_get_extension_flags(c);
    if ((flags & EXFLAG_XKUSAGE) == 0) continue;  // no restriction
    if (!EkuListsCodeSigning(c)) {
      return Status(Reason::kChainUntrusted,
                    "the certificate at depth " + std::to_string(i) + " (" + SubjectText(c) +
                        ") restricts extendedKeyUsage without codeSigning" + EkuOnlyAnyNote(c) +
                        "; it cannot vouch for a code-signing leaf");
    }
  }
  return Status::Ok();
}

}  // namespace clawguard::x509util
