// deployment_audit_test.cpp — `clawguard audit`: each finding over a real deployment written to a
// temp dir (deployment_fixture.h), at a fixed time; and the CLI's JSON and exit codes.
#include "host/app/deployment_audit.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "clawguard/clock.h"
#include "deployment_fixture.h"
#include "sqlite/sqlite_ledger.h"
#include "support/temp_dir.h"

namespace clawguard::host {
namespace {

using testing::Deployment;
using testing::DeploymentSpec;

// A fixed "now" for the library tests (2026-11-30); the CLI tests use the real time instead.
constexpr int64_t kNow = 1'796'000'000;

DeploymentSpec Spec(int64_t now = kNow) {
  DeploymentSpec s;
  s.now = now;
  return s;
}

struct Audited {
  AuditReport report;
  // Find returns the findings with |id|.
  std::vector<AuditFinding> Find(const std::string& id) const {
    std::vector<AuditFinding> out;
    for (const auto& f : report.findings) {
      if (f.id == id) out.push_back(f);
    }
    return out;
  }
  std::optional<Severity> SeverityOf(const std::string& id) const {
    auto f = Find(id);
    if (f.empty()) return std::nullopt;
    return f[0].severity;
  }
};

Audited Audit(const Deployment& d, int64_t now = kNow) {
  auto config = d.Load();
  if (!config) return {};
  auto ledger = SqliteLedger::Open(d.store_path());
  EXPECT_TRUE(ledger.ok()) << ledger.error().ToString();
  const FixedClock clock(now * 1000);
  return Audited{RunDeploymentAudit(*config, LedgerSource(ledger->get()), clock)};
}

TEST(DeploymentAuditTest, CleanDeploymentHasNoHighFinding) {
  Deployment d(Spec());
  auto a = Audit(d);
  EXPECT_FALSE(a.report.HasHigh()) << a.report.ToText();
  EXPECT_EQ(a.report.Count(Severity::kMedium), 0u) << a.report.ToText();
  EXPECT_EQ(a.SeverityOf("trust.root"), Severity::kInfo);
  EXPECT_EQ(a.SeverityOf("allowlist.summary"), Severity::kInfo);
  ASSERT_EQ(a.Find("allowlist.entry").size(), 1u);
  EXPECT_EQ(a.Find("allowlist.entry")[0].subject, "acme-orders 1.4.2");
  EXPECT_EQ(a.SeverityOf("ledger.ok"), Severity::kInfo);
  EXPECT_NE(a.Find("ledger.ok")[0].detail.find("holds checkpoint 1:"), std::string::npos);
  EXPECT_EQ(a.SeverityOf("idempotency.retention"), Severity::kInfo);
  EXPECT_NE(a.Find("idempotency.retention")[0].detail.find("1023m"), std::string::npos);
  EXPECT_FALSE(a.SeverityOf("allowlist.unsigned"));
  EXPECT_FALSE(a.SeverityOf("trust.mode_audit"));
  EXPECT_FALSE(a.SeverityOf("plugin.not_allowlisted"));
}

TEST(DeploymentAuditTest, AuditModeIsHigh) {
  auto s = Spec();
  s.mode = "audit";
  Deployment d(s);
  auto a = Audit(d);
  EXPECT_EQ(a.SeverityOf("trust.mode_audit"), Severity::kHigh);
  EXPECT_TRUE(a.report.HasHigh());
}

TEST(DeploymentAuditTest, UnsignedAllowlistIsHigh) {
  auto s = Spec();
  s.signed_allowlist = false;
  Deployment d(s);
  auto a = Audit(d);
  EXPECT_EQ(a.SeverityOf("allowlist.unsigned"), Severity::kHigh);
  EXPECT_EQ(a.SeverityOf("allowlist.summary"), Severity::kInfo);  // it still loads and is listed
}

TEST(DeploymentAuditTest, LeafNearExpiryIsMediumAndExpiredLeafIsHigh) {
  auto s = Spec();
  s.leaf_valid_days = 20;
  Deployment near(s);
  auto a = Audit(near);
  EXPECT_EQ(a.SeverityOf("plugin.leaf_expiring"), Severity::kMedium) << a.report.ToText();
  EXPECT_NE(a.Find("plugin.leaf_expiring")[0].detail.find("O=acme"), std::string::npos);
  EXPECT_FALSE(a.report.HasHigh());

  s.leaf_valid_days = -1;
  Deployment expired(s);
  auto b = Audit(expired);
  EXPECT_EQ(b.SeverityOf("plugin.leaf_expired"), Severity::kHigh) << b.report.ToText();
}

TEST(DeploymentAuditTest, RootAndAllowlistExpiryAreGraded) {
  auto s = Spec();
  s.root_valid_days = 7;
  s.allowlist_expires_days = 3;
  Deployment d(s);
  auto a = Audit(d);
  EXPECT_EQ(a.SeverityOf("trust.root"), Severity::kMedium) << a.report.ToText();
  EXPECT_EQ(a.SeverityOf("allowlist.summary"), Severity::kMedium);

  s.allowlist_expires_days = -2;
  Deployment e(s);
  EXPECT_EQ(Audit(e).SeverityOf("allowlist.summary"), Severity::kHigh);
}

TEST(DeploymentAuditTest, PluginsOnDiskAreComparedWithTheAllowlist) {
  auto s = Spec();
  s.package_allowlisted = false;
  s.extra_allowlist_entry = true;
  Deployment d(s);
  auto a = Audit(d);
  EXPECT_EQ(a.SeverityOf("plugin.not_allowlisted"), Severity::kMedium) << a.report.ToText();
  EXPECT_EQ(a.Find("plugin.not_allowlisted")[0].subject,
            "acme-orders 1.4.2 (acme-orders-1.4.2.claw)");
  ASSERT_EQ(a.Find("allowlist.not_on_disk").size(), 1u);
  EXPECT_EQ(a.Find("allowlist.not_on_disk")[0].subject, "acme-billing 2.0.0");
  EXPECT_EQ(a.Find("allowlist.not_on_disk")[0].severity, Severity::kLow);
}

TEST(DeploymentAuditTest, PackageWithoutBundleIsUnsigned) {
  Deployment d(Spec());
  clawguard::testing::WriteFile(d.Sub("plugins/stray-0.1.0.claw"), "no signature beside me");
  auto a = Audit(d);
  ASSERT_EQ(a.Find("plugin.unsigned").size(), 1u) << a.report.ToText();
  EXPECT_EQ(a.Find("plugin.unsigned")[0].severity, Severity::kMedium);
}

TEST(DeploymentAuditTest, LedgerThatNoLongerHoldsTheCheckpointIsHigh) {
  auto s = Spec();
  s.tamper_checkpoint = true;
  Deployment d(s);
  auto a = Audit(d);
  EXPECT_EQ(a.SeverityOf("ledger.tampered"), Severity::kHigh) << a.report.ToText();
  EXPECT_FALSE(a.SeverityOf("ledger.ok"));
}

TEST(DeploymentAuditTest, AuditLogRotatedAwayWithTheAnchorFileInPlaceIsStillAnchored) {
  auto s = Spec();
  s.write_checkpoint = false;
  Deployment d(s);
  auto a = Audit(d);
  EXPECT_FALSE(a.SeverityOf("ledger.not_anchored")) << a.report.ToText();
  EXPECT_FALSE(a.report.HasHigh()) << a.report.ToText();
  EXPECT_NE(a.Find("ledger.ok")[0].detail.find("holds checkpoint 1:"), std::string::npos);
}

// The audit log rotated away and no anchor file: a non-empty ledger nothing can vouch for is high
// (the host would trust its head on first use).
TEST(DeploymentAuditTest, NoAnchorFileAndNoCheckpointIsHigh) {
  auto s = Spec();
  s.write_checkpoint = false;
  s.write_anchor = false;
  Deployment d(s);
  auto a = Audit(d);
  EXPECT_EQ(a.SeverityOf("ledger.not_anchored"), Severity::kHigh) << a.report.ToText();
  EXPECT_EQ(a.Find("ledger.not_anchored")[0].subject, d.anchor_path());
  EXPECT_NE(a.Find("ledger.not_anchored")[0].detail.find("--write-anchor"), std::string::npos);
  EXPECT_EQ(a.SeverityOf("ledger.ok"), Severity::kInfo);
}

TEST(DeploymentAuditTest, AnchorFileMissingWhileTheLogHoldsTheCheckpointIsMedium) {
  auto s = Spec();
  s.write_anchor = false;
  Deployment d(s);
  auto a = Audit(d);
  EXPECT_EQ(a.SeverityOf("ledger.anchor_missing"), Severity::kMedium) << a.report.ToText();
  EXPECT_FALSE(a.report.HasHigh()) << a.report.ToText();
}

TEST(DeploymentAuditTest, AnchorTrustedOnFirstUseIsHighUntilConfirmed) {
  auto s = Spec();
  s.anchor_trusted_on_first_use = true;
  Deployment d(s);
  auto a = Audit(d);
  EXPECT_EQ(a.SeverityOf("ledger.anchor_adopted"), Severity::kHigh) << a.report.ToText();
  EXPECT_NE(a.Find("ledger.anchor_adopted")[0].detail.find("on first use"), std::string::npos);
  EXPECT_EQ(a.SeverityOf("ledger.ok"), Severity::kInfo);
}

TEST(DeploymentAuditTest, RehashedLedgerIsCaughtByTheAnchorFileAlone) {
  auto s = Spec();
  s.write_checkpoint = false;
  s.rehash_ledger = true;
  Deployment d(s);
  auto a = Audit(d);
  EXPECT_EQ(a.SeverityOf("ledger.tampered"), Severity::kHigh) << a.report.ToText();
  EXPECT_EQ(a.Find("ledger.tampered")[0].subject, d.anchor_path());
  EXPECT_FALSE(a.SeverityOf("ledger.ok"));
}

TEST(DeploymentAuditTest, AnchorThatIsAFifoIsHighAndDoesNotHang) {
  auto s = Spec();
  s.anchor_fifo = true;
  Deployment d(s);
  auto a = Audit(d);
  EXPECT_EQ(a.SeverityOf("ledger.anchor_unreadable"), Severity::kHigh) << a.report.ToText();
  EXPECT_NE(a.Find("ledger.anchor_unreadable")[0].detail.find("is a FIFO"), std::string::npos);
}

TEST(DeploymentAuditTest, ConfiguredAnchorPathIsTheOneChecked) {
  auto s = Spec();
  s.anchor_in_state_dir = true;
  s.write_checkpoint = false;
  Deployment d(s);
  auto config = d.Load();
  ASSERT_TRUE(config);
  EXPECT_EQ(config->log.anchor, d.Sub("state/ledger-anchor.json"));
  auto a = Audit(d);
  EXPECT_FALSE(a.report.HasHigh()) << a.report.ToText();
  std::filesystem::remove(d.anchor_path());
  EXPECT_EQ(Audit(d).SeverityOf("ledger.not_anchored"), Severity::kHigh);
}

TEST(DeploymentAuditTest, AuditLogThatIsAFifoIsHighAndDoesNotHang) {
  Deployment d(Spec());
  std::filesystem::remove(d.Sub("logs/audit.jsonl"));
  ASSERT_EQ(::mkfifo(d.Sub("logs/audit.jsonl").c_str(), 0600), 0);
  auto a = Audit(d);
  EXPECT_EQ(a.SeverityOf("log.audit_unreadable"), Severity::kHigh) << a.report.ToText();
  EXPECT_FALSE(a.SeverityOf("ledger.tampered"))
      << a.report.ToText();  // the anchor file still holds
}

TEST(DeploymentAuditTest, AllowlistBelowTheLedgerFloorIsHigh) {
  auto s = Spec();
  s.allowlist_floor = 5;
  Deployment d(s);
  auto a = Audit(d);
  EXPECT_EQ(a.SeverityOf("allowlist.below_floor"), Severity::kHigh) << a.report.ToText();
  EXPECT_NE(a.Find("allowlist.below_floor")[0].detail.find("version 2 is lower than version 5"),
            std::string::npos);
}

TEST(DeploymentAuditTest, UnavailableLedgerIsHigh) {
  Deployment d(Spec());
  auto config = d.Load();
  ASSERT_TRUE(config);
  const FixedClock clock(kNow * 1000);
  auto r = RunDeploymentAudit(
      *config, LedgerSource(Status(Reason::kStoreUnavailable, "no such store")), clock);
  bool found = false;
  for (const auto& f : r.findings)
    found |= f.id == "ledger.unavailable" && f.severity == Severity::kHigh;
  EXPECT_TRUE(found) << r.ToText();
}

TEST(DeploymentAuditTest, SecretRotationFindings) {
  auto s = Spec();
  s.secret_since_days = 120;
  s.previous_until_days = -3;
  Deployment d(s);
  auto a = Audit(d);
  EXPECT_EQ(a.SeverityOf("webhook.secret_old"), Severity::kMedium) << a.report.ToText();
  EXPECT_NE(a.Find("webhook.secret_old")[0].detail.find("120 days ago"), std::string::npos);
  EXPECT_EQ(a.SeverityOf("webhook.previous_expired"), Severity::kMedium);
  EXPECT_EQ(a.Find("webhook.previous_expired")[0].subject, "acme-orders/order.created");
  // Never a secret in the report.
  const std::string text = a.report.ToJson().dump();
  EXPECT_EQ(text.find("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), std::string::npos);
  EXPECT_EQ(text.find("adm-0123456789abcdef"), std::string::npos);
}

TEST(DeploymentAuditTest, AdminOffLoopbackWithoutTlsIsHigh) {
  auto s = Spec();
  s.admin_address = "0.0.0.0:9091";
  s.listen_address = "[::]:8080";
  Deployment d(s);
  auto a = Audit(d);
  EXPECT_EQ(a.SeverityOf("admin.plaintext_nonloopback"), Severity::kHigh) << a.report.ToText();
  EXPECT_EQ(a.SeverityOf("listen.plaintext_nonloopback"), Severity::kLow);

  s.admin_address = "[::1]:9091";
  s.listen_address = "127.0.0.2:8080";
  Deployment loop(s);
  auto b = Audit(loop);
  EXPECT_FALSE(b.SeverityOf("admin.plaintext_nonloopback"));
  EXPECT_FALSE(b.SeverityOf("listen.plaintext_nonloopback"));
}

TEST(DeploymentAuditTest, UnloadableTrustPolicyIsHigh) {
  Deployment d(Spec());
  clawguard::testing::WriteFile(d.Sub("policies/trust.yaml"),
                                "schema: clawguard/trust/v1\nmode: sometimes\n");
  auto a = Audit(d);
  EXPECT_EQ(a.SeverityOf("trust.unloadable"), Severity::kHigh) << a.report.ToText();
  EXPECT_FALSE(a.SeverityOf("allowlist.summary"));
}

// The CLI, on the same kind of deployment at the real time: JSON shape and exit codes.
TEST(AuditCliTest, JsonAndExitCodes) {
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  Deployment clean(Spec(now));
  auto r =
      testing::RunClawguard({"audit", "--config", clean.host_yaml(), "--json"}, clean.env_pairs());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["config"], clean.host_yaml());
  EXPECT_EQ(j["summary"]["high"], 0);
  ASSERT_TRUE(j["findings"].is_array());
  bool ledger_ok = false;
  for (const auto& f : j["findings"]) {
    ASSERT_TRUE(f.contains("id") && f.contains("severity") && f.contains("subject") &&
                f.contains("detail"))
        << f;
    ledger_ok |= f["id"] == "ledger.ok";
  }
  EXPECT_TRUE(ledger_ok) << r.out;

  auto s = Spec(now);
  s.mode = "audit";
  Deployment relaxed(s);
  r = testing::RunClawguard({"audit", "--config", relaxed.host_yaml()}, relaxed.env_pairs());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("HIGH    trust.mode_audit"), std::string::npos) << r.out;

  // host.yaml itself refused (its secret variables unset): a configuration error, exit 2.
  r = testing::RunClawguard({"audit", "--config", clean.host_yaml(), "--json"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["error"], "config_invalid");
}

}  // namespace
}  // namespace clawguard::host
