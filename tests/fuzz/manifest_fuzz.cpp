// manifest_fuzz.cpp — ParseManifest on arbitrary bytes; a manifest that parses must survive
// RenderManifestYaml → ParseManifest unchanged (pack writes what the loader reads).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "clawguard/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto m = clawguard::ParseManifest(text, "manifest.yaml");
  if (!m.ok()) return 0;
  auto again = clawguard::ParseManifest(clawguard::RenderManifestYaml(*m), "rendered.yaml");
  if (!again.ok() || !(*again == *m)) std::abort();
  (void)clawguard::ManifestToJson(*m).dump();
  return 0;
}
