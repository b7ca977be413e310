// sign_errors_test.cpp — every bad input to `clawguard sign`/`keys` gives its exact reason, exit
// code and an actionable message; and the PIN never appears in any output.
#include <gtest/gtest.h>

#include "signer_test_util.h"

namespace clawguard::testing {
namespace {

constexpr const char* kDistinctivePin = "Zq7pin8c1fUNIQUE";
constexpr const char* kWrongPin = "Wr0ngPinK93xUNIQUE";

class SignErrorsTest : public ::testing::Test {
 protected:
  SignErrorsTest() : s_(kDistinctivePin) {}

  CommandResult Run(const std::vector<std::string>& args, EnvPairs extra_env = {}) {
    EnvPairs env = s_.hsm.Env();
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    CommandResult r = RunClawguard(args, env);
    outputs_.push_back(r.out + r.err);
    return r;
  }
  std::string Package(const std::string& version = "1.0.0") {
    return MakePackage(s_.dir.Sub("out-" + version), "acme-orders", version, "ELF-" + version);
  }

  void TearDown() override {
    // The PIN never appears in any output of any path this fixture ran.
    for (const auto& out : outputs_) {
      EXPECT_EQ(out.find(kDistinctivePin), std::string::npos) << out;
      EXPECT_EQ(out.find(kWrongPin), std::string::npos) << out;
    }
  }

  SigningSetup s_;
  std::vector<std::string> outputs_;
};

TEST_F(SignErrorsTest, WrongPinIsLoginFailed) {
  CommandResult r =
      Run(s_.SignArgs({"--no-ledger", Package()}), {{SoftHsmToken::kPinEnv, kWrongPin}});
  ExpectFailure(r, 2, "hsm_login_failed");
  EXPECT_NE(r.err.find("CKR_PIN_INCORRECT"), std::string::npos) << r.err;
}

TEST_F(SignErrorsTest, UnsetPinVariableIsLoginFailed) {
  std::vector<std::string> args = s_.SignArgs({"--no-ledger", Package()});
  args[6] = "env:CG_NO_SUCH_PIN_VARIABLE";
  CommandResult r = Run(args);
  ExpectFailure(r, 2, "hsm_login_failed");
  EXPECT_NE(r.err.find("CG_NO_SUCH_PIN_VARIABLE is not set"), std::string::npos) << r.err;
}

TEST_F(SignErrorsTest, MissingTokenIsHsmUnavailable) {
  TestKey ghost{"no-such-token", "acme-release", "pkcs11:token=no-such-token;object=acme-release",
                ""};
  CommandResult r = Run(s_.SignArgs({"--no-ledger", Package()}, &ghost));
  ExpectFailure(r, 2, "hsm_unavailable");
  EXPECT_NE(r.err.find("no token labelled 'no-such-token'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'clawguard-test'"), std::string::npos)
      << r.err;  // lists the tokens present
}

TEST_F(SignErrorsTest, MissingLabelIsKeyNotFound) {
  TestKey ghost{"clawguard-test", "nope", "pkcs11:token=clawguard-test;object=nope", ""};
  CommandResult r = Run(s_.SignArgs({"--no-ledger", Package()}, &ghost));
  ExpectFailure(r, 2, "key_not_found");
  EXPECT_NE(r.err.find("'acme-release'"), std::string::npos) << r.err;  // lists the keys present
}

TEST_F(SignErrorsTest, AmbiguousLabelIsKeyAmbiguous) {
  for (const char* id : {"0a01", "0a02"}) {
    CommandResult g = RunCommand(
        {"pkcs11-tool", "--module", s_.hsm.module_path(), "--token-label", "clawguard-test",
         "--login", "--pin", kDistinctivePin, "--keypairgen", "--key-type", "EC:prime256v1",
         "--label", "twin", "--id", id, "--usage-sign", "--sensitive"},
        s_.hsm.Env());
    ASSERT_EQ(g.exit_code, 0) << g.err;
  }
  TestKey twin{"clawguard-test", "twin", "pkcs11:token=clawguard-test;object=twin", ""};
  CommandResult r = Run(s_.SignArgs({"--no-ledger", Package()}, &twin));
  ExpectFailure(r, 2, "key_ambiguous");
  EXPECT_NE(r.err.find("add id="), std::string::npos) << r.err;
}

TEST_F(SignErrorsTest, WrongModuleIsHsmUnavailable) {
  std::vector<std::string> args = s_.SignArgs({"--no-ledger", Package()});
  args[2] = "/nonexistent/libpkcs11.so";
  CommandResult r = Run(args);
  ExpectFailure(r, 2, "hsm_unavailable");
  EXPECT_NE(r.err.find("/nonexistent/libpkcs11.so"), std::string::npos) << r.err;
}

TEST_F(SignErrorsTest, UriWithPinValueOrModulePathIsRefused) {
  for (std::string uri :
       {std::string("pkcs11:token=clawguard-test;object=acme-release?pin-value=") + kDistinctivePin,
        std::string("pkcs11:token=clawguard-test;object=acme-release?module-path=/tmp/x.so")}) {
    TestKey bad{"clawguard-test", "acme-release", uri, ""};
    CommandResult r = Run(s_.SignArgs({"--no-ledger", Package()}, &bad));
    ExpectFailure(r, 2, "key_uri_invalid");
  }
}

TEST_F(SignErrorsTest, ExtractableKeyIsRefused) {
  // The key is refused when it is found, before any certificate is compared (and `keys csr`
  // refuses to certify it in the first place).
  TestKey ext = s_.hsm.GenerateExtractableKey("leaky");
  CommandResult r = Run(s_.SignArgs({"--no-ledger", Package()}, &ext));
  ExpectFailure(r, 1, "key_extractable");
  EXPECT_NE(r.err.find("CKA_EXTRACTABLE=true"), std::string::npos) << r.err;
}

TEST_F(SignErrorsTest, CsrRefusesAnExtractableKey) {
  TestKey ext = s_.hsm.GenerateExtractableKey("leaky");
  CommandResult r = Run({"keys", "csr", "--module", s_.hsm.module_path(), "--key", ext.uri,
                         "--pin-source", s_.hsm.PinSource(), "--subject", "/O=acme/CN=leaky"});
  ExpectFailure(r, 1, "key_extractable");
}

TEST_F(SignErrorsTest, ImportedKeyIsRefusedUnlessAllowed) {
  TestKey imported = s_.hsm.ImportKey("imported");
  const std::string chain = IssueLeaf(s_.hsm, imported, s_.pki, "imported", "/O=acme/CN=imported");
  const std::string pkg = Package();
  CommandResult r = Run(s_.SignArgs({"--no-ledger", pkg}, &imported, &chain));
  ExpectFailure(r, 1, "key_imported");
  EXPECT_NE(r.err.find("--allow-imported-key"), std::string::npos) << r.err;
  r = Run(s_.SignArgs({"--no-ledger", "--allow-imported-key", pkg}, &imported, &chain));
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(SignErrorsTest, CertificateOfAnotherKeyIsCertKeyMismatch) {
  TestKey other = s_.hsm.GenerateKey("other");
  const std::string other_chain = IssueLeaf(s_.hsm, other, s_.pki, "other", "/O=acme/CN=other");
  CommandResult r = Run(s_.SignArgs({"--no-ledger", Package()}, nullptr, &other_chain));
  ExpectFailure(r, 1, "cert_key_mismatch");
  EXPECT_NE(r.err.find(s_.key.keyid), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(other.keyid), std::string::npos) << r.err;
}

TEST_F(SignErrorsTest, ManifestNotFirstIsManifestInvalid) {
  const std::string pkg =
      MakePackage(s_.dir.Sub("nf"), "acme-orders", "1.0.0", "ELF", true, /*manifest_first=*/false);
  CommandResult r = Run(s_.SignArgs({"--no-ledger", pkg}));
  ExpectFailure(r, 1, "manifest_invalid");
}

TEST_F(SignErrorsTest, ManifestWithoutDigestsIsManifestInvalid) {
  const std::string pkg =
      MakePackage(s_.dir.Sub("nd"), "acme-orders", "1.0.0", "ELF", /*fill_digest=*/false);
  CommandResult r = Run(s_.SignArgs({"--no-ledger", pkg}));
  ExpectFailure(r, 1, "manifest_invalid");
  EXPECT_NE(r.err.find("clawguard pack"), std::string::npos) << r.err;
}

TEST_F(SignErrorsTest, UnreadableFilesAreFileUnreadable) {
  CommandResult r = Run(s_.SignArgs({"--no-ledger", s_.dir.Sub("missing.claw")}));
  ExpectFailure(r, 2, "file_unreadable");
  const std::string missing_chain = s_.dir.Sub("missing-chain.pem");
  r = Run(s_.SignArgs({"--no-ledger", Package()}, nullptr, &missing_chain));
  ExpectFailure(r, 2, "file_unreadable");
}

TEST_F(SignErrorsTest, LedgerChoiceMustBeExplicit) {
  const std::string pkg = Package();
  CommandResult r = Run(s_.SignArgs({pkg}));
  ExpectFailure(r, 2, "usage");
  EXPECT_NE(r.err.find("--no-ledger"), std::string::npos) << r.err;
  r = Run(s_.SignArgs({"--no-ledger", "--ledger", "sqlite:" + s_.dir.Sub("l.db"), pkg}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

TEST_F(SignErrorsTest, PinOnTheCommandLineIsNeverEchoed) {
  std::vector<std::string> args = s_.SignArgs({"--no-ledger", Package()});
  args[6] = kDistinctivePin;  // --pin-source given the PIN itself by mistake
  CommandResult r = Run(args);
  ExpectFailure(r, 2, "usage");
}

TEST_F(SignErrorsTest, KeysCommandsNeverPrintThePin) {
  Run({"keys", "list", "--module", s_.hsm.module_path(), "--token", "clawguard-test",
       "--pin-source", s_.hsm.PinSource()});
  Run({"keys", "list", "--module", s_.hsm.module_path(), "--token", "clawguard-test",
       "--pin-source", s_.hsm.PinSource(), "--json"});
  Run({"keys", "generate", "--module", s_.hsm.module_path(), "--token", "clawguard-test", "--label",
       "k2", "--pin-source", s_.hsm.PinSource()});
  CommandResult r = Run({"keys", "generate", "--module", s_.hsm.module_path(), "--token",
                         "clawguard-test", "--label", "k3", "--pin-source", s_.hsm.PinSource()},
                        {{SoftHsmToken::kPinEnv, kWrongPin}});
  ExpectFailure(r, 2, "hsm_login_failed");
  Run({"keys", "csr", "--module", s_.hsm.module_path(), "--key", s_.key.uri, "--pin-source",
       s_.hsm.PinSource(), "--subject", "/O=acme/CN=x"});
  Run(s_.SignArgs({"--no-ledger", Package("2.0.0")}));
}

}  // namespace
}  // namespace clawguard::testing
