// x509_util.cpp — see x509_util.h.
#include "x509_util.h"

#include <openssl/pem.h>

#include <ctime>

#include "clawguard/sha256.h"

namespace clawguard::x509util {

std::string DerOf(X509* cert) {
  unsigned char* der = nullptr;
  const int len = i2d_X509(cert, &der);  // allocates |der|; we free it below
  if (len <= 0 || der == nullptr) {
    (void)ossl::GetSslErrors();
    return {};
  }
  std::string out(reinterpret_cast<const char*>(der), static_cast<size_t>(len));
  OPENSSL_free(der);
  return out;
}

std::string Sha256HexOfCert(X509* cert) { return Sha256Hex(DerOf(cert)); }

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

Result<ossl::UniquePtr<X509_CRL>> ReadCrl(std::string_view bytes, Reason reason, const std::string& what) {
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

}  // namespace clawguard::x509util
