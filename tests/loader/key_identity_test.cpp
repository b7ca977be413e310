// key_identity_test.cpp — one key is one key: the same P-256 key certified once with a
// compressed and once with an uncompressed point has one canonical keyid, counts once toward a
// threshold, and is revoked in every encoding by a revoked.keys entry taken from any of them.
// The hostile certificates are real (test_pki.h WithPointFormat + Issue from the test CA).
#include "loader/chain_verifier.h"

#include "loader_fixture.h"
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard::testing {
namespace {

class KeyIdentityTest : public LoaderFixture {
 protected:
  void SetUp() override {
    LoaderFixture::SetUp();
    CertSpec c;
    c.serial = 70;
    compressed_ = W().Leaf(WithPointFormat(W().key1.get(), "compressed").get(), c);
  }
  // The same key as leaf1, written compressed in its SubjectPublicKeyInfo.
  X509* Compressed() const { return compressed_.get(); }
  X509* Uncompressed() const { return W().leaf1.get(); }
  static std::string CanonicalKeyIdOf(X509* cert) {
    return KeyIdOf(X509_get0_pubkey(cert)).value();
  }

  // BundleWith writes PKG.sig with one signature per (keyid, leaf) pair, each by key1 over the
  // honest statement: an attacker free to choose the keyid strings.
  void BundleWith(const std::string& pkg, const std::vector<std::pair<std::string, X509*>>& sigs) {
    Bundle b;
    b.payload_type = std::string(kInTotoPayloadType);
    b.payload = SerializeStatement(StatementFor(pkg));
    for (const auto& [keyid, leaf] : sigs) {
      b.signatures.push_back({keyid, SignRaw(W().key1.get(), Pae(b.payload_type, b.payload))});
      b.certificates[keyid] = {CertificateDer(leaf).value(),
                               CertificateDer(W().inter.get()).value()};
    }
    WriteFile(pkg + ".sig", SerializeBundle(b));
  }
  std::string SignedBy(X509* leaf) {
    const std::string pkg = MakePackage(PackageOpts{});
    Sign(pkg, {{W().key1.get(), {leaf, W().inter.get()}, "", false}});
    Allow({pkg});
    return pkg;
  }

  ossl::UniquePtr<X509> compressed_;
};

TEST_F(KeyIdentityTest, CompressedCertificateKeyHasTheUncompressedKeyId) {
  // The two certificates really encode the key differently…
  ASSERT_NE(EncodedSpkiSha256(Compressed()), EncodedSpkiSha256(Uncompressed()));
  // …and name one key.
  EXPECT_EQ(CanonicalKeyIdOf(Compressed()), CanonicalKeyIdOf(Uncompressed()));
  EXPECT_EQ(CanonicalKeyIdOf(Compressed()), KeyIdOf(W().key1.get()).value());
  // The canonical form is the uncompressed named-curve SPKI.
  EXPECT_EQ(CanonicalKeyIdOf(Uncompressed()), EncodedSpkiSha256(Uncompressed()));
}

TEST_F(KeyIdentityTest, PackageSignedWithTheCompressedCertificateVerifiesUnderTheCanonicalKeyId) {
  const std::string pkg = SignedBy(Compressed());
  auto loader = MakeLoader();
  ASSERT_TRUE(loader.ok()) << loader.error().ToString();
  auto v = (*loader)->Verify(pkg);
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(v->verdict, VerdictKind::kVerified) << v->detail;
  EXPECT_EQ(v->signers, std::vector<std::string>{KeyIdOf(W().key1.get()).value()});
}

TEST_F(KeyIdentityTest, OneKeyInTwoEncodingsCountsOnceBelowTheParser) {
  // The counting rule itself: two signatures by one key, whatever its certificate's encoding,
  // are one signer. (A bundle can hold one chain per keyid: the compressed one here.)
  TrustOpts t;
  t.threshold = 2;
  auto policy = TrustPolicy::Load(WriteTrust(t), clock_);
  ASSERT_TRUE(policy.ok()) << policy.error().ToString();
  auto verifier = ChainVerifier::Create(**policy, clock_);
  ASSERT_TRUE(verifier.ok());
  const std::string pkg = MakePackage(PackageOpts{});
  Bundle b;
  b.payload_type = std::string(kInTotoPayloadType);
  b.payload = SerializeStatement(StatementFor(pkg));
  const std::string keyid = CanonicalKeyIdOf(Compressed());
  for (int i = 0; i < 2; ++i)
    b.signatures.push_back({keyid, SignRaw(W().key1.get(), Pae(b.payload_type, b.payload))});
  b.certificates[keyid] = {CertificateDer(Compressed()).value(),
                           CertificateDer(W().inter.get()).value()};
  auto r = (*verifier)->Verify(b, StatementFor(pkg));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r, HasReason(Reason::kThresholdNotMet)) << r.error().ToString();
}

TEST_F(KeyIdentityTest, SameKeyInCompressedAndUncompressedLeavesCannotMeetThresholdTwo) {
  TrustOpts t;
  t.threshold = 2;
  const std::string pkg = MakePackage(PackageOpts{});
  Allow({pkg});
  // The attacker's first try: each certificate under the keyid of its own encoding (what
  // sha256(i2d_PUBKEY) used to give). The compressed one's keyid is not canonical.
  BundleWith(pkg, {{EncodedSpkiSha256(Uncompressed()), Uncompressed()},
                   {EncodedSpkiSha256(Compressed()), Compressed()}});
  ExpectRefused(pkg, Reason::kBundleInvalid, nullptr, t);
  // Second try: both under the canonical keyid. One keyid signing twice is malformed.
  const std::string keyid = CanonicalKeyIdOf(Compressed());
  BundleWith(pkg, {{keyid, Uncompressed()}, {keyid, Compressed()}});
  ExpectRefused(pkg, Reason::kBundleInvalid, nullptr, t);
  // Honestly signed once, it is one signer of the two required.
  Sign(pkg, {{W().key1.get(), {Compressed(), W().inter.get()}, "", false}});
  ExpectRefused(pkg, Reason::kThresholdNotMet, nullptr, t);
}

TEST_F(KeyIdentityTest, RevokedKeyListedByEitherCertificateRefusesTheOther) {
  // The canonical keyid, computed from either certificate, revokes a package signed with the other.
  for (X509* listed : {Compressed(), Uncompressed()}) {
    for (X509* signer : {Compressed(), Uncompressed()}) {
      TrustOpts t;
      t.revoked_keys = {CanonicalKeyIdOf(listed)};
      ExpectRefused(SignedBy(signer), Reason::kCertRevoked, nullptr, t);
    }
  }
}

TEST_F(KeyIdentityTest, RevokedKeyListedByItsCompressedEncodingRefusesTheUncompressedCertificate) {
  // An operator who hashed the SPKI of the compressed certificate as it stands (openssl x509
  // -pubkey | openssl pkey -pubin -outform DER | sha256sum) revoked the key, not one encoding.
  TrustOpts t;
  t.revoked_keys = {EncodedSpkiSha256(Compressed())};
  ASSERT_NE(t.revoked_keys[0], CanonicalKeyIdOf(Compressed()));
  ExpectRefused(SignedBy(Uncompressed()), Reason::kCertRevoked, nullptr, t);
  ExpectRefused(SignedBy(Compressed()), Reason::kCertRevoked, nullptr, t);
}

TEST_F(KeyIdentityTest, HybridPointCertificateIsTheSameKeyToo) {
  CertSpec c;
  c.serial = 71;
  auto hybrid = W().Leaf(WithPointFormat(W().key1.get(), "hybrid").get(), c);
  ASSERT_NE(EncodedSpkiSha256(hybrid.get()), EncodedSpkiSha256(Uncompressed()));
  EXPECT_EQ(CanonicalKeyIdOf(hybrid.get()), CanonicalKeyIdOf(Uncompressed()));
  TrustOpts t;
  t.revoked_keys = {CanonicalKeyIdOf(Uncompressed())};
  ExpectRefused(SignedBy(hybrid.get()), Reason::kCertRevoked, nullptr, t);
}

// One certificate is one certificate, too: ECDSA lets anyone turn a signature (r, s) into
// (r, n − s), so a revoked leaf or intermediate has a twin with another DER digest that verifies.
TEST_F(KeyIdentityTest, RevokedCertificateIsRevokedInItsEcdsaTwinToo) {
  auto leaf_twin = EcdsaTwin(Uncompressed());
  auto inter_twin = EcdsaTwin(W().inter.get());
  ASSERT_NE(CertSha256(leaf_twin.get()), CertSha256(Uncompressed()));
  ASSERT_NE(CertSha256(inter_twin.get()), CertSha256(W().inter.get()));
  const std::string pkg = MakePackage(PackageOpts{});
  Sign(pkg, {{W().key1.get(), {leaf_twin.get(), inter_twin.get()}, "", false}});
  Allow({pkg});
  // The twins are valid certificates: the package verifies with them…
  auto loader = MakeLoader();
  ASSERT_TRUE(loader.ok()) << loader.error().ToString();
  auto v = (*loader)->Verify(pkg);
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  ASSERT_EQ(v->verdict, VerdictKind::kVerified) << v->detail;
  // …and revoking the originals revokes them.
  TrustOpts leaf_revoked;
  leaf_revoked.revoked_certs = {CertSha256(Uncompressed())};
  ExpectRefused(pkg, Reason::kCertRevoked, nullptr, leaf_revoked);
  TrustOpts inter_revoked;
  inter_revoked.revoked_certs = {CertSha256(W().inter.get())};
  ExpectRefused(pkg, Reason::kCertRevoked, nullptr, inter_revoked);
}

}  // namespace
}  // namespace clawguard::testing
