// test_pki.h — throwaway TLS material for host tests, made with the openssl CLI in a temp dir:
// a self-signed CA and a leaf (by default for "localhost" / 127.0.0.1) (P-256, valid for 2 days
// from now).
#ifndef CLAWGUARD_TESTS_HOST_SUPPORT_TEST_PKI_H_
#define CLAWGUARD_TESTS_HOST_SUPPORT_TEST_PKI_H_

#include <string>

namespace clawguard::host::testing {

struct TestPki {
  std::string ca_cert;    // PEM path of the CA certificate (the client's trust anchor)
  std::string leaf_cert;  // PEM path of the server certificate
  std::string leaf_key;   // PEM path of the server key
};

// kLocalhostSan names the leaf's default subjectAltName.
inline constexpr const char* kLocalhostSan = "DNS:localhost,IP:127.0.0.1";

// MakeTestPki writes a fresh CA and a leaf (subject CN=localhost, subjectAltName |san|) under
// |dir|/|name|-*; false with |*error| on failure.
bool MakeTestPki(const std::string& dir, const std::string& name, TestPki* out, std::string* error,
                 const std::string& san = kLocalhostSan);

}  // namespace clawguard::host::testing

#endif  // CLAWGUARD_TESTS_HOST_SUPPORT_TEST_PKI_H_
