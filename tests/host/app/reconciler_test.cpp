// reconciler_test.cpp — Reconciler on a real SQLite idempotency store and SqliteDlq in a temp
// dir, with a FixedClock and a fake RedriveFn that claims and completes (or releases) through
// the store the way the pipeline's re-drive would. No sleeps.
#include "host/app/reconciler.h"
#include "support/fixed_time.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "clawguard/clock.h"
#include "clawguard/store/dlq.h"
#include "clawguard/store/idempotency_store.h"
#include "sqlite/sqlite_dlq.h"
#include "sqlite/sqlite_idempotency_store.h"
#include "support/reason_matchers.h"
#include "support/temp_dir.h"

using ::clawguard::testing::HasReason;

namespace clawguard::host {
namespace {

using ::clawguard::testing::kLease;
using ::clawguard::testing::kT0;
constexpr int64_t kStuckFor = 60'000;
const std::string kFp(64, 'f');

class ReconcilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = sqlite::SqliteIdempotencyStore::Open(dir_.Sub("state.db"), clock_);
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    store_ = std::move(store).value();
    auto dlq = sqlite::SqliteDlq::Open(dir_.Sub("state.db"), clock_);
    ASSERT_TRUE(dlq.ok()) << dlq.error().ToString();
    dlq_ = std::move(dlq).value();
  }

  static ReconcilerOptions Options(int64_t batch = 100) {
    ReconcilerOptions o;
    o.stuck_for = std::chrono::milliseconds(kStuckFor);
    o.batch = batch;
    o.max_attempts = 3;
    o.retention = std::chrono::hours(24 * 7);
    o.tombstone_ttl = std::chrono::hours(24 * 30);
    return o;
  }
  std::unique_ptr<Reconciler> Make(ReconcilerOptions options = Options()) {
    auto r = Reconciler::Create(*store_, *dlq_, clock_, options,
                                [this](const IdempotencyRecord& rec) { return Redrive(rec); });
    EXPECT_TRUE(r.ok()) << r.error().ToString();
    return r.ok() ? std::move(r).value() : nullptr;
  }
  // Redrive stands for the pipeline's re-run: claim the key, then complete it (succeed_) or
  // release it (the plugin failed again).
  bool Redrive(const IdempotencyRecord& rec) {
    redriven_.push_back(rec.key);
    bodies_.push_back(rec.request_body);
    auto c = store_->Claim(rec.key, rec.fingerprint,
                           ClaimMeta{rec.plugin, rec.route, rec.level, rec.webhook_id, ""}, kLease);
    if (!c.ok() || c->kind != ClaimOutcome::Kind::kClaimed) return false;
    if (succeed_)
      return *store_->Complete(rec.key, c->fencing_token, 200, "text/plain", "ok") ==
             FencedWrite::kApplied;
    (void)store_->Release(rec.key, c->fencing_token);
    return false;
  }
  // Stuck claims |key| and lets its lease end (the worker "died"), storing |body| as request.
  void Stuck(const std::string& key, const std::string& body = "{\"order_id\":\"1001\"}") {
    ClaimMeta meta{"acme-orders", "order.created", 2, "msg_" + key.substr(0, 4), ""};
    meta.request_content_type = body.empty() ? "" : "application/json";
    meta.request_body = body;
    auto c = store_->Claim(key, kFp, meta, kLease);
    ASSERT_TRUE(c.ok() && c->kind == ClaimOutcome::Kind::kClaimed);
  }
  ReconcilerStats Run(Reconciler& r) {
    auto stats = r.RunOnce();
    EXPECT_TRUE(stats.ok()) << stats.error().ToString();
    return stats.ok() ? *stats : ReconcilerStats{};
  }
  std::vector<DlqEntry> ManualReview() {
    DlqFilter f;
    f.klass = DlqClass::kManualReview;
    auto list = dlq_->List(f);
    EXPECT_TRUE(list.ok()) << list.error().ToString();
    return list.ok() ? *list : std::vector<DlqEntry>{};
  }

  clawguard::testing::TempDir dir_;
  FixedClock clock_{kT0};
  std::unique_ptr<IdempotencyStore> store_;
  std::unique_ptr<Dlq> dlq_;
  bool succeed_ = true;
  std::vector<std::string> redriven_;
  std::vector<std::string> bodies_;
};

TEST_F(ReconcilerTest, RedrivesAStuckRecordFromItsStoredRequest) {
  const std::string key(64, 'a');
  Stuck(key);
  auto r = Make();
  ASSERT_NE(r, nullptr);
  clock_.Advance(kLease + kStuckFor - 1);
  EXPECT_EQ(Run(*r).stuck, 0);  // not stuck for long enough yet
  clock_.Advance(1);
  const ReconcilerStats s = Run(*r);
  EXPECT_EQ(s.stuck, 1);
  EXPECT_EQ(s.redriven, 1);
  EXPECT_EQ(s.completed, 1);
  EXPECT_EQ(s.dead_lettered, 0);
  ASSERT_EQ(bodies_.size(), 1u);
  EXPECT_EQ(bodies_[0], "{\"order_id\":\"1001\"}");
  auto rec = store_->Get(key);
  ASSERT_TRUE(rec.ok() && rec->has_value());
  EXPECT_EQ((*rec)->state, IdemState::kCompleted);
  EXPECT_FALSE((*rec)->has_request);
  clock_.Advance(kStuckFor);
  EXPECT_EQ(Run(*r).stuck, 0);
}

TEST_F(ReconcilerTest, ThreeFailedAttemptsThenExactlyOneManualReviewEntry) {
  const std::string key(64, 'b');
  Stuck(key);
  succeed_ = false;
  auto r = Make();
  ASSERT_NE(r, nullptr);
  int64_t redriven = 0, dead = 0;
  for (int run = 0; run < 8; ++run) {
    clock_.Advance(kLease + kStuckFor);
    const ReconcilerStats s = Run(*r);
    EXPECT_EQ(s.completed, 0);
    redriven += s.redriven;
    dead += s.dead_lettered;
    EXPECT_EQ(s.redriven, run < 3 ? 1 : 0) << run;
    EXPECT_EQ(s.dead_lettered, run == 3 ? 1 : 0) << run;
  }
  EXPECT_EQ(redriven, 3);
  EXPECT_EQ(dead, 1);
  const std::vector<DlqEntry> entries = ManualReview();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].event_key, key);
  EXPECT_EQ(entries[0].plugin, "acme-orders");
  EXPECT_EQ(entries[0].call_index, kDlqEventLevel);
  EXPECT_EQ(entries[0].occurrences, 1);
  EXPECT_EQ(entries[0].detail, "reconciler gave up after 3 attempts");
  auto full = dlq_->Get(entries[0].id);
  ASSERT_TRUE(full.ok() && full->has_value() && (*full)->request.has_value());
  EXPECT_EQ((*full)->request->body, "{\"order_id\":\"1001\"}");
  EXPECT_EQ((*full)->request->content_type, "application/json");
  EXPECT_EQ((*full)->request->webhook_id, "msg_bbbb");
  // The record stays in progress for an operator (idem reset, dlq replay).
  EXPECT_EQ((*store_->Get(key))->state, IdemState::kInProgress);
}

TEST_F(ReconcilerTest, WithoutAStoredRequestOnlyCountsThenDeadLettersWithoutRequest) {
  const std::string key(64, 'c');
  Stuck(key, "");
  auto r = Make();
  ASSERT_NE(r, nullptr);
  for (int run = 0; run < 5; ++run) {
    clock_.Advance(kLease + kStuckFor);
    EXPECT_EQ(Run(*r).dead_lettered, run == 3 ? 1 : 0) << run;
  }
  EXPECT_TRUE(redriven_.empty());
  const std::vector<DlqEntry> entries = ManualReview();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_FALSE(entries[0].has_request);
  EXPECT_EQ(entries[0].detail.rfind("reconciler gave up after 3 attempts", 0), 0u);
}

TEST_F(ReconcilerTest, EachRunHandlesAtMostOneBatch) {
  for (char c : std::string("12345")) Stuck(std::string(64, c));
  auto r = Make(Options(/*batch=*/2));
  ASSERT_NE(r, nullptr);
  clock_.Advance(kLease + kStuckFor);
  EXPECT_EQ(Run(*r).redriven, 2);
  EXPECT_EQ(Run(*r).redriven, 2);
  EXPECT_EQ(Run(*r).redriven, 1);
  EXPECT_EQ(Run(*r).redriven, 0);
  EXPECT_EQ(redriven_, (std::vector<std::string>{std::string(64, '1'), std::string(64, '2'),
                                                 std::string(64, '3'), std::string(64, '4'),
                                                 std::string(64, '5')}));
}

TEST_F(ReconcilerTest, PurgesCompletedRecordsPastTheRetention) {
  const std::string key(64, 'd');
  auto c =
      store_->Claim(key, kFp, ClaimMeta{"acme-orders", "order.created", 2, "msg_1", ""}, kLease);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(*store_->Complete(key, c->fencing_token, 200, "text/plain", "ok"),
            FencedWrite::kApplied);
  auto r = Make();
  ASSERT_NE(r, nullptr);
  clock_.Advance(7LL * 24 * 3'600'000);
  EXPECT_EQ(Run(*r).purged, 0);  // exactly the retention: kept
  clock_.Advance(1);
  EXPECT_EQ(Run(*r).purged, 1);
  auto hit =
      store_->Claim(key, kFp, ClaimMeta{"acme-orders", "order.created", 2, "msg_1", ""}, kLease);
  ASSERT_TRUE(hit.ok());
  EXPECT_EQ(hit->kind, ClaimOutcome::Kind::kTombstone);
  EXPECT_EQ(hit->record.tombstone_until_ms, clock_.NowMillis() + 30LL * 24 * 3'600'000);
}

TEST_F(ReconcilerTest, CreateRefusesBadOptions) {
  const auto redrive = [](const IdempotencyRecord&) { return true; };
  ReconcilerOptions o = Options(0);
  EXPECT_THAT(Reconciler::Create(*store_, *dlq_, clock_, o, redrive),
              HasReason(Reason::kConfigInvalid));
  o = Options(kMaxIdemBatch + 1);
  EXPECT_THAT(Reconciler::Create(*store_, *dlq_, clock_, o, redrive),
              HasReason(Reason::kConfigInvalid));
  o = Options();
  o.stuck_for = std::chrono::milliseconds(0);
  EXPECT_THAT(Reconciler::Create(*store_, *dlq_, clock_, o, redrive),
              HasReason(Reason::kConfigInvalid));
  o = Options();
  o.max_attempts = 0;
  EXPECT_THAT(Reconciler::Create(*store_, *dlq_, clock_, o, redrive),
              HasReason(Reason::kConfigInvalid));
  EXPECT_THAT(Reconciler::Create(*store_, *dlq_, clock_, Options(), nullptr),
              HasReason(Reason::kConfigInvalid));
  EXPECT_TRUE(Reconciler::Create(*store_, *dlq_, clock_, Options(kMaxIdemBatch), redrive).ok());
}

}  // namespace
}  // namespace clawguard::host
