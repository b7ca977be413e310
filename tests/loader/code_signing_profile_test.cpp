// code_signing_profile_test.cpp — certificates judged as a code-signing PKI would: codeSigning
// allowed through the whole chain, an end-entity leaf that may sign, no weak keys or digests,
// the allowlist signer held to validity and revocation, and the signature checked before any
// check whose reason a forger could choose. Real certificates from the test CA (test_pki.h);
// each test asserts the exact reason and that the plugin's constructor never ran.
#include "loader_fixture.h"

namespace clawguard::testing {
namespace {

class CodeSigningProfileTest : public LoaderFixture {
 protected:
  // SignedWithChain signs a fresh, allowlisted package with |key| and |chain| (leaf first).
  std::string SignedWithChain(EVP_PKEY* key, std::vector<X509*> chain,
                              const std::function<void(Statement&)>& mutate = nullptr) {
    const std::string pkg = MakePackage(PackageOpts{});
    Sign(pkg, {{key, std::move(chain), "", false}}, mutate);
    Allow({pkg});
    return pkg;
  }
  // Intermediate issues a CA under the pinned root with |spec| tweaks (pathlen 0, O=ClawHub).
  ossl::UniquePtr<X509> Intermediate(EVP_PKEY* key, CertSpec spec) {
    spec.ca = true;
    spec.pathlen = 0;
    spec.not_before = kJan2020;
    spec.subject = {{"O", "ClawHub"},
                    {"CN", "ClawHub Test Intermediate " + std::to_string(spec.serial)}};
    return Issue(spec, key, W().root.get(), W().root_key.get());
  }
  void ExpectVerified(const std::string& pkg, const TrustOpts& t = TrustOpts{}) {
    auto loader = MakeLoader(nullptr, t);
    ASSERT_TRUE(loader.ok()) << loader.error().ToString();
    auto v = (*loader)->Verify(pkg);
    ASSERT_TRUE(v.ok()) << v.error().ToString();
    EXPECT_EQ(v->verdict, VerdictKind::kVerified) << ReasonName(v->reason) << ": " << v->detail;
  }
  // RefusalDetail loads |pkg| and returns the refusal message (the reason is asserted).
  std::string RefusalDetail(const std::string& pkg, Reason want, const TrustOpts& t = TrustOpts{}) {
    ExpectRefused(pkg, want, nullptr, t);
    auto loader = MakeLoader(nullptr, t);
    if (!loader.ok()) return loader.error().message();
    auto v = (*loader)->Verify(pkg);
    return v.ok() ? v->detail : v.error().message();
  }
};

// ---- codeSigning through the chain ----

TEST_F(CodeSigningProfileTest, RefusesServerAuthOnlyIntermediateIssuingCodeSigningLeaf) {
  auto k = NewKey();
  CertSpec spec;
  spec.serial = 40;
  spec.ca_eku = "serverAuth";
  auto inter = Intermediate(k.get(), spec);
  auto leaf = Issue(CertSpec{}, W().key1.get(), inter.get(), k.get());
  const std::string detail = RefusalDetail(
      SignedWithChain(W().key1.get(), {leaf.get(), inter.get()}), Reason::kChainUntrusted);
  EXPECT_NE(detail.find("depth 1"), std::string::npos) << detail;
  EXPECT_NE(detail.find("without codeSigning"), std::string::npos) << detail;
}

TEST_F(CodeSigningProfileTest, RefusesIntermediateRestrictedToAnyExtendedKeyUsage) {
  // anyExtendedKeyUsage is default-deny: it says nothing about code.
  auto k = NewKey();
  CertSpec spec;
  spec.serial = 41;
  spec.ca_eku = "anyExtendedKeyUsage";
  auto inter = Intermediate(k.get(), spec);
  auto leaf = Issue(CertSpec{}, W().key1.get(), inter.get(), k.get());
  const std::string detail = RefusalDetail(
      SignedWithChain(W().key1.get(), {leaf.get(), inter.get()}), Reason::kChainUntrusted);
  EXPECT_NE(detail.find("anyExtendedKeyUsage"), std::string::npos) << detail;
}

TEST_F(CodeSigningProfileTest, AcceptsIntermediateWhoseEkuListsCodeSigning) {
  auto k = NewKey();
  CertSpec spec;
  spec.serial = 42;
  spec.ca_eku = "codeSigning,serverAuth";
  auto inter = Intermediate(k.get(), spec);
  auto leaf = Issue(CertSpec{}, W().key1.get(), inter.get(), k.get());
  ExpectVerified(SignedWithChain(W().key1.get(), {leaf.get(), inter.get()}));
}

// ---- the leaf is an end entity that may sign ----

TEST_F(CodeSigningProfileTest, RefusesLeafWithKeyUsageKeyCertSignOnly) {
  // OpenSSL's strict mode already refuses keyCertSign on a CA:FALSE certificate.
  CertSpec s;
  s.key_usage = "critical,keyCertSign";
  auto leaf = W().Leaf(W().key1.get(), s);
  ExpectRefused(SignedWithChain(W().key1.get(), {leaf.get(), W().inter.get()}),
                Reason::kChainUntrusted);
}

TEST_F(CodeSigningProfileTest, RefusesLeafWhoseKeyUsageLacksDigitalSignature) {
  CertSpec s;
  s.key_usage = "critical,nonRepudiation";
  auto leaf = W().Leaf(W().key1.get(), s);
  const std::string detail = RefusalDetail(
      SignedWithChain(W().key1.get(), {leaf.get(), W().inter.get()}), Reason::kChainUntrusted);
  EXPECT_NE(detail.find("keyUsage lacks digitalSignature"), std::string::npos) << detail;
}

TEST_F(CodeSigningProfileTest, RefusesCaTrueLeaf) {
  // CA:TRUE with keyUsage digitalSignature only: OpenSSL's X509_check_ca says 0 for it (its
  // keyUsage forbids certificate signing), so the basicConstraints flag itself is checked.
  CertSpec s;
  s.basic_constraints = "critical,CA:TRUE";
  auto leaf = W().Leaf(W().key1.get(), s);
  const std::string detail = RefusalDetail(
      SignedWithChain(W().key1.get(), {leaf.get(), W().inter.get()}), Reason::kChainUntrusted);
  EXPECT_NE(detail.find("CA:TRUE"), std::string::npos) << detail;
}

TEST_F(CodeSigningProfileTest, RefusesLeafWhoseEkuIsOnlyAnyExtendedKeyUsage) {
  CertSpec s;
  s.eku = "anyExtendedKeyUsage";
  auto leaf = W().Leaf(W().key1.get(), s);
  ExpectRefused(SignedWithChain(W().key1.get(), {leaf.get(), W().inter.get()}),
                Reason::kChainUntrusted);
}

TEST_F(CodeSigningProfileTest, AcceptsLeafWithoutKeyUsageExtension) {
  // keyUsage is checked when present; its absence places no restriction (RFC 5280 §4.2.1.3).
  CertSpec s;
  s.key_usage = "none";
  auto leaf = W().Leaf(W().key1.get(), s);
  ExpectVerified(SignedWithChain(W().key1.get(), {leaf.get(), W().inter.get()}));
}

// ---- weak keys and digests (security level 2) ----

TEST_F(CodeSigningProfileTest, RefusesRsa1024Intermediate) {
  auto k = NewRsaKey(1024);
  CertSpec spec;
  spec.serial = 43;
  auto inter = Intermediate(k.get(), spec);
  auto leaf = Issue(CertSpec{}, W().key1.get(), inter.get(), k.get());
  const std::string detail = RefusalDetail(
      SignedWithChain(W().key1.get(), {leaf.get(), inter.get()}), Reason::kChainUntrusted);
  EXPECT_NE(detail.find("2048 bits"), std::string::npos) << detail;
}

TEST_F(CodeSigningProfileTest, AcceptsRsa2048Intermediate) {
  auto k = NewRsaKey(2048);
  CertSpec spec;
  spec.serial = 44;
  auto inter = Intermediate(k.get(), spec);
  auto leaf = Issue(CertSpec{}, W().key1.get(), inter.get(), k.get());
  ExpectVerified(SignedWithChain(W().key1.get(), {leaf.get(), inter.get()}));
}

TEST_F(CodeSigningProfileTest, RefusesSha1SignedIntermediate) {
  auto k = NewKey();
  CertSpec spec;
  spec.serial = 45;
  spec.digest = "sha1";
  auto inter = Intermediate(k.get(), spec);
  auto leaf = Issue(CertSpec{}, W().key1.get(), inter.get(), k.get());
  const std::string detail = RefusalDetail(
      SignedWithChain(W().key1.get(), {leaf.get(), inter.get()}), Reason::kChainUntrusted);
  EXPECT_NE(detail.find("SHA-1"), std::string::npos) << detail;
}

TEST_F(CodeSigningProfileTest, RefusesSha1SignedLeaf) {
  CertSpec s;
  s.digest = "sha1";
  auto leaf = W().Leaf(W().key1.get(), s);
  ExpectRefused(SignedWithChain(W().key1.get(), {leaf.get(), W().inter.get()}),
                Reason::kChainUntrusted);
}

TEST_F(CodeSigningProfileTest, AuditModeDoesNotRelaxAWeakChain) {
  auto k = NewRsaKey(1024);
  CertSpec spec;
  spec.serial = 46;
  auto inter = Intermediate(k.get(), spec);
  auto leaf = Issue(CertSpec{}, W().key1.get(), inter.get(), k.get());
  TrustOpts t;
  t.mode = "audit";
  ExpectRefused(SignedWithChain(W().key1.get(), {leaf.get(), inter.get()}), Reason::kChainUntrusted,
                nullptr, t);
}

// ---- the signature before anything a forger could steer ----

TEST_F(CodeSigningProfileTest, ForgeryWithForeignPublisherAndExpiredLeafIsSignatureInvalid) {
  // The statement names a publisher the policy does not know and the leaf has expired: either
  // would refuse, but the signature is not by the leaf's key, so nothing else it says counts.
  CertSpec s;
  s.not_before = kJan2020;
  s.not_after = kJan2021;
  auto expired = W().Leaf(W().key1.get(), s);
  const std::string pkg = MakePackage(PackageOpts{});
  SignerRef forged{
      W().rogue_key.get(), {expired.get(), W().inter.get()}, "", false};  // keyid of key1's leaf
  Sign(pkg, {forged}, [](Statement& st) { st.publisher = "mallory"; });
  Allow({pkg});
  ExpectRefused(pkg, Reason::kSignatureInvalid);
  TrustOpts audit;
  audit.mode = "audit";  // a forgery is never relaxed, and no relaxable reason shows instead
  ExpectRefused(pkg, Reason::kSignatureInvalid, nullptr, audit);
}

TEST_F(CodeSigningProfileTest, ForgeryUnderAnUntrustedChainIsSignatureInvalid) {
  CertSpec s;
  auto leaf = Issue(s, W().key1.get(), W().rogue_root.get(), W().rogue_key.get());
  const std::string pkg = MakePackage(PackageOpts{});
  Sign(pkg, {{W().key2.get(), {leaf.get(), W().rogue_root.get()}, "", false}});
  Allow({pkg});
  ExpectRefused(pkg, Reason::kSignatureInvalid);
}

// ---- the allowlist signer ----

class AllowlistSignerTest : public CodeSigningProfileTest {
 protected:
  // SignerPem issues a certificate for the World's allowlist key with |spec|.
  std::string SignerPem(CertSpec spec) {
    if (spec.subject.front().second == "acme")
      spec.subject = {{"O", "ClawHub"}, {"CN", "allowlist signer"}};
    spec.serial = 60;
    return CertPem(W().Leaf(W().allow_key.get(), spec).get());
  }
  // HonestSignedAllowlist returns a signed package whose signed allowlist lists it.
  std::string HonestSignedAllowlist() {
    const std::string pkg = MakePackage(PackageOpts{});
    Sign(pkg);
    Allow({pkg}, 3, "2027-12-31T00:00:00Z", /*sign=*/true);
    return pkg;
  }
  TrustOpts WithSigner(const std::string& pem) {
    TrustOpts t;
    t.allowlist_signer = true;
    t.allowlist_signer_pem = pem;
    return t;
  }
};

TEST_F(AllowlistSignerTest, AcceptsACurrentSigner) {
  ExpectVerified(HonestSignedAllowlist(), WithSigner(SignerPem({})));
}

TEST_F(AllowlistSignerTest, RefusesExpiredSignerCertificate) {
  CertSpec s;
  s.not_before = kJan2020;
  s.not_after = kJan2021;
  const std::string detail =
      RefusalDetail(HonestSignedAllowlist(), Reason::kAllowlistInvalid, WithSigner(SignerPem(s)));
  EXPECT_NE(detail.find("has expired"), std::string::npos) << detail;
}

TEST_F(AllowlistSignerTest, RefusesNotYetValidSignerCertificate) {
  CertSpec s;
  s.not_before = kJan2030;
  s.not_after = kJan2031;
  const std::string detail =
      RefusalDetail(HonestSignedAllowlist(), Reason::kAllowlistInvalid, WithSigner(SignerPem(s)));
  EXPECT_NE(detail.find("not valid yet"), std::string::npos) << detail;
}

TEST_F(AllowlistSignerTest, RefusesSignerWhoseKeyIsRevoked) {
  TrustOpts t = WithSigner(SignerPem({}));
  t.revoked_keys = {KeyIdOf(W().allow_key.get()).value()};
  const std::string detail = RefusalDetail(HonestSignedAllowlist(), Reason::kAllowlistInvalid, t);
  EXPECT_NE(detail.find("revoked.keys"), std::string::npos) << detail;
}

TEST_F(AllowlistSignerTest, RefusesSignerWhoseKeyIsRevokedInAnotherEncoding) {
  // The digest an operator took from a compressed-point certificate of the same key.
  auto compressed = W().Leaf(WithPointFormat(W().allow_key.get(), "compressed").get(), CertSpec{});
  TrustOpts t = WithSigner(SignerPem({}));
  t.revoked_keys = {EncodedSpkiSha256(compressed.get())};
  ASSERT_NE(t.revoked_keys[0], KeyIdOf(W().allow_key.get()).value());
  ExpectRefused(HonestSignedAllowlist(), Reason::kAllowlistInvalid, nullptr, t);
}

TEST_F(AllowlistSignerTest, RefusesSignerWhoseCertificateIsRevoked) {
  const std::string pem = SignerPem({});
  TrustOpts t = WithSigner(pem);
  t.revoked_certs = {PemSha256(pem)};
  const std::string detail = RefusalDetail(HonestSignedAllowlist(), Reason::kAllowlistInvalid, t);
  EXPECT_NE(detail.find("revoked.certificates"), std::string::npos) << detail;
}

TEST_F(AllowlistSignerTest, RefusesCaCertificateAsSigner) {
  CertSpec s;
  s.ca = true;
  s.key_usage = "critical,digitalSignature,keyCertSign";  // may sign: only the CA flag refuses it
  s.subject = {{"O", "ClawHub"}, {"CN", "a CA pinned as allowlist signer"}};
  const std::string detail =
      RefusalDetail(HonestSignedAllowlist(), Reason::kAllowlistInvalid, WithSigner(SignerPem(s)));
  EXPECT_NE(detail.find("CA:TRUE"), std::string::npos) << detail;
}

TEST_F(AllowlistSignerTest, RefusesServerAuthSigner) {
  CertSpec s;
  s.eku = "serverAuth";
  ExpectRefused(HonestSignedAllowlist(), Reason::kAllowlistInvalid, nullptr,
                WithSigner(SignerPem(s)));
}

TEST_F(AllowlistSignerTest, AuditModeDoesNotRelaxAnExpiredSigner) {
  CertSpec s;
  s.not_before = kJan2020;
  s.not_after = kJan2021;
  TrustOpts t = WithSigner(SignerPem(s));
  t.mode = "audit";
  ExpectRefused(HonestSignedAllowlist(), Reason::kAllowlistInvalid, nullptr, t);
}

}  // namespace
}  // namespace clawguard::testing
