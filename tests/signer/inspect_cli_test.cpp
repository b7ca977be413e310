// inspect_cli_test.cpp — `clawguard inspect` through the built binary, on a package made by
// `clawguard pack` and bundles built here with OpenSSL file keys through the bundle API.
#include <gtest/gtest.h>
#include <openssl/x509.h>

#include <nlohmann/json.hpp>

#include "clawguard/bundle.h"
#include "clawguard/manifest.h"
#include "clawguard/sha256.h"
#include "signer/package_manifest.h"
#include "support/temp_dir.h"

namespace clawguard {
namespace {

using ::clawguard::testing::ReadFile;
using ::clawguard::testing::RunClawguard;
using ::clawguard::testing::TempDir;
using ::clawguard::testing::WriteFile;

constexpr const char* kInspectManifest = R"(schema: clawguard/plugin/v1
name: tiny
version: 0.3.1
publisher: acme
abi: 1
entry: lib/libtiny.so
files:
  lib/libtiny.so: null
)";

ossl::UniquePtr<EVP_PKEY> NewKey(bool ed25519) {
  return ossl::UniquePtr<EVP_PKEY>(ed25519 ? EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519")
                                           : EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
}

std::string SignBytes(EVP_PKEY* key, std::string_view msg) {
  ossl::UniquePtr<EVP_MD_CTX> ctx(EVP_MD_CTX_new());
  const EVP_MD* md = EVP_PKEY_get_base_id(key) == EVP_PKEY_ED25519 ? nullptr : EVP_sha256();
  EXPECT_EQ(EVP_DigestSignInit(ctx.get(), nullptr, md, nullptr, key), 1);
  size_t len = 0;
  const auto* m = reinterpret_cast<const unsigned char*>(msg.data());
  EXPECT_EQ(EVP_DigestSign(ctx.get(), nullptr, &len, m, msg.size()), 1);
  std::string sig(len, '\0');
  EXPECT_EQ(
      EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len, m, msg.size()),
      1);
  sig.resize(len);
  return sig;
}

// LeafDer: a self-signed certificate O=acme, CN=acme release for |key|.
std::string LeafDer(EVP_PKEY* key) {
  ossl::UniquePtr<X509> cert(X509_new());
  X509_set_version(cert.get(), X509_VERSION_3);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 7);  // borrowed from cert
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), 0);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86400);
  X509_NAME* name = X509_get_subject_name(cert.get());  // borrowed from cert
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("acme"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("acme release"), -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  X509_set_pubkey(cert.get(), key);
  const EVP_MD* md = EVP_PKEY_get_base_id(key) == EVP_PKEY_ED25519 ? nullptr : EVP_sha256();
  EXPECT_GT(X509_sign(cert.get(), key, md), 0);
  return CertificateDer(cert.get()).value();
}

class InspectCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile(t_.Sub("src/manifest.yaml"), kInspectManifest);
    WriteFile(t_.Sub("src/lib/libtiny.so"), "tiny");
    auto r =
        RunClawguard({"pack", "--manifest", t_.Sub("src/manifest.yaml"), "--out", t_.Sub("out")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    pkg_ = t_.Sub("out/tiny-0.3.1.claw");
    sha_ = Sha256Hex(ReadFile(pkg_));
  }
  // WriteBundle signs a statement for the package (subject digest |subject_sha|) with |key|.
  void WriteBundle(EVP_PKEY* key, const std::string& subject_sha, bool corrupt_sig = false) {
    const std::string bytes = ReadFile(pkg_);
    auto manifest_yaml = signer::ReadFirstEntryManifest(bytes);
    ASSERT_TRUE(manifest_yaml.ok()) << manifest_yaml.error().ToString();
    auto manifest = ParseManifest(*manifest_yaml, "manifest.yaml");
    ASSERT_TRUE(manifest.ok()) << manifest.error().ToString();
    Statement st;
    st.subject_name = "tiny-0.3.1.claw";
    st.subject_sha256 = subject_sha;
    st.name = "tiny";
    st.version = "0.3.1";
    st.publisher = "acme";
    st.abi = 1;
    st.manifest_sha256 = Sha256Hex(*manifest_yaml);
    st.manifest = ManifestToJson(*manifest);
    Bundle b;
    b.payload_type = std::string(kInTotoPayloadType);
    b.payload = SerializeStatement(st);
    const std::string keyid = KeyIdOf(key).value();
    std::string sig = SignBytes(key, Pae(b.payload_type, b.payload));
    if (corrupt_sig) sig = SignBytes(key, "something else");
    b.signatures = {{keyid, sig}};
    b.certificates = {{keyid, {LeafDer(key)}}};
    WriteFile(pkg_ + ".sig", SerializeBundle(b));
  }
  nlohmann::json InspectJson() {
    auto r = RunClawguard({"inspect", pkg_, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  }
  TempDir t_;
  std::string pkg_, sha_;
};

TEST_F(InspectCliTest, DescribesASignedPackage) {
  auto key = NewKey(/*ed25519=*/false);
  WriteBundle(key.get(), sha_);
  const auto j = InspectJson();
  EXPECT_EQ(j["package"], pkg_);
  EXPECT_EQ(j["sha256"], sha_);
  EXPECT_EQ(j["manifest"]["name"], "tiny");
  EXPECT_EQ(j["statement"]["predicate"]["publisher"], "acme");
  EXPECT_EQ(j["digestMatches"], true);
  ASSERT_EQ(j["signatures"].size(), 1u);
  const auto& s = j["signatures"][0];
  EXPECT_EQ(s["keyid"], KeyIdOf(key.get()).value());
  EXPECT_EQ(s["algorithm"], "ecdsa-p256-sha256");
  EXPECT_EQ(s["verifies"], true);
  ASSERT_EQ(s["chain"].size(), 1u);
  EXPECT_EQ(s["chain"][0]["subject"], "CN=acme release,O=acme");
  EXPECT_EQ(s["chain"][0]["issuer"], "CN=acme release,O=acme");
  EXPECT_EQ(s["chain"][0]["notBefore"].get<std::string>().size(), 20u);  // YYYY-MM-DDTHH:MM:SSZ
  EXPECT_EQ(s["chain"][0]["sha256"].get<std::string>().size(), 64u);

  auto text = RunClawguard({"inspect", pkg_});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("sha256    " + sha_), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("signature verifies with the included leaf key; trust not evaluated"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("matches the package sha256"), std::string::npos) << text.out;
}

TEST_F(InspectCliTest, Ed25519SignatureVerifies) {
  auto key = NewKey(/*ed25519=*/true);
  WriteBundle(key.get(), sha_);
  const auto j = InspectJson();
  EXPECT_EQ(j["signatures"][0]["algorithm"], "ed25519");
  EXPECT_EQ(j["signatures"][0]["verifies"], true);
}

TEST_F(InspectCliTest, ShowsABadSignatureAndADigestMismatch) {
  auto key = NewKey(/*ed25519=*/false);
  WriteBundle(key.get(), std::string(64, 'e'), /*corrupt_sig=*/true);
  const auto j = InspectJson();
  EXPECT_EQ(j["digestMatches"], false);
  EXPECT_EQ(j["signatures"][0]["verifies"], false);
  auto text = RunClawguard({"inspect", pkg_});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("MISMATCH"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("does NOT verify"), std::string::npos) << text.out;
}

TEST_F(InspectCliTest, UnsignedPackageHasNoStatement) {
  const auto j = InspectJson();
  EXPECT_TRUE(j["statement"].is_null());
  EXPECT_TRUE(j["digestMatches"].is_null());
  EXPECT_TRUE(j["signatures"].empty());
  EXPECT_EQ(j["manifest"]["version"], "0.3.1");
}

TEST_F(InspectCliTest, MalformedBundleOrMissingPackageFail) {
  WriteFile(pkg_ + ".sig", "{\"mediaType\": 1, \"mediaType\": 2}");
  auto bad = RunClawguard({"inspect", pkg_});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("bundle_invalid"), std::string::npos) << bad.err;
  auto missing = RunClawguard({"inspect", t_.Sub("nope.claw")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("file_unreadable"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace clawguard
