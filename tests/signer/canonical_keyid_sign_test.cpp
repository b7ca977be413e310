// canonical_keyid_sign_test.cpp — `clawguard sign` names the token key by its canonical keyid
// (bundle.h CanonicalSpkiDer), whatever encoding the certificate in --chain uses: a second
// certificate for the same SoftHSM2 key, with a compressed point, signs under the same keyid
// that `keys list` prints, and appending with it is the same signer again, so a threshold of two
// is not met by one key.
#include <openssl/pem.h>

#include <gtest/gtest.h>

#include "clawguard/bundle.h"
#include "loader/test_pki.h"
#include "signer_test_util.h"

namespace clawguard::testing {
namespace {

class CanonicalKeyIdSignTest : public ::testing::Test {
 protected:
  // CompressedChain has the test PKI's intermediate issue another leaf for the token key (the
  // one in acme.pem) whose SubjectPublicKeyInfo writes the point compressed; returns its chain.
  std::string CompressedChain() {
    ossl::UniquePtr<BIO> bio(BIO_new_file((s_.pki.dir + "/intermediate.key").c_str(), "r"));
    Need(bio != nullptr, "open intermediate.key");
    ossl::UniquePtr<EVP_PKEY> inter_key(
        PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
    Need(inter_key != nullptr, "read intermediate.key");
    auto inter = ParsePemCertificates(ReadFile(s_.pki.intermediate_pem), Reason::kInternal);
    auto leaf = ParsePemCertificates(ReadFile(s_.pki.dir + "/acme.pem"), Reason::kInternal);
    Need(inter.ok() && leaf.ok(), "read the test PKI's certificates");
    auto compressed_key =
        WithPointFormat(X509_get0_pubkey((*leaf)[0].get()), "compressed");  // get0: leaf's
    CertSpec spec;
    spec.serial = 4242;
    spec.subject = {{"O", "acme"}, {"CN", "acme release (compressed point)"}};
    compressed_leaf_ = Issue(spec, compressed_key.get(), (*inter)[0].get(), inter_key.get());
    const std::string path = s_.dir.Sub("acme-compressed-chain.pem");
    WriteFile(path, CertPem(compressed_leaf_.get()) + CertPem((*inter)[0].get()));
    return path;
  }
  Bundle ReadBundle(const std::string& sig_path) {
    auto b = ParseBundle(ReadFile(sig_path));
    EXPECT_TRUE(b.ok()) << b.error().ToString();
    return b.ok() ? std::move(b).value() : Bundle{};
  }

  SigningSetup s_;
  ossl::UniquePtr<X509> compressed_leaf_;
};

TEST_F(CanonicalKeyIdSignTest, SignWritesTheCanonicalKeyIdForACompressedPointCertificate) {
  const std::string chain = CompressedChain();
  const std::string pkg = MakePackage(s_.dir.Sub("out"), "acme-orders", "1.0.0", "ELF-bytes-A");
  CommandResult r =
      RunClawguard(s_.SignArgs({"--no-ledger", "--json", pkg}, nullptr, &chain), s_.hsm.Env());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Bundle b = ReadBundle(pkg + ".sig");
  ASSERT_EQ(b.signatures.size(), 1u);
  // The keyid `keys list` prints for the token key, not the digest of the certificate's encoding.
  EXPECT_EQ(b.signatures[0].keyid, s_.key.keyid);
  EXPECT_NE(b.signatures[0].keyid, EncodedSpkiSha256(compressed_leaf_.get()));
  EXPECT_EQ(b.signatures[0].keyid, KeyIdOf(X509_get0_pubkey(compressed_leaf_.get())).value());
  EXPECT_EQ(nlohmann::json::parse(r.out).at("keyid"), s_.key.keyid);
  // The certificate carried is the compressed one, as given.
  ASSERT_FALSE(b.certificates.at(s_.key.keyid).empty());
  EXPECT_EQ(b.certificates.at(s_.key.keyid)[0], CertificateDer(compressed_leaf_.get()).value());
  // `inspect` agrees that the keyid names the leaf's key.
  CommandResult i = RunClawguard({"inspect", pkg, "--json"});
  ASSERT_EQ(i.exit_code, 0) << i.err;
  EXPECT_EQ(nlohmann::json::parse(i.out)["signatures"][0]["verifies"], true) << i.out;
}

TEST_F(CanonicalKeyIdSignTest, AppendingWithAnotherCertificateOfTheSameKeyIsTheSameSigner) {
  const std::string pkg = MakePackage(s_.dir.Sub("out"), "acme-orders", "1.0.0", "ELF-bytes-A");
  CommandResult first = RunClawguard(s_.SignArgs({"--no-ledger", pkg}), s_.hsm.Env());
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string chain = CompressedChain();
  CommandResult again = RunClawguard(
      s_.SignArgs({"--no-ledger", "--append", "--json", pkg}, nullptr, &chain), s_.hsm.Env());
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_EQ(nlohmann::json::parse(again.out).at("already_signed"), true) << again.out;
  EXPECT_EQ(ReadBundle(pkg + ".sig").signatures.size(), 1u);

  // A verifier needing two keys sees one.
  WriteFile(s_.dir.Sub("trust.yaml"),
            "schema: clawguard/trust/v1\nmode: enforce\nroots:\n  - file: " + s_.pki.root_pem +
                "\n    sha256: " + s_.pki.root_sha256 +
                "\nrequire_eku: codeSigning\npublishers: { acme: [\"acme-*\"] }\nthreshold: 2\n");
  WriteFile(s_.dir.Sub("allowlist.yaml"),
            "schema: clawguard/allowlist/v1\nversion: 1\nexpires: 2035-01-01T00:00:00Z\n"
            "plugins:\n  - { name: acme-orders, version: 1.0.0, sha256: " +
                Sha256Hex(ReadFile(pkg)) + " }\n");
  CommandResult v = RunClawguard({"verify", pkg, "--trust", s_.dir.Sub("trust.yaml"), "--allowlist",
                                  s_.dir.Sub("allowlist.yaml"), "--json"});
  EXPECT_EQ(v.exit_code, 1) << v.out << v.err;
  EXPECT_NE(v.out.find("threshold_not_met"), std::string::npos) << v.out << v.err;
}

}  // namespace
}  // namespace clawguard::testing
