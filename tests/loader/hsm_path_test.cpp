// hsm_path_test.cpp — the REAL signing path end to end: a SoftHSM2 token, `clawguard keys
// generate` + `keys csr`, leaves issued by ci/make-test-pki from that CSR (good, serverAuth,
// no EKU, expired), `clawguard sign --no-ledger --chain …` (and --append, --allowlist), then the
// in-process Loader. The loader must accept what the real signer writes and refuse the variants.
#include "support/softhsm.h"

#include <filesystem>

#include "loader_fixture.h"

namespace clawguard::testing {
namespace {

class HsmPathTest : public LoaderFixture {
 protected:
  static void SetUpTestSuite() {
    hsm_ = new SoftHsmToken();
    key_ = new TestKey(hsm_->GenerateKey("acme-release"));
    key2_ = new TestKey(hsm_->GenerateKey("acme-release-2"));
    pki_dir_ = new TempDir();
    pki_ = new TestPki(MakeTestPki(pki_dir_->Sub("pki")));
  }
  static void TearDownTestSuite() {
    delete pki_;
    delete pki_dir_;
    delete key2_;
    delete key_;
    delete hsm_;
  }
  // Chain issues a leaf variant for |key| and returns its chain file.
  static std::string Chain(const TestKey& key, const std::string& name,
                           const std::vector<std::string>& extra = {}) {
    return IssueLeaf(*hsm_, key, *pki_, name, "/O=acme/CN=acme release", extra);
  }
  // Package packs a fresh honest package named NAME-VERSION.claw (the signer's convention).
  std::string Package() {
    const std::string made = MakePackage(PackageOpts{});
    const std::string pkg = dir_.Sub("acme-orders-1.4.2.claw");
    std::filesystem::copy_file(made, pkg, std::filesystem::copy_options::overwrite_existing);
    return pkg;
  }
  void SignWith(const std::string& pkg, const TestKey& key, const std::string& chain,
                bool append = false) {
    std::vector<std::string> args = {"sign",  "--module",     hsm_->module_path(), "--key",
                                     key.uri, "--pin-source", hsm_->PinSource(),   "--chain",
                                     chain,   "--no-ledger"};
    if (append) args.push_back("--append");
    args.push_back(pkg);
    auto r = RunClawguard(args, hsm_->Env());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  TrustOpts Trust() const {
    TrustOpts t;
    t.root_pem = ReadFile(pki_->root_pem);
    return t;
  }

  static SoftHsmToken* hsm_;
  static TestKey* key_;
  static TestKey* key2_;
  static TempDir* pki_dir_;
  static TestPki* pki_;
};
SoftHsmToken* HsmPathTest::hsm_ = nullptr;
TestKey* HsmPathTest::key_ = nullptr;
TestKey* HsmPathTest::key2_ = nullptr;
TempDir* HsmPathTest::pki_dir_ = nullptr;
TestPki* HsmPathTest::pki_ = nullptr;

TEST_F(HsmPathTest, PackageSignedInTheHsmLoads) {
  const std::string pkg = Package();
  SignWith(pkg, *key_, Chain(*key_, "good"));
  Allow({pkg});
  auto loader = MakeLoader(nullptr, Trust());
  ASSERT_TRUE(loader.ok()) << loader.error().ToString();
  auto loaded = (*loader)->Load(pkg);
  ASSERT_TRUE(loaded.ok()) << loaded.error().ToString();
  EXPECT_EQ(loaded->verdict().signers, std::vector<std::string>{key_->keyid});
  EXPECT_TRUE(MarkerExists());
}

TEST_F(HsmPathTest, RefusesServerAuthLeafFromTheRealPki) {
  const std::string pkg = Package();
  SignWith(pkg, *key_, Chain(*key_, "server", {"--eku", "serverAuth"}));
  Allow({pkg});
  ExpectRefused(pkg, Reason::kChainUntrusted, nullptr, Trust());
}

TEST_F(HsmPathTest, RefusesEkulessLeafFromTheRealPki) {
  const std::string pkg = Package();
  SignWith(pkg, *key_, Chain(*key_, "noeku", {"--eku", "none"}));
  Allow({pkg});
  ExpectRefused(pkg, Reason::kChainUntrusted, nullptr, Trust());
}

TEST_F(HsmPathTest, RefusesExpiredLeafFromTheRealPki) {
  const std::string pkg = Package();
  SignWith(
      pkg, *key_,
      Chain(*key_, "expired", {"--startdate", "20260101000000Z", "--enddate", "20260201000000Z"}));
  Allow({pkg});
  ExpectRefused(pkg, Reason::kCertExpired, nullptr, Trust());
}

TEST_F(HsmPathTest, TwoHsmKeysMeetThresholdTwo) {
  const std::string pkg = Package();
  SignWith(pkg, *key_, Chain(*key_, "k1"));
  SignWith(pkg, *key2_, Chain(*key2_, "k2"), /*append=*/true);
  Allow({pkg});
  TrustOpts t = Trust();
  t.threshold = 2;
  auto loader = MakeLoader(nullptr, t);
  ASSERT_TRUE(loader.ok());
  auto v = (*loader)->Verify(pkg);
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(v->verdict, VerdictKind::kVerified) << v->detail;
  EXPECT_EQ(v->signers.size(), 2u);
}

TEST_F(HsmPathTest, AllowlistSignedInTheHsmIsAccepted) {
  const std::string pkg = Package();
  const std::string chain = Chain(*key_, "allow");
  SignWith(pkg, *key_, chain);
  const std::string allow = Allow({pkg});
  auto r = RunClawguard({"sign", "--allowlist", "--module", hsm_->module_path(), "--key", key_->uri,
                         "--pin-source", hsm_->PinSource(), "--chain", chain, allow},
                        hsm_->Env());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  TrustOpts t = Trust();
  t.allowlist_signer = true;
  t.allowlist_signer_pem = ReadFile(pki_->dir + "/allow.pem");
  auto loader = MakeLoader(nullptr, t);
  ASSERT_TRUE(loader.ok()) << loader.error().ToString();
  auto v = (*loader)->Verify(pkg);
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(v->verdict, VerdictKind::kVerified) << v->detail;
  // One byte more in the allowlist: its signature no longer holds.
  WriteFile(allow, ReadFile(allow) + "\n");
  ExpectRefused(pkg, Reason::kAllowlistInvalid, nullptr, t);
}

}  // namespace
}  // namespace clawguard::testing
