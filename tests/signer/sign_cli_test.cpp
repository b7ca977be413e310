// sign_cli_test.cpp — `clawguard sign`: bundles that verify, in-process and with the openssl CLI
// alone; --append; --allowlist; the ledger refusing an overwritten version.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "clawguard/bundle.h"
#include "clawguard/encoding.h"
#include "signer_test_util.h"

namespace clawguard::testing {
namespace {

// VerifyBundleInProcess parses the bundle and checks every signature with its leaf key.
Bundle VerifyBundleInProcess(const std::string& sig_path) {
  auto bundle = ParseBundle(ReadFile(sig_path));
  EXPECT_TRUE(bundle.ok()) << bundle.error().ToString();
  if (!bundle.ok()) return {};
  for (const auto& s : bundle->signatures) {
    auto cert = ParseCertificateDer(bundle->certificates.at(s.keyid).front());
    EXPECT_TRUE(cert.ok());
    EXPECT_EQ(KeyIdOf(X509_get0_pubkey(cert->get())).value(), s.keyid);
    Status ok = VerifySignature(X509_get0_pubkey(cert->get()),
                                Pae(bundle->payload_type, bundle->payload), s.sig);
    EXPECT_TRUE(ok.ok()) << ok.ToString();
  }
  return std::move(bundle).value();
}

// VerifyWithOpensslCli rebuilds PAE from the bundle with base64/printf and checks signature
// |index| with the openssl CLI and the leaf's public key only.
void VerifyWithOpensslCli(const std::string& sig_path, int index, bool ed25519,
                          const std::string& work) {
  const std::string script = R"SH(set -euo pipefail
bundle="$1"; i="$2"; w="$3"; ed="$4"
mkdir -p "$w"; cd "$w"
jq -r '.dsseEnvelope.payload' "$bundle" | base64 -d > payload.bin
type=$(jq -r '.dsseEnvelope.payloadType' "$bundle")
printf 'DSSEv1 %d %s %d ' "${#type}" "$type" "$(stat -c %s payload.bin)" > pae.bin
cat payload.bin >> pae.bin
jq -r ".dsseEnvelope.signatures[$i].sig" "$bundle" | base64 -d > sig.bin
keyid=$(jq -r ".dsseEnvelope.signatures[$i].keyid" "$bundle")
jq -r ".verificationMaterial.certificates[\"$keyid\"][0]" "$bundle" | base64 -d > leaf.der
openssl x509 -inform DER -in leaf.der -pubkey -noout > pub.pem
if [ "$ed" = 1 ]; then
  openssl pkeyutl -verify -pubin -inkey pub.pem -rawin -in pae.bin -sigfile sig.bin
else
  openssl dgst -sha256 -verify pub.pem -signature sig.bin pae.bin
fi
)SH";
  CommandResult r = RunCommand(
      {"bash", "-c", script, "verify", sig_path, std::to_string(index), work, ed25519 ? "1" : "0"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // openssl dgst says "Verified OK", openssl pkeyutl "Signature Verified Successfully".
  EXPECT_TRUE(r.out.find("Verified OK") != std::string::npos ||
              r.out.find("Signature Verified Successfully") != std::string::npos)
      << r.out << r.err;
}

class SignCliTest : public ::testing::Test {
 protected:
  SigningSetup s_;
};

TEST_F(SignCliTest, SignsAPackageAndTheBundleVerifies) {
  const std::string pkg = MakePackage(s_.dir.Sub("out"), "acme-orders", "1.0.0", "ELF-bytes-A");
  CommandResult r = RunClawguard(s_.SignArgs({"--no-ledger", pkg}), s_.hsm.Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ledger: skipped"), std::string::npos) << r.out;
  Bundle b = VerifyBundleInProcess(pkg + ".sig");
  ASSERT_EQ(b.signatures.size(), 1u);
  EXPECT_EQ(b.signatures[0].keyid, s_.key.keyid);
  EXPECT_EQ(b.payload_type, kInTotoPayloadType);
  EXPECT_EQ(b.certificates.at(s_.key.keyid).size(), 2u);  // leaf + intermediate
  auto st = ParseStatement(b.payload);
  ASSERT_TRUE(st.ok()) << st.error().ToString();
  EXPECT_EQ(st->subject_name, "acme-orders-1.0.0.claw");
  EXPECT_EQ(st->subject_sha256, Sha256Hex(ReadFile(pkg)));
  EXPECT_EQ(st->name, "acme-orders");
  EXPECT_EQ(st->version, "1.0.0");
  EXPECT_EQ(st->publisher, "acme");
  EXPECT_EQ(st->abi, 1);
  EXPECT_EQ(st->manifest.at("files").at("lib/libplugin.so"), "sha256:" + Sha256Hex("ELF-bytes-A"));
}

TEST_F(SignCliTest, EcdsaSignatureVerifiesWithTheOpensslCliAlone) {
  const std::string pkg = MakePackage(s_.dir.Sub("out"), "acme-orders", "1.0.0", "ELF-bytes-A");
  CommandResult r = RunClawguard(s_.SignArgs({"--no-ledger", pkg}), s_.hsm.Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  VerifyWithOpensslCli(pkg + ".sig", 0, /*ed25519=*/false, s_.dir.Sub("interop"));
}

TEST_F(SignCliTest, Ed25519SignatureVerifiesWithTheOpensslCliAlone) {
  s_.hsm.InitToken("ed-token");
  TestKey ed = s_.hsm.GenerateKey("acme-ed", "ed25519", "ed-token");
  const std::string chain = IssueLeaf(s_.hsm, ed, s_.pki, "acme-ed", "/O=acme/CN=acme ed25519");
  const std::string pkg = MakePackage(s_.dir.Sub("out"), "acme-orders", "1.0.0", "ELF-bytes-A");
  CommandResult r = RunClawguard(s_.SignArgs({"--no-ledger", pkg}, &ed, &chain), s_.hsm.Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Bundle b = VerifyBundleInProcess(pkg + ".sig");
  ASSERT_EQ(b.signatures.size(), 1u);
  EXPECT_EQ(b.signatures[0].sig.size(), 64u);
  VerifyWithOpensslCli(pkg + ".sig", 0, /*ed25519=*/true, s_.dir.Sub("interop-ed"));
}

TEST_F(SignCliTest, AppendMakesATwoSignatureBundle) {
  TestKey second = s_.hsm.GenerateKey("acme-release-2");
  const std::string chain2 =
      IssueLeaf(s_.hsm, second, s_.pki, "acme2", "/O=acme/CN=acme release 2");
  const std::string pkg = MakePackage(s_.dir.Sub("out"), "acme-orders", "1.0.0", "ELF-bytes-A");
  ASSERT_EQ(RunClawguard(s_.SignArgs({"--no-ledger", pkg}), s_.hsm.Env()).exit_code, 0);
  CommandResult r =
      RunClawguard(s_.SignArgs({"--no-ledger", "--append", pkg}, &second, &chain2), s_.hsm.Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Bundle b = VerifyBundleInProcess(pkg + ".sig");
  ASSERT_EQ(b.signatures.size(), 2u);
  EXPECT_EQ(b.signatures[0].keyid, s_.key.keyid);
  EXPECT_EQ(b.signatures[1].keyid, second.keyid);
  EXPECT_EQ(b.certificates.size(), 2u);
  VerifyWithOpensslCli(pkg + ".sig", 1, false, s_.dir.Sub("interop-2"));

  // The same key again is a no-op (exit 0), never a duplicate keyid.
  const std::string before = ReadFile(pkg + ".sig");
  r = RunClawguard(s_.SignArgs({"--no-ledger", "--append", pkg}, &second, &chain2), s_.hsm.Env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("already signed by keyid " + second.keyid), std::string::npos) << r.out;
  EXPECT_EQ(ReadFile(pkg + ".sig"), before);
}

TEST_F(SignCliTest, AppendRefusesABundleOfOtherBytes) {
  const std::string pkg = MakePackage(s_.dir.Sub("a"), "acme-orders", "1.0.0", "ELF-bytes-A");
  const std::string other = MakePackage(s_.dir.Sub("b"), "acme-orders", "1.0.0", "ELF-bytes-B");
  ASSERT_EQ(RunClawguard(s_.SignArgs({"--no-ledger", other}), s_.hsm.Env()).exit_code, 0);
  WriteFile(pkg + ".sig", ReadFile(other + ".sig"));
  CommandResult r = RunClawguard(s_.SignArgs({"--no-ledger", "--append", pkg}), s_.hsm.Env());
  ExpectFailure(r, 1, "manifest_invalid");
  EXPECT_NE(r.err.find("signs a different statement"), std::string::npos) << r.err;
}

TEST_F(SignCliTest, AppendWithoutABundleIsUnreadable) {
  const std::string pkg = MakePackage(s_.dir.Sub("out"), "acme-orders", "1.0.0", "ELF-bytes-A");
  CommandResult r = RunClawguard(s_.SignArgs({"--no-ledger", "--append", pkg}), s_.hsm.Env());
  ExpectFailure(r, 2, "file_unreadable");
}

TEST_F(SignCliTest, SignsAnAllowlistWithItsExactBytes) {
  const std::string allowlist = s_.dir.Sub("allowlist.yaml");
  const std::string text =
      "schema: clawguard/allowlist/v1\nversion: 12\nexpires: 2027-12-31T00:00:00Z\nplugins:\n"
      "  - { name: acme-orders, version: 1.0.0, sha256: " +
      std::string(64, 'a') + " }\n";
  WriteFile(allowlist, text);
  CommandResult r = RunClawguard(s_.SignArgs({"--allowlist", allowlist}), s_.hsm.Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Bundle b = VerifyBundleInProcess(allowlist + ".sig");
  EXPECT_EQ(b.payload_type, kAllowlistPayloadType);
  EXPECT_EQ(b.payload, text);
  VerifyWithOpensslCli(allowlist + ".sig", 0, false, s_.dir.Sub("interop-allow"));
}

TEST_F(SignCliTest, LedgerRefusesAnOverwrittenVersion) {
  const std::string ledger = "sqlite:" + s_.dir.Sub("ledger.db");
  const std::string a = MakePackage(s_.dir.Sub("a"), "acme-orders", "1.0.0", "ELF-bytes-A");
  CommandResult r = RunClawguard(s_.SignArgs({"--ledger", ledger, a}), s_.hsm.Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ledger: recorded"), std::string::npos) << r.out;

  // The same bytes again: fine (the ledger row already exists).
  r = RunClawguard(s_.SignArgs({"--ledger", ledger, a}), s_.hsm.Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ledger: already recorded"), std::string::npos) << r.out;

  // Other library bytes under the same version: refused, and no .sig is written.
  const std::string b = MakePackage(s_.dir.Sub("b"), "acme-orders", "1.0.0", "ELF-bytes-B");
  r = RunClawguard(s_.SignArgs({"--ledger", ledger, b}), s_.hsm.Env());
  ExpectFailure(r, 1, "version_overwritten");
  EXPECT_FALSE(std::filesystem::exists(b + ".sig"));

  // A new version is fine.
  const std::string c = MakePackage(s_.dir.Sub("c"), "acme-orders", "1.0.1", "ELF-bytes-B");
  r = RunClawguard(s_.SignArgs({"--ledger", ledger, c}), s_.hsm.Env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(SignCliTest, JsonOutputIsOneObject) {
  const std::string pkg = MakePackage(s_.dir.Sub("out"), "acme-orders", "1.0.0", "ELF-bytes-A");
  CommandResult r = RunClawguard(s_.SignArgs({"--no-ledger", "--json", pkg}), s_.hsm.Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("keyid"), s_.key.keyid);
  EXPECT_EQ(j.at("name"), "acme-orders");
  EXPECT_EQ(j.at("ledger"), "skipped");
  EXPECT_EQ(j.at("sha256"), Sha256Hex(ReadFile(pkg)));
}

}  // namespace
}  // namespace clawguard::testing
