// bundle_fuzz.cpp — ParseBundle and ParseStatement on arbitrary bytes; a bundle that parses must
// re-serialize to one that parses again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "clawguard/bundle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)clawguard::ParseStatement(text);
  auto b = clawguard::ParseBundle(text);
  if (!b.ok()) return 0;
  if (!clawguard::ParseBundle(clawguard::SerializeBundle(*b)).ok()) std::abort();
  (void)clawguard::ParseStatement(b->payload);
  for (const auto& [keyid, chain] : b->certificates) {
    for (const auto& der : chain) (void)clawguard::ParseCertificateDer(der);
  }
  return 0;
}
