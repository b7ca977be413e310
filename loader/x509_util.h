// x509_util.h — small X.509 helpers shared inside the loader (not installed).
#ifndef CLAWGUARD_LOADER_X509_UTIL_H_
#define CLAWGUARD_LOADER_X509_UTIL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/error.h"
#include "clawguard/ossl.h"

namespace clawguard::x509util {

// DerOf re-encodes |cert| as DER ("" on failure).
std::string DerOf(X509* cert);
// Sha256HexOfCert is the lowercase hex sha256 of |cert|'s DER.
std::string Sha256HexOfCert(X509* cert);
// ReadPemCertificates parses every certificate of a PEM text (at least one) with |reason|.
Result<std::vector<ossl::UniquePtr<X509>>> ReadPemCertificates(std::string_view pem, Reason reason,
                                                               const std::string& what);
// ReadCrl parses one CRL, PEM or DER.
Result<ossl::UniquePtr<X509_CRL>> ReadCrl(std::string_view bytes, Reason reason, const std::string& what);
// AsnTimeToUnix converts an ASN1_TIME to Unix seconds.
std::optional<int64_t> AsnTimeToUnix(const ASN1_TIME* t);

}  // namespace clawguard::x509util

#endif  // CLAWGUARD_LOADER_X509_UTIL_H_
