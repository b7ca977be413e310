// fuzz-requires: clawguard_signer
// package_manifest_fuzz.cpp — ReadFirstEntryManifest (libarchive zstd+tar from memory) on
// arbitrary bytes: the signer's only parse of a package before signing it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "signer/package_manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)clawguard::signer::ReadFirstEntryManifest(
      std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
