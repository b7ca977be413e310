// idempotency_retention_test.cpp — conformance cases of IdempotencyStore's retention and
// reconciliation calls (stored request, Purge and tombstones, ListStuck, NoteReconcileAttempt),
// typed over the engines with a FixedClock; no sleeps.
//
// Like idempotency_store_test.cpp this file is compiled twice: into host_tests (SQLite) and into
// pg_tests with CLAWGUARD_TEST_PG (tests/pg/CMakeLists.txt), where it also runs on PostgreSQL.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "clawguard/clock.h"
#include "clawguard/sha256.h"
#include "clawguard/store/dlq.h"
#include "clawguard/store/idempotency_store.h"
#include "clawguard/store/outbox.h"
#include "sqlite/sqlite_idempotency_store.h"
#include "sqlite/sqlite_outbox.h"
#include "support/fixed_time.h"
#include "support/reason_matchers.h"
#include "support/temp_dir.h"
#ifdef CLAWGUARD_TEST_PG
#include "pg/support/pg_test_db.h"
#include "postgresql/pg_idempotency_store.h"
#include "postgresql/pg_outbox.h"
#endif

using ::clawguard::testing::HasReason;

namespace clawguard {
namespace {

using ::clawguard::testing::kLease;
using ::clawguard::testing::kT0;
constexpr int64_t kDay = 86'400'000;

class SqliteEngines {
 public:
  std::unique_ptr<IdempotencyStore> OpenStore(const Clock& clock) {
    auto s = sqlite::SqliteIdempotencyStore::Open(dir_.Sub("state.db"), clock);
    EXPECT_TRUE(s.ok()) << s.error().ToString();
    return s.ok() ? std::unique_ptr<IdempotencyStore>(std::move(s).value()) : nullptr;
  }
  std::unique_ptr<Outbox> OpenOutbox(const Clock& clock) {
    auto o = sqlite::SqliteOutbox::Open(dir_.Sub("state.db"), clock);
    EXPECT_TRUE(o.ok()) << o.error().ToString();
    return o.ok() ? std::unique_ptr<Outbox>(std::move(o).value()) : nullptr;
  }

 private:
  testing::TempDir dir_;
};

#ifdef CLAWGUARD_TEST_PG
class PgEngines {
 public:
  std::unique_ptr<IdempotencyStore> OpenStore(const Clock& clock) {
    auto s = pg::PgIdempotencyStore::Open(Pool(clock));
    EXPECT_TRUE(s.ok()) << s.error().ToString();
    return s.ok() ? std::unique_ptr<IdempotencyStore>(std::move(s).value()) : nullptr;
  }
  std::unique_ptr<Outbox> OpenOutbox(const Clock& clock) {
    auto o = pg::PgOutbox::Open(Pool(clock));
    EXPECT_TRUE(o.ok()) << o.error().ToString();
    return o.ok() ? std::unique_ptr<Outbox>(std::move(o).value()) : nullptr;
  }

 private:
  std::shared_ptr<pg::PgPool> Pool(const Clock& clock) {
    pg::PgOptions options;
    options.clock = &clock;
    auto pool = pg::PgPool::Create(db_.url(), options);
    EXPECT_TRUE(pool.ok()) << pool.error().ToString();
    return pool.ok() ? *pool : nullptr;
  }
  testing::PgTestDb db_;
};
#endif

template <typename Engines>
class IdempotencyRetentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = engines_.OpenStore(clock_);
    outbox_ = engines_.OpenOutbox(clock_);
    ASSERT_NE(store_, nullptr);
    ASSERT_NE(outbox_, nullptr);
  }

  static ClaimMeta Meta(const std::string& body = "{\"order_id\":\"1001\"}",
                        const std::string& id = "msg_1") {
    ClaimMeta m{"acme-orders", "order.created", 2, id, ""};
    m.request_content_type = "application/json";
    m.request_body = body;
    return m;
  }
  ClaimOutcome MustClaim(const std::string& key, const std::string& fp,
                         const ClaimMeta& meta = Meta()) {
    auto c = store_->Claim(key, fp, meta, kLease);
    EXPECT_TRUE(c.ok()) << c.error().ToString();
    return c.ok() ? *c : ClaimOutcome{};
  }
  // Completed claims and completes |key| at the current time with 201 "done".
  void Completed(const std::string& key, const std::string& fp = std::string(64, 'f')) {
    const ClaimOutcome c = MustClaim(key, fp);
    ASSERT_EQ(c.kind, ClaimOutcome::Kind::kClaimed);
    ASSERT_EQ(*store_->Complete(key, c.fencing_token, 201, "application/json", "done"),
              FencedWrite::kApplied);
  }
  OutboxRow Row(const std::string& key, int64_t token, int64_t i) {
    OutboxRow r;
    r.event_key = key;
    r.fencing_token = token;
    r.call_index = i;
    r.method = "POST";
    r.path = "/orders/1001/fulfil";
    r.body = "{}";
    r.body_sha256 = Sha256Hex(r.body);
    r.idempotency_key = "erp-key-" + std::to_string(i);
    return r;
  }
  std::vector<std::string> StuckKeys(int64_t stuck_for, int64_t limit = 100) {
    auto stuck = store_->ListStuck(clock_.NowMillis(), stuck_for, limit);
    EXPECT_TRUE(stuck.ok()) << stuck.error().ToString();
    std::vector<std::string> keys;
    if (stuck.ok()) {
      for (const IdempotencyRecord& r : *stuck) keys.push_back(r.key);
    }
    return keys;
  }

  Engines engines_;
  FixedClock clock_{kT0};
  std::unique_ptr<IdempotencyStore> store_;
  std::unique_ptr<Outbox> outbox_;
};

#ifdef CLAWGUARD_TEST_PG
using RetentionEngines = ::testing::Types<SqliteEngines, PgEngines>;
#else
using RetentionEngines = ::testing::Types<SqliteEngines>;
#endif
TYPED_TEST_SUITE(IdempotencyRetentionTest, RetentionEngines);

const std::string kRetainedKey = std::string(64, 'a');
const std::string kRetainedFp = std::string(64, 'f');

TYPED_TEST(IdempotencyRetentionTest, StoresTheFirstClaimsRequestAndCompleteDeletesIt) {
  const std::string body("{\"order_id\":\"1001\",\"x\":\"\xff\0\"}", 28);
  (void)this->MustClaim(kRetainedKey, kRetainedFp, this->Meta(body, "msg_1"));
  this->clock_.Advance(kLease);
  const ClaimOutcome retry =
      this->MustClaim(kRetainedKey, kRetainedFp, this->Meta("{\"other\":1}", "msg_2"));
  ASSERT_EQ(retry.kind, ClaimOutcome::Kind::kClaimed);
  EXPECT_TRUE(retry.taken_over);
  auto rec = this->store_->Get(kRetainedKey);
  ASSERT_TRUE(rec.ok() && rec->has_value());
  EXPECT_TRUE((*rec)->has_request);
  EXPECT_EQ((*rec)->request_content_type, "application/json");
  EXPECT_EQ((*rec)->request_body, body);  // the first claim's, bytes intact
  EXPECT_EQ((*rec)->webhook_id, "msg_2");

  ASSERT_EQ(*this->store_->Complete(kRetainedKey, retry.fencing_token, 200, "text/plain", "ok"),
            FencedWrite::kApplied);
  rec = this->store_->Get(kRetainedKey);
  ASSERT_TRUE(rec.ok() && rec->has_value());
  EXPECT_FALSE((*rec)->has_request);
  EXPECT_TRUE((*rec)->request_content_type.empty());
  EXPECT_TRUE((*rec)->request_body.empty());
  EXPECT_EQ((*rec)->body, "ok");
}

TYPED_TEST(IdempotencyRetentionTest,
           OversizedOrEmptyRequestIsNotStoredAndAResetLetsTheNextClaimStoreIt) {
  const std::string key2(64, 'b');
  (void)this->MustClaim(kRetainedKey, kRetainedFp,
                        this->Meta(std::string(kMaxDlqRequestBody + 1, 'x')));
  ClaimMeta empty = this->Meta("");
  empty.request_content_type.clear();
  (void)this->MustClaim(key2, kRetainedFp, empty);
  EXPECT_FALSE((*this->store_->Get(kRetainedKey))->has_request);
  EXPECT_FALSE((*this->store_->Get(key2))->has_request);

  // No request stored yet: the takeover stores its own.
  this->clock_.Advance(kLease);
  (void)this->MustClaim(kRetainedKey, kRetainedFp, this->Meta("{\"second\":1}"));
  EXPECT_EQ((*this->store_->Get(kRetainedKey))->request_body, "{\"second\":1}");
  // Reset deletes it; the next claim (any fingerprint) stores its own.
  ASSERT_TRUE(*this->store_->Reset(kRetainedKey));
  EXPECT_FALSE((*this->store_->Get(kRetainedKey))->has_request);
  (void)this->MustClaim(kRetainedKey, std::string(64, 'e'), this->Meta("{\"third\":1}"));
  EXPECT_EQ((*this->store_->Get(kRetainedKey))->request_body, "{\"third\":1}");
}

TYPED_TEST(IdempotencyRetentionTest, PurgeLeavesATombstoneThatAClaimMeetsUntilItIsCleared) {
  const ClaimOutcome c = this->MustClaim(kRetainedKey, kRetainedFp);
  ASSERT_EQ(this->outbox_->Append(this->Row(kRetainedKey, c.fencing_token, 0))->kind,
            OutboxAppend::Kind::kAppended);
  const int64_t sent_at = this->clock_.NowMillis();
  ASSERT_TRUE(
      this->outbox_->Claim(kRetainedKey, 0, sent_at, "send-a", sent_at + 1'000)->has_value());
  ASSERT_TRUE(this->outbox_->MarkAnswered(kRetainedKey, 0, "send-a", 201, "{}").ok());
  ASSERT_EQ(*this->store_->Complete(kRetainedKey, c.fencing_token, 201, "application/json", "done"),
            FencedWrite::kApplied);

  this->clock_.Advance(8 * kDay);
  const int64_t now = this->clock_.NowMillis();
  auto purged = this->store_->Purge(now - 7 * kDay, now + 30 * kDay, 100);
  ASSERT_TRUE(purged.ok()) << purged.error().ToString();
  EXPECT_EQ(*purged, 1);
  EXPECT_FALSE(this->store_->Get(kRetainedKey)->has_value());
  EXPECT_TRUE(this->outbox_->ListEvent(kRetainedKey)->empty());  // its outbox rows went with it
  EXPECT_EQ(*this->store_->Purge(now - 7 * kDay, now + 30 * kDay, 100), 0);

  const ClaimOutcome hit = this->MustClaim(kRetainedKey, kRetainedFp, this->Meta("{}", "msg_late"));
  ASSERT_EQ(hit.kind, ClaimOutcome::Kind::kTombstone);
  EXPECT_EQ(hit.record.key, kRetainedKey);
  EXPECT_EQ(hit.record.fingerprint, kRetainedFp);
  EXPECT_EQ(hit.record.status, 201);
  EXPECT_EQ(hit.record.tombstone_until_ms, now + 30 * kDay);
  EXPECT_TRUE(hit.record.body.empty());                        // the answer is gone
  EXPECT_FALSE(this->store_->Get(kRetainedKey)->has_value());  // nothing written
  // Fingerprint first, as for a record.
  EXPECT_EQ(this->MustClaim(kRetainedKey, std::string(64, 'e')).kind,
            ClaimOutcome::Kind::kFingerprintMismatch);
  EXPECT_THAT(this->store_->NoteReconcileAttempt(kRetainedKey), HasReason(Reason::kNotFound));

  const int64_t generation = *this->store_->Generation();
  EXPECT_TRUE(*this->store_->ClearTombstone(kRetainedKey));
  EXPECT_EQ(*this->store_->Generation(), generation + 1);
  EXPECT_FALSE(*this->store_->ClearTombstone(kRetainedKey));
  EXPECT_FALSE(*this->store_->ClearTombstone(std::string(64, '0')));
  const ClaimOutcome again =
      this->MustClaim(kRetainedKey, kRetainedFp, this->Meta("{\"replayed\":1}"));
  ASSERT_EQ(again.kind, ClaimOutcome::Kind::kClaimed);
  EXPECT_EQ(again.fencing_token, 2);  // tokens never go back
  EXPECT_EQ((*this->store_->Get(kRetainedKey))->request_body, "{\"replayed\":1}");
}

TYPED_TEST(IdempotencyRetentionTest, ResetAlsoClearsATombstone) {
  this->Completed(kRetainedKey);
  this->clock_.Advance(kDay);
  ASSERT_EQ(*this->store_->Purge(this->clock_.NowMillis(), this->clock_.NowMillis() + kDay, 10), 1);
  EXPECT_TRUE(*this->store_->Reset(kRetainedKey));
  EXPECT_EQ(this->MustClaim(kRetainedKey, std::string(64, 'e')).kind, ClaimOutcome::Kind::kClaimed);
}

TYPED_TEST(IdempotencyRetentionTest, PurgeKeepsRecentInProgressAndUnfinishedRecords) {
  const std::string old_done(64, '1'), old_open(64, '2'), old_pending(64, '3'), recent(64, '4');
  this->Completed(old_done);
  (void)this->MustClaim(old_open, kRetainedFp);
  const ClaimOutcome p = this->MustClaim(old_pending, kRetainedFp);
  ASSERT_EQ(this->outbox_->Append(this->Row(old_pending, p.fencing_token, 0))->kind,
            OutboxAppend::Kind::kAppended);
  ASSERT_EQ(*this->store_->Complete(old_pending, p.fencing_token, 202, "", ""),
            FencedWrite::kApplied);
  this->clock_.Advance(2 * kDay);
  this->Completed(recent);
  const int64_t now = this->clock_.NowMillis();
  EXPECT_EQ(*this->store_->Purge(now - kDay, now + kDay, 100), 1);
  EXPECT_FALSE(this->store_->Get(old_done)->has_value());
  EXPECT_TRUE(this->store_->Get(old_open)->has_value());
  EXPECT_TRUE(this->store_->Get(old_pending)->has_value());  // an ERP call is still pending
  EXPECT_EQ(this->outbox_->ListEvent(old_pending)->size(), 1u);
  EXPECT_TRUE(this->store_->Get(recent)->has_value());
  // Its call answered, the record goes at the next purge.
  ASSERT_TRUE(this->outbox_->Claim(old_pending, 0, now, "send-a", now + 1'000)->has_value());
  ASSERT_TRUE(this->outbox_->MarkAnswered(old_pending, 0, "send-a", 200, "{}").ok());
  EXPECT_EQ(*this->store_->Purge(now - kDay, now + kDay, 100), 1);
  EXPECT_FALSE(this->store_->Get(old_pending)->has_value());
}

TYPED_TEST(IdempotencyRetentionTest, PurgeTakesAtMostLimitOldestFirst) {
  std::vector<std::string> keys;
  for (char c : std::string("56789")) {
    keys.emplace_back(64, c);
    this->Completed(keys.back());
    this->clock_.Advance(1000);
  }
  this->clock_.Advance(kDay);
  const int64_t now = this->clock_.NowMillis();
  EXPECT_EQ(*this->store_->Purge(now, now + kDay, 2), 2);
  EXPECT_FALSE(this->store_->Get(keys[0])->has_value());
  EXPECT_FALSE(this->store_->Get(keys[1])->has_value());
  EXPECT_TRUE(this->store_->Get(keys[2])->has_value());
  EXPECT_EQ(*this->store_->Purge(now, now + kDay, 2), 2);
  EXPECT_EQ(*this->store_->Purge(now, now + kDay, 2), 1);
  EXPECT_EQ(*this->store_->Purge(now, now + kDay, 2), 0);
  EXPECT_THAT(this->store_->Purge(now, now + kDay, 0), HasReason(Reason::kUsage));
  EXPECT_THAT(this->store_->Purge(now, now + kDay, kMaxIdemBatch + 1), HasReason(Reason::kUsage));
}

TYPED_TEST(IdempotencyRetentionTest, TombstonesExpire) {
  const std::string revived(64, 'c'), deleted(64, 'd');
  this->Completed(revived);
  this->Completed(deleted);
  this->clock_.Advance(kDay);
  int64_t now = this->clock_.NowMillis();
  ASSERT_EQ(*this->store_->Purge(now, now + 1000, 10), 2);
  this->clock_.Advance(999);
  EXPECT_EQ(this->MustClaim(revived, kRetainedFp).kind, ClaimOutcome::Kind::kTombstone);
  this->clock_.Advance(1);  // until == now: over
  // A claim of an expired tombstone is a new event (with the next token: tokens never go back).
  const ClaimOutcome fresh = this->MustClaim(revived, std::string(64, 'e'));
  ASSERT_EQ(fresh.kind, ClaimOutcome::Kind::kClaimed);
  EXPECT_FALSE(fresh.taken_over);
  EXPECT_EQ(fresh.fencing_token, 2);
  EXPECT_EQ(fresh.record.created_ms, this->clock_.NowMillis());
  EXPECT_EQ(fresh.record.status, 0);
  // Purge deletes the other expired tombstone (not the revived record).
  now = this->clock_.NowMillis();
  EXPECT_EQ(*this->store_->Purge(now - kDay, now + kDay, 10), 0);
  EXPECT_FALSE(*this->store_->ClearTombstone(deleted));  // gone
  const ClaimOutcome anew = this->MustClaim(deleted, kRetainedFp);
  ASSERT_EQ(anew.kind, ClaimOutcome::Kind::kClaimed);
  EXPECT_EQ(anew.fencing_token, 1);
  EXPECT_TRUE(this->store_->Get(revived)->has_value());
}

TYPED_TEST(IdempotencyRetentionTest, ListStuckFindsEndedLeasesFewestAttemptsThenOldestFirst) {
  const std::string expired(64, '1'), released(64, '2'), live(64, '3'), done(64, '4'),
      reset(64, '5');
  (void)this->MustClaim(expired, kRetainedFp, this->Meta("{\"e\":1}"));  // lease ends at T0 + 30 s
  this->Completed(done);
  (void)this->MustClaim(reset, kRetainedFp);
  ASSERT_TRUE(*this->store_->Reset(reset));  // waits for its next delivery: not stuck
  this->clock_.Advance(2'000);
  const ClaimOutcome r = this->MustClaim(released, kRetainedFp, this->Meta("{\"r\":1}"));
  ASSERT_EQ(*this->store_->Release(released, r.fencing_token),
            FencedWrite::kApplied);             // at T0 + 2 s
  EXPECT_TRUE(this->StuckKeys(5'000).empty());  // released 0 s ago
  this->clock_.Advance(38'000);                 // T0 + 40 s
  (void)this->MustClaim(live, kRetainedFp);

  // Stuck since: released T0 + 2 s, expired T0 + 30 s.
  EXPECT_EQ(this->StuckKeys(5'000), (std::vector<std::string>{released, expired}));
  EXPECT_EQ(this->StuckKeys(20'000), (std::vector<std::string>{released}));
  EXPECT_EQ(this->StuckKeys(5'000, 1), (std::vector<std::string>{released}));
  auto stuck = this->store_->ListStuck(this->clock_.NowMillis(), 5'000, 10);
  ASSERT_TRUE(stuck.ok());
  ASSERT_EQ(stuck->size(), 2u);
  EXPECT_TRUE((*stuck)[1].has_request);
  EXPECT_EQ((*stuck)[1].request_body, "{\"e\":1}");
  EXPECT_EQ((*stuck)[1].plugin, "acme-orders");
  EXPECT_EQ((*stuck)[1].state, IdemState::kInProgress);

  // A record the reconciler tried moves behind the untried ones.
  EXPECT_EQ(*this->store_->NoteReconcileAttempt(released), 1);
  EXPECT_EQ(this->StuckKeys(5'000),
            (std::vector<std::string>{expired}));  // noted now: stuck_for later
  this->clock_.Advance(5'000);
  EXPECT_EQ(this->StuckKeys(5'000), (std::vector<std::string>{expired, released}));
  EXPECT_THAT(this->store_->ListStuck(0, 0, 0), HasReason(Reason::kUsage));
  EXPECT_THAT(this->store_->ListStuck(0, -1, 10), HasReason(Reason::kUsage));
}

TYPED_TEST(IdempotencyRetentionTest, NoteReconcileAttemptCountsUntilCompleteOrReset) {
  const ClaimOutcome c = this->MustClaim(kRetainedKey, kRetainedFp);
  EXPECT_EQ(*this->store_->NoteReconcileAttempt(kRetainedKey), 1);
  EXPECT_EQ(*this->store_->NoteReconcileAttempt(kRetainedKey), 2);
  EXPECT_EQ((*this->store_->Get(kRetainedKey))->reconcile_attempts, 2);
  ASSERT_EQ(*this->store_->Complete(kRetainedKey, c.fencing_token, 200, "", "x"),
            FencedWrite::kApplied);
  EXPECT_EQ((*this->store_->Get(kRetainedKey))->reconcile_attempts, 0);
  EXPECT_EQ(*this->store_->NoteReconcileAttempt(kRetainedKey), 1);
  ASSERT_TRUE(*this->store_->Reset(kRetainedKey));
  EXPECT_EQ((*this->store_->Get(kRetainedKey))->reconcile_attempts, 0);
  const auto missing = this->store_->NoteReconcileAttempt(std::string(64, '0'));
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing, HasReason(Reason::kNotFound));
}

}  // namespace
}  // namespace clawguard
