// sign_release_test.cpp — ci/sign-release: each missing setting named (exit 2), a local file
// ledger refused on a CI runner unless declared shared, and one pack → sign → inspect run.
#include <gtest/gtest.h>

#include "clawguard/bundle.h"
#include "signer_test_util.h"

namespace clawguard::testing {
namespace {

const std::string kScript = std::string(CLAWGUARD_SOURCE_DIR) + "/ci/sign-release";

class SignReleaseTest : public ::testing::Test {
 protected:
  SignReleaseTest() {
    WriteFile(s_.dir.Sub("plugin/lib/libplugin.so"), "ELF-release-bytes");
    WriteFile(
        s_.dir.Sub("plugin/manifest.yaml"),
        "schema: clawguard/plugin/v1\nname: acme-orders\nversion: 1.2.0\npublisher: acme\nabi: 1\n"
        "entry: lib/libplugin.so\nfiles:\n  lib/libplugin.so: null\n");
  }
  EnvPairs Settings() const {
    EnvPairs env = s_.hsm.Env();
    env.insert(env.end(), {{"CLAWGUARD_KEY_URI", s_.key.uri},
                           {"CLAWGUARD_PIN_SOURCE", s_.hsm.PinSource()},
                           {"CLAWGUARD_CHAIN", s_.chain},
                           {"CLAWGUARD_LEDGER_URL", "sqlite:" + s_.dir.Sub("ledger.db")},
                           {"CLAWGUARD_LEDGER_SHARED", ""},
                           {"CLAWGUARD_TRUST", ""},
                           {"CLAWGUARD_ALLOWLIST", ""},
                           {"CLAWGUARD_BIN", CLAWGUARD_CLI_PATH},
                           {"CI", "false"}});
    return env;
  }
  CommandResult Run(const EnvPairs& env) {
    return RunCommand(
        {kScript, "--manifest", s_.dir.Sub("plugin/manifest.yaml"), "--out", s_.dir.Sub("dist")},
        env);
  }
  static void Set(EnvPairs& env, const std::string& k, const std::string& v) {
    for (auto& [name, value] : env) {
      if (name == k) value = v;
    }
  }
  SigningSetup s_;
};

TEST_F(SignReleaseTest, NamesEveryMissingSetting) {
  EnvPairs env = Settings();
  for (const char* k : {"CLAWGUARD_PKCS11_MODULE", "CLAWGUARD_KEY_URI", "CLAWGUARD_PIN_SOURCE",
                        "CLAWGUARD_CHAIN", "CLAWGUARD_LEDGER_URL"}) {
    Set(env, k, "");
  }
  CommandResult r = Run(env);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  for (const char* k : {"CLAWGUARD_PKCS11_MODULE", "CLAWGUARD_KEY_URI", "CLAWGUARD_PIN_SOURCE",
                        "CLAWGUARD_CHAIN", "CLAWGUARD_LEDGER_URL"}) {
    EXPECT_NE(r.err.find(std::string(k) + " is not set"), std::string::npos) << k << ": " << r.err;
  }
}

TEST_F(SignReleaseTest, NamesASingleMissingSetting) {
  EnvPairs env = Settings();
  Set(env, "CLAWGUARD_CHAIN", "");
  CommandResult r = Run(env);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("CLAWGUARD_CHAIN is not set"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("CLAWGUARD_KEY_URI"), std::string::npos) << r.err;
}

TEST_F(SignReleaseTest, RefusesALocalLedgerOnACiRunnerUnlessShared) {
  EnvPairs env = Settings();
  Set(env, "CI", "true");
  CommandResult r = Run(env);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("local file ledger"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("CLAWGUARD_LEDGER_SHARED=1"), std::string::npos) << r.err;
  Set(env, "CLAWGUARD_LEDGER_SHARED", "1");
  r = Run(env);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST_F(SignReleaseTest, PacksSignsAndInspects) {
  CommandResult r = Run(Settings());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string pkg = s_.dir.Sub("dist/acme-orders-1.2.0.claw");
  EXPECT_NE(r.out.find("package: " + pkg), std::string::npos) << r.out;
  auto bundle = ParseBundle(ReadFile(pkg + ".sig"));
  ASSERT_TRUE(bundle.ok()) << bundle.error().ToString();
  ASSERT_EQ(bundle->signatures.size(), 1u);
  EXPECT_EQ(bundle->signatures[0].keyid, s_.key.keyid);
  EXPECT_NE(r.out.find(s_.key.keyid), std::string::npos) << r.out;  // inspect shows the signer
  EXPECT_EQ(r.out.find(SoftHsmToken::kDefaultPin), std::string::npos);
  EXPECT_EQ(r.err.find(SoftHsmToken::kDefaultPin), std::string::npos);

  // Re-releasing 1.2.0 with other bytes is refused by the ledger, and leaves the old .sig alone.
  const std::string old_sig = ReadFile(pkg + ".sig");
  WriteFile(s_.dir.Sub("plugin/lib/libplugin.so"), "ELF-other-bytes");
  r = Run(Settings());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("version_overwritten"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace clawguard::testing
