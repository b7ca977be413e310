// transport_audit_test.cpp — `clawguard audit`'s findings on how the host talks and runs plugins:
// an http:// ERP off the machine (high; the host loads it only with erp.allow_plaintext) and
// listen.execution: fibers, whose carriers share plugins' thread-locals (medium). The config is
// tests/host/data/host.yaml with one setting changed; the other findings are not looked at here.
#include <gtest/gtest.h>

#include <map>

#include "clawguard/clock.h"
#include "host/app/deployment_audit.h"
#include "support/temp_dir.h"

namespace clawguard::host {
namespace {

std::string TransportDataPath() {
  return std::string(CLAWGUARD_SOURCE_DIR) + "/tests/host/data/host.yaml";
}

std::shared_ptr<const HostConfig> Load(const std::string& from, const std::string& to) {
  std::string text = clawguard::testing::ReadFile(TransportDataPath());
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  const std::map<std::string, std::string> env = {
      {"CG_TEST_ADMIN_TOKEN", "adm-0123456789abcdef0123456789abcdef"},
      {"CG_TEST_ORDER_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
      {"CG_TEST_ORDER_SECRET_OLD", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
      {"CG_TEST_ERP_TOKEN", "Bearer erp-token-0123456789abcdefgh"}};
  auto c = HostConfig::Parse(
      text, TransportDataPath(), [env](const std::string& name) -> std::optional<std::string> {
        auto it = env.find(name);
        return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
      });
  EXPECT_TRUE(c.ok()) << c.error().ToString();
  return c.ok() ? *c : nullptr;
}

std::vector<AuditFinding> Findings(const HostConfig& c, const std::string& id) {
  const FixedClock clock(1'796'000'000'000);
  const AuditReport report =
      RunDeploymentAudit(c, LedgerSource(Status(Reason::kStoreUnavailable, "not opened")), clock);
  std::vector<AuditFinding> out;
  for (const auto& f : report.findings) {
    if (f.id == id) out.push_back(f);
  }
  return out;
}

TEST(DeploymentTransportAuditTest, PlaintextErpOffTheMachineIsHigh) {
  const std::string https = "base_url: https://erp.internal:8443";
  auto plain = Load(https, "base_url: http://erp.internal:8080\n  allow_plaintext: true");
  ASSERT_NE(plain, nullptr);
  const auto f = Findings(*plain, "erp.plaintext_nonloopback");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kHigh);
  EXPECT_EQ(f[0].subject, "erp erp.internal");
  EXPECT_NE(f[0].detail.find("in clear"), std::string::npos) << f[0].detail;
  EXPECT_EQ(f[0].detail.find("erp-token"), std::string::npos);
  for (const std::string url :
       {"https://erp.internal:8443", "http://127.0.0.1:9000", "http://[::1]:9000"}) {
    auto ok = Load(https, "base_url: " + url);
    ASSERT_NE(ok, nullptr) << url;
    EXPECT_TRUE(Findings(*ok, "erp.plaintext_nonloopback").empty()) << url;
  }
}

TEST(DeploymentTransportAuditTest, FibersSayThatThreadLocalsAreShared) {
  const std::string workers = "workers: 4 }";
  auto fibers = Load(workers, "workers: 4, execution: fibers, carriers: 2 }");
  ASSERT_NE(fibers, nullptr);
  const auto f = Findings(*fibers, "listen.fibers_thread_locals");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kMedium);
  EXPECT_NE(f[0].detail.find("thread-local state is shared"), std::string::npos) << f[0].detail;
  EXPECT_NE(f[0].detail.find("2 carrier"), std::string::npos) << f[0].detail;
  auto threads = Load(workers, "workers: 4, execution: threads }");
  ASSERT_NE(threads, nullptr);
  EXPECT_TRUE(Findings(*threads, "listen.fibers_thread_locals").empty());
}

TEST(DeploymentTransportAuditTest, PluginsInTheHostsProcessAreHigh) {
  const std::string timeout = "handler_timeout: 10s";
  auto none = Load(timeout, timeout + "\n  isolation: none");
  ASSERT_NE(none, nullptr);
  const auto f = Findings(*none, "plugins.isolation_none");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kHigh);
  EXPECT_NE(f[0].detail.find("read the host's memory"), std::string::npos) << f[0].detail;
  auto sandbox = Load(timeout, timeout + "\n  isolation: sandbox");
  ASSERT_NE(sandbox, nullptr);
  EXPECT_TRUE(Findings(*sandbox, "plugins.isolation_none").empty());
}

TEST(DeploymentTransportAuditTest, WorkersWithoutAMemoryCgroupAreMedium) {
  const std::string timeout = "handler_timeout: 10s";
  auto none = Load(timeout, timeout + "\n  memory_cgroup: none");
  ASSERT_NE(none, nullptr);
  const auto f = Findings(*none, "plugins.memory_cgroup_none");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kMedium);
  EXPECT_NE(f[0].detail.find("page tables"), std::string::npos) << f[0].detail;
  for (const std::string mode : {"auto", "required"}) {
    auto with = Load(timeout, timeout + "\n  memory_cgroup: " + mode);
    ASSERT_NE(with, nullptr) << mode;
    EXPECT_TRUE(Findings(*with, "plugins.memory_cgroup_none").empty()) << mode;
  }
  // In the host's process there are no workers to bound.
  auto in_process = Load(timeout, timeout + "\n  isolation: none\n  memory_cgroup: none");
  ASSERT_NE(in_process, nullptr);
  EXPECT_TRUE(Findings(*in_process, "plugins.memory_cgroup_none").empty());
}

}  // namespace
}  // namespace clawguard::host
