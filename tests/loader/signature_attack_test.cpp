// signature_attack_test.cpp — adversarial suite, part 1: bundles, signatures, chains, digests.
// Each test asserts the exact Reason and that the plugin's constructor never ran.
#include "loader_fixture.h"

namespace clawguard::testing {
namespace {

class SignatureAttackTest : public LoaderFixture {
 protected:
  // Honest returns a signed, allowlisted package.
  std::string Honest() {
    const std::string pkg = MakePackage(PackageOpts{});
    Sign(pkg);
    Allow({pkg});
    return pkg;
  }
  // SignedBy signs a fresh package with |leaf| (and |chain| after it) for key1.
  std::string SignedByLeaf(X509* leaf, std::vector<X509*> rest, EVP_PKEY* key = nullptr) {
    const std::string pkg = MakePackage(PackageOpts{});
    std::vector<X509*> chain = {leaf};
    chain.insert(chain.end(), rest.begin(), rest.end());
    Sign(pkg, {{key ? key : W().key1.get(), chain, "", false}});
    Allow({pkg});
    return pkg;
  }
  void Flip(const std::string& path, size_t at) {
    std::string b = ReadFile(path);
    b[at] = static_cast<char>(b[at] ^ 0x20);
    WriteFile(path, b);
  }
};

TEST_F(SignatureAttackTest, RefusesPackageWithoutBundle) {
  const std::string pkg = MakePackage(PackageOpts{});
  Allow({pkg});
  ExpectRefused(pkg, Reason::kUnsigned);
}

TEST_F(SignatureAttackTest, RefusesGarbageBundle) {
  const std::string pkg = Honest();
  WriteFile(pkg + ".sig", "\x89PNG garbage \x01\x02");
  ExpectRefused(pkg, Reason::kBundleInvalid);
}

TEST_F(SignatureAttackTest, RefusesTruncatedBundle) {
  const std::string pkg = Honest();
  const std::string sig = ReadFile(pkg + ".sig");
  WriteFile(pkg + ".sig", sig.substr(0, sig.size() / 2));
  ExpectRefused(pkg, Reason::kBundleInvalid);
}

TEST_F(SignatureAttackTest, RefusesWrongPayloadType) {
  const std::string pkg = MakePackage(PackageOpts{});
  Sign(pkg, {}, nullptr, "application/vnd.clawguard.allowlist+yaml");
  Allow({pkg});
  ExpectRefused(pkg, Reason::kBundleInvalid);
}

TEST_F(SignatureAttackTest, RefusesFlippedByteAtStart) {
  const std::string pkg = Honest();
  Flip(pkg, 0);
  ExpectRefused(pkg, Reason::kDigestMismatch);
}

TEST_F(SignatureAttackTest, RefusesFlippedByteInMiddle) {
  const std::string pkg = Honest();
  Flip(pkg, ReadFile(pkg).size() / 2);
  ExpectRefused(pkg, Reason::kDigestMismatch);
}

TEST_F(SignatureAttackTest, RefusesFlippedByteAtEnd) {
  const std::string pkg = Honest();
  Flip(pkg, ReadFile(pkg).size() - 1);
  ExpectRefused(pkg, Reason::kDigestMismatch);
}

TEST_F(SignatureAttackTest, RefusesLeafUnderUntrustedRoot) {
  CertSpec s;
  auto leaf = Issue(s, W().key1.get(), W().rogue_root.get(), W().rogue_key.get());
  ExpectRefused(SignedByLeaf(leaf.get(), {W().rogue_root.get()}), Reason::kChainUntrusted);
}

TEST_F(SignatureAttackTest, RefusesSelfSignedLeaf) {
  CertSpec s;
  auto leaf = Issue(s, W().key1.get(), nullptr, W().key1.get());
  ExpectRefused(SignedByLeaf(leaf.get(), {}), Reason::kChainUntrusted);
}

TEST_F(SignatureAttackTest, RefusesMissingIntermediate) {
  ExpectRefused(SignedByLeaf(W().leaf1.get(), {}), Reason::kChainUntrusted);
}

TEST_F(SignatureAttackTest, RefusesServerAuthLeaf) {
  CertSpec s;
  s.eku = "serverAuth";
  auto leaf = W().Leaf(W().key1.get(), s);
  ExpectRefused(SignedByLeaf(leaf.get(), {W().inter.get()}), Reason::kChainUntrusted);
}

TEST_F(SignatureAttackTest, RefusesLeafWithoutEkuExtension) {
  CertSpec s;
  s.eku = "";
  auto leaf = W().Leaf(W().key1.get(), s);
  ExpectRefused(SignedByLeaf(leaf.get(), {W().inter.get()}), Reason::kChainUntrusted);
}

TEST_F(SignatureAttackTest, RefusesIntermediateWithoutCaTrue) {
  auto k = NewKey();
  CertSpec ca;
  ca.ca = true;
  ca.ca_flag_in_constraints = false;
  ca.serial = 30;
  ca.subject = {{"O", "ClawHub"}, {"CN", "not a CA"}};
  auto noca = Issue(ca, k.get(), W().root.get(), W().root_key.get());
  auto leaf = Issue(CertSpec{}, W().key1.get(), noca.get(), k.get());
  ExpectRefused(SignedByLeaf(leaf.get(), {noca.get()}), Reason::kChainUntrusted);
}

TEST_F(SignatureAttackTest, RefusesPathLengthViolation) {
  auto k = NewKey();
  CertSpec ca;
  ca.ca = true;
  ca.serial = 31;
  ca.subject = {{"O", "ClawHub"}, {"CN", "sub-intermediate"}};
  auto sub = Issue(ca, k.get(), W().inter.get(), W().inter_key.get());  // inter has pathlen:0
  auto leaf = Issue(CertSpec{}, W().key1.get(), sub.get(), k.get());
  ExpectRefused(SignedByLeaf(leaf.get(), {sub.get(), W().inter.get()}), Reason::kChainUntrusted);
}

TEST_F(SignatureAttackTest, RefusesExpiredLeaf) {
  CertSpec s;
  s.not_before = kJan2020;
  s.not_after = kJan2021;
  auto leaf = W().Leaf(W().key1.get(), s);
  ExpectRefused(SignedByLeaf(leaf.get(), {W().inter.get()}), Reason::kCertExpired);
}

TEST_F(SignatureAttackTest, RefusesNotYetValidLeaf) {
  CertSpec s;
  s.not_before = kJan2030;
  s.not_after = kJan2031;
  auto leaf = W().Leaf(W().key1.get(), s);
  ExpectRefused(SignedByLeaf(leaf.get(), {W().inter.get()}), Reason::kCertExpired);
}

TEST_F(SignatureAttackTest, RefusesRevokedCertificate) {
  const std::string pkg = Honest();
  TrustOpts t;
  t.revoked_certs = {CertSha256(W().leaf1.get())};
  ExpectRefused(pkg, Reason::kCertRevoked, nullptr, t);
}

TEST_F(SignatureAttackTest, RefusesRevokedKey) {
  const std::string pkg = Honest();
  TrustOpts t;
  t.revoked_keys = {KeyIdOf(W().key1.get()).value()};
  ExpectRefused(pkg, Reason::kCertRevoked, nullptr, t);
}

TEST_F(SignatureAttackTest, RefusesCrlRevokedCertificate) {
  const std::string pkg = Honest();
  auto crl =
      MakeCrl(W().inter.get(), W().inter_key.get(), {1}, kJan2026, kJan2030);  // leaf1 is serial 1
  WriteFile(dir_.Sub("inter.crl"), CrlPem(crl.get()));
  TrustOpts t;
  t.crl_files = {"inter.crl"};
  ExpectRefused(pkg, Reason::kCertRevoked, nullptr, t);
}

TEST_F(SignatureAttackTest, AcceptsLeafNotOnCurrentCrl) {
  const std::string pkg = Honest();
  auto crl = MakeCrl(W().inter.get(), W().inter_key.get(), {99}, kJan2026, kJan2030);
  WriteFile(dir_.Sub("inter.crl"), CrlPem(crl.get()));
  TrustOpts t;
  t.crl_files = {"inter.crl"};
  auto loader = MakeLoader(nullptr, t);
  ASSERT_TRUE(loader.ok()) << loader.error().ToString();
  auto v = (*loader)->Verify(pkg);
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(v->verdict, VerdictKind::kVerified) << v->detail;
}

TEST_F(SignatureAttackTest, RefusesLeafWithTwoOrganizations) {
  CertSpec s;
  s.subject = {{"O", "acme"}, {"O", "evil"}, {"CN", "acme release"}};
  auto leaf = W().Leaf(W().key1.get(), s);
  ExpectRefused(SignedByLeaf(leaf.get(), {W().inter.get()}), Reason::kPublisherNotAllowed);
}

TEST_F(SignatureAttackTest, RefusesOrganizationOtherThanPublisher) {
  CertSpec s;
  s.subject = {{"O", "evil"}, {"CN", "evil release"}};
  auto leaf = W().Leaf(W().key1.get(), s);
  TrustOpts t;
  t.publishers =
      "{ acme: [\"acme-*\"], evil: [\"acme-*\"] }";  // even a trusted O must match the predicate
  ExpectRefused(SignedByLeaf(leaf.get(), {W().inter.get()}), Reason::kPublisherNotAllowed, nullptr,
                t);
}

TEST_F(SignatureAttackTest, RefusesPublisherNotAllowedForName) {
  const std::string pkg = Honest();
  TrustOpts t;
  t.publishers = "{ acme: [\"acme-billing\", \"other-*\"] }";
  ExpectRefused(pkg, Reason::kPublisherNotAllowed, nullptr, t);
}

TEST_F(SignatureAttackTest, RefusesWhenThresholdNotMet) {
  const std::string pkg = Honest();
  TrustOpts t;
  t.threshold = 2;
  ExpectRefused(pkg, Reason::kThresholdNotMet, nullptr, t);
}

TEST_F(SignatureAttackTest, CountsOneKeyOnlyOnce) {
  // The bundle parser already refuses a repeated keyid (k-of-n counts distinct keys); the chain
  // verifier's own once-per-key rule is tested below it in chain_verifier_test.cpp.
  const std::string pkg = MakePackage(PackageOpts{});
  Sign(pkg, {Default(), Default()});
  Allow({pkg});
  TrustOpts t;
  t.threshold = 2;
  ExpectRefused(pkg, Reason::kBundleInvalid, nullptr, t);
}

TEST_F(SignatureAttackTest, IgnoresBadExtraSignatureBesideEnoughGoodOnes) {
  const std::string pkg = MakePackage(PackageOpts{});
  Sign(pkg, {{W().key3.get(), {W().leaf3.get(), W().inter.get()}, "", /*corrupt=*/true},
             Default(),
             {W().key2.get(), {W().leaf2.get(), W().inter.get()}, "", false}});
  Allow({pkg});
  TrustOpts t;
  t.threshold = 2;
  auto loader = MakeLoader(nullptr, t);
  ASSERT_TRUE(loader.ok()) << loader.error().ToString();
  auto loaded = (*loader)->Load(pkg);
  ASSERT_TRUE(loaded.ok()) << loaded.error().ToString();
  EXPECT_EQ(loaded->verdict().verdict, VerdictKind::kVerified);
  EXPECT_EQ(loaded->verdict().signers.size(), 2u);
}

TEST_F(SignatureAttackTest, RefusesBadSignatureAlone) {
  const std::string pkg = MakePackage(PackageOpts{});
  SignerRef s = Default();
  s.corrupt = true;
  Sign(pkg, {s});
  Allow({pkg});
  ExpectRefused(pkg, Reason::kSignatureInvalid);
}

TEST_F(SignatureAttackTest, RefusesSignatureClaimingAnotherKeyid) {
  const std::string pkg = MakePackage(PackageOpts{});
  SignerRef s = Default();
  s.keyid_override = KeyIdOf(W().key2.get()).value();
  Sign(pkg, {s});
  Allow({pkg});
  ExpectRefused(pkg, Reason::kBundleInvalid);
}

TEST_F(SignatureAttackTest, RefusesWeakAlgorithmKey) {
  auto k = NewKey("P-384");
  auto leaf = W().Leaf(k.get(), CertSpec{});
  ExpectRefused(SignedByLeaf(leaf.get(), {W().inter.get()}, k.get()), Reason::kAlgorithmRefused);
}

TEST_F(SignatureAttackTest, AcceptsEd25519Signer) {
  auto k = NewKey("ED25519");
  auto leaf = W().Leaf(k.get(), CertSpec{});
  const std::string pkg = SignedByLeaf(leaf.get(), {W().inter.get()}, k.get());
  auto loader = MakeLoader();
  ASSERT_TRUE(loader.ok());
  auto v = (*loader)->Verify(pkg);
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(v->verdict, VerdictKind::kVerified) << v->detail;
}

TEST_F(SignatureAttackTest, AuditModeStillRefusesTamperedPackage) {
  const std::string pkg = Honest();
  Flip(pkg, ReadFile(pkg).size() / 2);
  TrustOpts t;
  t.mode = "audit";
  ExpectRefused(pkg, Reason::kDigestMismatch, nullptr, t);
}

TEST_F(SignatureAttackTest, AuditModeRelaxesExpiredLeafAndSaysSo) {
  CertSpec s;
  s.not_before = kJan2020;
  s.not_after = kJan2021;
  auto leaf = W().Leaf(W().key1.get(), s);
  const std::string pkg = SignedByLeaf(leaf.get(), {W().inter.get()});
  TrustOpts t;
  t.mode = "audit";
  auto loader = MakeLoader(nullptr, t);
  ASSERT_TRUE(loader.ok());
  auto v = (*loader)->Verify(pkg);
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(v->verdict, VerdictKind::kAudit);
  EXPECT_EQ(v->reason, Reason::kCertExpired);
  EXPECT_EQ(v->mode, "audit");
}

TEST_F(SignatureAttackTest, WarnsAboutLeafExpiringWithin30Days) {
  CertSpec s;
  s.not_after = kDec15_2026;
  auto leaf = W().Leaf(W().key1.get(), s);
  const std::string pkg = SignedByLeaf(leaf.get(), {W().inter.get()});
  auto loader = MakeLoader();
  ASSERT_TRUE(loader.ok());
  auto v = (*loader)->Verify(pkg);
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(v->verdict, VerdictKind::kVerified);
  ASSERT_EQ(v->warnings.size(), 1u);
}

}  // namespace
}  // namespace clawguard::testing
