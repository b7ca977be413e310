// strict_yaml_fuzz.cpp — ParseYamlStrict + YamlMap getters on arbitrary bytes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "clawguard/strict_yaml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto doc = clawguard::ParseYamlStrict(text, "fuzz.yaml");
  if (!doc.ok()) return 0;
  auto map = clawguard::YamlMap::Create(doc->root, "fuzz.yaml", "");
  if (!map.ok()) return 0;
  (void)map->String("a");
  (void)map->Int("b", -100, 100);
  (void)map->Bool("c");
  (void)map->Size("d", 1ull << 40);
  (void)map->Duration("e");
  (void)map->Finish();
  return 0;
}
