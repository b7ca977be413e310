// sha256.cpp — SHA-256 on EVP (SHA-NI where the CPU has it).
#include "clawguard/sha256.h"

#include "clawguard/encoding.h"
#include "clawguard/error.h"

namespace clawguard {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  CLAWGUARD_CHECK(ctx_ != nullptr);
  CLAWGUARD_CHECK(EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) == 1);
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
  Sha256 h;
  h.Update(bytes);
  return h.Finish();
}

std::string DigestHex(const Sha256Digest& d) { return HexEncode(DigestView(d)); }
std::string Sha256Hex(std::string_view bytes) { return DigestHex(Sha256Of(bytes)); }

}  // namespace clawguard
