// unload_reuse_test.cpp — the loaded code is the checked code, one plugin after another. A
// library that stays mapped after dlclose (DF_1_NODELETE, a C++ STB_GNU_UNIQUE inline static, a
// pending thread_local destructor) stays registered under "/proc/self/fd/N": if fd N were closed
// and reused by the next plugin's memfd, dlopen would hand back the refused code. Each test loads
// such a library, has it refused after dlopen (its init fails), then loads a good plugin in the
// same process, which must answer as itself. And an object glibc matches by SONAME is refused.
#include <dlfcn.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <unistd.h>

#include <cstring>

#include "loader/memfd_loader.h"
#include "loader_fixture.h"
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard::testing {
namespace {

struct Answer {
  int status = 0;
  std::string body;
};
void CaptureRespond(cg_call* call, int status, const char*, cg_bytes body) {
  auto* a = reinterpret_cast<Answer*>(call);
  a->status = status;
  a->body.assign(body.data, body.len);
}

std::string Ask(const cg_plugin* p) {
  Answer a;
  cg_request req{};
  EXPECT_EQ(p->handle_webhook(reinterpret_cast<cg_call*>(&a), "order.created", &req), 0);
  return a.body;
}

// NextFd is the number the next open() or memfd_create() will get.
int NextFd() {
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ::close(fd);
  return fd;
}

// StillLoaded is true when glibc still answers to "/proc/self/fd/N" with a loaded object.
bool StillLoaded(int fd) {
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  void* h = ::dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (h == nullptr) return false;
  ::dlclose(h);
  return true;
}

class UnloadReuseTest : public LoaderFixture {
 protected:
  void SetUp() override {
    LoaderFixture::SetUp();
    host_api_.respond = CaptureRespond;
  }

  // RefusedThenGood loads |refused| through the Loader (a package that passes every check and is
  // refused after dlopen because its init fails), then alpha; alpha must answer as itself, and the
  // refused library's fd number is never handed to alpha.
  void RefusedThenGood(const std::string& refused, Reason want) {
    PackageOpts bad;
    bad.name = "acme-bad";
    bad.plugin = refused;
    const std::string pbad = MakePackage(bad);
    Sign(pbad);
    const Statement sbad = StatementFor(pbad);
    PackageOpts good;
    good.name = "acme-good";
    const std::string pgood = MakePackage(good);
    Sign(pgood);
    const Statement sgood = StatementFor(pgood);
    WriteFile(
        dir_.Sub("allowlist.yaml"),
        "schema: clawguard/allowlist/v1\nversion: 1\nexpires: 2027-12-31T00:00:00Z\nplugins:\n"
        "  - { name: acme-bad, version: 1.4.2, sha256: " +
            sbad.subject_sha256 +
            " }\n"
            "  - { name: acme-good, version: 1.4.2, sha256: " +
            sgood.subject_sha256 + " }\n");
    auto loader = MakeLoader();
    ASSERT_TRUE(loader.ok()) << loader.error().ToString();
    const size_t retained_before = RetainedLibraryCount();
    const int bad_fd = NextFd();
    auto first = (*loader)->Load(pbad);
    ASSERT_FALSE(first.ok());
    EXPECT_THAT(first, HasReason(want)) << first.error().ToString();
    // The fixture is what it claims: the refused library really outlived dlclose, and its memfd
    // (the number it was opened under) is kept, so the path stays its own.
    EXPECT_TRUE(StillLoaded(bad_fd)) << refused << " did not stay mapped: the test proves nothing";
    EXPECT_EQ(RetainedLibraryCount(), retained_before + 1);
    EXPECT_NE(NextFd(), bad_fd);
    auto second = (*loader)->Load(pgood);
    ASSERT_TRUE(second.ok()) << second.error().ToString();
    EXPECT_EQ(Ask(second->plugin()), "I am alpha");
    EXPECT_EQ(second->verdict().name, "acme-good");
  }

  const cg_host_api* Host() const { return &host_api_; }
};

TEST_F(UnloadReuseTest, RefusedCxxPluginWithInlineStaticThenGoodPluginAnswersAsItself) {
  RefusedThenGood("uniq", Reason::kLoadFailed);
}

TEST_F(UnloadReuseTest,
       RefusedPluginWithPendingThreadLocalDestructorThenGoodPluginAnswersAsItself) {
  RefusedThenGood("tlsdtor", Reason::kLoadFailed);
}

TEST_F(UnloadReuseTest, RefusedNodeleteLibraryThenGoodLibraryAnswersAsItself) {
  // The ELF check refuses DF_1_NODELETE before dlopen (ElfGateTest.RefusesNodelete); the memfd
  // loader must hold on its own, so it is driven directly here.
  const size_t retained_before = RetainedLibraryCount();
  const int bad_fd = NextFd();
  auto bad = LoadFromMemfd(ReadFile(W().Plugin("nodelete")), "clawguard:nodelete", 1, Host());
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad, HasReason(Reason::kLoadFailed)) << bad.error().ToString();
  EXPECT_TRUE(StillLoaded(bad_fd));
  EXPECT_EQ(RetainedLibraryCount(), retained_before + 1);
  auto good = LoadFromMemfd(ReadFile(W().Plugin("beta")), "clawguard:beta", 1, Host());
  ASSERT_TRUE(good.ok()) << good.error().ToString();
  EXPECT_NE((*good)->fd(), bad_fd);
  EXPECT_EQ(Ask((*good)->plugin()), "I am beta");
}

TEST_F(UnloadReuseTest, UnloadedOrdinaryLibraryReleasesItsFd) {
  const size_t retained_before = RetainedLibraryCount();
  int fd = -1;
  {
    auto lib = LoadFromMemfd(ReadFile(W().Plugin("alpha")), "clawguard:alpha", 1, Host());
    ASSERT_TRUE(lib.ok()) << lib.error().ToString();
    fd = (*lib)->fd();
    EXPECT_EQ(Ask((*lib)->plugin()), "I am alpha");
  }
  EXPECT_FALSE(StillLoaded(fd));
  EXPECT_EQ(RetainedLibraryCount(), retained_before);
  auto next = LoadFromMemfd(ReadFile(W().Plugin("beta")), "clawguard:beta", 1, Host());
  ASSERT_TRUE(next.ok()) << next.error().ToString();
  EXPECT_EQ(Ask((*next)->plugin()), "I am beta");
}

TEST_F(UnloadReuseTest, ObjectThatGlibcMatchesBySonameIsRefused) {
  // A library already loaded (here by the test itself, as any other code in the host might) whose
  // DT_SONAME is the path the next memfd will have: glibc hands it back for that path. The ELF
  // check refuses such a SONAME (ElfGateTest.RefusesSonameThatIsAPath); the memfd loader must
  // still notice that the object is not its memfd's.
  const int next = NextFd();  // the squatter's file is open only while dlopen maps it
  std::string bytes = ReadFile(W().Plugin("sonamepath"));
  const std::string placeholder = "/proc/self/fd/99999";
  const size_t at = bytes.find(placeholder + '\0');
  ASSERT_NE(at, std::string::npos);
  const std::string name = "/proc/self/fd/" + std::to_string(next);
  ASSERT_LE(name.size(), placeholder.size());
  std::memset(bytes.data() + at, 0, placeholder.size());
  std::memcpy(bytes.data() + at, name.data(), name.size());
  const std::string squatter = dir_.Sub("squatter.so");
  WriteFile(squatter, bytes);
  void* h = ::dlopen(squatter.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << ::dlerror();
  const std::string beta = ReadFile(W().Plugin("beta"));
  ASSERT_EQ(NextFd(), next);
  auto lib = LoadFromMemfd(beta, "clawguard:beta", 1, Host());
  ASSERT_FALSE(lib.ok()) << "the squatter was accepted as the memfd's library";
  EXPECT_THAT(lib, HasReason(Reason::kLoadFailed));
  EXPECT_THAT(lib.error().message(), ::testing::HasSubstr("already-loaded object"));
  ::dlclose(h);
}

}  // namespace
}  // namespace clawguard::testing
