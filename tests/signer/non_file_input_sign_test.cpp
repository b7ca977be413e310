// non_file_input_sign_test.cpp — the signer's inputs that are not regular files: a FIFO as the
// PIN file, the package, the chain, the allowlist, an existing bundle, the manifest to pack or the
// PKCS#11 module is a clear error at once (exit 2), never a hang. Each CLI run is bounded by
// coreutils `timeout` (exit 124 would be the hang) and in-process reads by RunBounded; no test
// asserts how long anything took.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include <gtest/gtest.h>

#include "loader/bounded_child.h"
#include "signer/pin_source.h"
#include "signer_test_util.h"

namespace clawguard::testing {
namespace {

constexpr const char* kBound = "60";  // seconds; a hang's bound, never a timing assertion

void Fifo(const std::string& path) {
  std::filesystem::remove(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << std::strerror(errno);
}

// Bounded runs the CLI under `timeout`, so a blocking open fails the test instead of hanging it.
CommandResult Bounded(const std::vector<std::string>& args, const EnvPairs& env = {}) {
  std::vector<std::string> argv{"timeout", "--kill-after=5", kBound, CLAWGUARD_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, env);
}

void ExpectNotARegularFile(const CommandResult& r, const std::string& reason,
                           const std::string& what) {
  ASSERT_NE(r.exit_code, 124) << "clawguard hung on " << what << " (killed by timeout)";
  ExpectFailure(r, 2, reason);
  EXPECT_NE(r.err.find("not a regular file: it is a FIFO"), std::string::npos)
      << what << ": " << r.err;
}

TEST(NonFileSignerInputTest, FifoAsPinFileIsRefusedAtOnceAndPointsAtFd) {
  TempDir dir;
  Fifo(dir.Sub("pin"));
  const ChildResult r = RunBounded(
      [&] {
        auto pin = signer::ReadPin("file:" + dir.Sub("pin"));
        return pin.ok()
                   ? std::string("read a PIN")
                   : std::string(ReasonName(pin.error().reason())) + "\n" + pin.error().message();
      },
      60);
  ASSERT_TRUE(r.kind == ChildResult::Kind::kFinished) << r.detail;
  EXPECT_EQ(r.output.substr(0, r.output.find('\n')), "file_unreadable") << r.output;
  EXPECT_NE(r.output.find("not a regular file: it is a FIFO"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--pin-source fd:N"), std::string::npos) << r.output;
}

TEST(NonFileSignerInputTest, FifoAsPinSourceFileExitsTwoWithAClearError) {
  TempDir dir;
  Fifo(dir.Sub("pin"));
  // keys generate reads the PIN before it loads any module.
  CommandResult r = Bounded({"keys", "generate", "--module", SoftHsmModulePath(), "--token", "t",
                             "--label", "k", "--pin-source", "file:" + dir.Sub("pin")});
  ExpectNotARegularFile(r, "file_unreadable", "--pin-source file:FIFO");
  EXPECT_NE(r.err.find("fd:N"), std::string::npos) << r.err;
}

class NonFileSignTest : public ::testing::Test {
 protected:
  // SignArgs are `sign` arguments up to the target; no HSM is touched before the inputs are read.
  std::vector<std::string> SignArgs(const std::string& chain,
                                    const std::vector<std::string>& tail) const {
    std::vector<std::string> a{"sign",
                               "--module",
                               SoftHsmModulePath(),
                               "--key",
                               "pkcs11:token=t;object=k",
                               "--pin-source",
                               "env:CG_UNUSED_PIN",
                               "--chain",
                               chain};
    a.insert(a.end(), tail.begin(), tail.end());
    return a;
  }
  TempDir dir_;
};

TEST_F(NonFileSignTest, FifoAsPackageToSign) {
  WriteFile(dir_.Sub("chain.pem"), "unused");
  Fifo(dir_.Sub("acme-orders-1.0.0.claw"));
  ExpectNotARegularFile(
      Bounded(SignArgs(dir_.Sub("chain.pem"), {"--no-ledger", dir_.Sub("acme-orders-1.0.0.claw")})),
      "file_unreadable", "the package");
}

TEST_F(NonFileSignTest, FifoAsChain) {
  const std::string pkg = MakePackage(dir_.path().string(), "acme-orders", "1.0.0", "ELF-bytes");
  Fifo(dir_.Sub("chain.pem"));
  ExpectNotARegularFile(Bounded(SignArgs(dir_.Sub("chain.pem"), {"--no-ledger", pkg})),
                        "file_unreadable", "--chain");
}

TEST_F(NonFileSignTest, FifoAsAllowlistToSign) {
  WriteFile(dir_.Sub("chain.pem"), "unused");
  Fifo(dir_.Sub("allowlist.yaml"));
  ExpectNotARegularFile(
      Bounded(SignArgs(dir_.Sub("chain.pem"), {"--allowlist", dir_.Sub("allowlist.yaml")})),
      "file_unreadable", "the allowlist");
}

TEST_F(NonFileSignTest, FifoAsManifestToPack) {
  Fifo(dir_.Sub("manifest.yaml"));
  ExpectNotARegularFile(
      Bounded({"pack", "--manifest", dir_.Sub("manifest.yaml"), "--out", dir_.Sub("out")}),
      "file_unreadable", "the manifest");
}

TEST_F(NonFileSignTest, FifoAsPackageOrBundleToInspect) {
  const std::string pkg = MakePackage(dir_.path().string(), "acme-orders", "1.0.0", "ELF-bytes");
  // A .sig that is there but is no file is an error, not "unsigned".
  Fifo(pkg + ".sig");
  ExpectNotARegularFile(Bounded({"inspect", pkg}), "file_unreadable", "the bundle to inspect");
  Fifo(pkg);
  ExpectNotARegularFile(Bounded({"inspect", pkg}), "file_unreadable", "the package to inspect");
}

TEST_F(NonFileSignTest, FifoAsPkcs11Module) {
  Fifo(dir_.Sub("module.so"));
  ExpectNotARegularFile(Bounded({"keys", "list", "--module", dir_.Sub("module.so")}),
                        "hsm_unavailable", "the PKCS#11 module");
}

// With a real token: the PIN file and an existing bundle under --append.
class NonFileSignWithTokenTest : public ::testing::Test {
 protected:
  SigningSetup s_;
};

TEST_F(NonFileSignWithTokenTest, FifoAsPinFileForSignExitsTwo) {
  const std::string pkg = MakePackage(s_.dir.Sub("out"), "acme-orders", "1.0.0", "ELF-bytes");
  Fifo(s_.dir.Sub("pin"));
  std::vector<std::string> args = s_.SignArgs({"--no-ledger", pkg});
  args[6] = "file:" + s_.dir.Sub("pin");  // --pin-source value
  CommandResult r = Bounded(args, s_.hsm.Env());
  ExpectNotARegularFile(r, "file_unreadable", "--pin-source file:FIFO");
  EXPECT_NE(r.err.find("fd:N"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(pkg + ".sig"));
}

TEST_F(NonFileSignWithTokenTest, FifoAsExistingBundleUnderAppend) {
  const std::string pkg = MakePackage(s_.dir.Sub("out"), "acme-orders", "1.0.0", "ELF-bytes");
  Fifo(pkg + ".sig");
  ExpectNotARegularFile(Bounded(s_.SignArgs({"--no-ledger", "--append", pkg}), s_.hsm.Env()),
                        "file_unreadable", "the bundle to append to");
}

}  // namespace
}  // namespace clawguard::testing
