// ledger_allowlist_attack_test.cpp — adversarial suite, part 4: the allowlist and the ledger.
#include <fstream>

#include "loader_fixture.h"

namespace clawguard::testing {
namespace {

class LedgerAllowlistAttackTest : public LoaderFixture {
 protected:
  static PackageOpts Opts(const std::string& name, const std::string& version) {
    PackageOpts o;
    o.name = name;
    o.version = version;
    return o;
  }
  std::string Signed(PackageOpts o = PackageOpts{}) {
    const std::string pkg = MakePackage(o);
    Sign(pkg);
    return pkg;
  }
  // Deploy records |pkg| through a loader (a real deploy row and checkpoint line).
  void Deploy(const std::string& pkg, MemoryLedger& ledger) {
    Allow({pkg});
    auto loader = MakeLoader(&ledger);
    ASSERT_TRUE(loader.ok()) << loader.error().ToString();
    auto v = (*loader)->Verify(pkg, VerifyOptions{/*record=*/true});
    ASSERT_TRUE(v.ok()) << v.error().ToString();
    ASSERT_EQ(v->verdict, VerdictKind::kVerified) << v->detail;
    ASSERT_EQ(v->ledger, "recorded");
  }
};

TEST_F(LedgerAllowlistAttackTest, RefusesPackageNotAllowlisted) {
  const std::string pkg = Signed();
  const std::string other = Signed(Opts("acme-other", "1.4.2"));
  Allow({other});
  ExpectRefused(pkg, Reason::kNotAllowlisted);
}

TEST_F(LedgerAllowlistAttackTest, RefusesAllowlistedNameWithOtherDigest) {
  const std::string pkg = Signed();
  Allow({pkg});
  std::string y = ReadFile(dir_.Sub("allowlist.yaml"));
  const std::string sha = StatementFor(pkg).subject_sha256;
  y.replace(y.find(sha), 64, std::string(64, 'a'));
  WriteFile(dir_.Sub("allowlist.yaml"), y);
  ExpectRefused(pkg, Reason::kNotAllowlisted);
}

TEST_F(LedgerAllowlistAttackTest, RefusesExpiredAllowlist) {
  const std::string pkg = Signed();
  Allow({pkg}, 3, "2026-11-30T00:00:00Z");
  ExpectRefused(pkg, Reason::kAllowlistExpired);
}

TEST_F(LedgerAllowlistAttackTest, AuditModeRelaxesNotAllowlisted) {
  const std::string pkg = Signed();
  Allow({});
  TrustOpts t;
  t.mode = "audit";
  MemoryLedger ledger;
  auto loader = MakeLoader(&ledger, t);
  ASSERT_TRUE(loader.ok());
  auto v = (*loader)->Verify(pkg, VerifyOptions{true});
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->verdict, VerdictKind::kAudit);
  EXPECT_EQ(v->reason, Reason::kNotAllowlisted);
  EXPECT_EQ(v->ledger, "checked");
  EXPECT_TRUE(ledger.rows.empty()) << "an audit-relaxed decision must never be recorded";
}

TEST_F(LedgerAllowlistAttackTest, RefusesAllowlistWithBadSignature) {
  const std::string pkg = Signed();
  Allow({pkg}, 3, "2027-12-31T00:00:00Z", /*sign=*/true);
  // One more line after signing: the signature no longer covers the file.
  std::ofstream(dir_.Sub("allowlist.yaml"), std::ios::app) << "  - { name: evil, version: 1.0.0, sha256: "
                                                             << std::string(64, 'b') << " }\n";
  TrustOpts t;
  t.allowlist_signer = true;
  ExpectRefused(pkg, Reason::kAllowlistInvalid, nullptr, t);
}

TEST_F(LedgerAllowlistAttackTest, RefusesAllowlistSignedByAnotherKey) {
  const std::string pkg = Signed();
  const std::string path = Allow({pkg});
  WriteFile(path + ".sig", MakeBundle(std::string(kAllowlistPayloadType), ReadFile(path), {Default()}));
  TrustOpts t;
  t.allowlist_signer = true;
  ExpectRefused(pkg, Reason::kAllowlistInvalid, nullptr, t);
}

TEST_F(LedgerAllowlistAttackTest, RefusesUnsignedAllowlistWhenSignerRequired) {
  const std::string pkg = Signed();
  Allow({pkg});
  TrustOpts t;
  t.allowlist_signer = true;
  ExpectRefused(pkg, Reason::kAllowlistInvalid, nullptr, t);
}

TEST_F(LedgerAllowlistAttackTest, AcceptsCorrectlySignedAllowlist) {
  const std::string pkg = Signed();
  Allow({pkg}, 3, "2027-12-31T00:00:00Z", /*sign=*/true);
  TrustOpts t;
  t.allowlist_signer = true;
  auto loader = MakeLoader(nullptr, t);
  ASSERT_TRUE(loader.ok()) << loader.error().ToString();
  auto v = (*loader)->Verify(pkg);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->verdict, VerdictKind::kVerified) << v->detail;
}

TEST_F(LedgerAllowlistAttackTest, RefusesAllowlistVersionLowerThanSeen) {
  const std::string pkg = Signed();
  Allow({pkg}, 3);
  MemoryLedger ledger;
  ledger.allowlist_version = 5;
  ExpectRefused(pkg, Reason::kAllowlistInvalid, &ledger);
}

TEST_F(LedgerAllowlistAttackTest, RefusesOverwrittenVersion) {
  const std::string pkg = Signed();
  Allow({pkg});
  MemoryLedger ledger;
  ASSERT_TRUE(ledger.Record(LedgerKind::kRelease, "acme-orders", "1.4.2", std::string(64, 'c')).ok());
  ExpectRefused(pkg, Reason::kVersionOverwritten, &ledger);
}

TEST_F(LedgerAllowlistAttackTest, RefusesRollbackBelowHighestDeployed) {
  MemoryLedger ledger;
  const std::string newer = Signed(Opts("acme-orders", "1.5.0"));
  Deploy(newer, ledger);
  const std::string older = Signed();
  Allow({older});
  ExpectRefused(older, Reason::kVersionRollback, &ledger);
}

TEST_F(LedgerAllowlistAttackTest, ReleaseRowOfNewerVersionDoesNotBlockOlderDeploy) {
  MemoryLedger ledger;
  ASSERT_TRUE(ledger.Record(LedgerKind::kRelease, "acme-orders", "1.5.0", std::string(64, 'd')).ok());
  const std::string pkg = Signed();
  Allow({pkg});
  auto loader = MakeLoader(&ledger);
  ASSERT_TRUE(loader.ok());
  auto v = (*loader)->Verify(pkg, VerifyOptions{true});
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->verdict, VerdictKind::kVerified) << v->detail;
  EXPECT_EQ(v->ledger, "recorded");
}

TEST_F(LedgerAllowlistAttackTest, RollbackAllowedByPolicy) {
  MemoryLedger ledger;
  Deploy(Signed(Opts("acme-orders", "1.5.0")), ledger);
  const std::string older = Signed();
  Allow({older});
  TrustOpts t;
  t.rollback = "allow";
  auto loader = MakeLoader(&ledger, t);
  ASSERT_TRUE(loader.ok());
  auto v = (*loader)->Verify(older);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->verdict, VerdictKind::kVerified) << v->detail;
}

TEST_F(LedgerAllowlistAttackTest, RefusesLedgerWithEditedRow) {
  MemoryLedger ledger;
  const std::string pkg = Signed();
  Deploy(pkg, ledger);
  ledger.rows[0].version = "1.4.3";  // edited in the store, hash left alone
  ExpectRefused(pkg, Reason::kLedgerTampered, &ledger);
}

TEST_F(LedgerAllowlistAttackTest, RefusesLedgerWithTailCutOff) {
  MemoryLedger ledger;
  ASSERT_TRUE(ledger.Record(LedgerKind::kRelease, "acme-misc", "1.0.0", std::string(64, 'e')).ok());
  const std::string pkg = Signed();
  Deploy(pkg, ledger);  // the audit log now holds the checkpoint count=2
  ledger.rows.pop_back();
  ExpectRefused(pkg, Reason::kLedgerTampered, &ledger);
}

TEST_F(LedgerAllowlistAttackTest, RefusesLedgerFullyRehashed) {
  MemoryLedger ledger;
  const std::string pkg = Signed();
  Deploy(pkg, ledger);
  ledger.rows[0].sha256 = std::string(64, 'f');
  ledger.Rehash();  // internally consistent again, but not the checkpointed head
  ExpectRefused(pkg, Reason::kLedgerTampered, &ledger);
}

TEST_F(LedgerAllowlistAttackTest, RecordWritesDeployRowAndCheckpointLine) {
  MemoryLedger ledger;
  const std::string pkg = Signed();
  Deploy(pkg, ledger);
  ASSERT_EQ(ledger.rows.size(), 1u);
  EXPECT_EQ(ledger.rows[0].kind, LedgerKind::kDeploy);
  const std::string log = ReadFile(dir_.Sub("audit.jsonl"));
  EXPECT_NE(log.find("\"event\":\"ledger_checkpoint\""), std::string::npos) << log;
  EXPECT_NE(log.find(ledger.rows[0].hash), std::string::npos);
  EXPECT_NE(log.find("\"verdict\":\"verified\""), std::string::npos);
  EXPECT_EQ(ledger.allowlist_version, 3);
  // Recording the same row again is a no-op, still verified.
  Deploy(pkg, ledger);
  EXPECT_EQ(ledger.rows.size(), 1u);
}

}  // namespace
}  // namespace clawguard::testing
