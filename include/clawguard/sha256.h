// sha256.h — streaming SHA-256 over OpenSSL EVP.
#ifndef CLAWGUARD_SHA256_H_
#define CLAWGUARD_SHA256_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "clawguard/ossl.h"

namespace clawguard {

using Sha256Digest = std::array<uint8_t, 32>;

// Sha256 hashes a stream of bytes. Not thread-safe; one instance per stream.
class Sha256 {
 public:
  Sha256();
  Sha256(Sha256&&) noexcept = default;
  Sha256& operator=(Sha256&&) noexcept = default;
  void Update(std::string_view bytes);
  // Finish returns the digest; the object must not be updated afterwards.
  Sha256Digest Finish();

 private:
  ossl::UniquePtr<EVP_MD_CTX> ctx_;
};

// Sha256Of hashes |bytes| in one call.
Sha256Digest Sha256Of(std::string_view bytes);
// Sha256Hex returns the lowercase hex SHA-256 of |bytes|.
std::string Sha256Hex(std::string_view bytes);
// DigestHex renders a digest as 64 lowercase hex characters.
std::string DigestHex(const Sha256Digest& d);
// DigestView views a digest as bytes.
inline std::string_view DigestView(const Sha256Digest& d) {
  return {reinterpret_cast<const char*>(d.data()), d.size()};
}

}  // namespace clawguard

#endif  // CLAWGUARD_SHA256_H_
