// fuzz-requires: clawguard_signer
// pkcs11_uri_fuzz.cpp — the RFC 7512 parser; a URI that parses must format and parse again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "signer/pkcs11_uri.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto uri = clawguard::signer::ParsePkcs11Uri(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (!uri.ok()) return 0;
  if (!clawguard::signer::ParsePkcs11Uri(clawguard::signer::FormatPkcs11Uri(*uri)).ok())
    std::abort();
  return 0;
}
