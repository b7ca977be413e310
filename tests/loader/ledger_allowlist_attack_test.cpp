// ledger_allowlist_attack_test.cpp — adversarial suite, part 4: the allowlist and the ledger —
// every floor a chain row (allowlist, rollback), the floors re-checked inside Record, the deploy
// row only after init, and the anchors (anchor file, audit-log checkpoint, trust on first use).
// Over 500 lines on purpose: one attack fixture (a signed chain of releases, a ledger and its
// anchors) for every attack on the floors.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "clawguard/unique_fd.h"
#include "loader/audit_log.h"
#include "loader/ledger_anchor.h"
#include "loader_fixture.h"
#include "support/reason_matchers.h"

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
  std::string Signed(const PackageOpts& o = PackageOpts{}) {
    std::string pkg = MakePackage(o);
    Sign(pkg);
    return pkg;
  }
  struct Listed {
    std::string name, version, pkg;
  };
  // AllowListed writes allowlist.yaml (version 3) listing each package under the name and version
  // it was made with (Allow lists every package under the last one's).
  void AllowListed(const std::vector<Listed>& entries) {
    std::string y =
        "schema: clawguard/allowlist/v1\nversion: 3\nexpires: 2027-12-31T00:00:00Z\nplugins:\n";
    for (const auto& e : entries) {
      y += "  - { name: " + e.name + ", version: " + e.version +
           ", sha256: " + Sha256Hex(ReadFile(e.pkg)) + " }\n";
    }
    WriteFile(dir_.Sub("allowlist.yaml"), y);
  }
  // ExpectRefusedAfterDlopenRaisesNoFloor: |refused_variant| as 1.5.0 is refused after dlopen with
  // |want|; the good 1.4.2 still loads, and the rows say what happened.
  void ExpectRefusedAfterDlopenRaisesNoFloor(MemoryLedger& ledger,
                                             const std::string& refused_variant, Reason want) {
    PackageOpts bad;
    bad.version = "1.5.0";
    bad.plugin = refused_variant;
    const std::string newer = Signed(bad);
    const std::string good = Signed(PackageOpts{});
    AllowListed({{"acme-orders", "1.5.0", newer}, {"acme-orders", "1.4.2", good}});
    auto loader = MakeLoader(&ledger);
    ASSERT_TRUE(loader.ok()) << loader.error().ToString();
    auto refused = (*loader)->Load(newer);
    ASSERT_FALSE(refused.ok());
    EXPECT_THAT(refused, HasReason(want)) << refused.error().ToString();
    EXPECT_EQ(ledger.Kinds(), (std::vector<std::string>{"attempt acme-orders 1.5.0"}));
    auto loaded = (*loader)->Load(good);
    ASSERT_TRUE(loaded.ok()) << loaded.error().ToString()
                             << " (1.5.0 refused after dlopen must not raise the floor)";
    EXPECT_EQ(loaded->verdict().ledger, "recorded");
    EXPECT_EQ(ledger.Kinds(), (std::vector<std::string>{
                                  "attempt acme-orders 1.5.0", "attempt acme-orders 1.4.2",
                                  "allowlist clawguard/allowlist 3", "deploy acme-orders 1.4.2"}));
    EXPECT_TRUE(VerifyLedgerChain(ledger.rows, std::nullopt).ok());
  }
  // Deploy records |pkg| through a loader (real allowlist and deploy rows, anchor and checkpoint
  // line), with an allowlist of |allowlist_version| listing only |pkg|.
  void Deploy(const std::string& pkg, MemoryLedger& ledger, int allowlist_version = 3) {
    Allow({pkg}, allowlist_version);
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
  std::ofstream(dir_.Sub("allowlist.yaml"), std::ios::app)
      << "  - { name: evil, version: 1.0.0, sha256: " << std::string(64, 'b') << " }\n";
  TrustOpts t;
  t.allowlist_signer = true;
  ExpectRefused(pkg, Reason::kAllowlistInvalid, nullptr, t);
}

TEST_F(LedgerAllowlistAttackTest, RefusesAllowlistSignedByAnotherKey) {
  const std::string pkg = Signed();
  const std::string path = Allow({pkg});
  WriteFile(path + ".sig",
            MakeBundle(std::string(kAllowlistPayloadType), ReadFile(path), {Default()}));
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
  ASSERT_TRUE(RecordAllowlist(ledger, 5, std::string(64, 'a')).ok());
  ExpectRefused(pkg, Reason::kAllowlistInvalid, &ledger);
}

TEST_F(LedgerAllowlistAttackTest, RefusesOverwrittenVersion) {
  const std::string pkg = Signed();
  Allow({pkg});
  MemoryLedger ledger;
  ASSERT_TRUE(
      ledger.Record(LedgerKind::kRelease, "acme-orders", "1.4.2", std::string(64, 'c')).ok());
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
  ASSERT_TRUE(
      ledger.Record(LedgerKind::kRelease, "acme-orders", "1.5.0", std::string(64, 'd')).ok());
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

TEST_F(LedgerAllowlistAttackTest, RecordWritesAllowlistAndDeployRowsAnchorAndCheckpointLine) {
  MemoryLedger ledger;
  const std::string pkg = Signed();
  Deploy(pkg, ledger);
  EXPECT_EQ(ledger.Kinds(), (std::vector<std::string>{"allowlist clawguard/allowlist 3",
                                                      "deploy acme-orders 1.4.2"}));
  EXPECT_EQ(ledger.rows[0].sha256, Sha256Hex(ReadFile(dir_.Sub("allowlist.yaml"))));
  EXPECT_EQ(ledger.AllowlistFloor(), 3);
  const std::string log = ReadFile(AuditLogPath());
  EXPECT_NE(log.find("\"event\":\"ledger_checkpoint\""), std::string::npos) << log;
  EXPECT_NE(log.find(ledger.rows[1].hash), std::string::npos);
  EXPECT_NE(log.find("\"verdict\":\"verified\""), std::string::npos);
  EXPECT_EQ(log.find("ledger_anchor_adopted"), std::string::npos)
      << "an empty ledger needs no trust on first use";
  auto anchor = LedgerAnchorFile(AnchorPath()).Read();
  ASSERT_TRUE(anchor.ok() && anchor->has_value())
      << (anchor.ok() ? "no anchor file" : anchor.error().ToString());
  EXPECT_EQ((*anchor)->checkpoint.count, 2);
  EXPECT_EQ((*anchor)->checkpoint.head, ledger.rows[1].hash);
  EXPECT_FALSE((*anchor)->trust_on_first_use);
  // Recording the same rows again is a no-op, still verified.
  Deploy(pkg, ledger);
  EXPECT_EQ(ledger.rows.size(), 2u);
}

// --- Class A: every floor is a chain row, and each is applied again inside Record. ---

TEST_F(LedgerAllowlistAttackTest, DeletingTheAllowlistFloorRowIsTampering) {
  MemoryLedger ledger;
  Deploy(Signed(Opts("acme-other", "1.0.0")), ledger);  // allowlist 3 recorded, then…
  const std::string pkg = Signed();
  Deploy(pkg, ledger, 5);  // … allowlist 5: the floor
  ASSERT_EQ(ledger.AllowlistFloor(), 5);
  // The attacker removes the allowlist 5 row and re-chains, then serves the old allowlist 3.
  std::erase_if(ledger.rows, [](const LedgerRow& r) {
    return r.kind == LedgerKind::kAllowlist && r.version == "5";
  });
  for (size_t i = 0; i < ledger.rows.size(); ++i) ledger.rows[i].seq = static_cast<int64_t>(i + 1);
  ledger.Rehash();
  Allow({pkg}, 3);
  ExpectRefused(pkg, Reason::kLedgerTampered, &ledger);
}

TEST_F(LedgerAllowlistAttackTest, LoweringTheAllowlistFloorRowIsTampering) {
  MemoryLedger ledger;
  const std::string pkg = Signed();
  Deploy(pkg, ledger, 5);
  ledger.rows[0].version = "1";  // lowered in the store, hash left alone
  Allow({pkg}, 3);
  ExpectRefused(pkg, Reason::kLedgerTampered, &ledger);
}

TEST_F(LedgerAllowlistAttackTest, AllowlistRaisedByAnotherHostMeanwhileIsRefusedInsideRecord) {
  MemoryLedger ledger;
  const std::string pkg = Signed();
  Allow({pkg}, 3);
  auto loader = MakeLoader(&ledger);
  ASSERT_TRUE(loader.ok()) << loader.error().ToString();
  ledger.before_record_kind = LedgerKind::kAllowlist;
  ledger.before_record = [](MemoryLedger& l) {
    ASSERT_TRUE(RecordAllowlist(l, 4, std::string(64, 'b')).ok());
  };
  auto v = (*loader)->Verify(pkg, VerifyOptions{/*record=*/true});
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(v->verdict, VerdictKind::kRefused);
  EXPECT_EQ(v->reason, Reason::kAllowlistInvalid) << v->detail;
  EXPECT_EQ(ledger.Kinds(), (std::vector<std::string>{"allowlist clawguard/allowlist 4"}));
}

TEST_F(LedgerAllowlistAttackTest, HigherDeployByAnotherHostMeanwhileIsRefusedInsideRecord) {
  MemoryLedger ledger;
  const std::string pkg = Signed();
  Allow({pkg});
  auto loader = MakeLoader(&ledger);
  ASSERT_TRUE(loader.ok()) << loader.error().ToString();
  // The pre-check saw no deploy; 1.5.0 lands before this host's Record.
  ledger.before_record = [](MemoryLedger& l) {
    ASSERT_TRUE(l.Record(LedgerKind::kDeploy, "acme-orders", "1.5.0", std::string(64, 'c')).ok());
  };
  auto v = (*loader)->Verify(pkg, VerifyOptions{/*record=*/true});
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(v->reason, Reason::kVersionRollback) << v->detail;
  EXPECT_EQ(ledger.Kinds(), (std::vector<std::string>{"allowlist clawguard/allowlist 3",
                                                      "deploy acme-orders 1.5.0"}));
}

// A deploy of a higher version lands between this host's attempt row and its deploy row: the
// plugin (already initialised) is unloaded and the load refused as a rollback.
TEST_F(LedgerAllowlistAttackTest, HigherDeployAfterTheAttemptUnloadsThePlugin) {
  MemoryLedger ledger;
  const std::string pkg = Signed();
  Allow({pkg});
  auto loader = MakeLoader(&ledger);
  ASSERT_TRUE(loader.ok()) << loader.error().ToString();
  ledger.before_record = [](MemoryLedger& l) {
    ASSERT_TRUE(l.Record(LedgerKind::kDeploy, "acme-orders", "1.5.0", std::string(64, 'c')).ok());
  };
  auto loaded = (*loader)->Load(pkg);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded, HasReason(Reason::kVersionRollback)) << loaded.error().ToString();
  EXPECT_EQ(ledger.Kinds(), (std::vector<std::string>{"attempt acme-orders 1.4.2",
                                                      "allowlist clawguard/allowlist 3",
                                                      "deploy acme-orders 1.5.0"}));
  const std::string log = ReadFile(AuditLogPath());
  EXPECT_NE(log.find("\"reason\":\"version_rollback\""), std::string::npos) << log;
}

TEST_F(LedgerAllowlistAttackTest, OverwriteOfAnAttemptRowIsRefusedBeforeAnyPluginCodeRuns) {
  MemoryLedger ledger;
  ASSERT_TRUE(
      ledger.Record(LedgerKind::kAttempt, "acme-orders", "1.4.2", std::string(64, 'c')).ok());
  const std::string pkg = Signed();
  Allow({pkg});
  ExpectRefused(pkg, Reason::kVersionOverwritten, &ledger);  // also: the constructor never ran
  EXPECT_EQ(ledger.rows.size(), 1u);
}

// --- Class A: the deploy row only after init returned 0. ---

TEST_F(LedgerAllowlistAttackTest, InitFailureAfterDlopenDoesNotBlockTheLastGoodVersion) {
  MemoryLedger ledger;
  ExpectRefusedAfterDlopenRaisesNoFloor(ledger, "initfail", Reason::kLoadFailed);
}

TEST_F(LedgerAllowlistAttackTest, EntryPointAbiMismatchAfterDlopenDoesNotBlockTheLastGoodVersion) {
  MemoryLedger ledger;
  ExpectRefusedAfterDlopenRaisesNoFloor(ledger, "abi2", Reason::kAbiMismatch);
}

TEST_F(LedgerAllowlistAttackTest, VerifyRecordStillWritesTheDeployRowWithoutDlopen) {
  MemoryLedger ledger;
  PackageOpts o;
  o.plugin = "initfail";  // never opened by verify
  const std::string pkg = Signed(o);
  Deploy(pkg, ledger);
  EXPECT_EQ(ledger.Kinds(), (std::vector<std::string>{"allowlist clawguard/allowlist 3",
                                                      "deploy acme-orders 1.4.2"}));
  EXPECT_FALSE(MarkerExists());
}

// --- Class B: the anchor is never silently missing. ---

// Rewrite re-hashes the whole ledger with other bytes for row 1 (internally consistent).
void Rewrite(MemoryLedger& ledger) {
  ledger.rows[0].sha256 = std::string(64, 'f');
  ledger.Rehash();
}

TEST_F(LedgerAllowlistAttackTest, AnchorFileCatchesAFullRehashAfterTheAuditLogIsRotatedAway) {
  MemoryLedger ledger;
  const std::string pkg = Signed();
  Deploy(pkg, ledger);
  std::filesystem::rename(AuditLogPath(), AuditLogPath() + ".1");  // rotated…
  std::filesystem::remove(AuditLogPath() + ".1");                  // … and later deleted
  Rewrite(ledger);
  ExpectRefused(pkg, Reason::kLedgerTampered, &ledger);
}

TEST_F(LedgerAllowlistAttackTest, AuditLogCatchesAFullRehashAfterTheAnchorFileIsDeleted) {
  MemoryLedger ledger;
  const std::string pkg = Signed();
  Deploy(pkg, ledger);
  std::filesystem::remove(AnchorPath());
  Rewrite(ledger);
  ExpectRefused(pkg, Reason::kLedgerTampered, &ledger);
  EXPECT_FALSE(std::filesystem::exists(AnchorPath()))
      << "an anchor was written from a chain that failed";
}

TEST_F(LedgerAllowlistAttackTest, MissingAnchorFileIsWrittenAgainFromTheAuditLog) {
  MemoryLedger ledger;
  const std::string pkg = Signed();
  Deploy(pkg, ledger);
  std::filesystem::remove(AnchorPath());
  auto loader = MakeLoader(&ledger);
  ASSERT_TRUE(loader.ok()) << loader.error().ToString();
  auto v = (*loader)->Verify(pkg);
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(v->verdict, VerdictKind::kVerified) << v->detail;
  // Loudly: whoever deleted the anchor may also have written the log line it is rebuilt from.
  ASSERT_EQ(v->warnings.size(), 1u);
  EXPECT_NE(v->warnings[0].find("written again from the audit log"), std::string::npos)
      << v->warnings[0];
  auto anchor = LedgerAnchorFile(AnchorPath()).Read();
  ASSERT_TRUE(anchor.ok() && anchor->has_value());
  EXPECT_EQ((*anchor)->checkpoint.count, 2);
  EXPECT_FALSE((*anchor)->trust_on_first_use);
  EXPECT_NE(ReadFile(AuditLogPath()).find("\"event\":\"ledger_anchor_written\""),
            std::string::npos);
  // From now on the anchor alone catches a rewrite.
  std::filesystem::remove(AuditLogPath());
  Rewrite(ledger);
  ExpectRefused(pkg, Reason::kLedgerTampered, &ledger);
}

// Both anchors gone (a rotated log, a first start against a ledger other hosts wrote): the head
// is trusted on first use — never quietly: a warning in the verdict, an audit line, the anchor
// file marks it, and ledger_anchor() (the host's /readyz) says so.
TEST_F(LedgerAllowlistAttackTest, NoAnchorAtAllIsTrustedOnFirstUseLoudly) {
  MemoryLedger ledger;
  const std::string pkg = Signed();
  Deploy(pkg, ledger);
  std::filesystem::remove(AnchorPath());
  std::filesystem::remove(AuditLogPath());
  auto loader = MakeLoader(&ledger);
  ASSERT_TRUE(loader.ok()) << loader.error().ToString();
  EXPECT_EQ(LedgerAnchorStatusToJson((*loader)->ledger_anchor())["state"], "unanchored");
  auto v = (*loader)->Verify(pkg);
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(v->verdict, VerdictKind::kVerified) << v->detail;
  ASSERT_EQ(v->warnings.size(), 1u);
  EXPECT_NE(v->warnings[0].find("trusted on first use"), std::string::npos) << v->warnings[0];
  const std::string log = ReadFile(AuditLogPath());
  EXPECT_NE(log.find("\"event\":\"ledger_anchor_adopted\""), std::string::npos) << log;
  EXPECT_NE(log.find("\"level\":\"warning\""), std::string::npos) << log;
  auto anchor = LedgerAnchorFile(AnchorPath()).Read();
  ASSERT_TRUE(anchor.ok() && anchor->has_value());
  ASSERT_TRUE((*anchor)->trust_on_first_use);
  EXPECT_EQ((*anchor)->trust_on_first_use->count, 2);
  const nlohmann::json status = LedgerAnchorStatusToJson((*loader)->ledger_anchor());
  EXPECT_EQ(status["state"], "trust_on_first_use") << status.dump();
  EXPECT_EQ(status["path"], AnchorPath());
  // The adopted head is an anchor like any other from now on, and the mark stays on appends.
  Deploy(Signed(Opts("acme-other", "1.0.0")), ledger);
  auto after = LedgerAnchorFile(AnchorPath()).Read();
  ASSERT_TRUE(after.ok() && after->has_value());
  EXPECT_EQ((*after)->checkpoint.count, 3);
  EXPECT_TRUE((*after)->trust_on_first_use);
  AllowListed({{"acme-orders", "1.4.2", pkg}});
  Rewrite(ledger);
  ExpectRefused(pkg, Reason::kLedgerTampered, &ledger);
}

TEST_F(LedgerAllowlistAttackTest, AnchorThatIsAFifoIsAClearErrorNotAHang) {
  MemoryLedger ledger;
  ASSERT_EQ(::mkfifo(AnchorPath().c_str(), 0600), 0);
  auto loader = MakeLoader(&ledger);
  ASSERT_FALSE(loader.ok());
  EXPECT_THAT(loader, HasReason(Reason::kConfigInvalid));
  EXPECT_NE(loader.error().message().find("ledger anchor '" + AnchorPath() +
                                          "' is a FIFO, expected a regular file"),
            std::string::npos)
      << loader.error().message();
}

TEST_F(LedgerAllowlistAttackTest, AuditLogThatIsAFifoIsAClearErrorNotAHang) {
  MemoryLedger ledger;
  ASSERT_EQ(::mkfifo(AuditLogPath().c_str(), 0600), 0);
  auto loader = MakeLoader(&ledger);
  ASSERT_FALSE(loader.ok());
  EXPECT_THAT(loader, HasReason(Reason::kConfigInvalid));
  EXPECT_NE(loader.error().message().find("is a FIFO"), std::string::npos)
      << loader.error().message();
}

TEST_F(LedgerAllowlistAttackTest, EditedAnchorFileIsTampering) {
  MemoryLedger ledger;
  const std::string pkg = Signed();
  Deploy(pkg, ledger);
  std::string text = ReadFile(AnchorPath());
  text.replace(text.find("\"count\":2"), 9, "\"count\":x");
  WriteFile(AnchorPath(), text);
  auto loader = MakeLoader(&ledger);
  ASSERT_FALSE(loader.ok());
  EXPECT_THAT(loader, HasReason(Reason::kLedgerTampered));
  EXPECT_NE(loader.error().message().find("is not a valid anchor"), std::string::npos)
      << loader.error().message();
}

// The race an outside review won: the chain is rewritten (a floor removed, re-chained) after the
// loader checked it against its anchor and before its attempt row. The record verifies the whole
// chain against the anchor inside its own transaction: refused, nothing written, and the anchor
// never moves onto the rewritten chain — the rolled-back version stays refused.
TEST_F(LedgerAllowlistAttackTest, ChainRewrittenBetweenTheCheckAndTheRecordNeverMovesTheAnchor) {
  MemoryLedger ledger;
  PackageOpts old_opts;
  old_opts.version = "1.0.0";
  const std::string old_pkg = Signed(old_opts);
  const std::string pkg = Signed();
  PackageOpts other;
  other.name = "acme-billing";
  const std::string other_pkg = Signed(other);
  AllowListed({{"acme-orders", "1.0.0", old_pkg},
               {"acme-orders", "1.4.2", pkg},
               {"acme-billing", "1.4.2", other_pkg}});
  {
    auto loader = MakeLoader(&ledger);
    ASSERT_TRUE(loader.ok()) << loader.error().ToString();
    auto v = (*loader)->Verify(pkg, VerifyOptions{/*record=*/true});
    ASSERT_TRUE(v.ok() && v->verdict == VerdictKind::kVerified)
        << (v.ok() ? v->detail : v.error().ToString());
  }
  const auto anchored = LedgerAnchorFile(AnchorPath()).Read().value().value().checkpoint;
  auto loader = MakeLoader(&ledger);
  ASSERT_TRUE(loader.ok());
  ledger.before_record_kind = LedgerKind::kAttempt;
  ledger.before_record = [](MemoryLedger& l) {
    // Drop the deploy 1.4.2 floor: rewrite that row into an attempt row and re-chain everything.
    for (auto& r : l.rows) {
      if (r.kind == LedgerKind::kDeploy) r.kind = LedgerKind::kAttempt;
    }
    l.Rehash();
  };
  auto other_load = (*loader)->Load(other_pkg);
  ASSERT_FALSE(other_load.ok());
  EXPECT_THAT(other_load, HasReason(Reason::kLedgerTampered)) << other_load.error().ToString();
  EXPECT_FALSE(MarkerExists()) << "a plugin ran although its record was refused";
  const auto after = LedgerAnchorFile(AnchorPath()).Read().value().value().checkpoint;
  EXPECT_EQ(after.count, anchored.count);
  EXPECT_EQ(after.head, anchored.head);
  ExpectRefused(old_pkg, Reason::kLedgerTampered, &ledger);
}

// Lines of the audit log and the anchor file are hostile input: a member of the wrong type is a
// line skipped or an anchor refused, never an exception that ends the host.
TEST_F(LedgerAllowlistAttackTest, HostileAuditLogLinesAreSkippedNeverACrash) {
  WriteFile(
      AuditLogPath(),
      "{\"event\":1,\"x\":\"ledger_checkpoint\"}\n{\"event\":{\"a\":\"ledger_checkpoint\"}}\n"
      "{\"event\":\"ledger_checkpoint\",\"count\":\"2\",\"head\":7}\n[\"ledger_checkpoint\"]\n");
  auto loader = MakeLoader();
  ASSERT_TRUE(loader.ok()) << loader.error().ToString();
}

TEST_F(LedgerAllowlistAttackTest, AnchorWithAMemberOfTheWrongTypeIsTamperingNeverACrash) {
  for (const char* text :
       {"{\"schema\":1}", "{\"schema\":{\"x\":1},\"count\":1}", "{\"schema\":null}"}) {
    WriteFile(AnchorPath(), text);
    MemoryLedger ledger;
    auto loader = MakeLoader(&ledger);
    ASSERT_FALSE(loader.ok()) << text;
    EXPECT_THAT(loader, HasReason(Reason::kLedgerTampered)) << loader.error().ToString();
  }
}

// A symbolic link at the audit log's path would send the host's decision lines (with names an
// attacker chose) into any file the host can write: refused, the target untouched.
TEST_F(LedgerAllowlistAttackTest, AuditLogThatIsASymlinkIsRefusedAndItsTargetUntouched) {
  const std::string victim = dir_.Sub("victim.txt");
  WriteFile(victim, "precious\n");
  std::filesystem::create_symlink(victim, AuditLogPath());
  auto loader = MakeLoader();
  ASSERT_FALSE(loader.ok());
  EXPECT_THAT(loader, HasReason(Reason::kConfigInvalid));
  EXPECT_NE(loader.error().message().find("symbolic link"), std::string::npos)
      << loader.error().message();
  EXPECT_EQ(ReadFile(victim), "precious\n");
}

// Only the log's tail is read for its last checkpoint: a huge (here sparse) rotated-in log is
// read in bounded time, and the checkpoint at its end is still found.
TEST_F(LedgerAllowlistAttackTest, CheckpointAtTheEndOfAHugeSparseAuditLogIsFoundFromItsTail) {
  {
    UniqueFd fd(::open(AuditLogPath().c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0640));
    ASSERT_TRUE(fd.valid());
    ASSERT_EQ(::ftruncate(fd.get(), 64ll << 30), 0);  // 64 GiB of holes, no disk used
  }
  const std::string head(64, 'a');
  {
    std::ofstream out(AuditLogPath(), std::ios::app);
    out << "\n{\"event\":\"ledger_checkpoint\",\"count\":1,\"head\":\"" << head << "\"}\n";
  }
  AuditLog log(AuditLogPath());
  auto cp = log.LastCheckpoint();
  ASSERT_TRUE(cp.ok()) << cp.error().ToString();
  ASSERT_TRUE(cp->has_value());
  EXPECT_EQ((*cp)->count, 1);
  EXPECT_EQ((*cp)->head, head);
}

// Unsigned files in the plugin folder cost their missing bundle, not a read of their bytes: the
// package is read only after its signatures counted (measured with the process's read count).
TEST_F(LedgerAllowlistAttackTest, UnsignedPackageIsRefusedWithoutReadingIt) {
  const std::string junk = dir_.Sub("junk-1.0.0.claw");
  {
    UniqueFd fd(::open(junk.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0640));
    ASSERT_TRUE(fd.valid());
    ASSERT_EQ(::ftruncate(fd.get(), 8ll << 20), 0);  // 8 MiB, within max_package
  }
  auto loader = MakeLoader();
  ASSERT_TRUE(loader.ok());
  const auto rchar = [] {
    const std::string io = ReadFile("/proc/self/io");
    return std::stoull(io.substr(io.find("rchar:") + 6));
  };
  const unsigned long long before = rchar();
  auto v = (*loader)->Verify(junk);
  const unsigned long long read = rchar() - before;
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->reason, Reason::kUnsigned);
  EXPECT_LT(read, 1ull << 20) << "the unsigned package was read (" << read << " bytes)";
}

}  // namespace
}  // namespace clawguard::testing
