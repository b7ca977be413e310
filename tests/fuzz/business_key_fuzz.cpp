// fuzz-requires: clawguard_host
// business_key_fuzz.cpp — JSON Pointer business-key extraction. Input: pointer \n raw body.
// Differential: the streaming extractor and the document-based reference must agree on every
// input (the same value, or the same refusal with the same words).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "host/intake/business_key.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nl = in.find('\n');
  const std::string_view pointer =
      nl == std::string_view::npos ? std::string_view("/order_id") : in.substr(0, nl);
  const std::string_view body = nl == std::string_view::npos ? in : in.substr(nl + 1);
  const auto fast = clawguard::host::ExtractBusinessKey(body, pointer);
  const auto reference = clawguard::host::ExtractBusinessKeyReference(body, pointer);
  if (fast.ok() != reference.ok()) std::abort();
  if (fast.ok() && *fast != *reference) std::abort();
  if (!fast.ok() && (fast.error().reason() != reference.error().reason() ||
                     fast.error().message() != reference.error().message())) {
    std::abort();
  }
  return 0;
}
