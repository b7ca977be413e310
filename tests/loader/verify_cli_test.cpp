// verify_cli_test.cpp — `clawguard verify --json`: the exact object, exit codes 0/1/2.
#include "loader_fixture.h"

namespace clawguard::testing {
namespace {

class VerifyCliTest : public LoaderFixture {
 protected:
  // The CLI runs on the system clock: give it a leaf valid now and a far allowlist expiry.
  std::string SignedForNow() {
    const std::string pkg = MakePackage(PackageOpts{});
    Sign(pkg);
    Allow({pkg}, 3, "2099-12-31T00:00:00Z");
    return pkg;
  }
};

TEST_F(VerifyCliTest, PrintsExactJsonForVerifiedPackage) {
  const std::string pkg = SignedForNow();
  auto r = RunClawguard({"verify", pkg, "--trust", WriteTrust(TrustOpts{}), "--allowlist", dir_.Sub("allowlist.yaml"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "verified");
  EXPECT_TRUE(j["reason"].is_null());
  EXPECT_EQ(j["name"], "acme-orders");
  EXPECT_EQ(j["version"], "1.4.2");
  EXPECT_EQ(j["publisher"], "acme");
  EXPECT_EQ(j["sha256"], Sha256Hex(ReadFile(pkg)));
  EXPECT_EQ(j["signers"], nlohmann::json::array({KeyIdOf(W().key1.get())}));
  EXPECT_EQ(j["mode"], "enforce");
  EXPECT_EQ(j["ledger"], "skipped");
  EXPECT_EQ(j["package"], pkg);
  EXPECT_TRUE(j["detail"].is_string());
  EXPECT_EQ(j.size(), 11u) << j.dump();
}

TEST_F(VerifyCliTest, RefusedExitsOneWithReason) {
  const std::string pkg = SignedForNow();
  std::string b = ReadFile(pkg);
  b[b.size() / 2] = static_cast<char>(b[b.size() / 2] ^ 1);
  WriteFile(pkg, b);
  auto r = RunClawguard({"verify", pkg, "--trust", WriteTrust(TrustOpts{}), "--allowlist", dir_.Sub("allowlist.yaml"), "--json"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "refused");
  EXPECT_EQ(j["reason"], "digest_mismatch");
}

TEST_F(VerifyCliTest, BadPolicyExitsTwo) {
  const std::string pkg = SignedForNow();
  WriteFile(dir_.Sub("bad.yaml"), "schema: clawguard/trust/v1\nmode: maybe\n");
  auto r = RunClawguard({"verify", pkg, "--trust", dir_.Sub("bad.yaml"), "--allowlist", dir_.Sub("allowlist.yaml")});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
}

}  // namespace
}  // namespace clawguard::testing
