// sha256.cpp — SHA-256 on EVP (SHA-NI where the CPU has it).
#include "clawguard/sha256.h"

#include "clawguard/encoding.h"
#include "clawguard/error.h"

namespace clawguard {
namespace {

// The SHA-256 implementation, fetched once. EVP_sha256() in an init makes OpenSSL 3 look the
// algorithm up in the provider store on every call (name lookups, a reference count, a lock):
// most of the cost of hashing a short input such as an event key's fields. Never freed.
const EVP_MD* Sha256Md() {
  static const EVP_MD* const md = [] {
    EVP_MD* m = EVP_MD_fetch(nullptr, "SHA2-256", nullptr);
    CLAWGUARD_CHECK(m != nullptr);
    return m;
  }();
  return md;
}

}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  CLAWGUARD_CHECK(ctx_ != nullptr);
  CLAWGUARD_CHECK(EVP_DigestInit_ex(ctx_.get(), Sha256Md(), nullptr) == 1);
}

void Sha256::Update(std::string_view bytes) {
  CLAWGUARD_CHECK(EVP_DigestUpdate(ctx_.get(), bytes.data(), bytes.size()) == 1);
}

Sha256Digest Sha256::Finish() {
  Sha256Digest d{};
  unsigned int len = 0;
  CLAWGUARD_CHECK(EVP_DigestFinal_ex(ctx_.get(), d.data(), &len) == 1 && len == d.size());
  return d;
}

Sha256Digest Sha256Of(std::string_view bytes) {
  // One context per thread, re-initialised per call: no allocation per hash.
  thread_local const ossl::UniquePtr<EVP_MD_CTX> ctx(EVP_MD_CTX_new());
  CLAWGUARD_CHECK(ctx != nullptr);
  Sha256Digest d{};
  unsigned int len = 0;
  CLAWGUARD_CHECK(EVP_DigestInit_ex(ctx.get(), Sha256Md(), nullptr) == 1 &&
                  EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size()) == 1 &&
                  EVP_DigestFinal_ex(ctx.get(), d.data(), &len) == 1 && len == d.size());
  return d;
}

std::string DigestHex(const Sha256Digest& d) { return HexEncode(DigestView(d)); }
std::string Sha256Hex(std::string_view bytes) { return DigestHex(Sha256Of(bytes)); }

}  // namespace clawguard
