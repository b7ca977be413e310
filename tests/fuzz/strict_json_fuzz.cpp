// strict_json_fuzz.cpp — ParseJsonStrict on arbitrary bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "clawguard/strict_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)clawguard::ParseJsonStrict(std::string_view(reinterpret_cast<const char*>(data), size),
                                   clawguard::Reason::kBundleInvalid, "fuzz");
  return 0;
}
