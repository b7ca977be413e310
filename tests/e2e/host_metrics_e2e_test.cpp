// host_metrics_e2e_test.cpp — the running host's /metrics and /ops after a scripted sequence:
// the signed example plugin (acme-orders) in a real HostApp on SQLite, one refused package beside
// it, N first deliveries, M duplicates and one forged signature; the exact counter values are read
// from GET /metrics (parsed strictly) and both pages refuse a request without the admin token.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "clawguard/encoding.h"
#include "host/app/host_app.h"
#include "host/erp/erp_client.h"
#include "sqlite/sqlite_dlq.h"
#include "sqlite/sqlite_idempotency_store.h"
#include "sqlite/sqlite_ledger.h"
#include "sqlite/sqlite_outbox.h"
#include "support/host_fixture.h"
#include "support/prom_text.h"
#include "support/raw_client.h"

namespace clawguard::host {
namespace {

using clawguard::testing::ReadFile;
using clawguard::testing::WriteFile;
using testing::HostFixture;
using testing::ParsePromText;
using testing::PromText;

constexpr const char* kMetricsAdminToken = "metrics-e2e-admin-token-0123456789abcd";

std::optional<std::string> MetricsEnv(const std::string& name) {
  if (name == "E2E_ADMIN") return kMetricsAdminToken;
  if (name == "E2E_SECRET") return "whsec_" + Base64Encode(HostFixture::kHookKey);
  if (name == "E2E_ERP") return "Bearer metrics-e2e-erp-token-0123456789";
  return std::nullopt;
}

Result<ErpReply> Get(uint16_t port, const std::string& path, const std::string& bearer) {
  ErpClientOptions o;
  o.base_url = "http://127.0.0.1:" + std::to_string(port);
  o.timeout = std::chrono::milliseconds(5000);
  if (!bearer.empty()) o.auth = SecretBytes("Bearer " + bearer);
  auto c = ErpClient::Create(std::move(o));
  if (!c.ok()) return c.error();
  return (*c)->Send("GET", path, HttpHeaders{}, "");
}

testing::Reply Send(uint16_t port, const std::string& raw) {
  testing::Reply out;
  auto conn = testing::RawConnection::Connect(port);
  if (conn == nullptr || !conn->Send(raw)) return out;
  testing::RawResponse r = conn->ReadResponse();
  out.ok = r.ok;
  out.status = r.status;
  out.body = std::move(r.body);
  out.replayed = r.headers.Get("Idempotent-Replayed").value_or("") == "true";
  return out;
}

TEST(HostMetricsE2eTest, CountersAfterAScriptedSequence) {
  HostFixture fixture;
  ASSERT_NO_FATAL_FAILURE(fixture.Prepare());
  // One refused package beside the signed one: no signature bundle → unsigned.
  WriteFile(fixture.dir().Sub("plugins/bogus-1.0.0.claw"), "not a package");
  const std::string yaml = fixture.dir().Sub("host.yaml");
  auto config = HostConfig::Parse(ReadFile(yaml), yaml, &MetricsEnv);
  ASSERT_TRUE(config.ok()) << config.error().ToString();
  auto created = HostApp::Create(std::move(config).value(), SystemClock::Instance(),
                                 &testing::OpenSqliteStores);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  std::unique_ptr<HostApp> app = std::move(created).value();
  ASSERT_TRUE(app->Start().ok());
  const uint16_t main = app->main_port();

  constexpr int kFirst = 3;       // N first deliveries
  constexpr int kDuplicates = 2;  // M duplicates (the platform retried the first event)
  for (int i = 0; i < kFirst; ++i) {
    const std::string order = "M" + std::to_string(i);
    const auto r =
        Send(main, HostFixture::SignedRequest("msg_" + order, HostFixture::OrderBody(order)));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_FALSE(r.replayed);
  }
  for (int i = 0; i < kDuplicates; ++i) {
    const auto r = Send(main, HostFixture::SignedRequest("msg_M0", HostFixture::OrderBody("M0")));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_TRUE(r.replayed);
  }
  // A forged signature: the signed request with another body under the same headers.
  std::string forged = HostFixture::SignedRequest("msg_forged", HostFixture::OrderBody("F1"));
  forged.replace(forged.find("\"F1\""), 4, "\"F2\"");
  EXPECT_EQ(Send(main, forged).status, 401);

  for (const char* path : {"/metrics", "/ops"}) {
    auto anonymous = Get(app->admin_port(), path, "");
    ASSERT_TRUE(anonymous.ok());
    EXPECT_EQ(anonymous->status, 401) << path;
    auto wrong = Get(app->admin_port(), path, std::string(kMetricsAdminToken) + "x");
    ASSERT_TRUE(wrong.ok());
    EXPECT_EQ(wrong->status, 401) << path;
  }
  auto scraped = Get(app->admin_port(), "/metrics", kMetricsAdminToken);
  ASSERT_TRUE(scraped.ok()) << scraped.error().ToString();
  ASSERT_EQ(scraped->status, 200);
  std::string error;
  std::optional<PromText> prom = ParsePromText(scraped->body, &error);
  ASSERT_TRUE(prom.has_value()) << error;
  const auto value = [&](const std::string& name,
                         const std::map<std::string, std::string>& labels) {
    return prom->Value(name, labels).value_or(-1);
  };
  const std::map<std::string, std::string> route = {{"plugin", "acme-orders"},
                                                    {"route", "order.created"}};
  const auto outcome = [&](const std::string& o) {
    auto l = route;
    l["outcome"] = o;
    return value("clawguard_webhook_requests_total", l);
  };
  EXPECT_EQ(outcome("processed"), kFirst);
  EXPECT_EQ(outcome("replayed"), kDuplicates);
  EXPECT_EQ(outcome("auth_failed"), 1);
  EXPECT_EQ(value("clawguard_webhook_duplicate_requests_total", route), kDuplicates);
  EXPECT_EQ(value("clawguard_webhook_signature_failures_total", {{"reason", "signature_invalid"}}),
            1);
  EXPECT_EQ(value("clawguard_plugin_load_refusals_total", {{"reason", "unsigned"}}), 1);
  EXPECT_EQ(value("clawguard_erp_calls_total",
                  {{"endpoint", "POST /orders/{id}/fulfil"}, {"outcome", "success"}}),
            kFirst);
  EXPECT_EQ(value("clawguard_erp_calls_total",
                  {{"endpoint", "POST /inventory/adjust"}, {"outcome", "success"}}),
            kFirst);  // one order line each
  auto histogram = route;
  histogram["le"] = "+Inf";
  EXPECT_EQ(value("clawguard_webhook_processing_duration_seconds_bucket", histogram),
            kFirst + kDuplicates + 1);
  // The signing leaf's notAfter (the test PKI issues leaves valid for a while from now).
  EXPECT_GT(value("clawguard_plugin_certificate_expiry_seconds", {{"plugin", "acme-orders"}}),
            static_cast<double>(SystemClock::Instance().NowSeconds()));
  for (const char* klass :
       {"breaker", "cooldown", "transient_exhausted", "auth", "manual_review"}) {
    EXPECT_EQ(value("clawguard_dead_letter_queue_size", {{"class", klass}}), 0) << klass;
  }
  EXPECT_EQ(value("clawguard_circuit_breaker_open",
                  {{"kind", "erp"}, {"endpoint", "POST /orders/{id}/fulfil"}}),
            0);
  EXPECT_EQ(scraped->body.find("metrics-e2e-erp-token"), std::string::npos);

  // /ops: both packages, the duplicate count.
  auto ops = Get(app->admin_port(), "/ops", kMetricsAdminToken);
  ASSERT_TRUE(ops.ok());
  EXPECT_EQ(ops->status, 200);
  const OpsSnapshot snapshot = app->SnapshotOps();
  ASSERT_EQ(snapshot.plugins.size(), 2u);
  EXPECT_TRUE(snapshot.plugins[0].loaded);
  EXPECT_EQ(snapshot.plugins[0].name, "acme-orders");
  EXPECT_EQ(snapshot.plugins[0].publisher, "acme");
  EXPECT_EQ(snapshot.plugins[0].digest.size(), 64u);
  EXPECT_FALSE(snapshot.plugins[1].loaded);
  EXPECT_EQ(snapshot.plugins[1].reason, "unsigned");
  EXPECT_EQ(snapshot.deliveries, static_cast<uint64_t>(kFirst + kDuplicates + 1));
  EXPECT_EQ(snapshot.duplicates, static_cast<uint64_t>(kDuplicates));
  ASSERT_EQ(snapshot.leaves.size(), 1u);
  EXPECT_NE(snapshot.leaves[0].subject.find("acme"), std::string::npos);
  EXPECT_NE(ops->body.find("acme-orders"), std::string::npos);
  app->Stop();
}

}  // namespace
}  // namespace clawguard::host
