// elf_gate_test.cpp — the ELF check sees what the runtime loader will do: libraries built by the
// linker (and patched where no linker flag makes the shape) that would make dlopen load code from
// another file, hide their dynamic array behind a clean copy, or map bytes ld.so and a file-offset
// reader disagree on, are refused with elf_unsafe before dlopen, and no constructor ever runs.
// The fixtures are shown to be really hostile: opened directly, they run evil.so's code.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loader/elf_check.h"
#include "loader_fixture.h"
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard::testing {
namespace {

using ::testing::HasSubstr;

class ElfGateTest : public LoaderFixture {
 protected:
  std::string Variant(const std::string& plugin) {
    PackageOpts o;
    o.plugin = plugin;
    const std::string pkg = MakePackage(o);
    Sign(pkg);
    Allow({pkg});
    return pkg;
  }
  // RefusedWith loads |plugin| in a package and returns the refusal's message (the reason must be
  // elf_unsafe and no constructor — the plugin's or evil.so's — may have run).
  std::string RefusedWith(const std::string& plugin) {
    const std::string pkg = Variant(plugin);
    auto loader = MakeLoader();
    EXPECT_TRUE(loader.ok());
    if (!loader.ok()) return "";
    auto loaded = (*loader)->Load(pkg);
    EXPECT_FALSE(loaded.ok()) << plugin << " was loaded";
    if (loaded.ok()) return "";
    EXPECT_THAT(loaded, HasReason(Reason::kElfUnsafe)) << loaded.error().ToString();
    EXPECT_FALSE(MarkerExists()) << "a constructor ran for " << plugin << ": " << ReadFile(marker_);
    return loaded.error().message();
  }
  // MarkerAfterDirectDlopen opens |plugin|'s file with dlopen in a child process (as a host
  // without the check would) and returns what constructors wrote to a fresh marker.
  std::string MarkerAfterDirectDlopen(const std::string& plugin) {
    const std::string marker = dir_.Sub("direct-" + plugin);
    const std::string path = W().Plugin(plugin);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setenv("CG_TEST_MARKER", marker.c_str(), 1);
      void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      ::_exit(h != nullptr ? 0 : 3);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return std::filesystem::exists(marker) ? ReadFile(marker) : "";
  }
};

TEST_F(ElfGateTest, HostileFixturesRunEvilCodeWhenOpenedWithoutTheCheck) {
  for (const char* v : {"auxiliary", "filter", "pathneeded", "dynsplit"}) {
    EXPECT_THAT(MarkerAfterDirectDlopen(v), HasSubstr("evil")) << v << " does not pull in evil.so";
  }
}

TEST_F(ElfGateTest, RefusesAuxiliaryThatWouldLoadALibraryFromAnyPath) {
  EXPECT_THAT(RefusedWith("auxiliary"), HasSubstr("DT_AUXILIARY"));
}
TEST_F(ElfGateTest, RefusesFilterThatWouldAnswerTheEntryPointFromAnotherLibrary) {
  EXPECT_THAT(RefusedWith("filter"), HasSubstr("DT_FILTER"));
}
TEST_F(ElfGateTest, RefusesAudit) { EXPECT_THAT(RefusedWith("audit"), HasSubstr("DT_AUDIT")); }
TEST_F(ElfGateTest, RefusesDepaudit) {
  EXPECT_THAT(RefusedWith("depaudit"), HasSubstr("DT_DEPAUDIT"));
}
TEST_F(ElfGateTest, RefusesTextrel) {
  EXPECT_THAT(RefusedWith("textrel"), HasSubstr("DT_TEXTREL"));
}
TEST_F(ElfGateTest, RefusesNodelete) {
  EXPECT_THAT(RefusedWith("nodelete"), HasSubstr("DF_1_NODELETE"));
}
TEST_F(ElfGateTest, RefusesNeededThatNamesAPath) {
  EXPECT_THAT(RefusedWith("pathneeded"), HasSubstr("not a bare soname"));
}

TEST_F(ElfGateTest, RefusesDynamicArrayHiddenBehindACleanCopyAtItsFileOffset) {
  // readelf (section headers, p_offset) shows only libc.so.6; ld.so reads p_vaddr and loads
  // evil.so.
  auto readelf = RunCommand({"readelf", "-dW", W().Plugin("dynsplit")});
  ASSERT_EQ(readelf.exit_code, 0);
  EXPECT_THAT(readelf.out, ::testing::Not(HasSubstr("evil")));
  EXPECT_THAT(RefusedWith("dynsplit"), HasSubstr("is not where p_vaddr"));
}

TEST_F(ElfGateTest, RefusesInterpreter) {
  EXPECT_THAT(RefusedWith("interp"), HasSubstr("PT_INTERP"));
}
TEST_F(ElfGateTest, RefusesProgramHeaderTypesAPluginDoesNotCarry) {
  EXPECT_THAT(RefusedWith("phdr"), HasSubstr("PT_PHDR"));
}
TEST_F(ElfGateTest, RefusesSecondDynamicSegment) {
  EXPECT_THAT(RefusedWith("twodyn"), HasSubstr("more than one PT_DYNAMIC"));
}
TEST_F(ElfGateTest, RefusesLoadsNotSortedByAddress) {
  EXPECT_THAT(RefusedWith("unsorted"), HasSubstr("not sorted"));
}
TEST_F(ElfGateTest, RefusesLoadsThatShareOrOverlapPages) {
  EXPECT_THAT(RefusedWith("overlap"), HasSubstr("overlap"));
}
TEST_F(ElfGateTest, RefusesFileRangeLargerThanMemoryRange) {
  EXPECT_THAT(RefusedWith("filesz"), HasSubstr("p_filesz"));
}
TEST_F(ElfGateTest, RefusesWritableExecutableSegment) {
  EXPECT_THAT(RefusedWith("wx"), HasSubstr("writable and executable"));
}
TEST_F(ElfGateTest, RefusesSegmentWhoseOffsetIsNotPageCongruentWithItsAddress) {
  EXPECT_THAT(RefusedWith("misalign"), HasSubstr("page size"));
}
TEST_F(ElfGateTest, RefusesSonameThatIsAPath) {
  EXPECT_THAT(RefusedWith("sonamepath"), HasSubstr("DT_SONAME"));
}
TEST_F(ElfGateTest, RefusesSonameOfAnAllowedSystemLibrary) {
  EXPECT_THAT(RefusedWith("sonamelibc"), HasSubstr("allowed_needed"));
}

TEST_F(ElfGateTest, AcceptsCxxPluginWithUniqueSymbolAndItAnswersAsItself) {
  const std::string pkg = Variant("uniqgood");
  auto loader = MakeLoader();
  ASSERT_TRUE(loader.ok());
  auto loaded = (*loader)->Load(pkg);
  ASSERT_TRUE(loaded.ok()) << loaded.error().ToString();
  EXPECT_EQ(loaded->verdict().verdict, VerdictKind::kVerified);
}

TEST_F(ElfGateTest, EveryGoodVariantIsAcceptedByTheCheckAlone) {
  // The default-deny lists are not so tight that ordinary compiler output fails them.
  for (const char* v :
       {"alpha", "beta", "initfail", "abi2", "flags", "tlsdtor", "uniq", "uniqgood"}) {
    const std::string bytes = ReadFile(W().Plugin(v));
    auto info = CheckElf(bytes, {"libc.so.6"});
    EXPECT_TRUE(info.ok()) << v << ": " << info.error().ToString();
  }
}

}  // namespace
}  // namespace clawguard::testing
