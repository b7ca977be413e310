// keys_cli_test.cpp — `clawguard keys generate|list|csr` against a real SoftHSM2 token.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "signer_test_util.h"
#include "support/softhsm.h"

namespace clawguard::testing {
namespace {

class KeysCliTest : public ::testing::Test {
 protected:
  TempDir dir_;
  SoftHsmToken hsm_;
};

TEST_F(KeysCliTest, GeneratePrintsUriAndKeyId) {
  CommandResult r =
      RunClawguard({"keys", "generate", "--module", hsm_.module_path(), "--token", hsm_.label(),
                    "--label", "acme-release", "--pin-source", hsm_.PinSource()},
                   hsm_.Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("uri: pkcs11:token=clawguard-test;object=acme-release;type=private"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("keyid: "), std::string::npos);
  EXPECT_NE(r.out.find("algorithm: ecdsa-p256"), std::string::npos);
}

TEST_F(KeysCliTest, GenerateRefusesAnExistingLabel) {
  hsm_.GenerateKey("acme-release");
  CommandResult r =
      RunClawguard({"keys", "generate", "--module", hsm_.module_path(), "--token", hsm_.label(),
                    "--label", "acme-release", "--pin-source", hsm_.PinSource()},
                   hsm_.Env());
  ExpectFailure(r, 2, "key_ambiguous");
  EXPECT_NE(r.err.find("a key labelled 'acme-release' already exists"), std::string::npos) << r.err;
}

TEST_F(KeysCliTest, GenerateRefusesAnUnknownAlgorithm) {
  CommandResult r =
      RunClawguard({"keys", "generate", "--module", hsm_.module_path(), "--token", hsm_.label(),
                    "--label", "k", "--algo", "rsa-2048", "--pin-source", hsm_.PinSource()},
                   hsm_.Env());
  ExpectFailure(r, 2, "usage");
}

TEST_F(KeysCliTest, ListShowsFlagsWhenLoggedIn) {
  TestKey key = hsm_.GenerateKey("acme-release");
  CommandResult r = RunClawguard({"keys", "list", "--module", hsm_.module_path(), "--token",
                                  hsm_.label(), "--pin-source", hsm_.PinSource(), "--json"},
                                 hsm_.Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.at("tokens").size(), 1u);
  const auto& k = j.at("tokens")[0].at("keys").at(0);
  EXPECT_EQ(k.at("label"), "acme-release");
  EXPECT_EQ(k.at("algorithm"), "ecdsa-p256");
  EXPECT_EQ(k.at("keyid"), key.keyid);
  EXPECT_EQ(k.at("uri"), key.uri);
  EXPECT_EQ(k.at("sensitive"), true);
  EXPECT_EQ(k.at("always_sensitive"), true);
  EXPECT_EQ(k.at("extractable"), false);
  EXPECT_EQ(k.at("never_extractable"), true);
  EXPECT_EQ(k.at("local"), true);
}

TEST_F(KeysCliTest, ListWithoutPinShowsPublicKeys) {
  TestKey key = hsm_.GenerateKey("acme-release");
  CommandResult r = RunClawguard({"keys", "list", "--module", hsm_.module_path()}, hsm_.Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("token 'clawguard-test'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(key.keyid), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("public keys only"), std::string::npos) << r.out;
}

TEST_F(KeysCliTest, ListPinNeedsToken) {
  CommandResult r = RunClawguard(
      {"keys", "list", "--module", hsm_.module_path(), "--pin-source", hsm_.PinSource()},
      hsm_.Env());
  ExpectFailure(r, 2, "usage");
}

TEST_F(KeysCliTest, CsrIsSignedInTheTokenAndVerifies) {
  TestKey key = hsm_.GenerateKey("acme-release");
  const std::string csr = dir_.Sub("acme.csr");
  CommandResult r =
      RunClawguard({"keys", "csr", "--module", hsm_.module_path(), "--key", key.uri, "--pin-source",
                    hsm_.PinSource(), "--subject", "/O=acme/CN=acme release", "--out", csr},
                   hsm_.Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CommandResult v = RunCommand({"openssl", "req", "-in", csr, "-verify", "-noout", "-subject"});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_NE(v.out.find("O = acme, CN = acme release"), std::string::npos) << v.out;
  CommandResult pub =
      RunCommand({"bash", "-c",
                  "openssl req -in '" + csr +
                      "' -pubkey -noout | openssl pkey -pubin -outform DER | sha256sum"});
  EXPECT_EQ(pub.out.substr(0, 64), key.keyid);
}

TEST_F(KeysCliTest, CsrToStdoutIsPem) {
  TestKey key = hsm_.GenerateKey("acme-release");
  CommandResult r =
      RunClawguard({"keys", "csr", "--module", hsm_.module_path(), "--key", key.uri, "--pin-source",
                    hsm_.PinSource(), "--subject", "/O=acme/CN=acme release"},
                   hsm_.Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("-----BEGIN CERTIFICATE REQUEST-----", 0), 0u) << r.out;
}

TEST_F(KeysCliTest, CsrRefusesABadSubject) {
  TestKey key = hsm_.GenerateKey("acme-release");
  for (const char* subject : {"O=acme", "/O=acme/", "/XX=1", "/O"}) {
    CommandResult r = RunClawguard({"keys", "csr", "--module", hsm_.module_path(), "--key", key.uri,
                                    "--pin-source", hsm_.PinSource(), "--subject", subject},
                                   hsm_.Env());
    ExpectFailure(r, 2, "usage");
  }
}

TEST_F(KeysCliTest, Ed25519KeyAndCsrInTheirOwnToken) {
  hsm_.InitToken("ed-token");
  TestKey key = hsm_.GenerateKey("acme-ed", "ed25519", "ed-token");
  EXPECT_EQ(key.uri, "pkcs11:token=ed-token;object=acme-ed;type=private");
  const std::string csr = dir_.Sub("ed.csr");
  CommandResult r =
      RunClawguard({"keys", "csr", "--module", hsm_.module_path(), "--key", key.uri, "--pin-source",
                    hsm_.PinSource(), "--subject", "/O=acme/CN=acme ed", "--out", csr},
                   hsm_.Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CommandResult v = RunCommand({"openssl", "req", "-in", csr, "-verify", "-noout", "-text"});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_NE(v.out.find("ED25519"), std::string::npos) << v.out;
}

}  // namespace
}  // namespace clawguard::testing
