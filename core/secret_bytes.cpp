// secret_bytes.cpp — SecretBytes on libsodium's wiping and constant-time compare.
#include "clawguard/secret_bytes.h"

#include <sodium.h>

#include <unistd.h>  // environ

#include <cstdlib>
#include <cstring>

namespace clawguard {

SecretBytes::SecretBytes(std::string_view bytes) : bytes_(bytes.begin(), bytes.end()) {}
SecretBytes::SecretBytes(size_t size) : bytes_(size, 0) {}
SecretBytes::~SecretBytes() { Wipe(); }

SecretBytes::SecretBytes(SecretBytes&& other) noexcept : bytes_(std::move(other.bytes_)) {
  other.bytes_.clear();
}

SecretBytes& SecretBytes::operator=(SecretBytes&& other) noexcept {
  if (this != &other) {
    Wipe();
    bytes_ = std::move(other.bytes_);
    other.bytes_.clear();
  }
  return *this;
}

SecretBytes SecretBytes::Clone() const {
  SecretBytes copy;
  copy.bytes_ = bytes_;
  return copy;
}

bool SecretBytes::Equals(const SecretBytes& other) const {
  return ConstantTimeEquals(InsecureSecretAccess::View(*this), InsecureSecretAccess::View(other));
}

void SecretBytes::Wipe() {
  if (!bytes_.empty()) sodium_memzero(bytes_.data(), bytes_.size());
  bytes_.clear();
}

std::optional<SecretBytes> TakeEnvSecret(const std::string& name) {
  const char* first = std::getenv(name.c_str());  // getenv is not thread-safe: start-up only
  if (first == nullptr) return std::nullopt;
  SecretBytes secret{std::string_view(first)};
  // Every entry of that name (an environment may hold one twice; getenv shows only the first).
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, name.c_str(), name.size()) == 0 && (*e)[name.size()] == '=') {
      char* value = *e + name.size() + 1;
      sodium_memzero(value, std::strlen(value));
    }
  }
  ::unsetenv(name.c_str());
  return secret;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  if (a.empty()) return true;
  return sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace clawguard
