// fuzz-requires: clawguard_host
// business_key_fuzz.cpp — JSON Pointer business-key extraction. Input: pointer \n raw body.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "host/business_key.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nl = in.find('\n');
  const std::string_view pointer = nl == std::string_view::npos ? std::string_view("/order_id") : in.substr(0, nl);
  const std::string_view body = nl == std::string_view::npos ? in : in.substr(nl + 1);
  (void)clawguard::host::ExtractBusinessKey(body, pointer);
  return 0;
}
