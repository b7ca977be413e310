// replay_overhead_bench.cpp — the cost of the failure-handling guards on the
// replay path, in one process and one run. Two WebhookPipelines over the same store (the host's
// CachingIdempotencyStore over SQLite, N completed keys): (A) no guards; (B) every guard the host
// wires in — rate limiter, per-key breaker, DLQ, HostMetrics, retention advisor. Both replay the
// same pre-signed deliveries (HMAC check, claim answered from the completed-record cache, replay
// answer), interleaved round by round so drift hits both alike. Prints a markdown table with the
// median ns per replay of each and the overhead B/A − 1.
//
//   replay_overhead_bench --dir TMPDIR [--keys 2000] [--rounds 15] [--mode
//   both|plain|guarded|setup]
// --mode plain / guarded / setup run only one side (or only the set-up), for instruction counts
// under `valgrind --tool=callgrind`, which do not depend on the machine's load:
//   overhead = (Ir(guarded) − Ir(setup)) / (Ir(plain) − Ir(setup)) − 1.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "clawguard/clock.h"
#include "clawguard/secret_bytes.h"
#include "host/guard/breaker.h"
#include "host/guard/rate_limiter.h"
#include "host/guard/retention_advisor.h"
#include "host/intake/record_cache.h"
#include "host/intake/webhook_auth.h"
#include "host/intake/webhook_pipeline.h"
#include "host/observe/host_metrics.h"
#include "sqlite/sqlite_dlq.h"
#include "sqlite/sqlite_idempotency_store.h"

namespace {

using namespace clawguard;
using namespace clawguard::host;

constexpr std::string_view kSecret = "bench-secret-0123456789abcdef";

int Fail(const Status& s) {
  std::cerr << "replay_overhead_bench: " << s.ToString() << "\n";
  return 2;
}

std::vector<PipelineRoute> Routes(const Clock& clock) {
  auto v = WebhookVerifier::Create(SecretBytes{std::string(kSecret)}, std::nullopt, std::nullopt,
                                   std::chrono::hours(24), clock);
  std::vector<PipelineRoute> routes;
  routes.push_back(PipelineRoute{"acme-orders", "order.created", 2, std::string("/order_id"),
                                 std::move(v).value()});
  return routes;
}

PluginOutcome Answer(const DispatchContext&) {
  return PluginOutcome::Answered(200, "application/json", R"({"status":"fulfilled"})");
}

// RunRound replays every request once through |p| and returns ns per request.
double RunRound(const WebhookPipeline& p, const std::vector<HttpRequest>& requests) {
  const auto t0 = std::chrono::steady_clock::now();
  int bad = 0;
  for (const HttpRequest& r : requests) {
    if (p.Handle(r).status != 200) ++bad;
  }
  const auto t1 = std::chrono::steady_clock::now();
  if (bad != 0) {
    std::cerr << "replay_overhead_bench: " << bad << " replays did not answer 200\n";
    std::exit(1);
  }
  return static_cast<double>(
             std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()) /
         static_cast<double>(requests.size());
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  long keys = 2000, rounds = 15;
  std::string mode = "both";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--dir")
      dir = value;
    else if (flag == "--keys")
      keys = std::strtol(value.c_str(), nullptr, 10);
    else if (flag == "--rounds")
      rounds = std::strtol(value.c_str(), nullptr, 10);
    else if (flag == "--mode")
      mode = value;
    else
      return Fail(Status(Reason::kUsage, "unknown flag " + flag));
  }
  if (dir.empty() || keys <= 0 || rounds <= 0) {
    return Fail(
        Status(Reason::kUsage, "usage: replay_overhead_bench --dir DIR [--keys N] [--rounds R]"));
  }
  const Clock& clock = SystemClock::Instance();
  const std::string db = dir + "/bench.db";
  auto engine = sqlite::SqliteIdempotencyStore::Open(db, clock);
  if (!engine.ok()) return Fail(engine.error());
  auto store = CachingIdempotencyStore::Create(std::move(engine).value());
  if (!store.ok()) return Fail(store.error());
  auto dlq = sqlite::SqliteDlq::Open(db, clock);
  if (!dlq.ok()) return Fail(dlq.error());
  auto limiter = RateLimiter::Create(
      RateLimit{1'000'000'000, std::chrono::milliseconds(1000), 1'000'000'000}, clock);
  if (!limiter.ok()) return Fail(limiter.error());
  auto breaker = KeyBreaker::Create(
      BreakerSpec{3, std::chrono::seconds(5), std::chrono::seconds(30), 0}, clock);
  if (!breaker.ok()) return Fail(breaker.error());
  MetricsNames names;
  names.routes = {{"acme-orders", "order.created"}};
  names.plugins = {"acme-orders"};
  names.endpoints = {"POST /orders/{id}/fulfil", "POST /inventory/adjust"};
  auto metrics = HostMetrics::Create(names);
  if (!metrics.ok()) return Fail(metrics.error());
  RetentionAdvisor advisor;

  const PipelineOptions options{1 << 20, 16 << 10, std::chrono::seconds(30)};
  auto plain = WebhookPipeline::Create(options, Routes(clock), **store, &Answer);
  if (!plain.ok()) return Fail(plain.error());
  PipelineGuards guards;
  guards.limiter = limiter->get();
  guards.key_breaker = breaker->get();
  guards.dlq = dlq->get();
  guards.metrics = metrics->get();
  guards.advisor = &advisor;
  guards.clock = &clock;
  auto guarded =
      WebhookPipeline::Create(options, Routes(clock), **store, &Answer, std::move(guards));
  if (!guarded.ok()) return Fail(guarded.error());

  // N events, each delivered once (first time: processed) and then replayed in every round.
  const SecretBytes key{std::string(kSecret)};
  const int64_t ts = clock.NowSeconds();
  std::vector<HttpRequest> requests;
  requests.reserve(static_cast<size_t>(keys));
  for (long i = 0; i < keys; ++i) {
    HttpRequest r;
    r.method = "POST";
    r.target = "/webhooks/acme-orders/order.created";
    r.body = R"({"type":"order.created","order_id":"ord_)" + std::to_string(i) +
             R"(","lines":[{"sku":"SKU-1","qty":1}]})";
    const std::string id = "msg_bench_" + std::to_string(i);
    r.headers.Set("Content-Type", "application/json");
    r.headers.Set("webhook-id", id);
    r.headers.Set("webhook-timestamp", std::to_string(ts));
    r.headers.Set("webhook-signature", WebhookSignature(key, id, ts, r.body));
    if ((*plain)->Handle(r).status != 200)
      return Fail(Status(Reason::kInternal, "first delivery failed"));
    requests.push_back(std::move(r));
  }
  if (mode == "setup") return 0;
  if (mode == "plain" || mode == "guarded") {
    const WebhookPipeline& p = mode == "plain" ? **plain : **guarded;
    (void)RunRound(p, requests);  // fills the cache, as the warm-up of "both" does
    for (long round = 0; round < rounds; ++round) (void)RunRound(p, requests);
    return 0;
  }
  if (mode != "both")
    return Fail(Status(Reason::kUsage, "--mode is both, plain, guarded or setup"));
  // Warm-up: fill the cache and the branch predictors of both.
  (void)RunRound(**plain, requests);
  (void)RunRound(**guarded, requests);
  std::vector<double> a, b;
  for (long round = 0; round < rounds; ++round) {
    if (round % 2 == 0) {
      a.push_back(RunRound(**plain, requests));
      b.push_back(RunRound(**guarded, requests));
    } else {
      b.push_back(RunRound(**guarded, requests));
      a.push_back(RunRound(**plain, requests));
    }
  }
  const double ma = Median(a), mb = Median(b);
  std::cout << std::fixed << std::setprecision(0);
  std::cout << "| replay path (" << keys << " completed keys, median of " << rounds
            << " interleaved rounds) | ns/replay | replays/s per core | vs without |\n"
            << "| --- | ---: | ---: | ---: |\n"
            << "| (A) without guards | " << ma << " | " << 1e9 / ma << " | 1.000× |\n"
            << "| (B) rate limit + key breaker + DLQ + metrics + retention advisor | " << mb
            << " | " << 1e9 / mb << " | " << std::setprecision(3) << mb / ma << "× |\n";
  std::cout << std::setprecision(1) << "\noverhead of the guards: " << (mb / ma - 1.0) * 100.0
            << " % (target ≤ 5 %); cache hits " << (*store)->hits() << " of " << (*store)->lookups()
            << " claims; webhook_requests_total " << (*metrics)->DeliveriesTotal() << "\n";
  return 0;
}
