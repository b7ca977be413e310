// fuzz-requires: clawguard_loader
// elf_check_fuzz.cpp — CheckElf (the entry library's ELF checks, before dlopen) on arbitrary
// bytes. Every field is attacker-controlled: offsets, counts, string tables, the dynamic section.
// An accepted library must name only allowed DT_NEEDED entries.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "loader/elf_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::set<std::string> allowed = {"libc.so.6", "libm.so.6"};
  auto info = clawguard::CheckElf(std::string_view(reinterpret_cast<const char*>(data), size), allowed);
  if (info.ok()) {
    for (const auto& n : info->needed) {
      if (allowed.count(n) == 0) std::abort();  // accepted a library the policy does not allow
    }
  } else if (info.error().reason() != clawguard::Reason::kElfUnsafe) {
    std::abort();  // every refusal is elf_unsafe (ARCHITECTURE.md reason codes)
  }
  return 0;
}
