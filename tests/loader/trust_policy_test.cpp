// trust_policy_test.cpp — trust.yaml is read strictly: every refusal is kConfigInvalid with
// file:line, and a stale CRL refuses the whole policy.
#include "loader/trust_policy.h"

#include "clawguard/limits.h"

#include "loader_fixture.h"
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard::testing {
namespace {

class TrustPolicyTest : public LoaderFixture {
 protected:
  Result<std::unique_ptr<TrustPolicy>> LoadText(const std::string& text) {
    WriteFile(dir_.Sub("t.yaml"), text);
    return TrustPolicy::Load(dir_.Sub("t.yaml"), clock_);
  }
  std::string Base() const {
    return "schema: clawguard/trust/v1\nmode: enforce\nroots:\n  - file: root.pem\n    sha256: " +
           CertSha256(W().root.get()) +
           "\nrequire_eku: codeSigning\npublishers: { acme: [\"acme-*\"] }\nthreshold: 1\n";
  }
  void ExpectConfigInvalid(const std::string& text, const std::string& needle) {
    auto p = LoadText(text);
    ASSERT_FALSE(p.ok());
    EXPECT_THAT(p, HasReason(Reason::kConfigInvalid));
    EXPECT_NE(p.error().message().find(needle), std::string::npos) << p.error().message();
    EXPECT_NE(p.error().message().find("t.yaml:"), std::string::npos) << p.error().message();
  }
};

TEST_F(TrustPolicyTest, LoadsMinimalPolicyWithDefaults) {
  auto p = LoadText(Base());
  ASSERT_TRUE(p.ok()) << p.error().ToString();
  EXPECT_EQ((*p)->mode(), PolicyMode::kEnforce);
  EXPECT_EQ((*p)->limits().max_package, limits::kDefaultMaxPackage);
  EXPECT_EQ((*p)->limits().max_entries, limits::kDefaultMaxEntries);
  EXPECT_FALSE((*p)->rollback_allowed());
  EXPECT_TRUE((*p)->PublisherMaySign("acme", "acme-orders"));
  EXPECT_FALSE((*p)->PublisherMaySign("acme", "other"));
  EXPECT_FALSE((*p)->PublisherMaySign("evil", "acme-orders"));
}

TEST_F(TrustPolicyTest, RefusesRootPinMismatch) {
  std::string t = Base();
  const std::string pin = CertSha256(W().root.get());
  t.replace(t.find(pin), 64, std::string(64, '0'));
  ExpectConfigInvalid(t, "pin mismatch");
}

TEST_F(TrustPolicyTest, RefusesUnknownKey) {
  ExpectConfigInvalid(Base() + "treshold: 2\n", "unknown key");
}
TEST_F(TrustPolicyTest, RefusesDuplicateKey) {
  ExpectConfigInvalid(Base() + "threshold: 2\n", "threshold");
}
TEST_F(TrustPolicyTest, RefusesZeroThreshold) {
  std::string t = Base();
  t.replace(t.find("threshold: 1"), 12, "threshold: 0");
  ExpectConfigInvalid(t, "threshold");
}
TEST_F(TrustPolicyTest, RefusesUnknownMode) {
  std::string t = Base();
  t.replace(t.find("mode: enforce"), 13, "mode: permissive");
  ExpectConfigInvalid(t, "mode");
}
TEST_F(TrustPolicyTest, RefusesOtherEku) {
  std::string t = Base();
  t.replace(t.find("codeSigning"), 11, "serverAuth");
  ExpectConfigInvalid(t, "require_eku");
}
TEST_F(TrustPolicyTest, RefusesStaleCrl) {
  auto crl = MakeCrl(W().inter.get(), W().inter_key.get(), {}, kJan2020, kJan2021);
  WriteFile(dir_.Sub("old.crl"), CrlPem(crl.get()));
  ExpectConfigInvalid(Base() + "revoked: { crls: [old.crl] }\n", "stale");
}
TEST_F(TrustPolicyTest, RefusesMissingCrlFile) {
  ExpectConfigInvalid(Base() + "revoked: { crls: [missing.crl] }\n", "cannot read");
}
TEST_F(TrustPolicyTest, RefusesBadRevokedDigest) {
  ExpectConfigInvalid(Base() + "revoked: { keys: [abc] }\n", "64 lowercase hex");
}
TEST_F(TrustPolicyTest, RefusesAllowedNeededThatIsNotABareName) {
  // '/' makes ld.so open a path; '$' starts a dynamic string token that expands into one.
  for (const char* name : {"/lib/libc.so.6", "$ORIGIN", "libc.so.6 ", "$LIB"}) {
    ExpectConfigInvalid(Base() + "elf: { allowed_needed: [\"" + std::string(name) + "\"] }\n",
                        "bare soname");
  }
}
TEST_F(TrustPolicyTest, RefusesYesAsNumber) {
  ExpectConfigInvalid(Base() + "limits: { max_entries: yes }\n", "max_entries");
}
TEST_F(TrustPolicyTest, RefusesAllowlistSignerPinMismatch) {
  ExpectConfigInvalid(Base() + "allowlist_signer: { file: allow-signer.pem, sha256: " +
                          std::string(64, '1') + " }\n",
                      "pin mismatch");
}
TEST_F(TrustPolicyTest, LoaderCreateReportsConfigInvalid) {
  LoaderOptions o;
  o.trust_policy_path = dir_.Sub("nope.yaml");
  o.allowlist_path = dir_.Sub("allowlist.yaml");
  o.clock = &clock_;
  auto l = Loader::Create(std::move(o));
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(l, HasReason(Reason::kConfigInvalid));
}

}  // namespace
}  // namespace clawguard::testing
