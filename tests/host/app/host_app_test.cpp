// host_app_test.cpp — HostApp assembled from a host.yaml: listeners on port 0, health and
// readiness, the admin bearer gate (/readyz, /metrics, /ops), refused packages reported and
// counted and their routes answering 404, store selection (all four stores required); and
// `clawguard host` exiting 2 on configuration errors.
#include "host/app/host_app.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "host/erp/erp_client.h"
#include "sqlite/sqlite_dlq.h"
#include "sqlite/sqlite_idempotency_store.h"
#include "sqlite/sqlite_ledger.h"
#include "sqlite/sqlite_outbox.h"
#include "support/host_fixture.h"
#include "support/reason_matchers.h"
#include "support/temp_dir.h"

using ::clawguard::testing::HasReason;

namespace clawguard::host {
namespace {

using clawguard::testing::RunClawguard;
using clawguard::testing::RunCommand;
using clawguard::testing::TempDir;
using clawguard::testing::WriteFile;

constexpr const char* kAdminToken = "admin-token-0123456789-abcdefghijklmnop";

Result<HostStores> OpenSqlite(const std::string& url, const Clock& clock) {
  if (url.rfind("sqlite:", 0) != 0)
    return Status(Reason::kStoreUnavailable, "only sqlite: in this test");
  const std::string path = url.substr(7);
  HostStores s;
  CLAWGUARD_ASSIGN_OR_RETURN(s.idempotency, sqlite::SqliteIdempotencyStore::Open(path, clock));
  CLAWGUARD_ASSIGN_OR_RETURN(s.outbox, sqlite::SqliteOutbox::Open(path, clock));
  CLAWGUARD_ASSIGN_OR_RETURN(s.ledger, SqliteLedger::Open(path, clock));
  CLAWGUARD_ASSIGN_OR_RETURN(s.dlq, sqlite::SqliteDlq::Open(path, clock));
  return s;
}

class HostAppTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A pinned self-signed root (no package here is signed by it: the trust policy must load).
    WriteFile(dir_.Sub("plugins/.keep"), "");
    WriteFile(dir_.Sub("state/.keep"), "");
    WriteFile(dir_.Sub("policies/.keep"), "");
    auto made =
        RunCommand({"sh", "-c",
                    "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "
                    "\"$1/k.pem\" "
                    "-out \"$1/root.pem\" -subj /O=ClawHub/CN=root -days 30 "
                    "-addext basicConstraints=critical,CA:true 2>/dev/null && "
                    "openssl x509 -in \"$1/root.pem\" -outform DER | sha256sum | cut -d' ' -f1",
                    "sh", dir_.Sub("policies")});
    ASSERT_EQ(made.exit_code, 0) << made.err;
    const std::string pin = made.out.substr(0, 64);
    WriteFile(
        dir_.Sub("policies/trust.yaml"),
        "schema: clawguard/trust/v1\nmode: enforce\nroots:\n  - file: root.pem\n    sha256: " +
            pin +
            "\nrequire_eku: codeSigning\npublishers:\n  acme: [\"acme-*\"]\nthreshold: 1\n"
            "revoked: { certificates: [], keys: [], crls: [] }\nallowlist_signer: null\nrollback: "
            "refuse\n"
            "limits: { max_package: 16MiB, max_unpacked: 64MiB, max_entries: 8, max_ratio: 100 }\n"
            "elf: { allowed_needed: [libc.so.6] }\n");
    WriteFile(
        dir_.Sub("policies/allowlist.yaml"),
        "schema: clawguard/allowlist/v1\nversion: 1\nexpires: 2099-12-31T00:00:00Z\nplugins: []\n");
    WriteFile(dir_.Sub("plugins/acme-orders-1.0.0.claw"), "not a package");  // no .sig: unsigned
  }

  std::string HostYaml(const std::string& store) const {
    return "schema: clawguard/host/v1\n"
           "listen: { address: 127.0.0.1:0, tls: null, max_body: 1MiB, max_headers: 16KiB, "
           "workers: 2 }\n"
           "admin: { address: 127.0.0.1:0, token: env:T_ADMIN, tls: null }\n"
           "store: " +
           store +
           "\n"
           "plugins: { dir: plugins, trust: policies/trust.yaml, allowlist: "
           "policies/allowlist.yaml, "
           "handler_timeout: 2s, worker: " +
           testing::WorkerPath() +
           " }\n"
           "webhooks:\n  tolerance: 300s\n  clock_skew: 5m\n  platform_retry: { schedule: [1m] }\n"
           "  routes:\n    acme-orders/order.created: { current: env:T_SECRET }\n"
           "  rate_limit: { per_plugin: 200/s, burst: 400 }\n"
           "idempotency: { retention: 1h, lease: 30s, tombstones: 30d, intent_expiry: 24h }\n"
           "erp:\n  base_url: http://127.0.0.1:9\n  timeout: 2s\n  ca: policies/root.pem\n  auth: "
           "env:T_ERP\n"
           "  retry: { base: 1s, max: 1m, attempts: 3, jitter: 20%, floor_429: 60s }\n"
           "breaker:\n  key: { failures: 3, window: 5s, cooldown: 30s }\n"
           "  erp: { failures: 10, window: 30s, cooldown: 60s, half_open_probes: 1 }\n"
           "log: { audit: logs/audit.jsonl, redact: [token] }\n";
  }
  static std::optional<std::string> Env(const std::string& name) {
    if (name == "T_ADMIN") return kAdminToken;
    if (name == "T_SECRET") return "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    if (name == "T_ERP") return "Bearer erp-token-0123456789abcdefghij";
    return std::nullopt;
  }
  std::shared_ptr<const HostConfig> Config(const std::string& store) {
    WriteFile(dir_.Sub("host.yaml"), HostYaml(store));
    auto c = HostConfig::Parse(HostYaml(store), dir_.Sub("host.yaml"), &Env);
    CLAWGUARD_CHECK(c.ok());
    return std::move(c).value();
  }
  static Result<ErpReply> Get(uint16_t port, const std::string& method, const std::string& path,
                              const std::string& bearer = "") {
    ErpClientOptions o;
    o.base_url = "http://127.0.0.1:" + std::to_string(port);
    o.timeout = std::chrono::milliseconds(5000);
    if (!bearer.empty()) o.auth = SecretBytes("Bearer " + bearer);
    auto c = ErpClient::Create(std::move(o));
    CLAWGUARD_CHECK(c.ok());
    return (*c)->Send(method, path, HttpHeaders{}, "");
  }

  TempDir dir_;
};

TEST_F(HostAppTest, ServesHealthReadinessAndReportsRefusedPackages) {
  auto app = HostApp::Create(Config("sqlite:state/state.db"), SystemClock::Instance(), &OpenSqlite);
  ASSERT_TRUE(app.ok()) << app.error().ToString();
  ASSERT_TRUE((*app)->Start().ok());
  const uint16_t main = (*app)->main_port();
  const uint16_t admin = (*app)->admin_port();
  ASSERT_NE(main, 0);
  ASSERT_NE(admin, 0);

  auto health = Get(main, "GET", "/healthz");
  ASSERT_TRUE(health.ok()) << health.error().ToString();
  EXPECT_EQ(health->status, 200);
  auto ready = Get(main, "GET", "/readyz");
  ASSERT_TRUE(ready.ok());
  EXPECT_EQ(ready->status, 200);
  EXPECT_EQ(ready->body, R"({"ready":true})");

  // The refused plugin's route answers 404.
  auto hook = Get(main, "POST", "/webhooks/acme-orders/order.created");
  ASSERT_TRUE(hook.ok());
  EXPECT_EQ(hook->status, 404);

  auto anonymous = Get(admin, "GET", "/readyz");
  ASSERT_TRUE(anonymous.ok());
  EXPECT_EQ(anonymous->status, 401);
  auto detailed = Get(admin, "GET", "/readyz", kAdminToken);
  ASSERT_TRUE(detailed.ok());
  EXPECT_EQ(detailed->status, 200);
  const auto j = nlohmann::json::parse(detailed->body);
  EXPECT_EQ(j["ready"], true);
  EXPECT_EQ(j["mode"], "enforce");
  EXPECT_EQ(j["plugins"].size(), 0u);
  ASSERT_EQ(j["refused"].size(), 1u);
  EXPECT_EQ(j["refused"][0]["reason"], "unsigned");
  EXPECT_EQ(j["refused"][0]["package"], dir_.Sub("plugins/acme-orders-1.0.0.claw"));
  EXPECT_EQ(detailed->body.find(kAdminToken), std::string::npos);

  // /metrics and /ops: behind the token; the refusal is counted and shown.
  for (const char* path : {"/metrics", "/ops"}) {
    auto no_token = Get(admin, "GET", path);
    ASSERT_TRUE(no_token.ok());
    EXPECT_EQ(no_token->status, 401) << path;
  }
  auto metrics = Get(admin, "GET", "/metrics", kAdminToken);
  ASSERT_TRUE(metrics.ok());
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find("clawguard_plugin_load_refusals_total{reason=\"unsigned\"} 1\n"),
            std::string::npos)
      << metrics->body;
  EXPECT_EQ((*app)->metrics().registry().CounterTotal("clawguard_plugin_load_refusals_total"), 1u);
  auto ops = Get(admin, "GET", "/ops", kAdminToken);
  ASSERT_TRUE(ops.ok());
  EXPECT_EQ(ops->status, 200);
  EXPECT_NE(ops->body.find("unsigned"), std::string::npos);
  const OpsSnapshot snapshot = (*app)->SnapshotOps();
  EXPECT_EQ(snapshot.trust_mode, "enforce");
  ASSERT_EQ(snapshot.plugins.size(), 1u);
  EXPECT_FALSE(snapshot.plugins[0].loaded);
  EXPECT_EQ(snapshot.plugins[0].reason, "unsigned");
  EXPECT_EQ(snapshot.plugins[0].name, "acme-orders-1.0.0.claw");

  (*app)->Stop();
  const std::string audit = clawguard::testing::ReadFile(dir_.Sub("logs/audit.jsonl"));
  EXPECT_NE(audit.find("\"plugin_refused\""), std::string::npos);
  EXPECT_EQ(audit.find("erp-token"), std::string::npos);
  EXPECT_EQ(audit.find(kAdminToken), std::string::npos);
}

TEST_F(HostAppTest, UnavailableStoreRefusesToStart) {
  auto app = HostApp::Create(Config("postgresql://cg@127.0.0.1:5432/cg"), SystemClock::Instance(),
                             &OpenSqlite);
  ASSERT_FALSE(app.ok());
  EXPECT_THAT(app, HasReason(Reason::kStoreUnavailable));
}

TEST_F(HostAppTest, StoreWithoutDlqRefusesToStart) {
  const StoreFactory without_dlq = [](const std::string& url,
                                      const Clock& clock) -> Result<HostStores> {
    CLAWGUARD_ASSIGN_OR_RETURN(HostStores s, OpenSqlite(url, clock));
    s.dlq.reset();
    return s;
  };
  auto app = HostApp::Create(Config("sqlite:state/state.db"), SystemClock::Instance(), without_dlq);
  ASSERT_FALSE(app.ok());
  EXPECT_THAT(app, HasReason(Reason::kStoreUnavailable));
  EXPECT_NE(app.error().message().find("DLQ"), std::string::npos) << app.error().message();
}

TEST_F(HostAppTest, CommandExitsTwoOnConfigurationErrors) {
  auto missing = RunClawguard({"host", "--config", dir_.Sub("nope.yaml")});
  EXPECT_EQ(missing.exit_code, 2);
  WriteFile(dir_.Sub("bad.yaml"), "schema: clawguard/host/v1\nlisten: 3\n");
  auto bad = RunClawguard({"host", "--config", dir_.Sub("bad.yaml")});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("bad.yaml"), std::string::npos);
  auto usage = RunClawguard({"host"});
  EXPECT_EQ(usage.exit_code, 2);
}

TEST_F(HostAppTest, CommandPrintsListeningAddressesAndStopsOnSigterm) {
  WriteFile(dir_.Sub("host.yaml"), HostYaml("sqlite:state/state.db"));
  // Start the host in the background, read its first stdout line, then SIGTERM it.
  auto r =
      RunCommand({"sh", "-c",
                  // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one script in three lines
                  "\"$1\" host --config \"$2\" > \"$3\" 2>/dev/null & pid=$!; "
                  "i=0; while [ ! -s \"$3\" ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i+1)); done; "
                  "kill -TERM $pid; wait $pid; echo \"rc=$?\"",
                  "sh", CLAWGUARD_CLI_PATH, dir_.Sub("host.yaml"), dir_.Sub("out.txt")},
                 {{"T_ADMIN", kAdminToken},
                  {"T_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
                  {"T_ERP", "Bearer erp-token-0123456789abcdefghij"}});
  EXPECT_NE(r.out.find("rc=0"), std::string::npos) << r.out << r.err;
  const std::string line = clawguard::testing::ReadFile(dir_.Sub("out.txt"));
  const auto j = nlohmann::json::parse(line.substr(0, line.find('\n')));
  EXPECT_EQ(j["event"], "listening");
  EXPECT_EQ(j["main"].get<std::string>().rfind("127.0.0.1:", 0), 0u);
  EXPECT_NE(j["main"], "127.0.0.1:0");
  EXPECT_EQ(j["admin"].get<std::string>().rfind("127.0.0.1:", 0), 0u);
}

}  // namespace
}  // namespace clawguard::host
