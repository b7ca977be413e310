// host_config_test.cpp — host.yaml: every key read, strictness, secrets from env, start-up
// refusals.
#include "host/app/host_config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <thread>

#include "clawguard/clock.h"
#include "clawguard/encoding.h"
#include "clawguard/limits.h"
#include "clawguard/secret_bytes.h"
#include "support/reason_matchers.h"
#include "support/temp_dir.h"

using ::clawguard::testing::HasReason;

namespace clawguard::host {
namespace {

constexpr char kOrderSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr char kOldSecret[] = "whsec_c2VjcmV0LW9mLWxhc3QtcXVhcnRlci0yMDI2";
constexpr char kConfigAdminToken[] = "adm-0123456789abcdef0123456789abcdef";
constexpr char kErpToken[] = "erp-token-value-never-printed";

std::string DataPath() { return std::string(CLAWGUARD_SOURCE_DIR) + "/tests/host/data/host.yaml"; }
std::string DataText() { return clawguard::testing::ReadFile(DataPath()); }

std::map<std::string, std::string> DefaultEnv() {
  return {{"CG_TEST_ADMIN_TOKEN", kConfigAdminToken},
          {"CG_TEST_ORDER_SECRET", kOrderSecret},
          {"CG_TEST_ORDER_SECRET_OLD", kOldSecret},
          {"CG_TEST_ERP_TOKEN", kErpToken}};
}

EnvLookup LookupIn(const std::map<std::string, std::string>& env) {
  return [env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

// Replace swaps the first occurrence of |from| (which must exist) in |text|.
std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

Result<std::shared_ptr<const HostConfig>> ParseText(
    const std::string& text, const std::map<std::string, std::string>& env = DefaultEnv()) {
  return HostConfig::Parse(text, DataPath(), LookupIn(env));
}

TEST(HostConfigTest, LoadsEveryKeyOfTheExample) {
  for (const auto& [k, v] : DefaultEnv()) ::setenv(k.c_str(), v.c_str(), 1);
  auto c = HostConfig::Load(DataPath());
  for (const auto& [k, v] : DefaultEnv()) ::unsetenv(k.c_str());
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  const HostConfig& h = **c;
  const std::string dir = std::string(CLAWGUARD_SOURCE_DIR) + "/tests/host/data/";
  EXPECT_EQ(h.listen.address, "127.0.0.1:0");
  EXPECT_FALSE(h.listen.tls.has_value());
  EXPECT_EQ(h.listen.max_body, 1024u * 1024u);
  EXPECT_EQ(h.listen.max_headers, 16u * 1024u);
  EXPECT_EQ(h.listen.workers, 4);
  EXPECT_EQ(h.admin.address, "127.0.0.1:0");
  EXPECT_TRUE(h.admin.token.Equals(SecretBytes(kConfigAdminToken)));
  EXPECT_EQ(h.store, "sqlite:" + dir + "state/state.db");
  EXPECT_EQ(h.plugins.dir, dir + "plugins");
  EXPECT_EQ(h.plugins.trust, dir + "policies/trust.yaml");
  EXPECT_EQ(h.plugins.allowlist, dir + "policies/allowlist.yaml");
  EXPECT_EQ(h.plugins.handler_timeout, Millis(10'000));
  EXPECT_EQ(h.webhooks.tolerance, Millis(300'000));
  EXPECT_EQ(h.webhooks.clock_skew, Millis(300'000));
  ASSERT_EQ(h.webhooks.retry_schedule.size(), 10u);
  EXPECT_EQ(h.RetrySpan(), Millis(1023LL * 60'000));
  ASSERT_EQ(h.webhooks.routes.size(), 2u);
  const RouteSecrets& r = h.webhooks.routes.at("acme-orders/order.created");
  EXPECT_TRUE(r.current.Equals(SecretBytes(*Base64Decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))));
  ASSERT_TRUE(r.previous.has_value());
  EXPECT_TRUE(r.previous->Equals(SecretBytes("secret-of-last-quarter-2026")));
  EXPECT_EQ(r.current_since, ParseRfc3339Utc("2026-11-02T00:00:00Z"));
  EXPECT_EQ(r.previous_until, ParseRfc3339Utc("2026-12-09T00:00:00Z"));
  EXPECT_FALSE(h.webhooks.routes.at("acme-orders/order.cancelled").previous.has_value());
  EXPECT_EQ(h.webhooks.rate_limit.count, 200u);
  EXPECT_EQ(h.webhooks.rate_limit.per, Millis(1000));
  EXPECT_EQ(h.webhooks.rate_limit.burst, 400u);
  EXPECT_EQ(h.idempotency.retention, Millis(7LL * 86'400'000));
  EXPECT_EQ(h.idempotency.lease, Millis(30'000));
  EXPECT_EQ(h.idempotency.tombstones, Millis(30LL * 86'400'000));
  EXPECT_EQ(h.idempotency.intent_expiry, Millis(24LL * 3'600'000));
  EXPECT_EQ(h.erp.base_url, "https://erp.internal:8443");
  EXPECT_EQ(h.erp.timeout, Millis(5000));
  EXPECT_EQ(h.erp.ca, dir + "certs/erp-ca.pem");
  EXPECT_TRUE(h.erp.auth.Equals(SecretBytes(kErpToken)));
  EXPECT_EQ(h.erp.retry.base, Millis(1000));
  EXPECT_EQ(h.erp.retry.max, Millis(600'000));
  EXPECT_EQ(h.erp.retry.attempts, 8);
  EXPECT_EQ(h.erp.retry.jitter_percent, 20);
  EXPECT_EQ(h.erp.retry.floor_429, Millis(60'000));
  EXPECT_EQ(h.breaker_key.failures, 3);
  EXPECT_EQ(h.breaker_key.window, Millis(5000));
  EXPECT_EQ(h.breaker_key.cooldown, Millis(30'000));
  EXPECT_EQ(h.breaker_erp.failures, 10);
  EXPECT_EQ(h.breaker_erp.half_open_probes, 1);
  EXPECT_EQ(h.log.audit, dir + "logs/audit.jsonl");
  EXPECT_EQ(h.log.redact, (std::vector<std::string>{"password", "token", "card"}));
}

TEST(HostConfigTest, RefusesRetentionShorterThanRetrySpanWithBothNumbers) {
  auto c = ParseText(Replace(DataText(), "retention: 7d", "retention: 10h"));
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c, HasReason(Reason::kConfigInvalid));
  EXPECT_NE(c.error().message().find("host.yaml:26:"), std::string::npos) << c.error().message();
  EXPECT_NE(c.error().message().find(
                "idempotency.retention 10h (36000 s) is shorter than the platform retry span "
                "1023m (61380 s) + 2 × clock_skew 5m (600 s) = 61980 s"),
            std::string::npos)
      << c.error().message();
}

TEST(HostConfigTest, AcceptsRetentionEqualToTheSpanPlusSkew) {
  auto c = ParseText(Replace(DataText(), "retention: 7d", "retention: 1033m"));  // 61980 s exactly
  EXPECT_TRUE(c.ok()) << c.error().ToString();
  auto shorter = ParseText(Replace(DataText(), "retention: 7d", "retention: 61979s"));
  ASSERT_FALSE(shorter.ok());
  EXPECT_THAT(shorter, HasReason(Reason::kConfigInvalid));
}

TEST(HostConfigTest, RefusesDuplicateKey) {
  auto c = ParseText(
      Replace(DataText(), "  tolerance: 300s\n", "  tolerance: 300s\n  tolerance: 30s\n"));
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c, HasReason(Reason::kConfigInvalid));
  EXPECT_NE(c.error().message().find("host.yaml:"), std::string::npos) << c.error().message();
}

TEST(HostConfigTest, RefusesUnknownKey) {
  auto c = ParseText(Replace(DataText(), "workers: 4 }", "workers: 4, colour: red }"));
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c, HasReason(Reason::kConfigInvalid));
  EXPECT_NE(c.error().message().find("unknown key 'colour'"), std::string::npos)
      << c.error().message();
}

TEST(HostConfigTest, HandlerThreadsDefaultAndAreBounded) {
  auto plain = ParseText(DataText());
  ASSERT_TRUE(plain.ok()) << plain.error().ToString();
  EXPECT_EQ((*plain)->listen.handlers, static_cast<int>(limits::kDefaultHandlerThreads));
  auto set = ParseText(Replace(DataText(), "workers: 4 }", "workers: 4, handlers: 16 }"));
  ASSERT_TRUE(set.ok()) << set.error().ToString();
  EXPECT_EQ((*set)->listen.handlers, 16);
  auto zero = ParseText(Replace(DataText(), "workers: 4 }", "workers: 4, handlers: 0 }"));
  ASSERT_FALSE(zero.ok());
  EXPECT_THAT(zero, HasReason(Reason::kConfigInvalid));
  EXPECT_NE(zero.error().message().find("handlers"), std::string::npos) << zero.error().message();
}

TEST(HostConfigTest, ExecutionIsThreadsByDefaultAndFibersOnlyWithTheSqliteStore) {
  auto plain = ParseText(DataText());
  ASSERT_TRUE(plain.ok()) << plain.error().ToString();
  EXPECT_FALSE((*plain)->listen.fibers);
  auto fibers = ParseText(
      Replace(DataText(), "workers: 4 }", "workers: 4, execution: fibers, carriers: 3 }"));
  ASSERT_TRUE(fibers.ok()) << fibers.error().ToString();
  EXPECT_TRUE((*fibers)->listen.fibers);
  EXPECT_EQ((*fibers)->listen.carriers, 3);
  auto cpus = ParseText(Replace(DataText(), "workers: 4 }", "workers: 4, execution: fibers }"));
  ASSERT_TRUE(cpus.ok()) << cpus.error().ToString();
  EXPECT_EQ((*cpus)->listen.carriers, DefaultCarriers(std::thread::hardware_concurrency()));
  // Half the CPUs, at least one.
  EXPECT_EQ(DefaultCarriers(0), 1);
  EXPECT_EQ(DefaultCarriers(1), 1);
  EXPECT_EQ(DefaultCarriers(2), 1);
  EXPECT_EQ(DefaultCarriers(3), 1);
  EXPECT_EQ(DefaultCarriers(4), 2);
  EXPECT_EQ(DefaultCarriers(16), 8);
  auto threads = ParseText(Replace(DataText(), "workers: 4 }", "workers: 4, execution: threads }"));
  ASSERT_TRUE(threads.ok()) << threads.error().ToString();
  EXPECT_FALSE((*threads)->listen.fibers);

  const auto refused = [](const Result<std::shared_ptr<const HostConfig>>& c,
                          const std::string& what) {
    ASSERT_FALSE(c.ok()) << what;
    EXPECT_THAT(c, HasReason(Reason::kConfigInvalid));
    EXPECT_NE(c.error().message().find(what), std::string::npos) << c.error().message();
  };
  refused(ParseText(Replace(DataText(), "workers: 4 }", "workers: 4, execution: green }")),
          "expected threads or fibers, found 'green'");
  refused(ParseText(Replace(DataText(), "workers: 4 }", "workers: 4, carriers: 2 }")),
          "carriers applies only to execution: fibers");
  refused(ParseText(
              Replace(DataText(), "workers: 4 }", "workers: 4, execution: fibers, carriers: 0 }")),
          "carriers");
  const std::string pg = Replace(DataText(), "store: sqlite:state/state.db",
                                 "store: postgresql://cg@127.0.0.1:5432/cg");
  refused(ParseText(Replace(pg, "workers: 4 }", "workers: 4, execution: fibers }")),
          "listen.execution fibers needs the SQLite store");
}

TEST(HostConfigTest, RefusesMissingEnvVarNamingItNeverAValue) {
  auto env = DefaultEnv();
  env.erase("CG_TEST_ERP_TOKEN");
  auto c = ParseText(DataText(), env);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c, HasReason(Reason::kConfigInvalid));
  EXPECT_NE(c.error().message().find("CG_TEST_ERP_TOKEN"), std::string::npos)
      << c.error().message();
  EXPECT_EQ(c.error().message().find(kConfigAdminToken), std::string::npos);
}

TEST(HostConfigTest, RefusesShortAdminTokenWithoutPrintingIt) {
  auto env = DefaultEnv();
  env["CG_TEST_ADMIN_TOKEN"] = "short-admin-token-31-characters";
  auto c = ParseText(DataText(), env);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c, HasReason(Reason::kConfigInvalid));
  EXPECT_NE(c.error().message().find("31 characters"), std::string::npos) << c.error().message();
  EXPECT_EQ(c.error().message().find("short-admin-token"), std::string::npos);
}

TEST(HostConfigTest, RefusesLiteralSecret) {
  auto c =
      ParseText(Replace(DataText(), "auth: env:CG_TEST_ERP_TOKEN", "auth: plain-token-in-file"));
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c, HasReason(Reason::kConfigInvalid));
  EXPECT_NE(c.error().message().find("env:VAR"), std::string::npos);
}

TEST(HostConfigTest, RefusesWebhookSecretThatIsNotBase64NamingTheVariable) {
  auto env = DefaultEnv();
  env["CG_TEST_ORDER_SECRET"] = "whsec_not*base64!";
  auto c = ParseText(DataText(), env);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c, HasReason(Reason::kConfigInvalid));
  EXPECT_NE(c.error().message().find("CG_TEST_ORDER_SECRET"), std::string::npos)
      << c.error().message();
  EXPECT_EQ(c.error().message().find("not*base64"), std::string::npos);
}

TEST(HostConfigTest, RefusesStoreUrlWithPasswordWithoutEchoingIt) {
  auto c = ParseText(Replace(DataText(), "store: sqlite:state/state.db",
                             "store: postgresql://cg:hunter2@db:5432/cg"));
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c, HasReason(Reason::kConfigInvalid));
  EXPECT_EQ(c.error().message().find("hunter2"), std::string::npos) << c.error().message();
  auto ok = ParseText(
      Replace(DataText(), "store: sqlite:state/state.db", "store: postgresql://cg@db:5432/cg"));
  ASSERT_TRUE(ok.ok()) << ok.error().ToString();
  EXPECT_EQ((*ok)->store, "postgresql://cg@db:5432/cg");
}

TEST(HostConfigTest, RefusesHandlerTimeoutNotShorterThanLease) {
  auto c = ParseText(Replace(DataText(), "handler_timeout: 10s", "handler_timeout: 30s"));
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c, HasReason(Reason::kConfigInvalid));
  EXPECT_NE(c.error().message().find("shorter than idempotency.lease 30s"), std::string::npos)
      << c.error().message();
}

TEST(HostConfigTest, PluginIsolationIsSandboxUnlessSaidOtherwise) {
  auto def = ParseText(DataText());
  ASSERT_TRUE(def.ok()) << def.error().ToString();
  EXPECT_TRUE((*def)->plugins.sandbox);
  EXPECT_EQ((*def)->plugins.memory_limit, PluginsConfig::kDefaultPluginMemoryLimit);
  const std::string t = "handler_timeout: 10s";
  auto none = ParseText(Replace(DataText(), t, t + "\n  isolation: none\n  memory_limit: 512MiB"));
  ASSERT_TRUE(none.ok()) << none.error().ToString();
  EXPECT_FALSE((*none)->plugins.sandbox);
  EXPECT_EQ((*none)->plugins.memory_limit, 512ull << 20);
  EXPECT_EQ((*def)->plugins.max_threads, PluginsConfig::kDefaultPluginThreads);
  auto threads = ParseText(Replace(DataText(), t, t + "\n  max_threads: 4"));
  ASSERT_TRUE(threads.ok()) << threads.error().ToString();
  EXPECT_EQ((*threads)->plugins.max_threads, 4);
  auto negative = ParseText(Replace(DataText(), t, t + "\n  max_threads: -1"));
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.error().message().find("max_threads"), std::string::npos)
      << negative.error().message();
  auto typo = ParseText(Replace(DataText(), t, t + "\n  isolation: sandboxed"));
  ASSERT_FALSE(typo.ok());
  EXPECT_THAT(typo, HasReason(Reason::kConfigInvalid));
  EXPECT_NE(typo.error().message().find("isolation"), std::string::npos) << typo.error().message();
  EXPECT_EQ((*def)->plugins.memory_cgroup, PluginsConfig::MemoryCgroup::kAuto);
  auto required = ParseText(Replace(DataText(), t, t + "\n  memory_cgroup: required"));
  ASSERT_TRUE(required.ok()) << required.error().ToString();
  EXPECT_EQ((*required)->plugins.memory_cgroup, PluginsConfig::MemoryCgroup::kRequired);
  auto cg_none = ParseText(Replace(DataText(), t, t + "\n  memory_cgroup: none"));
  ASSERT_TRUE(cg_none.ok()) << cg_none.error().ToString();
  EXPECT_EQ((*cg_none)->plugins.memory_cgroup, PluginsConfig::MemoryCgroup::kNone);
  auto cg_typo = ParseText(Replace(DataText(), t, t + "\n  memory_cgroup: yes"));
  ASSERT_FALSE(cg_typo.ok());
  EXPECT_NE(cg_typo.error().message().find("memory_cgroup"), std::string::npos)
      << cg_typo.error().message();
  auto tiny = ParseText(Replace(DataText(), t, t + "\n  memory_limit: 1MiB"));
  ASSERT_FALSE(tiny.ok());
  EXPECT_NE(tiny.error().message().find("at least 64MiB"), std::string::npos)
      << tiny.error().message();
}

TEST(HostConfigTest, RefusesPreviousSecretWithoutPreviousUntil) {
  auto c = ParseText(Replace(DataText(), "      previous_until: 2026-12-09T00:00:00Z\n", ""));
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c, HasReason(Reason::kConfigInvalid));
  EXPECT_NE(c.error().message().find("previous_until"), std::string::npos);
}

TEST(HostConfigTest, RefusesBadRateSchemaAndRouteName) {
  auto rate = ParseText(Replace(DataText(), "200/s", "200/fortnight"));
  ASSERT_FALSE(rate.ok());
  EXPECT_THAT(rate, HasReason(Reason::kConfigInvalid));
  auto schema = ParseText(Replace(DataText(), "clawguard/host/v1", "clawguard/host/v2"));
  ASSERT_FALSE(schema.ok());
  EXPECT_THAT(schema, HasReason(Reason::kConfigInvalid));
  auto route =
      ParseText(Replace(DataText(), "acme-orders/order.cancelled:", "Acme/order.cancelled:"));
  ASSERT_FALSE(route.ok());
  EXPECT_THAT(route, HasReason(Reason::kConfigInvalid));
  auto jitter = ParseText(Replace(DataText(), "jitter: 20%", "jitter: 120%"));
  ASSERT_FALSE(jitter.ok());
  EXPECT_THAT(jitter, HasReason(Reason::kConfigInvalid));
  auto address =
      ParseText(Replace(DataText(), "address: 127.0.0.1:0, tls", "address: 127.0.0.1:99999, tls"));
  ASSERT_FALSE(address.ok());
  EXPECT_THAT(address, HasReason(Reason::kConfigInvalid));
  auto body = ParseText(Replace(DataText(), "max_body: 1MiB", "max_body: yes"));
  ASSERT_FALSE(body.ok());
  EXPECT_THAT(body, HasReason(Reason::kConfigInvalid));
}

TEST(HostConfigTest, LoadOfMissingFileIsFileUnreadable) {
  auto c =
      HostConfig::Load(std::string(CLAWGUARD_SOURCE_DIR) + "/tests/host/data/no-such-host.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c, HasReason(Reason::kFileUnreadable));
}

}  // namespace
}  // namespace clawguard::host
