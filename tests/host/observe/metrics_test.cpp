// metrics_test.cpp — the metrics registry (exact exposition text, refusals, concurrency) and
// HostMetrics (values after a scripted sequence, bounded cardinality, strict parse).
#include "host/observe/metrics.h"

#include <gtest/gtest.h>

#include <thread>

#include "host/observe/host_metrics.h"
#include "support/prom_text.h"
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard::host {
namespace {

using testing::ParsePromText;
using testing::PromText;

PromText MustParse(const std::string& text) {
  std::string error;
  auto parsed = ParsePromText(text, &error);
  EXPECT_TRUE(parsed.has_value()) << error << "\n" << text;
  return parsed.value_or(PromText{});
}

std::unique_ptr<MetricsRegistry> SmallRegistry() {
  std::vector<MetricFamilySpec> specs;
  specs.push_back({"t_requests_total",
                   "Requests.\nSecond \\ line.",
                   MetricType::kCounter,
                   {"plugin", "outcome"},
                   {{"a\"b\\c d", "ok"}, {"x", "failed"}},
                   {}});
  specs.push_back({"t_ratio", "A ratio.", MetricType::kGauge, {}, {}, {}});
  specs.push_back(
      {"t_seconds", "Durations.", MetricType::kHistogram, {"route"}, {{"r"}}, {0.5, 2}});
  auto reg = MetricsRegistry::Create(std::move(specs));
  EXPECT_TRUE(reg.ok()) << reg.error().ToString();
  return std::move(reg).value();
}

TEST(MetricsRegistryTest, RendersExactTextForSmallRegistry) {
  auto reg = SmallRegistry();
  reg->FindCounter("t_requests_total", {"a\"b\\c d", "ok"})->Inc(3);
  reg->FindCounter("t_requests_total", {"x", "failed"})->Inc();
  reg->FindGauge("t_ratio", {})->Set(0.25);
  auto h = *reg->FindHistogram("t_seconds", {"r"});
  h.Observe(0.5);  // le is inclusive: the 0.5 bucket
  h.Observe(1.0);
  h.Observe(100.0);
  EXPECT_EQ(reg->RenderPrometheus(),
            "# HELP t_requests_total Requests.\\nSecond \\\\ line.\n"
            "# TYPE t_requests_total counter\n"
            "t_requests_total{plugin=\"a\\\"b\\\\c d\",outcome=\"ok\"} 3\n"
            "t_requests_total{plugin=\"x\",outcome=\"failed\"} 1\n"
            "# HELP t_ratio A ratio.\n"
            "# TYPE t_ratio gauge\n"
            "t_ratio 0.25\n"
            "# HELP t_seconds Durations.\n"
            "# TYPE t_seconds histogram\n"
            "t_seconds_bucket{route=\"r\",le=\"0.5\"} 1\n"
            "t_seconds_bucket{route=\"r\",le=\"2\"} 2\n"
            "t_seconds_bucket{route=\"r\",le=\"+Inf\"} 3\n"
            "t_seconds_sum{route=\"r\"} 101.5\n"
            "t_seconds_count{route=\"r\"} 3\n");
  const PromText parsed = MustParse(reg->RenderPrometheus());
  EXPECT_EQ(parsed.Value("t_requests_total", {{"plugin", "a\"b\\c d"}, {"outcome", "ok"}}), 3);
  EXPECT_EQ(h.Count(), 3u);
}

TEST(MetricsRegistryTest, UndeclaredSeriesIsNeverCreated) {
  auto reg = SmallRegistry();
  EXPECT_FALSE(reg->FindCounter("t_requests_total", {"evil", "ok"}).has_value());
  EXPECT_FALSE(reg->FindCounter("t_requests_total", {"x"}).has_value());          // arity
  EXPECT_FALSE(reg->FindGauge("t_requests_total", {"x", "failed"}).has_value());  // type
  EXPECT_FALSE(reg->FindCounter("nope", {}).has_value());
  EXPECT_EQ(MustParse(reg->RenderPrometheus()).SeriesCount("t_requests_total"), 2u);
}

TEST(MetricsRegistryTest, RefusesBadSpecs) {
  const auto refused = [](MetricFamilySpec spec) {
    auto r = MetricsRegistry::Create({std::move(spec)});
    return !r.ok() && r.error().reason() == Reason::kConfigInvalid;
  };
  EXPECT_TRUE(refused({"1bad", "h", MetricType::kCounter, {}, {}, {}}));
  EXPECT_TRUE(refused({"ok", "h", MetricType::kCounter, {"__x"}, {{"v"}}, {}}));
  EXPECT_TRUE(refused({"ok", "h", MetricType::kCounter, {"a", "a"}, {{"v", "w"}}, {}}));
  EXPECT_TRUE(refused({"ok", "h", MetricType::kCounter, {"a"}, {{"v", "w"}}, {}}));    // arity
  EXPECT_TRUE(refused({"ok", "h", MetricType::kCounter, {"a"}, {{"v"}, {"v"}}, {}}));  // duplicate
  EXPECT_TRUE(refused({"ok", "h", MetricType::kCounter, {"a"}, {{""}}, {}}));          // empty
  EXPECT_TRUE(refused({"ok", "h", MetricType::kCounter, {"a"}, {{"x\ny"}}, {}}));      // control
  EXPECT_TRUE(refused({"ok", "h", MetricType::kCounter, {"a"}, {{std::string(600, 'x')}}, {}}));
  EXPECT_TRUE(refused({"ok", "h", MetricType::kCounter, {"a"}, {}, {}}));  // no series
  EXPECT_TRUE(refused({"ok", "h", MetricType::kHistogram, {}, {}, {}}));   // no buckets
  EXPECT_TRUE(refused({"ok", "h", MetricType::kHistogram, {}, {}, {2, 1}}));
  EXPECT_TRUE(refused({"ok", "h", MetricType::kHistogram, {"le"}, {{"1"}}, {1}}));
  EXPECT_TRUE(refused({"ok", "h", MetricType::kGauge, {}, {}, {1}}));
  auto twice = MetricsRegistry::Create(
      {{"a", "h", MetricType::kGauge, {}, {}, {}}, {"a", "h", MetricType::kGauge, {}, {}, {}}});
  EXPECT_FALSE(twice.ok());
}

TEST(MetricsRegistryTest, ConcurrentUpdatesAreAllCounted) {
  auto reg = SmallRegistry();
  const Counter c = *reg->FindCounter("t_requests_total", {"x", "failed"});
  const Histogram h = *reg->FindHistogram("t_seconds", {"r"});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        c.Inc();
        h.Observe(1.0);
        if (i % 1000 == 0) (void)reg->RenderPrometheus();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.Value(), 80000u);
  EXPECT_EQ(h.Count(), 80000u);
  EXPECT_EQ(h.Sum(), 80000.0);
  MustParse(reg->RenderPrometheus());
}

MetricsNames Names() {
  MetricsNames n;
  n.routes = {{"acme-orders", "order.created"}, {"acme-orders", "order.paid"}, {"beta", "ping"}};
  n.plugins = {"acme-orders", "beta"};
  n.endpoints = {"POST /orders/{id}/fulfil", "GET /stock/{sku}"};
  return n;
}

TEST(HostMetricsTest, ValuesAfterScriptedSequence) {
  auto m = HostMetrics::Create(Names());
  ASSERT_TRUE(m.ok()) << m.error().ToString();
  HostMetrics& metrics = **m;
  // A retry storm: 1 processed delivery, 3 replays, 1 lease conflict, 2 bad signatures, one
  // delivery to an unknown route.
  metrics.RecordWebhook("acme-orders", "order.created", "processed");
  for (int i = 0; i < 3; ++i) {
    metrics.RecordWebhook("acme-orders", "order.created", "replayed");
    metrics.RecordDuplicate("acme-orders", "order.created");
  }
  metrics.RecordWebhook("acme-orders", "order.created", "in_progress");
  metrics.RecordDuplicate("acme-orders", "order.created");
  metrics.RecordWebhook("acme-orders", "order.created", "auth_failed");
  metrics.RecordWebhook("acme-orders", "order.created", "auth_failed");
  metrics.RecordSignatureFailure(Reason::kSignatureInvalid);
  metrics.RecordSignatureFailure(Reason::kTimestampOutOfTolerance);
  metrics.RecordWebhook("evil", "x", "not_found");
  metrics.ObserveProcessingSeconds("acme-orders", "order.created", 0.02);
  metrics.ObserveProcessingSeconds("acme-orders", "order.created", 3.0);
  metrics.SetCacheHitRatio(0.75);
  metrics.SetDeadLetterQueueSize("transient_exhausted", 2);
  metrics.SetDeadLetterQueueSize("auth", 1);
  metrics.RecordPluginLoadRefusal(Reason::kDigestMismatch);
  metrics.RecordPluginLoadRefusal(Reason::kNotAllowlisted);
  metrics.RecordPluginLoadRefusal(Reason::kNotAllowlisted);
  metrics.RecordErpCall("POST /orders/{id}/fulfil", ErpCallOutcomeForStatus(201));
  metrics.RecordErpCall("POST /orders/{id}/fulfil", ErpCallOutcomeForStatus(503));
  metrics.RecordErpCall("POST /orders/{id}/fulfil", ErpCallOutcomeForStatus(429));
  metrics.RecordErpCall("POST /orders/{id}/fulfil", ErpCallOutcome::kTimeout);
  metrics.RecordErpCall("DELETE /everything", ErpCallOutcome::kDenied);
  metrics.SetErpBreakerOpen("POST /orders/{id}/fulfil", true);
  metrics.SetOpenKeyBreakers(2);
  metrics.RecordLeaseTakeover();
  metrics.SetCertificateExpiry("acme-orders", 1'800'000'000);
  metrics.SetLedgerRows(42);

  const PromText p = MustParse(metrics.RenderPrometheus());
  const auto req = [&](const char* plugin, const char* route, const char* outcome) {
    return p.Value("clawguard_webhook_requests_total",
                   {{"plugin", plugin}, {"route", route}, {"outcome", outcome}});
  };
  EXPECT_EQ(req("acme-orders", "order.created", "processed"), 1);
  EXPECT_EQ(req("acme-orders", "order.created", "replayed"), 3);
  EXPECT_EQ(req("acme-orders", "order.created", "in_progress"), 1);
  EXPECT_EQ(req("acme-orders", "order.created", "auth_failed"), 2);
  EXPECT_EQ(req("acme-orders", "order.paid", "processed"), 0);
  EXPECT_EQ(req("_unknown", "_unknown", "not_found"), 1);
  EXPECT_EQ(p.Value("clawguard_webhook_duplicate_requests_total",
                    {{"plugin", "acme-orders"}, {"route", "order.created"}}),
            4);
  EXPECT_EQ(
      p.Value("clawguard_webhook_signature_failures_total", {{"reason", "signature_invalid"}}), 1);
  EXPECT_EQ(p.Value("clawguard_webhook_signature_failures_total",
                    {{"reason", "timestamp_out_of_tolerance"}}),
            1);
  const std::map<std::string, std::string> route = {{"plugin", "acme-orders"},
                                                    {"route", "order.created"}};
  auto bucket = route;
  bucket["le"] = "0.025";
  EXPECT_EQ(p.Value("clawguard_webhook_processing_duration_seconds_bucket", bucket), 1);
  bucket["le"] = "+Inf";
  EXPECT_EQ(p.Value("clawguard_webhook_processing_duration_seconds_bucket", bucket), 2);
  EXPECT_EQ(p.Value("clawguard_webhook_processing_duration_seconds_count", route), 2);
  EXPECT_DOUBLE_EQ(*p.Value("clawguard_webhook_processing_duration_seconds_sum", route), 3.02);
  EXPECT_EQ(p.Value("clawguard_idempotency_cache_hit_ratio"), 0.75);
  EXPECT_EQ(p.Value("clawguard_dead_letter_queue_size", {{"class", "transient_exhausted"}}), 2);
  EXPECT_EQ(p.Value("clawguard_dead_letter_queue_size", {{"class", "auth"}}), 1);
  EXPECT_EQ(p.Value("clawguard_dead_letter_queue_size", {{"class", "breaker"}}), 0);
  EXPECT_EQ(p.Value("clawguard_plugin_load_refusals_total", {{"reason", "not_allowlisted"}}), 2);
  EXPECT_EQ(p.Value("clawguard_plugin_load_refusals_total", {{"reason", "digest_mismatch"}}), 1);
  const auto erp = [&](const char* endpoint, const char* outcome) {
    return p.Value("clawguard_erp_calls_total", {{"endpoint", endpoint}, {"outcome", outcome}});
  };
  EXPECT_EQ(erp("POST /orders/{id}/fulfil", "success"), 1);
  EXPECT_EQ(erp("POST /orders/{id}/fulfil", "server_error"), 1);
  EXPECT_EQ(erp("POST /orders/{id}/fulfil", "rate_limited"), 1);
  EXPECT_EQ(erp("POST /orders/{id}/fulfil", "timeout"), 1);
  EXPECT_EQ(erp("_unknown", "denied"), 1);
  EXPECT_EQ(p.Value("clawguard_circuit_breaker_open",
                    {{"kind", "erp"}, {"endpoint", "POST /orders/{id}/fulfil"}}),
            1);
  EXPECT_EQ(p.Value("clawguard_circuit_breaker_open",
                    {{"kind", "erp"}, {"endpoint", "GET /stock/{sku}"}}),
            0);
  EXPECT_EQ(p.Value("clawguard_circuit_breaker_open", {{"kind", "key"}, {"endpoint", "_keys"}}), 2);
  EXPECT_EQ(p.Value("clawguard_lease_takeovers_total"), 1);
  EXPECT_EQ(p.Value("clawguard_plugin_certificate_expiry_seconds", {{"plugin", "acme-orders"}}),
            1'800'000'000);
  EXPECT_EQ(p.Value("clawguard_ledger_rows"), 42);
  metrics.SetDeliveries(3, 1, 5);
  const PromText d = MustParse(metrics.RenderPrometheus());
  EXPECT_EQ(d.Value("clawguard_deliveries_in_flight"), 3);
  EXPECT_EQ(d.Value("clawguard_deliveries_queued"), 1);
  EXPECT_EQ(d.Value("clawguard_plugin_threads"), 5);
  EXPECT_EQ(metrics.DeliveriesTotal(), 8u);
  EXPECT_EQ(metrics.DuplicatesTotal(), 4u);
  EXPECT_EQ(metrics.registry().CounterTotal("clawguard_ledger_rows"), 0u);  // a gauge
}

TEST(HostMetricsTest, HostileLabelValuesDoNotGrowTheOutput) {
  auto m = HostMetrics::Create(Names());
  ASSERT_TRUE(m.ok());
  const std::string before = (*m)->RenderPrometheus();
  for (int i = 0; i < 2000; ++i) {
    const std::string junk = "p" + std::to_string(i) + "\"}\n# TYPE evil counter\n";
    (*m)->RecordWebhook(junk, junk, junk);
    (*m)->RecordDuplicate(junk, junk);
    (*m)->ObserveProcessingSeconds(junk, junk, 0.1);
    (*m)->RecordErpCall(junk, ErpCallOutcome::kSuccess);
    (*m)->SetErpBreakerOpen(junk, true);
    (*m)->SetCertificateExpiry(junk, 1);
    (*m)->SetDeadLetterQueueSize(junk, 1);
  }
  const std::string after = (*m)->RenderPrometheus();
  EXPECT_EQ(std::count(before.begin(), before.end(), '\n'),
            std::count(after.begin(), after.end(), '\n'));
  EXPECT_EQ(after.find("evil"), std::string::npos);
  const PromText p = MustParse(after);
  EXPECT_EQ(p.Value("clawguard_webhook_requests_total",
                    {{"plugin", "_unknown"}, {"route", "_unknown"}, {"outcome", "_unknown"}}),
            2000);
  EXPECT_EQ(
      p.Value("clawguard_erp_calls_total", {{"endpoint", "_unknown"}, {"outcome", "success"}}),
      2000);
}

TEST(HostMetricsTest, EveryArchitectureMetricIsDeclaredAndParses) {
  auto m = HostMetrics::Create(Names());
  ASSERT_TRUE(m.ok());
  const PromText p = MustParse((*m)->RenderPrometheus());
  for (const char* name :
       {"webhook_requests_total", "webhook_duplicate_requests_total",
        "webhook_processing_duration_seconds", "idempotency_cache_hit_ratio",
        "dead_letter_queue_size", "plugin_load_refusals_total", "erp_calls_total",
        "circuit_breaker_open", "lease_takeovers_total", "webhook_signature_failures_total",
        "plugin_certificate_expiry_seconds", "ledger_rows", "deliveries_in_flight",
        "deliveries_queued", "plugin_threads"}) {
    EXPECT_EQ(p.families.count(std::string("clawguard_") + name), 1u) << name;
  }
  EXPECT_EQ(p.families.at("clawguard_webhook_processing_duration_seconds").type, "histogram");
  // Every webhook outcome of the pipeline has a series per route.
  EXPECT_EQ(p.Value("clawguard_webhook_requests_total",
                    {{"plugin", "beta"}, {"route", "ping"}, {"outcome", "fenced"}}),
            0);
}

TEST(HostMetricsTest, RefusesDuplicateOrReservedNames) {
  MetricsNames n = Names();
  n.routes.push_back({"beta", "ping"});
  EXPECT_THAT(HostMetrics::Create(n), HasReason(Reason::kConfigInvalid));
  n = Names();
  n.endpoints.push_back("_unknown");
  EXPECT_THAT(HostMetrics::Create(n), HasReason(Reason::kConfigInvalid));
  n = Names();
  n.plugins.push_back("bad\nname");
  EXPECT_THAT(HostMetrics::Create(n), HasReason(Reason::kConfigInvalid));
  EXPECT_TRUE(HostMetrics::Create(MetricsNames{}).ok());
}

TEST(HostMetricsTest, ServesGetOnly) {
  auto m = HostMetrics::Create(Names());
  ASSERT_TRUE(m.ok());
  HttpRequest get{"GET", "/metrics", {}, ""};
  const HttpResponse ok = (*m)->ServeMetrics(get);
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.headers.Get("Content-Type"), kPrometheusContentType);
  EXPECT_EQ(ok.body, (*m)->RenderPrometheus());
  HttpRequest post{"POST", "/metrics", {}, ""};
  EXPECT_EQ((*m)->ServeMetrics(post).status, 405);
}

}  // namespace
}  // namespace clawguard::host
