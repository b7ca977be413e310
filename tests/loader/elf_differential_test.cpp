// elf_differential_test.cpp — the ELF check against an independent reader (elfutils libelf) on
// mutations of real plugin libraries (a fixed-seed run of the elf_check fuzz target's
// structure-aware mutator): whenever the check accepts, libelf's view of the program headers,
// the dynamic array (at p_offset, through .dynamic, where p_vaddr maps) and every DT_NEEDED /
// DT_SONAME string agrees with the check's, and no path-bearing tag is present.
#include <iostream>
#include <random>

#include "fuzz/elf_differential.h"
#include "loader/elf_check.h"
#include "loader_fixture.h"
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard::testing {
namespace {

TEST(ElfDifferentialTest, EveryAcceptedMutationOfARealPluginReadsTheSameInLibelf) {
  const std::set<std::string> allowed = {"libc.so.6", "libm.so.6"};
  std::mt19937_64 rng(20261206);
  size_t accepted = 0, total = 0;
  for (const char* v :
       {"alpha", "needed", "tlsdtor", "uniqgood", "pathneeded", "dynsplit", "auxiliary"}) {
    const std::string original = ReadFile(World::Get().Plugin(v));
    for (int i = 0; i < 20000; ++i) {
      std::string b = original;
      for (uint64_t n = 1 + rng() % 3; n > 0; --n) MutateElf(b, rng);
      ++total;
      auto info = CheckElf(b, allowed);
      if (!info.ok()) {
        ASSERT_THAT(info, HasReason(Reason::kElfUnsafe));
        continue;
      }
      ++accepted;
      const std::string why = ElfDisagreement(b, *info, allowed);
      if (!why.empty()) {
        const std::string kept =
            ::testing::TempDir() + "elf-disagreement-" + v + "-" + std::to_string(i) + ".so";
        WriteFile(kept, b);
        FAIL() << v << " mutation " << i << " was accepted but libelf reads it differently: " << why
               << " (input kept in " << kept << ")";
      }
    }
  }
  std::cout << accepted << " of " << total
            << " mutations accepted, every one read alike by libelf\n";
  // The mutator must leave a share of inputs acceptable, or the test shows nothing.
  EXPECT_GT(accepted, total / 50) << accepted << " of " << total << " mutations accepted";
}

TEST(ElfDifferentialTest, RealPluginsAreAcceptedAndAgree) {
  const std::set<std::string> allowed = {"libc.so.6", "libm.so.6"};
  for (const char* v : {"alpha", "beta", "needed", "tlsdtor", "uniq", "uniqgood"}) {
    const std::string bytes = ReadFile(World::Get().Plugin(v));
    auto info = CheckElf(bytes, allowed);
    ASSERT_TRUE(info.ok()) << v << ": " << info.error().ToString();
    EXPECT_EQ(ElfDisagreement(bytes, *info, allowed), "") << v;
  }
}

}  // namespace
}  // namespace clawguard::testing
