// elf_and_load_test.cpp — adversarial suite, part 3: ELF checks and the memfd load; plus the
// positive paths (a valid package loads and answers; two plugins each answer as themselves).
#include "loader_fixture.h"
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard::testing {
namespace {

// Answer collects what a plugin's respond() said.
struct Answer {
  int status = 0;
  std::string body;
};
void CaptureRespond(cg_call* call, int status, const char*, cg_bytes body) {
  auto* a = reinterpret_cast<Answer*>(call);
  a->status = status;
  a->body.assign(body.data, body.len);
}

class ElfAndLoadTest : public LoaderFixture {
 protected:
  void SetUp() override {
    LoaderFixture::SetUp();
    host_api_.respond = CaptureRespond;
  }
  std::string Variant(const std::string& plugin, PackageOpts o = PackageOpts{}) {
    o.plugin = plugin;
    const std::string pkg = MakePackage(o);
    Sign(pkg);
    Allow({pkg});
    return pkg;
  }
  static std::string Ask(const LoadedPlugin& p) {
    Answer a;
    cg_request req{};
    EXPECT_EQ(p.plugin()->handle_webhook(reinterpret_cast<cg_call*>(&a), "order.created", &req), 0);
    EXPECT_EQ(a.status, 200);
    return a.body;
  }
};

TEST_F(ElfAndLoadTest, RefusesRpath) { ExpectRefused(Variant("rpath"), Reason::kElfUnsafe); }
TEST_F(ElfAndLoadTest, RefusesRunpath) { ExpectRefused(Variant("runpath"), Reason::kElfUnsafe); }
TEST_F(ElfAndLoadTest, RefusesExecutableStack) {
  ExpectRefused(Variant("execstack"), Reason::kElfUnsafe);
}
TEST_F(ElfAndLoadTest, RefusesMissingGnuStack) {
  ExpectRefused(Variant("nogstack"), Reason::kElfUnsafe);
}
TEST_F(ElfAndLoadTest, RefusesOtherMachine) {
  ExpectRefused(Variant("machine"), Reason::kElfUnsafe);
}
TEST_F(ElfAndLoadTest, RefusesUnlistedNeeded) {
  ExpectRefused(Variant("needed"), Reason::kElfUnsafe);
}
TEST_F(ElfAndLoadTest, RefusesMissingEntrySymbol) {
  ExpectRefused(Variant("noentry"), Reason::kElfUnsafe);
}

TEST_F(ElfAndLoadTest, RefusesManifestAbiThisHostDoesNotSpeak) {
  PackageOpts o;
  o.abi = 2;
  ExpectRefused(Variant("alpha", o), Reason::kAbiMismatch);
}

TEST_F(ElfAndLoadTest, RefusesEntryPointAbiOtherThanManifest) {
  // Only dlopen can see what the entry point reports: the constructor runs, the load is refused.
  auto loader = MakeLoader();
  ASSERT_TRUE(loader.ok());
  auto loaded = (*loader)->Load(Variant("abi2"));
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded, HasReason(Reason::kAbiMismatch)) << loaded.error().ToString();
}

TEST_F(ElfAndLoadTest, RefusesInitFailure) {
  auto loader = MakeLoader();
  ASSERT_TRUE(loader.ok());
  auto loaded = (*loader)->Load(Variant("initfail"));
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded, HasReason(Reason::kLoadFailed)) << loaded.error().ToString();
}

TEST_F(ElfAndLoadTest, RefusesUnknownFlagBits) {
  auto loader = MakeLoader();
  ASSERT_TRUE(loader.ok());
  auto loaded = (*loader)->Load(Variant("flags"));
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded, HasReason(Reason::kLoadFailed)) << loaded.error().ToString();
}

TEST_F(ElfAndLoadTest, ValidPackageLoadsAndItsEntryPointAnswers) {
  const std::string pkg = Variant("alpha");
  auto loader = MakeLoader();
  ASSERT_TRUE(loader.ok()) << loader.error().ToString();
  auto loaded = (*loader)->Load(pkg);
  ASSERT_TRUE(loaded.ok()) << loaded.error().ToString();
  EXPECT_TRUE(MarkerExists());
  EXPECT_EQ(loaded->verdict().verdict, VerdictKind::kVerified);
  EXPECT_EQ(loaded->manifest().name, "acme-orders");
  EXPECT_EQ(loaded->plugin()->abi, CLAWGUARD_PLUGIN_ABI);
  EXPECT_EQ(Ask(*loaded), "I am alpha");
}

TEST_F(ElfAndLoadTest, TwoPluginsLoadedOneAfterTheOtherEachAnswerAsThemselves) {
  // The memfd fd-reuse trap: glibc matches "/proc/self/fd/N" by path.
  PackageOpts a;
  a.name = "acme-alpha";
  const std::string pa = MakePackage(a);
  Sign(pa);
  const Statement sa = StatementFor(pa);
  PackageOpts b;
  b.name = "acme-beta";
  b.plugin = "beta";
  const std::string pb = MakePackage(b);
  Sign(pb);
  const Statement sb = StatementFor(pb);
  WriteFile(dir_.Sub("allowlist.yaml"),
            "schema: clawguard/allowlist/v1\nversion: 1\nexpires: 2027-12-31T00:00:00Z\nplugins:\n"
            "  - { name: acme-alpha, version: 1.4.2, sha256: " +
                sa.subject_sha256 +
                " }\n"
                "  - { name: acme-beta, version: 1.4.2, sha256: " +
                sb.subject_sha256 + " }\n");
  auto loader = MakeLoader();
  ASSERT_TRUE(loader.ok());
  auto first = (*loader)->Load(pa);
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  EXPECT_EQ(Ask(*first), "I am alpha");
  auto second = (*loader)->Load(pb);
  ASSERT_TRUE(second.ok()) << second.error().ToString();
  EXPECT_EQ(Ask(*second), "I am beta");
  EXPECT_EQ(Ask(*first), "I am alpha");
  EXPECT_NE(first->plugin(), second->plugin());
}

TEST_F(ElfAndLoadTest, UnloadThenLoadAnotherStillAnswersAsItself) {
  PackageOpts a;
  a.name = "acme-alpha";
  const std::string pa = MakePackage(a);
  Sign(pa);
  const Statement sa = StatementFor(pa);
  PackageOpts b;
  b.name = "acme-beta";
  b.plugin = "beta";
  const std::string pb = MakePackage(b);
  Sign(pb);
  const Statement sb = StatementFor(pb);
  WriteFile(dir_.Sub("allowlist.yaml"),
            "schema: clawguard/allowlist/v1\nversion: 1\nexpires: 2027-12-31T00:00:00Z\nplugins:\n"
            "  - { name: acme-alpha, version: 1.4.2, sha256: " +
                sa.subject_sha256 +
                " }\n"
                "  - { name: acme-beta, version: 1.4.2, sha256: " +
                sb.subject_sha256 + " }\n");
  auto loader = MakeLoader();
  ASSERT_TRUE(loader.ok());
  {
    auto first = (*loader)->Load(pa);
    ASSERT_TRUE(first.ok()) << first.error().ToString();
    EXPECT_EQ(Ask(*first), "I am alpha");
  }
  auto second = (*loader)->Load(pb);
  ASSERT_TRUE(second.ok()) << second.error().ToString();
  EXPECT_EQ(Ask(*second), "I am beta");
}

}  // namespace
}  // namespace clawguard::testing
