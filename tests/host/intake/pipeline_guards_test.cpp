// pipeline_guards_test.cpp — the webhook pipeline with its guards wired in: per-plugin rate limit,
// per-key breaker and its one DLQ entry, mismatch and manual_review entries, metrics, retention
// observations and Redeliver. Real SQLite idempotency store and SqliteDlq in a temp dir, a fake
// dispatcher, a FixedClock.
// Over 500 lines on purpose: the guards act on one another (a breaker's DLQ entry, the metrics of
// a refusal), so they are tested on one wired pipeline fixture.
#include "host/intake/pipeline_guards.h"
#include "support/fixed_time.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "clawguard/clock.h"
#include "host/erp/idempotency_key.h"
#include "host/guard/breaker.h"
#include "host/guard/rate_limiter.h"
#include "host/guard/retention_advisor.h"
#include "host/intake/webhook_pipeline.h"
#include "host/observe/metrics.h"
#include "sqlite/sqlite_dlq.h"
#include "sqlite/sqlite_idempotency_store.h"
#include "support/temp_dir.h"

namespace clawguard::host {
namespace {

using Millis = std::chrono::milliseconds;

using std::chrono::milliseconds;

using ::clawguard::testing::kT0;
constexpr char kSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr char kGuardsPlugin[] = "acme-orders";
constexpr char kGuardsRoute[] = "order.created";
constexpr char kRequests[] = "clawguard_webhook_requests_total";

std::string GuardsOrderBody(const std::string& id) {
  return R"({"type":"order.created","order":{"id":")" + id + R"("}})";
}

// TombstoneStore is the SQLite store, except that keys in |tombstoned| answer kTombstone (as an
// engine does once a purged record left only its tombstone).
class TombstoneStore final : public IdempotencyStore {
 public:
  explicit TombstoneStore(IdempotencyStore& inner) : inner_(inner) {}
  std::set<std::string> tombstoned;
  Result<ClaimOutcome> Claim(const std::string& key, const std::string& fp, const ClaimMeta& meta,
                             int64_t lease_ms) override {
    if (tombstoned.count(key) == 0) return inner_.Claim(key, fp, meta, lease_ms);
    ClaimOutcome o;
    o.kind = ClaimOutcome::Kind::kTombstone;
    o.record.key = key;
    o.record.fingerprint = fp;
    return o;
  }
  Result<FencedWrite> Renew(const std::string& k, int64_t t, int64_t l) override {
    return inner_.Renew(k, t, l);
  }
  Result<FencedWrite> Complete(const std::string& k, int64_t t, int s, const std::string& ct,
                               const std::string& b) override {
    return inner_.Complete(k, t, s, ct, b);
  }
  Result<FencedWrite> Release(const std::string& k, int64_t t) override {
    return inner_.Release(k, t);
  }
  Result<std::optional<IdempotencyRecord>> Get(const std::string& k) override {
    return inner_.Get(k);
  }
  Result<bool> Reset(const std::string& k) override { return inner_.Reset(k); }
  Result<int64_t> Generation() override { return inner_.Generation(); }
  Result<int64_t> BumpGeneration() override { return inner_.BumpGeneration(); }

 private:
  IdempotencyStore& inner_;
};

// DownDlq refuses every write (a DLQ database that cannot be reached).
class DownDlq final : public Dlq {
 public:
  static Status Down() { return Status(Reason::kStoreUnavailable, "dlq: database is locked"); }
  Result<DlqAdded> Add(const DlqNewEntry&) override { return Down(); }
  Result<std::optional<DlqEntry>> Get(int64_t) override { return Down(); }
  Result<std::vector<DlqEntry>> List(const DlqFilter&) override { return Down(); }
  Result<std::vector<DlqCount>> CountUnresolved() override { return Down(); }
  Status RequestReplay(int64_t, const std::string&) override { return Down(); }
  Status Drop(int64_t, const std::string&, const std::string&) override { return Down(); }
  Result<std::vector<DlqEntry>> ClaimReplays(const std::string&, int64_t, int64_t) override {
    return Down();
  }
  Result<bool> MarkReplayed(int64_t, int64_t, bool, const std::string&, int64_t) override {
    return Down();
  }
  Result<bool> Resolve(const std::string&, DlqClass, const std::string&) override { return Down(); }
  Result<bool> Pause(const std::string&, const std::string&, const std::string&,
                     const std::string&) override {
    return Down();
  }
  Result<bool> Resume(const std::string&, const std::string&, const std::string&) override {
    return Down();
  }
  Result<bool> IsPaused(const std::string&, const std::string&) override { return Down(); }
  Result<std::vector<CapabilityPause>> ListPauses() override { return Down(); }
  Status RecordOperatorAction(const std::string&, const std::string&, const std::string&,
                              const std::string&) override {
    return Down();
  }
  Result<std::vector<OperatorAction>> ListOperatorActions(int64_t) override { return Down(); }
};

class PipelineGuardsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = sqlite::SqliteIdempotencyStore::Open(dir_.Sub("state.db"), clock_);
    ASSERT_TRUE(s.ok()) << s.error().ToString();
    sqlite_ = std::move(s).value();
    store_ = std::make_unique<TombstoneStore>(*sqlite_);
    auto d = sqlite::SqliteDlq::Open(dir_.Sub("state.db"), clock_);
    ASSERT_TRUE(d.ok()) << d.error().ToString();
    dlq_ = std::move(d).value();
    auto l = RateLimiter::Create(RateLimit{1, Millis(1000), 2}, clock_);  // 1/s, burst 2
    ASSERT_TRUE(l.ok()) << l.error().ToString();
    limiter_ = std::move(l).value();
    auto b = KeyBreaker::Create(BreakerSpec{3, Millis(5000), Millis(30'000), 0}, clock_);
    ASSERT_TRUE(b.ok()) << b.error().ToString();
    breaker_ = std::move(b).value();
    auto m =
        HostMetrics::Create(MetricsNames{{{kGuardsPlugin, kGuardsRoute}}, {kGuardsPlugin}, {}});
    ASSERT_TRUE(m.ok()) << m.error().ToString();
    metrics_ = std::move(m).value();
    guards_ = PipelineGuards{
        limiter_.get(),
        breaker_.get(),
        dlq_.get(),
        metrics_.get(),
        &advisor_,
        &clock_,
        [this](const std::string& line) { audit_.push_back(nlohmann::json::parse(line)); }};
    Rebuild();
  }

  void Rebuild() {
    std::vector<PipelineRoute> routes;
    auto key = DecodeWebhookSecret(kSecret);
    auto v = WebhookVerifier::Create(std::move(key).value(), std::nullopt, std::nullopt,
                                     milliseconds(300'000), clock_);
    routes.push_back(
        PipelineRoute{kGuardsPlugin, kGuardsRoute, 2, "/order/id", std::move(v).value()});
    auto p = WebhookPipeline::Create(
        PipelineOptions{4096, 4096, milliseconds(1000)}, std::move(routes), *store_,
        [this](const DispatchContext& ctx) { return Dispatch(ctx); }, guards_);
    ASSERT_TRUE(p.ok()) << p.error().ToString();
    pipeline_ = std::move(p).value();
  }

  PluginOutcome Dispatch(const DispatchContext& ctx) {
    ++calls_;
    last_body_ = ctx.request->body;
    if (!outcomes_.empty()) {
      PluginOutcome o = outcomes_.front();
      outcomes_.erase(outcomes_.begin());
      return o;
    }
    return PluginOutcome::Answered(201, "application/json",
                                   R"({"effect":)" + std::to_string(calls_) + "}");
  }

  HttpRequest Request(const std::string& id, const std::string& body, bool forged = false) {
    const int64_t t = clock_.NowSeconds();
    auto key = DecodeWebhookSecret(kSecret);
    HttpRequest r;
    r.method = "POST";
    r.target = std::string("/webhooks/") + kGuardsPlugin + "/" + kGuardsRoute;
    r.headers.Add("Content-Type", "application/json");
    r.headers.Add("webhook-id", id);
    r.headers.Add("webhook-timestamp", std::to_string(t));
    r.headers.Add("webhook-signature", forged ? "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
                                              : WebhookSignature(*key, id, t, body));
    r.body = body;
    return r;
  }
  WebhookPipeline::Handled Deliver(const std::string& id, const std::string& order) {
    return pipeline_->HandleDetailed(Request(id, GuardsOrderBody(order)));
  }

  static std::string Type(const HttpResponse& r) {
    return nlohmann::json::parse(r.body).value("type", std::string());
  }
  std::vector<DlqEntry> Entries() {
    DlqFilter f;
    f.limit = 100;
    auto l = dlq_->List(f);
    EXPECT_TRUE(l.ok());
    return l.ok() ? *l : std::vector<DlqEntry>{};
  }
  uint64_t Requests(std::string_view outcome) {
    auto c = metrics_->registry().FindCounter(kRequests, {kGuardsPlugin, kGuardsRoute, outcome});
    return c ? c->Value() : 0;
  }
  std::vector<nlohmann::json> AuditOf(const std::string& event) {
    std::vector<nlohmann::json> out;
    for (const auto& j : audit_) {
      if (j.value("event", "") == event) out.push_back(j);
    }
    return out;
  }

  clawguard::testing::TempDir dir_;
  FixedClock clock_{kT0};
  std::unique_ptr<sqlite::SqliteIdempotencyStore> sqlite_;
  std::unique_ptr<TombstoneStore> store_;
  std::unique_ptr<sqlite::SqliteDlq> dlq_;
  std::unique_ptr<RateLimiter> limiter_;
  std::unique_ptr<KeyBreaker> breaker_;
  std::unique_ptr<HostMetrics> metrics_;
  RetentionAdvisor advisor_;
  PipelineGuards guards_;
  std::unique_ptr<WebhookPipeline> pipeline_;
  std::vector<nlohmann::json> audit_;
  std::vector<PluginOutcome> outcomes_;
  std::string last_body_;
  int calls_ = 0;
};

TEST_F(PipelineGuardsTest, RateLimitIs429WithRetryAfterAfterAuthenticationAndStoresNothing) {
  for (int i = 0; i < 5;
       ++i) {  // forged requests are refused before the bucket: they take no token
    EXPECT_EQ(
        pipeline_->Handle(Request("msg_forged", GuardsOrderBody("A"), /*forged=*/true)).status,
        401);
  }
  EXPECT_EQ(Deliver("msg_1", "A").response.status, 201);
  EXPECT_EQ(Deliver("msg_2", "B").response.status, 201);
  const auto limited = Deliver("msg_3", "C");
  EXPECT_EQ(limited.outcome, WebhookOutcome::kRateLimited);
  EXPECT_EQ(limited.response.status, 429);
  EXPECT_EQ(Type(limited.response), "https://clawguard.dev/problems/rate_limited");
  EXPECT_EQ(limited.response.headers.Get("Retry-After"), "1");
  EXPECT_FALSE(sqlite_->Get(Level2Key(kGuardsPlugin, kGuardsRoute, "msg_3", "C"))->has_value());
  EXPECT_EQ(calls_, 2);
  EXPECT_TRUE(Entries().empty());
  EXPECT_EQ(Requests("rate_limited"), 1u);
  clock_.Advance(1000);  // one token back
  EXPECT_EQ(Deliver("msg_3", "C").response.status, 201);
  EXPECT_EQ(calls_, 3);
}

TEST_F(PipelineGuardsTest, BreakerOpensAfterThreeFailuresWithOneDlqEntryAndClosesAfterTheCooldown) {
  guards_.limiter = nullptr;
  Rebuild();
  outcomes_ = {PluginOutcome::Failed("returned 3"), PluginOutcome::Failed("returned 3"),
               PluginOutcome::Failed("returned 3")};
  const std::string key = Level2Key(kGuardsPlugin, kGuardsRoute, "msg_1", "A");
  for (int i = 0; i < 3; ++i) {
    const auto h = Deliver("msg_1", "A");
    EXPECT_EQ(h.response.status, 500) << i;  // the failing request itself keeps its answer
    EXPECT_EQ(Type(h.response), "https://clawguard.dev/problems/plugin_failed");
    clock_.Advance(2000);  // the third failure at +4 s: inside the 5 s window
  }
  ASSERT_EQ(calls_, 3);
  // Opened at +4 s for 30 s; now +6 s → 28 s left.
  for (int i = 0; i < 3; ++i) {
    const auto open = Deliver("msg_1", "A");
    EXPECT_EQ(open.outcome, WebhookOutcome::kBreakerOpen);
    EXPECT_EQ(open.response.status, 503);
    EXPECT_EQ(Type(open.response), "https://clawguard.dev/problems/breaker_open");
    EXPECT_EQ(open.response.headers.Get("Retry-After"), "28");
  }
  EXPECT_EQ(calls_, 3);  // the plugin did not run

  const std::vector<DlqEntry> entries = Entries();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].klass, DlqClass::kBreaker);
  EXPECT_EQ(entries[0].event_key, key);
  EXPECT_EQ(entries[0].plugin, kGuardsPlugin);
  EXPECT_EQ(entries[0].route, kGuardsRoute);
  EXPECT_EQ(entries[0].call_index, kDlqEventLevel);
  EXPECT_EQ(entries[0].occurrences, 1);
  EXPECT_NE(entries[0].detail.find("plugin failed: returned 3"), std::string::npos)
      << entries[0].detail;
  auto full = dlq_->Get(entries[0].id);
  ASSERT_TRUE(full.ok() && full->has_value() && (*full)->request.has_value());
  EXPECT_EQ((*full)->request->webhook_id, "msg_1");
  EXPECT_EQ((*full)->request->content_type, "application/json");
  EXPECT_EQ((*full)->request->body, GuardsOrderBody("A"));
  const auto opened = AuditOf("breaker_opened");
  ASSERT_EQ(opened.size(), 1u);
  EXPECT_EQ(opened[0]["plugin"], kGuardsPlugin);
  EXPECT_EQ(opened[0]["route"], kGuardsRoute);
  EXPECT_EQ(opened[0]["event_key"], key);
  EXPECT_EQ(Requests("breaker_open"), 3u);
  EXPECT_EQ(Requests("plugin_failed"), 3u);

  clock_.Advance(28'000);  // the cool-down is over: the key starts afresh
  const auto again = Deliver("msg_1", "A");
  EXPECT_EQ(again.response.status, 201);
  EXPECT_EQ(calls_, 4);
  EXPECT_EQ(Entries().size(), 1u);
}

TEST_F(PipelineGuardsTest, AReopenedBreakerFoldsIntoTheSameDlqEntry) {
  guards_.limiter = nullptr;
  Rebuild();
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 3; ++i) {
      outcomes_.push_back(PluginOutcome::Failed("returned 1"));
      EXPECT_EQ(Deliver("msg_1", "A").response.status, 500);
    }
    EXPECT_EQ(Deliver("msg_1", "A").response.status, 503);
    clock_.Advance(30'000);
  }
  const auto entries = Entries();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].occurrences, 2);
  EXPECT_EQ(AuditOf("breaker_opened").size(), 2u);
}

TEST_F(PipelineGuardsTest, TimeoutsAndUnstorableAnswersCountAndAStoredAnswerResets) {
  guards_.limiter = nullptr;
  Rebuild();
  // Failed, then 429 from the plugin (not stored): two failures; then a stored answer forgets them.
  outcomes_ = {PluginOutcome::Failed("x"), PluginOutcome::Answered(429, "text/plain", "slow down")};
  EXPECT_EQ(Deliver("msg_1", "A").response.status, 500);
  EXPECT_EQ(Deliver("msg_1", "A").response.status, 429);
  EXPECT_EQ(breaker_->TrackedKeys(), 1u);
  EXPECT_EQ(Deliver("msg_1", "A").response.status, 201);
  EXPECT_EQ(breaker_->TrackedKeys(), 0u);
  // A stored 4xx is a success too; a timeout counts (its lease of 1 s is left to expire).
  outcomes_ = {PluginOutcome::Answered(503, "", ""), PluginOutcome::TimedOut("10s"),
               PluginOutcome::Failed("y")};
  EXPECT_EQ(Deliver("msg_2", "B").response.status, 503);
  EXPECT_EQ(Type(Deliver("msg_2", "B").response), "https://clawguard.dev/problems/plugin_timeout");
  clock_.Advance(1000);
  EXPECT_EQ(Deliver("msg_2", "B").response.status, 500);  // third failure within 5 s: opens
  EXPECT_EQ(Deliver("msg_2", "B").response.status, 503);
  EXPECT_EQ(Entries().size(), 1u);
  outcomes_ = {PluginOutcome::Answered(400, "application/json", "{}")};
  EXPECT_EQ(Deliver("msg_3", "C").response.status, 400);
  EXPECT_EQ(breaker_->TrackedKeys(), 1u);  // only msg_2's open breaker
}

// A delivery no worker ran (it was restarting after another event's crash) is not a failure of
// its event; a worker that died while running it is.
TEST_F(PipelineGuardsTest, OnlyADeliveryAWorkerRanCountsWhenThePluginIsUnavailable) {
  guards_.limiter = nullptr;
  Rebuild();
  PluginOutcome restarting = PluginOutcome::Unavailable("the plugin's worker is restarting");
  restarting.never_ran = true;
  outcomes_ = {restarting, restarting, restarting, restarting};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(Type(Deliver("msg_1", "A").response),
              "https://clawguard.dev/problems/plugin_unavailable")
        << i;
  }
  EXPECT_EQ(breaker_->TrackedKeys(), 0u);
  EXPECT_TRUE(Entries().empty());
  const PluginOutcome died = PluginOutcome::Unavailable("the plugin's worker stopped: crash");
  outcomes_ = {died, died, died};
  for (int i = 0; i < 3; ++i) (void)Deliver("msg_2", "B");
  EXPECT_EQ(Deliver("msg_2", "B").outcome, WebhookOutcome::kBreakerOpen);
  EXPECT_EQ(Entries().size(), 1u);
}

TEST_F(PipelineGuardsTest, DeadLetteredEventWritesOneMismatchEntryWithoutTheRequest) {
  outcomes_ = {PluginOutcome::DeadLettered("mismatch", "erp call 0 differs from its outbox row")};
  const auto h = Deliver("msg_1", "A");
  EXPECT_EQ(h.outcome, WebhookOutcome::kDeadLettered);
  EXPECT_EQ(h.response.status, 202);
  EXPECT_EQ(Deliver("msg_1", "A").outcome, WebhookOutcome::kReplayed);
  const auto entries = Entries();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].klass, DlqClass::kMismatch);
  EXPECT_EQ(entries[0].event_key, Level2Key(kGuardsPlugin, kGuardsRoute, "msg_1", "A"));
  EXPECT_FALSE(entries[0].has_request);
  EXPECT_NE(entries[0].detail.find("erp call 0 differs"), std::string::npos);
  EXPECT_NE(entries[0].detail.find("idem reset"), std::string::npos);
  EXPECT_EQ(breaker_->TrackedKeys(), 0u);
}

TEST_F(PipelineGuardsTest, TombstoneIs409ExpiredKeySeenWithOneManualReviewEntry) {
  const std::string key = Level2Key(kGuardsPlugin, kGuardsRoute, "msg_1", "A");
  store_->tombstoned.insert(key);
  for (int i = 0; i < 2; ++i) {
    const auto h = Deliver("msg_1", "A");
    EXPECT_EQ(h.outcome, WebhookOutcome::kExpiredKeySeen);
    EXPECT_EQ(h.response.status, 409);
    EXPECT_EQ(Type(h.response), "https://clawguard.dev/problems/expired_key_seen");
    EXPECT_FALSE(h.response.headers.Has("Retry-After"));
    clock_.Advance(1000);
  }
  EXPECT_EQ(calls_, 0);
  const auto entries = Entries();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].klass, DlqClass::kManualReview);
  EXPECT_EQ(entries[0].occurrences, 2);
  auto full = dlq_->Get(entries[0].id);
  ASSERT_TRUE(full.ok() && full->has_value() && (*full)->request.has_value());
  EXPECT_EQ((*full)->request->body, GuardsOrderBody("A"));
  EXPECT_EQ(Requests("expired_key_seen"), 2u);
}

TEST_F(PipelineGuardsTest, DlqWriteFailuresAreAuditedAndNeverChangeTheAnswer) {
  DownDlq down;
  guards_.dlq = &down;
  Rebuild();
  store_->tombstoned.insert(Level2Key(kGuardsPlugin, kGuardsRoute, "msg_1", "A"));
  EXPECT_EQ(Deliver("msg_1", "A").response.status, 409);
  outcomes_ = {PluginOutcome::DeadLettered("mismatch", "call 1 differs")};
  EXPECT_EQ(Deliver("msg_2", "B").response.status, 202);
  const auto failed = AuditOf("dlq_write_failed");
  ASSERT_EQ(failed.size(), 2u);
  EXPECT_EQ(failed[0]["class"], "manual_review");
  EXPECT_EQ(failed[1]["class"], "mismatch");
  EXPECT_EQ(failed[1]["event_key"], Level2Key(kGuardsPlugin, kGuardsRoute, "msg_2", "B"));
  EXPECT_NE(failed[1]["detail"].get<std::string>().find("database is locked"), std::string::npos);
}

TEST_F(PipelineGuardsTest, MetricsCountOutcomesDuplicatesSignatureFailuresAndTakeovers) {
  guards_.limiter = nullptr;
  Rebuild();
  outcomes_ = {PluginOutcome::Failed("x")};
  EXPECT_EQ(Deliver("msg_1", "A").response.status, 500);
  EXPECT_EQ(Deliver("msg_1", "A").response.status, 201);  // takes the released lease over
  EXPECT_EQ(Deliver("msg_1", "A").response.status, 201);  // replay
  EXPECT_EQ(pipeline_->Handle(Request("msg_1", GuardsOrderBody("A"), /*forged=*/true)).status, 401);
  HttpRequest unknown = Request("msg_1", GuardsOrderBody("A"));
  unknown.target = "/webhooks/acme-orders/order.deleted";
  EXPECT_EQ(pipeline_->Handle(unknown).status, 404);

  EXPECT_EQ(Requests("plugin_failed"), 1u);
  EXPECT_EQ(Requests("processed"), 1u);
  EXPECT_EQ(Requests("replayed"), 1u);
  EXPECT_EQ(Requests("auth_failed"), 1u);
  auto unknown_count =
      metrics_->registry().FindCounter(kRequests, {kUnknownLabel, kUnknownLabel, "not_found"});
  ASSERT_TRUE(unknown_count);
  EXPECT_EQ(unknown_count->Value(), 1u);
  EXPECT_EQ(metrics_->DeliveriesTotal(), 5u);
  EXPECT_EQ(metrics_->DuplicatesTotal(), 1u);
  EXPECT_EQ(metrics_->registry().CounterTotal("clawguard_lease_takeovers_total"), 1u);
  auto sig = metrics_->registry().FindCounter("clawguard_webhook_signature_failures_total",
                                              {"signature_invalid"});
  ASSERT_TRUE(sig);
  EXPECT_EQ(sig->Value(), 1u);
  auto hist = metrics_->registry().FindHistogram("clawguard_webhook_processing_duration_seconds",
                                                 {kGuardsPlugin, kGuardsRoute});
  ASSERT_TRUE(hist);
  EXPECT_EQ(hist->Count(), 4u);  // every request of the known route
}

TEST_F(PipelineGuardsTest, LaterDeliveriesFeedTheRetentionAdvisor) {
  guards_.limiter = nullptr;
  Rebuild();
  EXPECT_EQ(Deliver("msg_1", "A").response.status, 201);
  clock_.Advance(90'000);
  EXPECT_EQ(Deliver("msg_1", "A").outcome,
            WebhookOutcome::kReplayed);  // 90 s after the first delivery
  outcomes_ = {PluginOutcome::TimedOut("10s")};
  EXPECT_EQ(Deliver("msg_2", "B").response.status, 503);  // its 1 s lease is left to expire
  clock_.Advance(500);
  EXPECT_EQ(Deliver("msg_2", "B").outcome, WebhookOutcome::kInProgress);  // 0.5 s after
  EXPECT_EQ(advisor_.Samples(), 2u);
  EXPECT_EQ(advisor_.PercentileMs(0.5),
            RetentionAdvisor::BucketUpperMs(RetentionAdvisor::BucketOf(500)));
  EXPECT_EQ(advisor_.PercentileMs(1.0),
            RetentionAdvisor::BucketUpperMs(RetentionAdvisor::BucketOf(90'000)));
  guards_.clock = nullptr;  // no clock: no observations
  Rebuild();
  EXPECT_EQ(Deliver("msg_1", "A").outcome, WebhookOutcome::kReplayed);
  EXPECT_EQ(advisor_.Samples(), 2u);
}

TEST_F(PipelineGuardsTest, RedeliverRunsAClaimedEventOnceWithoutTheSignature) {
  outcomes_ = {PluginOutcome::Failed("x")};
  EXPECT_EQ(Deliver("msg_1", "A").response.status, 500);
  const std::string key = Level2Key(kGuardsPlugin, kGuardsRoute, "msg_1", "A");
  clock_.Advance(86'400'000);  // a day later: the delivery's timestamp is far out of tolerance
  const DlqRequest stored{"msg_1", "application/json", GuardsOrderBody("A")};
  const RedeliverResult r = pipeline_->Redeliver(kGuardsPlugin, kGuardsRoute, key, stored);
  EXPECT_TRUE(r.done) << r.detail;
  EXPECT_EQ(calls_, 2);
  EXPECT_EQ(last_body_, GuardsOrderBody("A"));
  auto rec = sqlite_->Get(key);
  ASSERT_TRUE(rec.ok() && rec->has_value());
  EXPECT_EQ((*rec)->state, IdemState::kCompleted);
  EXPECT_EQ((*rec)->status, 201);
  const RedeliverResult again = pipeline_->Redeliver(kGuardsPlugin, kGuardsRoute, key, stored);
  EXPECT_TRUE(again.done);
  EXPECT_NE(again.detail.find("already completed"), std::string::npos) << again.detail;
  EXPECT_EQ(calls_, 2);
  EXPECT_EQ(Requests("processed"), 1u);
  EXPECT_EQ(Requests("replayed"), 1u);
}

TEST_F(PipelineGuardsTest, RedeliverRefusesAWrongKeyAndReportsWhatBlocksIt) {
  const std::string key = Level2Key(kGuardsPlugin, kGuardsRoute, "msg_1", "A");
  const RedeliverResult tampered =
      pipeline_->Redeliver(kGuardsPlugin, kGuardsRoute, key,
                           DlqRequest{"msg_1", "application/json", GuardsOrderBody("B")});
  EXPECT_FALSE(tampered.done);
  EXPECT_NE(tampered.detail.find("integrity check failed"), std::string::npos) << tampered.detail;
  const RedeliverResult other_id =
      pipeline_->Redeliver(kGuardsPlugin, kGuardsRoute, key,
                           DlqRequest{"msg_2", "application/json", GuardsOrderBody("A")});
  EXPECT_FALSE(other_id.done);
  EXPECT_FALSE(pipeline_
                   ->Redeliver(kGuardsPlugin, "order.deleted", key,
                               DlqRequest{"msg_1", "", GuardsOrderBody("A")})
                   .done);
  const RedeliverResult no_key = pipeline_->Redeliver(
      kGuardsPlugin, kGuardsRoute, key, DlqRequest{"msg_1", "application/json", "{}"});
  EXPECT_FALSE(no_key.done);
  EXPECT_EQ(calls_, 0);
  EXPECT_FALSE(sqlite_->Get(key)->has_value());

  store_->tombstoned.insert(key);
  const RedeliverResult tomb =
      pipeline_->Redeliver(kGuardsPlugin, kGuardsRoute, key,
                           DlqRequest{"msg_1", "application/json", GuardsOrderBody("A")});
  EXPECT_FALSE(tomb.done);
  EXPECT_NE(tomb.detail.find("tombstoned"), std::string::npos) << tomb.detail;
  EXPECT_TRUE(Entries().empty());  // a redelivery comes from the DLQ: no new entry
  EXPECT_EQ(calls_, 0);
}

TEST_F(PipelineGuardsTest, RedeliverSkipsTheOpenBreakerAndTheRateLimit) {
  const std::string key = Level2Key(kGuardsPlugin, kGuardsRoute, "msg_1", "A");
  outcomes_ = {PluginOutcome::Failed("x"), PluginOutcome::Failed("x")};
  EXPECT_EQ(Deliver("msg_1", "A").response.status, 500);
  EXPECT_EQ(Deliver("msg_1", "A").response.status, 500);
  EXPECT_EQ(Deliver("msg_1", "A").outcome, WebhookOutcome::kRateLimited);  // burst of 2 used up
  for (int i = 0; i < 3; ++i) breaker_->RecordFailure(key);
  ASSERT_FALSE(breaker_->Check(key).allowed);
  const RedeliverResult r =
      pipeline_->Redeliver(kGuardsPlugin, kGuardsRoute, key,
                           DlqRequest{"msg_1", "application/json", GuardsOrderBody("A")});
  EXPECT_TRUE(r.done) << r.detail;
  EXPECT_EQ(calls_, 3);
}

}  // namespace
}  // namespace clawguard::host
