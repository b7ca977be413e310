// secret_bytes.h — SecretBytes holds a PIN or an HMAC key: zeroed on free, no implicit copy, no
// operator<<, constant-time Equals. Raw access only through InsecureSecretAccess (grep for it).
#ifndef CLAWGUARD_SECRET_BYTES_H_
#define CLAWGUARD_SECRET_BYTES_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clawguard {

class SecretBytes {
 public:
  SecretBytes() = default;
  explicit SecretBytes(std::string_view bytes);
  explicit SecretBytes(size_t size);  // zero-filled
  ~SecretBytes();
  SecretBytes(SecretBytes&& other) noexcept;
  SecretBytes& operator=(SecretBytes&& other) noexcept;
  SecretBytes(const SecretBytes&) = delete;
  SecretBytes& operator=(const SecretBytes&) = delete;

  // Clone makes an explicit copy (there is no implicit one).
  SecretBytes Clone() const;
  size_t size() const { return bytes_.size(); }
  bool empty() const { return bytes_.empty(); }
  // Equals compares in constant time for equal sizes (sodium_memcmp).
  bool Equals(const SecretBytes& other) const;
  // Wipe zeroes and empties the buffer.
  void Wipe();

 private:
  friend class InsecureSecretAccess;
  std::vector<uint8_t> bytes_;
};

// InsecureSecretAccess is the only way to the raw bytes: every use is a place to review.
class InsecureSecretAccess {
 public:
  static std::string_view View(const SecretBytes& s) {
    return {reinterpret_cast<const char*>(s.bytes_.data()), s.bytes_.size()};
  }
  static uint8_t* MutableData(SecretBytes& s) { return s.bytes_.data(); }
};

// TakeEnvSecret reads the environment variable |name| into a SecretBytes and takes it out of the
// process: the value is overwritten in place first (the environment strings a process starts
// with are the bytes /proc/self/environ shows, so unsetenv alone would leave them readable), then
// the variable is unset, so neither getenv nor /proc/self/environ shows it to code loaded later
// (plugins). nullopt when it is not set. WARNING: not thread-safe (nothing about the environment
// is): call at start-up, before other threads run.
std::optional<SecretBytes> TakeEnvSecret(const std::string& name);

// ConstantTimeEquals compares two byte strings without data-dependent timing (length is public).
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace clawguard

#endif  // CLAWGUARD_SECRET_BYTES_H_
