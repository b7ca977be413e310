// fuzz-requires: clawguard_loader clawguard_test_libelf
// elf_check_fuzz.cpp — CheckElf (the entry library's ELF checks, before dlopen) on arbitrary
// bytes, differentially against elfutils libelf. Every field is attacker-controlled: offsets,
// counts, string tables, the dynamic section. Every refusal is elf_unsafe; every accepted library
// is read again by libelf, which must agree with the check's view (ElfDisagreement) — program
// headers, the dynamic array at p_offset, through .dynamic and where p_vaddr maps, DT_NEEDED and
// DT_SONAME strings, no path-bearing tag. Under libFuzzer a structure-aware mutator (MutateElf)
// works on the seeds: real plugin libraries and the hostile shapes of tests/fixtures.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <string_view>

#include "fuzz/elf_differential.h"
#include "loader/elf_check.h"

namespace {
const std::set<std::string>& Allowed() {
  static const std::set<std::string> allowed = {"libc.so.6", "libm.so.6"};
  return allowed;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto info = clawguard::CheckElf(bytes, Allowed());
  if (info.ok()) {
    const std::string why = clawguard::testing::ElfDisagreement(bytes, *info, Allowed());
    if (!why.empty()) {
      std::fprintf(stderr, "elf_check accepted a library libelf reads differently: %s\n",
                   why.c_str());
      std::abort();
    }
  } else if (info.error().reason() != clawguard::Reason::kElfUnsafe) {
    std::abort();  // every refusal is elf_unsafe (ARCHITECTURE.md reason codes)
  }
  return 0;
}

#ifdef CLAWGUARD_LIBFUZZER
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  std::mt19937_64 rng(seed);
  if (rng() % 4 == 0) return LLVMFuzzerMutate(data, size, max_size);
  std::string b(reinterpret_cast<const char*>(data), size);
  for (uint64_t n = 1 + rng() % 3; n > 0; --n) clawguard::testing::MutateElf(b, rng);
  const size_t out = b.size() < max_size ? b.size() : max_size;
  std::memcpy(data, b.data(), out);
  return out;
}
#endif
