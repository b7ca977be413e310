// sha256.h — streaming SHA-256 over OpenSSL EVP.
#ifndef CLAWGUARD_SHA256_H_
#define CLAWGUARD_SHA256_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
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

// Sha256Behind hashes a buffer while its producer is still filling it, on a second thread, so
// reading or decompressing and hashing take the longer of the two rather than their sum. The
// producer fills a buffer front to back and Publishes each prefix that is final; the hasher
// reads only published bytes, and only until the producer calls Wait (e.g. before the buffer
// moves) or Finish. Buffers under kInlineBelow, or a host that cannot start a thread, are hashed
// on the producer's thread at Publish. Not thread-safe: one producer per instance.
//
//   Sha256Behind h;
//   out.reserve(n);
//   ...append...;  h.Publish(out);    // before a reallocation: h.Wait()
//   Sha256Digest d = h.Finish();
class Sha256Behind {
 public:
  // kInlineBelow: the size hint under which no thread is started (a thread costs ~50 µs).
  static constexpr size_t kInlineBelow = size_t{4} << 20;
  // |expected_size| is the producer's estimate of the total; it only decides thread or inline.
  explicit Sha256Behind(uint64_t expected_size);
  // WARNING: destroy it before the buffer it hashes (declare it after): without Finish the
  // destructor abandons the digest but may still be reading one step of published bytes.
  ~Sha256Behind();
  Sha256Behind(const Sha256Behind&) = delete;
  Sha256Behind& operator=(const Sha256Behind&) = delete;
  // Publish says that |done| — the whole buffer so far, from its first byte — is final. Its
  // first bytes are the ones published before (same contents; the address may differ only if
  // Wait was called since).
  void Publish(std::string_view done);
  // Wait returns once every published byte is hashed: the buffer may then move or be freed.
  void Wait();
  // Finish waits, stops the thread and returns the digest of every published byte.
  Sha256Digest Finish();

 private:
  struct Shared;
  void Loop();
  Sha256 hash_;
  size_t hashed_ = 0;               // inline mode: bytes hashed so far
  std::unique_ptr<Shared> shared_;  // null: inline mode
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
