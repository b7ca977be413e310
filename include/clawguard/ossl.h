// ossl.h — one RAII owner per OpenSSL type (BoringSSL BORINGSSL_MAKE_DELETER, Tink
// ssl_unique_ptr.h), and UniqueBuffer for memory OpenSSL allocates for the caller. No *_free call
// appears outside these deleters.
#ifndef CLAWGUARD_OSSL_H_
#define CLAWGUARD_OSSL_H_

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string>

namespace clawguard::ossl {

template <typename T>
struct Deleter;

// |type| is a type name, which cannot be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define CLAWGUARD_OSSL_DELETER(type, fn)      \
  template <>                                 \
  struct Deleter<type> {                      \
    void operator()(type* p) const { fn(p); } \
  }
// NOLINTEND(bugprone-macro-parentheses)

CLAWGUARD_OSSL_DELETER(BIO, BIO_free_all);
CLAWGUARD_OSSL_DELETER(EVP_PKEY, EVP_PKEY_free);
CLAWGUARD_OSSL_DELETER(EVP_PKEY_CTX, EVP_PKEY_CTX_free);
CLAWGUARD_OSSL_DELETER(EVP_MD_CTX, EVP_MD_CTX_free);
CLAWGUARD_OSSL_DELETER(EVP_MD, EVP_MD_free);
CLAWGUARD_OSSL_DELETER(X509, X509_free);
CLAWGUARD_OSSL_DELETER(X509_CRL, X509_CRL_free);
CLAWGUARD_OSSL_DELETER(X509_REQ, X509_REQ_free);
CLAWGUARD_OSSL_DELETER(X509_STORE, X509_STORE_free);
CLAWGUARD_OSSL_DELETER(X509_STORE_CTX, X509_STORE_CTX_free);
CLAWGUARD_OSSL_DELETER(X509_NAME, X509_NAME_free);
CLAWGUARD_OSSL_DELETER(X509_EXTENSION, X509_EXTENSION_free);
CLAWGUARD_OSSL_DELETER(X509_REVOKED, X509_REVOKED_free);
CLAWGUARD_OSSL_DELETER(ECDSA_SIG, ECDSA_SIG_free);
CLAWGUARD_OSSL_DELETER(BIGNUM, BN_free);
// ASN1_OCTET_STRING, ASN1_BIT_STRING, ASN1_INTEGER and ASN1_TIME are all ASN1_STRING (one deleter
// serves them all).
CLAWGUARD_OSSL_DELETER(ASN1_STRING, ASN1_STRING_free);
CLAWGUARD_OSSL_DELETER(EXTENDED_KEY_USAGE, EXTENDED_KEY_USAGE_free);
CLAWGUARD_OSSL_DELETER(OSSL_PARAM_BLD, OSSL_PARAM_BLD_free);
CLAWGUARD_OSSL_DELETER(OSSL_PARAM, OSSL_PARAM_free);
CLAWGUARD_OSSL_DELETER(X509_ALGOR, X509_ALGOR_free);
CLAWGUARD_OSSL_DELETER(EC_GROUP, EC_GROUP_free);
CLAWGUARD_OSSL_DELETER(EC_POINT, EC_POINT_free);

template <>
struct Deleter<STACK_OF(X509)> {
  void operator()(STACK_OF(X509) * p) const { sk_X509_pop_free(p, X509_free); }
};

#undef CLAWGUARD_OSSL_DELETER

// UniquePtr<T> owns one OpenSSL object.
template <typename T>
using UniquePtr = std::unique_ptr<T, Deleter<T>>;

// BufferDeleter frees memory OpenSSL allocated and handed to the caller (OPENSSL_free).
struct BufferDeleter {
  void operator()(unsigned char* p) const { OPENSSL_free(p); }
};

// UniqueBuffer owns a buffer OpenSSL allocated for the caller: the output of an i2d_* function
// given a null |*out|, or of ASN1_STRING_to_UTF8. Adopt the pointer right after the call, before
// the length is checked: OpenSSL leaves it null when it allocated nothing.
using UniqueBuffer = std::unique_ptr<unsigned char, BufferDeleter>;

// GetSslErrors drains OpenSSL's thread-local error queue into one line ("" if empty). Decide on
// the return value first, then call this for the message (Tink GetSslErrors).
std::string GetSslErrors();

}  // namespace clawguard::ossl

#endif  // CLAWGUARD_OSSL_H_
