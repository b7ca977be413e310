// webhook_pipeline_test.cpp — the webhook gate with a fake dispatcher that counts effects, on the
// SQLite idempotency store, at fixed time.
// Over 500 lines on purpose: one gate, one fixture; every stage's cases build on the same
// signed request and store.
#include "host/intake/webhook_pipeline.h"
#include "support/fixed_time.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <variant>

#include "clawguard/clock.h"
#include "host/erp/idempotency_key.h"
#include "host/intake/record_cache.h"
#include "sqlite/sqlite_idempotency_store.h"
#include "support/reason_matchers.h"
#include "support/temp_dir.h"

using ::clawguard::testing::HasReason;

namespace clawguard::host {
namespace {

using std::chrono::milliseconds;

using ::clawguard::testing::kT0;
constexpr char kPipelineSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr char kPlugin[] = "acme-orders";

std::string OrderBody(const std::string& id, const std::string& extra = "") {
  return R"({"type":"order.created","order":{"id":")" + id + R"(","note":")" + extra + R"("}})";
}

class WebhookPipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = sqlite::SqliteIdempotencyStore::Open(dir_.Sub("state.db"), clock_);
    ASSERT_TRUE(s.ok()) << s.error().ToString();
    store_ = std::move(s).value();
    std::vector<PipelineRoute> routes;
    routes.push_back(Route("order.created", 2, "/order/id"));
    routes.push_back(Route("order.synced", 1, "/order/id"));
    routes.push_back(Route("order.plain", 2, std::nullopt));
    routes.push_back(Route("order.held", 3, std::nullopt));
    auto p = WebhookPipeline::Create(PipelineOptions{4096, 4096, milliseconds(30'000)},
                                     std::move(routes), *store_,
                                     [this](const DispatchContext& ctx) { return Dispatch(ctx); });
    ASSERT_TRUE(p.ok()) << p.error().ToString();
    pipeline_ = std::move(p).value();
  }

  PipelineRoute Route(const std::string& name, int level, std::optional<std::string> business_key) {
    auto key = DecodeWebhookSecret(kPipelineSecret);
    auto v = WebhookVerifier::Create(std::move(key).value(), std::nullopt, std::nullopt,
                                     milliseconds(300'000), clock_);
    return PipelineRoute{kPlugin, name, level, std::move(business_key), std::move(v).value()};
  }

  PluginOutcome Dispatch(const DispatchContext& ctx) {
    ++effects_[std::string(ctx.event_key)];
    ++calls_;
    last_token_ = ctx.fencing_token;
    if (during_dispatch_) during_dispatch_();
    if (next_outcome_) {
      PluginOutcome o = *next_outcome_;
      next_outcome_.reset();
      return o;
    }
    return PluginOutcome::Answered(201, "application/json",
                                   R"({"effect":)" + std::to_string(calls_) + "}");
  }

  // Request signs |body| as delivery |id| at the current time (or |ts|).
  HttpRequest Request(const std::string& route, const std::string& id, const std::string& body,
                      std::optional<int64_t> ts = std::nullopt) {
    const int64_t t = ts.value_or(clock_.NowSeconds());
    auto key = DecodeWebhookSecret(kPipelineSecret);
    HttpRequest r;
    r.method = "POST";
    r.target = "/webhooks/acme-orders/" + route;
    r.headers.Add("Content-Type", "application/json");
    r.headers.Add("webhook-id", id);
    r.headers.Add("webhook-timestamp", std::to_string(t));
    r.headers.Add("webhook-signature", WebhookSignature(*key, id, t, body));
    r.body = body;
    return r;
  }

  static std::string Type(const HttpResponse& r) {
    return nlohmann::json::parse(r.body).value("type", std::string());
  }
  std::optional<IdempotencyRecord> Record(const std::string& key) {
    auto r = store_->Get(key);
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : std::nullopt;
  }

  clawguard::testing::TempDir dir_;
  FixedClock clock_{kT0};
  std::unique_ptr<sqlite::SqliteIdempotencyStore> store_;
  std::unique_ptr<WebhookPipeline> pipeline_;
  std::map<std::string, int> effects_;
  int calls_ = 0;
  int64_t last_token_ = 0;
  std::optional<PluginOutcome> next_outcome_;
  std::function<void()> during_dispatch_;
};

TEST_F(WebhookPipelineTest, SeventeenDeliveriesOfOneEventRunThePluginOnce) {
  const std::string body = OrderBody("ORD-1001");
  const HttpResponse first = pipeline_->Handle(Request("order.created", "msg_1", body));
  ASSERT_EQ(first.status, 201);
  EXPECT_FALSE(first.headers.Has("Idempotent-Replayed"));
  for (int i = 1; i < 17; ++i) {
    clock_.Advance(
        60'000LL << std::min(i, 9));  // the platform's backoff; re-signed with a fresh timestamp
    const auto h = pipeline_->HandleDetailed(Request("order.created", "msg_1", body));
    EXPECT_EQ(h.outcome, WebhookOutcome::kReplayed) << i;
    EXPECT_EQ(h.response.status, 201) << i;
    EXPECT_EQ(h.response.body, first.body) << i;
    EXPECT_EQ(h.response.headers.Get("Content-Type"), "application/json") << i;
    EXPECT_EQ(h.response.headers.Get("Idempotent-Replayed"), "true") << i;
  }
  EXPECT_EQ(calls_, 1);
}

TEST_F(WebhookPipelineTest, SameKeyWithChangedBodyIs422AndTheRecordIsUntouched) {
  ASSERT_EQ(pipeline_->Handle(Request("order.created", "msg_1", OrderBody("ORD-1001"))).status,
            201);
  const std::string key = Level2Key(kPlugin, "order.created", "msg_1", "ORD-1001");
  const auto before = Record(key);
  clock_.Advance(1000);
  const HttpResponse r =
      pipeline_->Handle(Request("order.created", "msg_1", OrderBody("ORD-1001", "changed")));
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(Type(r), "https://clawguard.dev/problems/fingerprint_mismatch");
  const auto after = Record(key);
  ASSERT_TRUE(before && after);
  EXPECT_EQ(after->updated_ms, before->updated_ms);
  EXPECT_EQ(after->body, before->body);
  EXPECT_EQ(calls_, 1);
}

TEST_F(WebhookPipelineTest, FreshXIdempotencyKeyCausesNoNewEffect) {
  HttpRequest a = Request("order.created", "msg_1", OrderBody("ORD-1001"));
  a.headers.Add("X-Idempotency-Key", "client-1");
  ASSERT_EQ(pipeline_->Handle(a).status, 201);
  HttpRequest b = Request("order.created", "msg_1", OrderBody("ORD-1001"));
  b.headers.Add("X-Idempotency-Key", "client-2-fresh");
  const HttpResponse r = pipeline_->Handle(b);
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.headers.Get("Idempotent-Replayed"), "true");
  EXPECT_EQ(calls_, 1);
  EXPECT_EQ(Record(Level2Key(kPlugin, "order.created", "msg_1", "ORD-1001"))->x_idempotency_key,
            "client-1");
}

TEST_F(WebhookPipelineTest, Level1ClonesWithNewIdsAreOneEffect) {
  for (int i = 0; i < 5; ++i) {
    const HttpResponse r = pipeline_->Handle(Request(
        "order.synced", "msg_clone_" + std::to_string(i), OrderBody("ORD-7", std::to_string(i))));
    EXPECT_EQ(r.status, 201) << i;
  }
  EXPECT_EQ(calls_, 1);
  EXPECT_EQ(effects_.size(), 1u);
  EXPECT_EQ(effects_.begin()->first, Level1Key(kPlugin, "order.synced", "ORD-7"));
}

TEST_F(WebhookPipelineTest, Level2ClonesAreOneEffectPerId) {
  for (int i = 0; i < 3; ++i) {
    for (int repeat = 0; repeat < 2; ++repeat) {
      EXPECT_EQ(
          pipeline_
              ->Handle(Request("order.created", "msg_" + std::to_string(i), OrderBody("ORD-7")))
              .status,
          201);
    }
  }
  EXPECT_EQ(calls_, 3);
  EXPECT_EQ(effects_.size(), 3u);
}

TEST_F(WebhookPipelineTest, BadSignaturesAre401AndStoreNothing) {
  const std::string body = OrderBody("ORD-1001");
  const std::string key = Level2Key(kPlugin, "order.created", "msg_1", "ORD-1001");
  HttpRequest forged = Request("order.created", "msg_1", body);
  forged.headers.Set("webhook-signature", "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=");
  HttpRequest tampered = Request("order.created", "msg_1", body);
  tampered.body = OrderBody("ORD-1002");
  HttpRequest missing = Request("order.created", "msg_1", body);
  missing.headers.Remove("webhook-signature");
  const std::vector<std::pair<HttpRequest, std::string>> cases = {
      {forged, "signature_invalid"},
      {tampered, "signature_invalid"},
      {missing, "signature_invalid"},
      {Request("order.created", "msg_1", body, clock_.NowSeconds() - 301),
       "timestamp_out_of_tolerance"},
      {Request("order.created", "msg_1", body, clock_.NowSeconds() + 301),
       "timestamp_out_of_tolerance"},
  };
  for (const auto& [req, type] : cases) {
    const HttpResponse r = pipeline_->Handle(req);
    EXPECT_EQ(r.status, 401) << type;
    EXPECT_EQ(Type(r), "https://clawguard.dev/problems/" + type);
    EXPECT_EQ(r.headers.Get("Content-Type"), "application/problem+json");
  }
  HttpRequest conflict = Request("order.created", "msg_1", body);
  conflict.headers.Add("svix-id", "msg_2");
  EXPECT_EQ(pipeline_->Handle(conflict).status, 400);
  EXPECT_EQ(calls_, 0);
  EXPECT_FALSE(Record(key).has_value());
  EXPECT_FALSE(Record(Level2Key(kPlugin, "order.created", "msg_1", "ORD-1002")).has_value());
}

TEST_F(WebhookPipelineTest, LimitsAndRoutingComeFirst) {
  HttpRequest big = Request("order.created", "msg_1", std::string(4097, 'x'));
  EXPECT_EQ(pipeline_->Handle(big).status, 413);
  HttpRequest headers = Request("order.created", "msg_1", OrderBody("1"));
  headers.headers.Add("X-Padding", std::string(4096, 'p'));
  EXPECT_EQ(pipeline_->Handle(headers).status, 413);
  HttpRequest unknown = Request("order.created", "msg_1", OrderBody("1"));
  unknown.target = "/webhooks/acme-orders/order.deleted";
  EXPECT_EQ(Type(pipeline_->Handle(unknown)), "https://clawguard.dev/problems/not_found");
  unknown.target = "/webhooks/other/order.created";
  EXPECT_EQ(pipeline_->Handle(unknown).status, 404);
  unknown.target = "/webhooks/acme-orders/order.created?x=1";
  EXPECT_EQ(pipeline_->Handle(unknown).status, 404);
  HttpRequest get = Request("order.created", "msg_1", OrderBody("1"));
  get.method = "GET";
  EXPECT_EQ(pipeline_->Handle(get).status, 404);
  EXPECT_EQ(calls_, 0);
}

TEST_F(WebhookPipelineTest, MissingBusinessKeyIs400AndStoresNothing) {
  const HttpResponse r =
      pipeline_->Handle(Request("order.created", "msg_1", R"({"order":{"id":12.5}})"));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(Type(r), "https://clawguard.dev/problems/idempotency_key_missing");
  EXPECT_EQ(pipeline_->Handle(Request("order.created", "msg_1", "not json")).status, 400);
  EXPECT_EQ(pipeline_->Handle(Request("order.synced", "msg_1", R"({"order":{"id":""}})")).status,
            400);
  EXPECT_EQ(calls_, 0);
  // A route without business_key keys on the id alone.
  EXPECT_EQ(pipeline_->Handle(Request("order.plain", "msg_1", "not json")).status, 201);
  EXPECT_TRUE(Record(Level2Key(kPlugin, "order.plain", "msg_1", "")).has_value());
}

TEST_F(WebhookPipelineTest, StoresTwoXxAndFourXxButNotTheRetryableOnes) {
  int n = 0;
  for (int status : {500, 503, 408, 409, 425, 429, 302}) {
    next_outcome_ = PluginOutcome::Answered(status, "text/plain", "try again");
    const std::string id = "msg_" + std::to_string(n++);
    const auto h = pipeline_->HandleDetailed(Request("order.created", id, OrderBody("A")));
    EXPECT_EQ(h.response.status, status);
    EXPECT_EQ(h.outcome, WebhookOutcome::kNotStored);
    EXPECT_EQ(pipeline_->Handle(Request("order.created", id, OrderBody("A"))).status, 201)
        << status;  // re-run
  }
  EXPECT_EQ(calls_, 14);
  next_outcome_ = PluginOutcome::Answered(400, "application/json", R"({"error":"bad order"})");
  EXPECT_EQ(pipeline_->Handle(Request("order.created", "msg_400", OrderBody("A"))).status, 400);
  const HttpResponse replay =
      pipeline_->Handle(Request("order.created", "msg_400", OrderBody("A")));
  EXPECT_EQ(replay.status, 400);
  EXPECT_EQ(replay.headers.Get("Idempotent-Replayed"), "true");
  EXPECT_EQ(calls_, 15);
}

TEST_F(WebhookPipelineTest, PluginFailureIsRetryableWithTheNextToken) {
  next_outcome_ = PluginOutcome::Failed("returned 3");
  const HttpResponse r = pipeline_->Handle(Request("order.created", "msg_1", OrderBody("A")));
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(Type(r), "https://clawguard.dev/problems/plugin_failed");
  EXPECT_EQ(last_token_, 1);
  EXPECT_EQ(pipeline_->Handle(Request("order.created", "msg_1", OrderBody("A"))).status, 201);
  EXPECT_EQ(last_token_, 2);
}

TEST_F(WebhookPipelineTest, TimedOutPluginKeepsItsLeaseUntilItExpires) {
  next_outcome_ = PluginOutcome::TimedOut("10s");
  const HttpResponse r = pipeline_->Handle(Request("order.created", "msg_1", OrderBody("A")));
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(Type(r), "https://clawguard.dev/problems/plugin_timeout");
  EXPECT_EQ(r.headers.Get("Retry-After"), "30");
  clock_.Advance(10'000);
  const HttpResponse busy = pipeline_->Handle(Request("order.created", "msg_1", OrderBody("A")));
  EXPECT_EQ(busy.status, 409);
  EXPECT_EQ(busy.headers.Get("Retry-After"), "2");  // 20 s of lease left, capped at 2 s
  clock_.Advance(20'000);
  EXPECT_EQ(pipeline_->Handle(Request("order.created", "msg_1", OrderBody("A"))).status, 201);
  EXPECT_EQ(last_token_, 2);
  EXPECT_EQ(calls_, 2);
}

TEST_F(WebhookPipelineTest, ConcurrentDeliveryDuringDispatchIs409WithRetryAfter) {
  HttpResponse inner;
  during_dispatch_ = [&] {
    during_dispatch_ = nullptr;
    clock_.Advance(1500);
    inner = pipeline_->Handle(Request("order.created", "msg_1", OrderBody("A")));
  };
  EXPECT_EQ(pipeline_->Handle(Request("order.created", "msg_1", OrderBody("A"))).status, 201);
  EXPECT_EQ(inner.status, 409);
  EXPECT_EQ(Type(inner), "https://clawguard.dev/problems/in_progress");
  EXPECT_EQ(inner.headers.Get("Retry-After"), "2");  // 28.5 s left, capped at 2 s
  EXPECT_EQ(calls_, 1);
}

TEST_F(WebhookPipelineTest, InProgressRetryAfterIsTheLeaseLeftCappedAtTwoSeconds) {
  next_outcome_ = PluginOutcome::TimedOut("10s");  // the lease (30 s) is left to expire
  ASSERT_EQ(pipeline_->Handle(Request("order.created", "msg_1", OrderBody("A"))).status, 503);
  const std::vector<std::pair<int64_t, std::string>> cases = {
      {28'000, "2"},  // 2 s left
      {500, "2"},     // 1.5 s left, rounded up
      {1'000, "1"},   // 0.5 s left: never 0
  };
  for (const auto& [advance, expected] : cases) {
    clock_.Advance(advance);
    const auto h = pipeline_->HandleDetailed(Request("order.created", "msg_1", OrderBody("A")));
    EXPECT_EQ(h.outcome, WebhookOutcome::kInProgress) << advance;
    EXPECT_EQ(h.response.headers.Get("Retry-After"), expected) << advance;
  }
  EXPECT_EQ(InProgressRetryAfterSeconds(1), 1);
  EXPECT_EQ(InProgressRetryAfterSeconds(2000), 2);
  EXPECT_EQ(InProgressRetryAfterSeconds(2001), 2);
  EXPECT_EQ(InProgressRetryAfterSeconds(30'000), 2);
  EXPECT_EQ(calls_, 1);
}

TEST(WebhookOutcomeTest, EveryOutcomeHasAStableName) {
  // HostMetrics walks the enum until "unknown": the names must be distinct and contiguous.
  EXPECT_EQ(WebhookOutcomeName(WebhookOutcome::kRateLimited), "rate_limited");
  EXPECT_EQ(WebhookOutcomeName(WebhookOutcome::kBreakerOpen), "breaker_open");
  EXPECT_EQ(WebhookOutcomeName(WebhookOutcome::kExpiredKeySeen), "expired_key_seen");
  std::set<std::string_view> names;
  for (int i = 0; i <= static_cast<int>(WebhookOutcome::kExpiredKeySeen); ++i) {
    const std::string_view n = WebhookOutcomeName(static_cast<WebhookOutcome>(i));
    EXPECT_NE(n, "unknown") << i;
    EXPECT_TRUE(names.insert(n).second) << n;
  }
}

TEST_F(WebhookPipelineTest, Level3Answers202AndStoresIt) {
  next_outcome_ = PluginOutcome::Answered(200, "text/plain", "ignored");
  const HttpResponse r = pipeline_->Handle(Request("order.held", "msg_1", OrderBody("A")));
  EXPECT_EQ(r.status, 202);
  const HttpResponse replay = pipeline_->Handle(Request("order.held", "msg_1", OrderBody("A")));
  EXPECT_EQ(replay.status, 202);
  EXPECT_EQ(replay.body, r.body);
  EXPECT_EQ(replay.headers.Get("Idempotent-Replayed"), "true");
  EXPECT_EQ(calls_, 1);
}

TEST_F(WebhookPipelineTest, DeadLetteredEventStores202AndNeverThePluginsAnswer) {
  next_outcome_ = PluginOutcome::DeadLettered("mismatch", "event dead-lettered: mismatch");
  next_outcome_->status = 200;  // whatever the plugin answered is dropped
  next_outcome_->body = "from another call's reply";
  const auto h = pipeline_->HandleDetailed(Request("order.created", "msg_1", OrderBody("A")));
  EXPECT_EQ(h.outcome, WebhookOutcome::kDeadLettered);
  EXPECT_EQ(h.response.status, 202);
  EXPECT_EQ(h.response.body, DeadLetteredBody("mismatch"));
  EXPECT_EQ(nlohmann::json::parse(h.response.body)["class"], "mismatch");
  clock_.Advance(120'000);
  const auto replay = pipeline_->HandleDetailed(Request("order.created", "msg_1", OrderBody("A")));
  EXPECT_EQ(replay.outcome, WebhookOutcome::kReplayed);
  EXPECT_EQ(replay.response.status, 202);
  EXPECT_EQ(replay.response.body, h.response.body);
  EXPECT_EQ(calls_, 1);
}

TEST_F(WebhookPipelineTest, RenewLeaseWorksUntilFenced) {
  bool renewed = false;
  // The dispatcher renews its lease, then a takeover (its lease expired) fences it.
  std::vector<PipelineRoute> routes;
  routes.push_back(Route("order.created", 2, "/order/id"));
  auto q = WebhookPipeline::Create(PipelineOptions{4096, 4096, milliseconds(30'000)},
                                   std::move(routes), *store_, [&](const DispatchContext& ctx) {
                                     renewed = ctx.renew_lease();
                                     clock_.Advance(31'000);
                                     auto other = store_->Claim(
                                         std::string(ctx.event_key),
                                         Record(std::string(ctx.event_key))->fingerprint,
                                         ClaimMeta{kPlugin, "order.created", 2, "x", ""}, 30'000);
                                     EXPECT_EQ(other->fencing_token, 2);
                                     EXPECT_FALSE(ctx.renew_lease());
                                     return PluginOutcome::Answered(200, "", "late");
                                   });
  ASSERT_TRUE(q.ok());
  const auto h = (*q)->HandleDetailed(Request("order.created", "msg_1", OrderBody("A")));
  EXPECT_TRUE(renewed);
  EXPECT_EQ(h.outcome, WebhookOutcome::kFenced);
  EXPECT_EQ(h.response.status, 409);
}

// DownStore is a store that cannot be reached.
class DownStore final : public IdempotencyStore {
 public:
  Status Down() const { return Status(Reason::kStoreUnavailable, "connection refused"); }
  Result<ClaimOutcome> Claim(const std::string&, const std::string&, const ClaimMeta&,
                             int64_t) override {
    return Down();
  }
  Result<FencedWrite> Renew(const std::string&, int64_t, int64_t) override { return Down(); }
  Result<FencedWrite> Complete(const std::string&, int64_t, int, const std::string&,
                               const std::string&) override {
    return Down();
  }
  Result<FencedWrite> Release(const std::string&, int64_t) override { return Down(); }
  Result<std::optional<IdempotencyRecord>> Get(const std::string&) override { return Down(); }
  Result<bool> Reset(const std::string&) override { return Down(); }
  Result<int64_t> Generation() override { return Down(); }
  Result<int64_t> BumpGeneration() override { return Down(); }
};

TEST_F(WebhookPipelineTest, StoreUnavailableIs503WithRetryAfterAndNoDispatch) {
  DownStore down;
  std::vector<PipelineRoute> routes;
  routes.push_back(Route("order.created", 2, "/order/id"));
  auto p =
      WebhookPipeline::Create(PipelineOptions{4096, 4096, milliseconds(30'000)}, std::move(routes),
                              down, [this](const DispatchContext& ctx) { return Dispatch(ctx); });
  ASSERT_TRUE(p.ok());
  const HttpResponse r = (*p)->Handle(Request("order.created", "msg_1", OrderBody("A")));
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(Type(r), "https://clawguard.dev/problems/store_unavailable");
  EXPECT_EQ(r.headers.Get("Retry-After"), "1");
  EXPECT_EQ(calls_, 0);
}

// Front answers what needs no store round trip (refusals; replays and 422s of records the cache
// holds) and admits the rest with the authenticated key; Finish claims and dispatches.
TEST_F(WebhookPipelineTest, FrontAnswersFromMemoryAndAdmitsTheRest) {
  auto owned = sqlite::SqliteIdempotencyStore::Open(dir_.Sub("cached.db"), clock_);
  ASSERT_TRUE(owned.ok()) << owned.error().ToString();
  auto cache = CachingIdempotencyStore::Create(std::move(owned).value());
  ASSERT_TRUE(cache.ok());
  std::vector<PipelineRoute> routes;
  routes.push_back(Route("order.created", 2, "/order/id"));
  auto p = WebhookPipeline::Create(PipelineOptions{4096, 4096, milliseconds(30'000)},
                                   std::move(routes), **cache,
                                   [this](const DispatchContext& ctx) { return Dispatch(ctx); });
  ASSERT_TRUE(p.ok());
  const WebhookPipeline& pipeline = **p;
  using Handled = WebhookPipeline::Handled;
  using Admitted = WebhookPipeline::Admitted;

  HttpRequest forged = Request("order.created", "msg_1", OrderBody("A"));
  forged.body += " ";
  const auto refused = pipeline.Front(forged);
  ASSERT_TRUE(std::holds_alternative<Handled>(refused));
  EXPECT_EQ(std::get<Handled>(refused).response.status, 401);

  const HttpRequest first = Request("order.created", "msg_1", OrderBody("A"));
  const auto admitted = pipeline.Front(first);
  ASSERT_TRUE(std::holds_alternative<Admitted>(admitted));
  EXPECT_EQ(std::get<Admitted>(admitted).webhook_id, "msg_1");
  EXPECT_EQ(std::get<Admitted>(admitted).key.size(), 64u);
  const Handled done = pipeline.Finish(first, std::get<Admitted>(admitted));
  ASSERT_EQ(done.response.status, 201);
  EXPECT_EQ(calls_, 1);

  // The cache learns a completed record from the first replay that reaches the store ...
  const HttpRequest again = Request("order.created", "msg_1", OrderBody("A"));
  auto second = pipeline.Front(again);
  ASSERT_TRUE(std::holds_alternative<Admitted>(second));
  EXPECT_EQ(pipeline.Finish(again, std::get<Admitted>(second)).outcome, WebhookOutcome::kReplayed);
  // ... and from then on Front answers it without a claim: the same answer, replayed.
  const uint64_t hits = (*cache)->hits();
  const auto third = pipeline.Front(Request("order.created", "msg_1", OrderBody("A")));
  ASSERT_TRUE(std::holds_alternative<Handled>(third));
  const Handled& replay = std::get<Handled>(third);
  EXPECT_EQ(replay.outcome, WebhookOutcome::kReplayed);
  EXPECT_EQ(replay.response.status, 201);
  EXPECT_EQ(replay.response.body, done.response.body);
  EXPECT_EQ(replay.response.headers.Get("Idempotent-Replayed"), "true");
  EXPECT_EQ((*cache)->hits(), hits + 1);
  // The same id and business key with another body is a 422 from memory.
  const auto changed = pipeline.Front(Request("order.created", "msg_1", OrderBody("A", "changed")));
  ASSERT_TRUE(std::holds_alternative<Handled>(changed));
  EXPECT_EQ(std::get<Handled>(changed).outcome, WebhookOutcome::kFingerprintMismatch);
  EXPECT_EQ(std::get<Handled>(changed).response.status, 422);
  EXPECT_EQ(calls_, 1);
}

TEST(WebhookPipelineCreateTest, RefusesBadRoutes) {
  clawguard::testing::TempDir dir;
  FixedClock clock(kT0);
  auto store = sqlite::SqliteIdempotencyStore::Open(dir.Sub("s.db"), clock);
  ASSERT_TRUE(store.ok());
  auto make = [&](int level, std::optional<std::string> bk) {
    std::vector<PipelineRoute> routes;
    auto v = WebhookVerifier::Create(SecretBytes("k"), std::nullopt, std::nullopt,
                                     milliseconds(1000), clock);
    routes.push_back(PipelineRoute{kPlugin, "r", level, std::move(bk), std::move(v).value()});
    return WebhookPipeline::Create(
        PipelineOptions{1, 1, milliseconds(1)}, std::move(routes), **store,
        [](const DispatchContext&) { return PluginOutcome::Failed(""); });
  };
  EXPECT_THAT(make(1, std::nullopt), HasReason(Reason::kConfigInvalid));
  EXPECT_THAT(make(4, "/id"), HasReason(Reason::kConfigInvalid));
  EXPECT_TRUE(make(1, "/id").ok());
  EXPECT_TRUE(WebhookPipeline::IsStorableStatus(204));
  EXPECT_TRUE(WebhookPipeline::IsStorableStatus(422));
  EXPECT_FALSE(WebhookPipeline::IsStorableStatus(429));
  EXPECT_FALSE(WebhookPipeline::IsStorableStatus(500));
}

}  // namespace
}  // namespace clawguard::host
