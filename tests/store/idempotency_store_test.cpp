// idempotency_store_test.cpp — conformance suite of IdempotencyStore and Outbox, typed over the
// engines (a factory per engine). Fixed time through FixedClock; no sleeps.
// Over 500 lines on purpose: a conformance suite is one typed fixture; every case runs on every
// engine, so a split would instantiate the engines once per file.
//
// This one file is compiled twice: into host_tests (SQLite only) and into pg_tests with
// CLAWGUARD_TEST_PG (tests/pg/CMakeLists.txt), where SQLite and PostgreSQL run the same typed
// cases, the latter on a fresh database of the fixture cluster per test.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "clawguard/clock.h"
#include "clawguard/sha256.h"
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

// SqliteFactory opens engines on one database file in a temp dir.
class SqliteFactory {
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
// PgFactory opens engines on one fresh database; every Open* gets its own connection pool, with
// the test's clock injected (the production setting is the database clock).
class PgFactory {
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

template <typename Factory>
class StoreConformanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = factory_.OpenStore(clock_);
    outbox_ = factory_.OpenOutbox(clock_);
    ASSERT_NE(store_, nullptr);
    ASSERT_NE(outbox_, nullptr);
  }

  static ClaimMeta Meta(const std::string& id = "msg_1") {
    return ClaimMeta{"acme-orders", "order.created", 2, id, "client-key-1"};
  }
  ClaimOutcome MustClaim(const std::string& key, const std::string& fp,
                         const std::string& id = "msg_1") {
    auto c = store_->Claim(key, fp, Meta(id), kLease);
    EXPECT_TRUE(c.ok()) << c.error().ToString();
    return c.ok() ? *c : ClaimOutcome{};
  }
  OutboxRow Row(const std::string& key, int64_t token, int64_t i, const std::string& body) {
    OutboxRow r;
    r.event_key = key;
    r.fencing_token = token;
    r.call_index = i;
    r.method = "POST";
    r.path = "/orders/1001/fulfil";
    r.body = body;
    r.body_sha256 = Sha256Hex(body);
    r.idempotency_key = "erp-key-" + std::to_string(i);
    return r;
  }

  Factory factory_;
  FixedClock clock_{kT0};
  std::unique_ptr<IdempotencyStore> store_;
  std::unique_ptr<Outbox> outbox_;
};

#ifdef CLAWGUARD_TEST_PG
using StoreEngines = ::testing::Types<SqliteFactory, PgFactory>;
#else
using StoreEngines = ::testing::Types<SqliteFactory>;
#endif
TYPED_TEST_SUITE(StoreConformanceTest, StoreEngines);

const std::string kKey = std::string(64, 'a');
const std::string kFp = std::string(64, 'f');

TYPED_TEST(StoreConformanceTest, ClaimsANewKeyWithTokenOne) {
  const ClaimOutcome c = this->MustClaim(kKey, kFp);
  EXPECT_EQ(c.kind, ClaimOutcome::Kind::kClaimed);
  EXPECT_EQ(c.fencing_token, 1);
  EXPECT_FALSE(c.taken_over);
  auto rec = this->store_->Get(kKey);
  ASSERT_TRUE(rec.ok() && rec->has_value());
  const IdempotencyRecord& r = **rec;
  EXPECT_EQ(r.state, IdemState::kInProgress);
  EXPECT_EQ(r.lease_until_ms, kT0 + kLease);
  EXPECT_EQ(r.fencing_token, 1);
  EXPECT_EQ(r.fingerprint, kFp);
  EXPECT_EQ(r.plugin, "acme-orders");
  EXPECT_EQ(r.route, "order.created");
  EXPECT_EQ(r.level, 2);
  EXPECT_EQ(r.webhook_id, "msg_1");
  EXPECT_EQ(r.x_idempotency_key, "client-key-1");
  EXPECT_EQ(r.created_ms, kT0);
  // The claim's record is the stored one (an engine may build it without reading it back).
  const IdempotencyRecord& claimed = c.record;
  EXPECT_EQ(claimed.key, r.key);
  EXPECT_EQ(claimed.plugin, r.plugin);
  EXPECT_EQ(claimed.route, r.route);
  EXPECT_EQ(claimed.level, r.level);
  EXPECT_EQ(claimed.fingerprint, r.fingerprint);
  EXPECT_EQ(claimed.state, r.state);
  EXPECT_EQ(claimed.lease_until_ms, r.lease_until_ms);
  EXPECT_EQ(claimed.fencing_token, r.fencing_token);
  EXPECT_EQ(claimed.status, r.status);
  EXPECT_EQ(claimed.content_type, r.content_type);
  EXPECT_EQ(claimed.body, r.body);
  EXPECT_EQ(claimed.created_ms, r.created_ms);
  EXPECT_EQ(claimed.updated_ms, r.updated_ms);
  EXPECT_EQ(claimed.webhook_id, r.webhook_id);
  EXPECT_EQ(claimed.x_idempotency_key, r.x_idempotency_key);
  EXPECT_EQ(claimed.has_request, r.has_request);
  EXPECT_EQ(claimed.reconcile_attempts, r.reconcile_attempts);
  EXPECT_EQ(claimed.tombstone_until_ms, r.tombstone_until_ms);
  // With a request to store: has_request as stored.
  ClaimMeta with_request = this->Meta("msg_2");
  with_request.request_content_type = "application/json";
  with_request.request_body = R"({"id":1})";
  const std::string key2(64, 'b');
  auto c2 = this->store_->Claim(key2, kFp, with_request, kLease);
  ASSERT_TRUE(c2.ok()) << c2.error().ToString();
  auto rec2 = this->store_->Get(key2);
  ASSERT_TRUE(rec2.ok() && rec2->has_value());
  EXPECT_TRUE((*rec2)->has_request);
  EXPECT_EQ(c2->record.has_request, (*rec2)->has_request);
  EXPECT_EQ(c2->record.webhook_id, "msg_2");
}

TYPED_TEST(StoreConformanceTest, ReplaysTheCompletedAnswer) {
  const ClaimOutcome c = this->MustClaim(kKey, kFp);
  auto done = this->store_->Complete(kKey, c.fencing_token, 201, "application/json",
                                     std::string("{\"ok\":1}\0x", 10));
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(*done, FencedWrite::kApplied);
  this->clock_.Advance(3'600'000);
  const ClaimOutcome again = this->MustClaim(kKey, kFp, "msg_2");
  ASSERT_EQ(again.kind, ClaimOutcome::Kind::kCompleted);
  EXPECT_EQ(again.record.status, 201);
  EXPECT_EQ(again.record.content_type, "application/json");
  EXPECT_EQ(again.record.body, std::string("{\"ok\":1}\0x", 10));
}

TYPED_TEST(StoreConformanceTest, OtherFingerprintIsMismatchAndTheRecordIsUntouched) {
  const ClaimOutcome c = this->MustClaim(kKey, kFp);
  ASSERT_TRUE(this->store_->Complete(kKey, c.fencing_token, 200, "text/plain", "done").ok());
  auto before = this->store_->Get(kKey);
  this->clock_.Advance(1000);
  const ClaimOutcome m = this->MustClaim(kKey, std::string(64, 'e'), "msg_9");
  EXPECT_EQ(m.kind, ClaimOutcome::Kind::kFingerprintMismatch);
  auto after = this->store_->Get(kKey);
  ASSERT_TRUE(before.ok() && after.ok() && before->has_value() && after->has_value());
  EXPECT_EQ((*after)->updated_ms, (*before)->updated_ms);
  EXPECT_EQ((*after)->webhook_id, "msg_1");
  EXPECT_EQ((*after)->fingerprint, kFp);
  EXPECT_EQ((*after)->body, "done");
  // Checked first: also on a live in-progress record.
  const std::string key2(64, 'b');
  (void)this->MustClaim(key2, kFp);
  EXPECT_EQ(this->MustClaim(key2, std::string(64, 'e')).kind,
            ClaimOutcome::Kind::kFingerprintMismatch);
}

TYPED_TEST(StoreConformanceTest, LiveLeaseIsInProgressWithRetryAfter) {
  (void)this->MustClaim(kKey, kFp);
  this->clock_.Advance(10'000);
  const ClaimOutcome c = this->MustClaim(kKey, kFp);
  EXPECT_EQ(c.kind, ClaimOutcome::Kind::kInProgress);
  EXPECT_EQ(c.retry_after_ms, 20'000);
}

TYPED_TEST(StoreConformanceTest, ExpiredLeaseIsTakenOverWithTheNextToken) {
  (void)this->MustClaim(kKey, kFp);
  this->clock_.Advance(kLease);  // lease_until == now: expired
  const ClaimOutcome c = this->MustClaim(kKey, kFp, "msg_retry");
  EXPECT_EQ(c.kind, ClaimOutcome::Kind::kClaimed);
  EXPECT_EQ(c.fencing_token, 2);
  EXPECT_TRUE(c.taken_over);
  EXPECT_EQ(c.record.lease_until_ms, kT0 + 2 * kLease);
  EXPECT_EQ(c.record.webhook_id, "msg_retry");
}

TYPED_TEST(StoreConformanceTest, StaleWorkerIsFencedAfterTakeover) {
  const ClaimOutcome first = this->MustClaim(kKey, kFp);
  auto a1 = this->outbox_->Append(this->Row(kKey, first.fencing_token, 0, "{\"qty\":1}"));
  ASSERT_TRUE(a1.ok());
  EXPECT_EQ(a1->kind, OutboxAppend::Kind::kAppended);
  this->clock_.Advance(kLease + 1);
  const ClaimOutcome second = this->MustClaim(kKey, kFp);
  ASSERT_EQ(second.fencing_token, 2);

  EXPECT_EQ(*this->store_->Renew(kKey, first.fencing_token, kLease), FencedWrite::kFenced);
  EXPECT_EQ(*this->store_->Complete(kKey, first.fencing_token, 200, "", "stale"),
            FencedWrite::kFenced);
  EXPECT_EQ(*this->store_->Release(kKey, first.fencing_token), FencedWrite::kFenced);
  auto stale = this->outbox_->Append(this->Row(kKey, first.fencing_token, 1, "{}"));
  ASSERT_TRUE(stale.ok());
  EXPECT_EQ(stale->kind, OutboxAppend::Kind::kFenced);
  EXPECT_FALSE(this->outbox_->Get(kKey, 1)->has_value());

  // The new worker meets call 0's row, and may write call 1.
  auto again = this->outbox_->Append(this->Row(kKey, second.fencing_token, 0, "{\"qty\":1}"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->kind, OutboxAppend::Kind::kExisting);
  EXPECT_EQ(again->row.fencing_token, 2);
  EXPECT_EQ(this->outbox_->Append(this->Row(kKey, second.fencing_token, 1, "{}"))->kind,
            OutboxAppend::Kind::kAppended);
  EXPECT_EQ(*this->store_->Renew(kKey, second.fencing_token, kLease), FencedWrite::kApplied);
  EXPECT_EQ(*this->store_->Complete(kKey, second.fencing_token, 200, "", "fresh"),
            FencedWrite::kApplied);
  EXPECT_EQ((*this->store_->Get(kKey))->body, "fresh");
  // Completed: even the current token cannot complete twice or append.
  EXPECT_EQ(*this->store_->Complete(kKey, second.fencing_token, 500, "", "x"),
            FencedWrite::kFenced);
  EXPECT_EQ(this->outbox_->Append(this->Row(kKey, second.fencing_token, 2, "{}"))->kind,
            OutboxAppend::Kind::kFenced);
}

TYPED_TEST(StoreConformanceTest, ReleaseLeavesTheKeyRetryable) {
  const ClaimOutcome c = this->MustClaim(kKey, kFp);
  EXPECT_EQ(*this->store_->Release(kKey, c.fencing_token), FencedWrite::kApplied);
  const ClaimOutcome retry = this->MustClaim(kKey, kFp);
  EXPECT_EQ(retry.kind, ClaimOutcome::Kind::kClaimed);
  EXPECT_EQ(retry.fencing_token, 2);
}

TYPED_TEST(StoreConformanceTest, ConcurrentClaimsFromEightThreadsHaveOneWinner) {
  constexpr int kThreads = 8;
  for (bool separate_connections : {false, true}) {
    const std::string key = separate_connections ? std::string(64, 'c') : std::string(64, 'd');
    std::vector<std::unique_ptr<IdempotencyStore>> stores;
    for (int i = 0; i < kThreads && separate_connections; ++i)
      stores.push_back(this->factory_.OpenStore(this->clock_));
    std::atomic<int> claimed{0}, in_progress{0}, errors{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      IdempotencyStore* s =
          separate_connections ? stores[static_cast<size_t>(i)].get() : this->store_.get();
      threads.emplace_back([&, s] {
        while (!go.load()) std::this_thread::yield();
        auto c = s->Claim(key, kFp, this->Meta(), kLease);
        if (!c.ok())
          ++errors;
        else if (c->kind == ClaimOutcome::Kind::kClaimed)
          ++claimed;
        else if (c->kind == ClaimOutcome::Kind::kInProgress)
          ++in_progress;
      });
    }
    go = true;
    for (auto& t : threads) t.join();
    EXPECT_EQ(errors.load(), 0) << separate_connections;
    EXPECT_EQ(claimed.load(), 1) << separate_connections;
    EXPECT_EQ(in_progress.load(), kThreads - 1) << separate_connections;
  }
}

TYPED_TEST(StoreConformanceTest, CompletedAnswersSurviveReopen) {
  const ClaimOutcome c = this->MustClaim(kKey, kFp);
  ASSERT_EQ(*this->store_->Complete(kKey, c.fencing_token, 200, "application/json", "{\"id\":7}"),
            FencedWrite::kApplied);
  this->store_.reset();
  this->outbox_.reset();
  this->store_ = this->factory_.OpenStore(this->clock_);
  ASSERT_NE(this->store_, nullptr);
  const ClaimOutcome replay = this->MustClaim(kKey, kFp);
  ASSERT_EQ(replay.kind, ClaimOutcome::Kind::kCompleted);
  EXPECT_EQ(replay.record.body, "{\"id\":7}");
}

TYPED_TEST(StoreConformanceTest, ResetKeepsTokensMonotonicAndBumpsGeneration) {
  EXPECT_EQ(*this->store_->Generation(), 0);
  const ClaimOutcome c = this->MustClaim(kKey, kFp);
  ASSERT_EQ(*this->store_->Complete(kKey, c.fencing_token, 200, "", "x"), FencedWrite::kApplied);
  EXPECT_TRUE(*this->store_->Reset(kKey));
  EXPECT_EQ(*this->store_->Generation(), 1);
  EXPECT_FALSE(*this->store_->Reset(std::string(64, '0')));
  // After a reset any fingerprint may claim, with the next token.
  const ClaimOutcome after = this->MustClaim(kKey, std::string(64, 'e'));
  EXPECT_EQ(after.kind, ClaimOutcome::Kind::kClaimed);
  EXPECT_EQ(after.fencing_token, 2);
  EXPECT_EQ(*this->store_->BumpGeneration(), 2);
}

TYPED_TEST(StoreConformanceTest, OutboxRowsMatchMismatchAndMoveThroughStates) {
  const ClaimOutcome c = this->MustClaim(kKey, kFp);
  ASSERT_EQ(this->outbox_->Append(this->Row(kKey, c.fencing_token, 0, "{\"a\":1}"))->kind,
            OutboxAppend::Kind::kAppended);
  this->clock_.Advance(5);
  ASSERT_EQ(this->outbox_->Append(this->Row(kKey, c.fencing_token, 1, "{\"b\":2}"))->kind,
            OutboxAppend::Kind::kAppended);
  auto mismatch = this->outbox_->Append(this->Row(kKey, c.fencing_token, 0, "{\"a\":2}"));
  ASSERT_TRUE(mismatch.ok());
  EXPECT_EQ(mismatch->kind, OutboxAppend::Kind::kMismatch);
  EXPECT_EQ(mismatch->row.body, "{\"a\":1}");
  // An outbox row of a key that was never claimed is fenced.
  EXPECT_EQ(this->outbox_->Append(this->Row(std::string(64, '9'), 1, 0, "{}"))->kind,
            OutboxAppend::Kind::kFenced);

  auto due = this->outbox_->DuePending(kT0 + 10, 10);
  ASSERT_TRUE(due.ok());
  ASSERT_EQ(due->size(), 2u);
  EXPECT_EQ((*due)[0].call_index, 0);
  EXPECT_EQ((*due)[1].call_index, 1);

  auto claimed = this->outbox_->Claim(kKey, 0, kT0 + 10, "send-a", kT0 + 60'000);
  ASSERT_TRUE(claimed.ok()) << claimed.error().ToString();
  ASSERT_TRUE(claimed->has_value());
  EXPECT_EQ((*claimed)->state, OutboxState::kSent);
  EXPECT_EQ((*claimed)->attempts, 1);
  EXPECT_EQ((*claimed)->claimed_by, "send-a");
  EXPECT_EQ((*claimed)->next_attempt_ms, kT0 + 60'000);
  EXPECT_EQ((*claimed)->body, "{\"a\":1}");
  auto sent = this->outbox_->Get(kKey, 0);
  ASSERT_TRUE(sent.ok() && sent->has_value());
  EXPECT_EQ((*sent)->state, OutboxState::kSent);
  EXPECT_EQ((*sent)->attempts, 1);
  EXPECT_EQ((*sent)->claimed_by, "send-a");
  EXPECT_EQ((*sent)->idempotency_key, "erp-key-0");
  EXPECT_EQ(this->outbox_->DuePending(kT0 + 10, 10)->size(),
            1u);  // call 0 is its send's until kT0 + 60 s
  ASSERT_TRUE(this->outbox_->MarkAnswered(kKey, 0, "send-a", 201, "{\"fulfilled\":true}").ok());
  auto answered = this->outbox_->Get(kKey, 0);
  EXPECT_EQ((*answered)->state, OutboxState::kAnswered);
  EXPECT_EQ((*answered)->reply_status, 201);
  EXPECT_EQ((*answered)->reply_body, "{\"fulfilled\":true}");
  EXPECT_EQ((*answered)->claimed_by, "");
  ASSERT_TRUE(this->outbox_->MarkDead(kKey, 1, /*owner=*/"").ok());
  EXPECT_EQ((*this->outbox_->Get(kKey, 1))->state, OutboxState::kDead);
  EXPECT_TRUE(this->outbox_->DuePending(kT0 + 120'000, 10)->empty());
  const Status missing = this->outbox_->MarkAnswered(kKey, 7, "send-a", 200, "");
  EXPECT_THAT(missing, HasReason(Reason::kNotFound));
  // answered or dead: no more sends.
  EXPECT_FALSE(this->outbox_->Claim(kKey, 0, kT0 + 120'000, "send-b", kT0 + 180'000)->has_value());
  EXPECT_FALSE(this->outbox_->Claim(kKey, 1, kT0 + 120'000, "send-b", kT0 + 180'000)->has_value());
  EXPECT_FALSE(this->outbox_->Claim(kKey, 9, kT0 + 120'000, "send-b", kT0 + 180'000)->has_value());
  EXPECT_THAT(this->outbox_->Claim(kKey, 0, kT0, "", kT0), HasReason(Reason::kInternal));
}

TYPED_TEST(StoreConformanceTest, OneSendOwnsARowUntilItsAnswerOrItsClaimEnds) {
  const ClaimOutcome c = this->MustClaim(kKey, kFp);
  for (int64_t i = 0; i < 2; ++i) {
    ASSERT_EQ(this->outbox_->Append(this->Row(kKey, c.fencing_token, i, "{}"))->kind,
              OutboxAppend::Kind::kAppended);
  }
  // Send a owns call 0 until kT0 + 10 s: nobody else may send it, or write its outcome.
  ASSERT_TRUE(this->outbox_->Claim(kKey, 0, kT0, "send-a", kT0 + 10'000)->has_value());
  EXPECT_FALSE(this->outbox_->Claim(kKey, 0, kT0 + 5'000, "send-b", kT0 + 15'000)->has_value());
  EXPECT_FALSE(
      this->outbox_->Claim(kKey, 0, kT0 + 9'999, "send-a", kT0 + 15'000)->has_value());  // even a
  EXPECT_EQ(this->outbox_->DuePending(kT0 + 9'999, 10)->size(), 1u);  // call 1 only
  EXPECT_THAT(this->outbox_->MarkAnswered(kKey, 0, "send-b", 200, "b"),
              HasReason(Reason::kNotFound));
  this->outbox_->NoteAnswer(kKey, 0, "send-b", 200, "b");
  EXPECT_THAT(this->outbox_->Release(kKey, 0, "send-b", kT0), HasReason(Reason::kNotFound));
  EXPECT_THAT(this->outbox_->MarkDead(kKey, 0, "send-b"), HasReason(Reason::kNotFound));
  EXPECT_THAT(this->outbox_->Defer(kKey, 0, kT0 + 5'000, kT0), HasReason(Reason::kNotFound));
  auto row = this->outbox_->Get(kKey, 0);
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->state, OutboxState::kSent);
  EXPECT_EQ((*row)->claimed_by, "send-a");
  EXPECT_EQ((*row)->attempts, 1);
  EXPECT_EQ((*row)->next_attempt_ms, kT0 + 10'000);

  // Its claim ran out (its host died mid-send): the row is due, and the next send takes it.
  auto due = this->outbox_->DuePending(kT0 + 10'000, 10);
  ASSERT_EQ(due->size(), 2u);
  auto b = this->outbox_->Claim(kKey, 0, kT0 + 10'000, "send-b", kT0 + 20'000);
  ASSERT_TRUE(b.ok() && b->has_value());
  EXPECT_EQ((*b)->attempts, 2);
  EXPECT_EQ((*b)->claimed_by, "send-b");
  // a's answer comes late: it changes nothing; b's answer is stored; a later one changes nothing.
  EXPECT_THAT(this->outbox_->MarkAnswered(kKey, 0, "send-a", 200, "late"),
              HasReason(Reason::kNotFound));
  this->outbox_->NoteAnswer(kKey, 0, "send-a", 200, "late");
  ASSERT_TRUE(this->outbox_->MarkAnswered(kKey, 0, "send-b", 201, "first").ok());
  EXPECT_THAT(this->outbox_->MarkAnswered(kKey, 0, "send-b", 202, "again"),
              HasReason(Reason::kNotFound));
  row = this->outbox_->Get(kKey, 0);
  EXPECT_EQ((*row)->state, OutboxState::kAnswered);
  EXPECT_EQ((*row)->reply_status, 201);
  EXPECT_EQ((*row)->reply_body, "first");
  EXPECT_EQ((*row)->claimed_by, "");

  // Release: the send ends without a final answer; the row waits unclaimed, attempts kept.
  ASSERT_TRUE(this->outbox_->Claim(kKey, 1, kT0, "send-c", kT0 + 10'000)->has_value());
  ASSERT_TRUE(this->outbox_->Release(kKey, 1, "send-c", kT0 + 3'000).ok());
  EXPECT_THAT(this->outbox_->Release(kKey, 1, "send-c", kT0 + 9'000),
              HasReason(Reason::kNotFound));  // once
  row = this->outbox_->Get(kKey, 1);
  EXPECT_EQ((*row)->state, OutboxState::kSent);
  EXPECT_EQ((*row)->claimed_by, "");
  EXPECT_EQ((*row)->attempts, 1);
  EXPECT_EQ((*row)->next_attempt_ms, kT0 + 3'000);
  EXPECT_FALSE(
      this->outbox_->Claim(kKey, 1, kT0 + 2'999, "send-d", kT0 + 20'000)->has_value());  // not due
  ASSERT_TRUE(this->outbox_->Claim(kKey, 1, kT0 + 3'000, "send-d", kT0 + 20'000)->has_value());
  // An owned MarkDead (retries spent) only by the owner.
  EXPECT_THAT(this->outbox_->MarkDead(kKey, 1, "send-c"), HasReason(Reason::kNotFound));
  ASSERT_TRUE(this->outbox_->MarkDead(kKey, 1, "send-d").ok());
  row = this->outbox_->Get(kKey, 1);
  EXPECT_EQ((*row)->state, OutboxState::kDead);
  EXPECT_EQ((*row)->claimed_by, "");
  EXPECT_EQ((*row)->attempts, 2);
}

TYPED_TEST(StoreConformanceTest, OfManyConcurrentClaimsOfARowOneWins) {
  // Several workers (threads here; hosts on PostgreSQL, each with its own pool) list the same
  // due rows and claim them at once: each row goes to exactly one.
  constexpr int kWorkers = 6;
  constexpr int64_t kRows = 12;
  const ClaimOutcome c = this->MustClaim(kKey, kFp);
  for (int64_t i = 0; i < kRows; ++i) {
    ASSERT_EQ(this->outbox_->Append(this->Row(kKey, c.fencing_token, i, "{}"))->kind,
              OutboxAppend::Kind::kAppended);
  }
  std::vector<std::unique_ptr<Outbox>> outboxes;
  for (int w = 0; w < kWorkers; ++w) {
    outboxes.push_back(this->factory_.OpenOutbox(this->clock_));
    ASSERT_NE(outboxes.back(), nullptr);
  }
  std::atomic<int> wins[kRows] = {};
  std::atomic<int> errors{0};
  std::vector<std::thread> workers;
  workers.reserve(kWorkers);
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&, w] {
      for (int64_t i = 0; i < kRows; ++i) {
        auto got = outboxes[static_cast<size_t>(w)]->Claim(
            kKey, i, kT0, "worker-" + std::to_string(w), kT0 + 1'000);
        if (!got.ok()) {
          ++errors;
        } else if (got->has_value()) {
          ++wins[i];
        }
      }
    });
  }
  for (auto& t : workers) t.join();
  EXPECT_EQ(errors.load(), 0);
  for (int64_t i = 0; i < kRows; ++i) {
    EXPECT_EQ(wins[i].load(), 1) << "row " << i;
    EXPECT_EQ((*this->outbox_->Get(kKey, i))->attempts, 1) << "row " << i;
  }
}

TYPED_TEST(StoreConformanceTest, HeldRowsWaitForConfirmation) {
  const ClaimOutcome c = this->MustClaim(kKey, kFp);
  OutboxRow held = this->Row(kKey, c.fencing_token, 0, "{\"qty\":3}");
  held.state = OutboxState::kHeld;
  held.next_attempt_ms = kT0;
  ASSERT_EQ(this->outbox_->Append(held)->kind, OutboxAppend::Kind::kAppended);
  OutboxRow later = this->Row(kKey, c.fencing_token, 1, "{}");
  later.next_attempt_ms = kT0 + 5'000;  // a call the gate held back: due when it may pass
  ASSERT_EQ(this->outbox_->Append(later)->kind, OutboxAppend::Kind::kAppended);
  for (OutboxState s : {OutboxState::kAnswered, OutboxState::kDead}) {
    OutboxRow bad = this->Row(kKey, c.fencing_token, 2, "{}");
    bad.state = s;
    EXPECT_THAT(this->outbox_->Append(bad), HasReason(Reason::kInternal)) << OutboxStateName(s);
  }

  EXPECT_TRUE(
      this->outbox_->DuePending(kT0 + 1'000, 10)->empty());  // held never due; call 1 not yet
  EXPECT_FALSE(this->outbox_->Claim(kKey, 0, kT0 + 1'000, "send-a", kT0 + 9'000)
                   ->has_value());  // held: never
  auto listed = this->outbox_->ListEvent(kKey);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].state, OutboxState::kHeld);
  EXPECT_EQ((*listed)[1].state, OutboxState::kPending);
  EXPECT_EQ((*listed)[1].next_attempt_ms, kT0 + 5'000);
  EXPECT_TRUE(this->outbox_->ListEvent(std::string(64, '7'))->empty());

  EXPECT_EQ(*this->outbox_->ConfirmHeld(kKey, kT0 + 2'000), 1);
  EXPECT_EQ(*this->outbox_->ConfirmHeld(kKey, kT0 + 2'000), 0);
  auto due = this->outbox_->DuePending(kT0 + 2'000, 10);
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].call_index, 0);
  EXPECT_EQ((*due)[0].state, OutboxState::kPending);
  EXPECT_EQ((*due)[0].next_attempt_ms, kT0 + 2'000);
}

TYPED_TEST(StoreConformanceTest, NoteAnswerStoresTheAnswerForLaterWrites) {
  // The gateway does not wait for it; a later write of the store (here: Complete) runs after it.
  const ClaimOutcome c = this->MustClaim(kKey, kFp);
  OutboxRow sent = this->Row(kKey, c.fencing_token, 0, "{\"qty\":1}");
  sent.state = OutboxState::kSent;
  sent.claimed_by = "send-a";
  sent.next_attempt_ms = kT0 + 1'000;
  ASSERT_TRUE(this->outbox_->Append(sent).ok());
  this->outbox_->NoteAnswer(kKey, 0, "send-x", 500, "not this send's");  // changes nothing
  this->outbox_->NoteAnswer(kKey, 0, "send-a", 201, "{\"ok\":true}");
  // A re-run plugin's call meets the answered row through Append (a write, so after the note).
  auto again = this->outbox_->Append(sent);
  ASSERT_TRUE(again.ok()) << again.error().ToString();
  EXPECT_EQ(again->kind, OutboxAppend::Kind::kExisting);
  EXPECT_EQ(again->row.state, OutboxState::kAnswered);
  EXPECT_EQ(again->row.reply_status, 201);
  EXPECT_EQ(again->row.reply_body, "{\"ok\":true}");
  EXPECT_EQ(again->row.claimed_by, "");
  EXPECT_TRUE(this->outbox_->DuePending(kT0 + 10'000, 10)->empty());  // never resent
  // A note for a row that is not there changes nothing and reports nothing.
  this->outbox_->NoteAnswer(kKey, 9, "send-a", 200, "{}");
  EXPECT_FALSE(this->outbox_->Get(kKey, 9)->has_value());
}

TYPED_TEST(StoreConformanceTest, RowAppendedAsSentRecordsTheFirstAttempt) {
  // The gateway's first send: the append is the send's record and its claim (no Claim).
  const ClaimOutcome c = this->MustClaim(kKey, kFp);
  OutboxRow sent = this->Row(kKey, c.fencing_token, 0, "{\"qty\":1}");
  sent.state = OutboxState::kSent;
  sent.attempts = 7;  // ignored: the store decides
  sent.claimed_by = "send-a";
  sent.next_attempt_ms = kT0 + 1'000;  // the end of its claim
  auto appended = this->outbox_->Append(sent);
  ASSERT_TRUE(appended.ok()) << appended.error().ToString();
  EXPECT_EQ(appended->kind, OutboxAppend::Kind::kAppended);
  EXPECT_EQ(appended->row.state, OutboxState::kSent);
  EXPECT_EQ(appended->row.attempts, 1);  // what was stored
  EXPECT_EQ(appended->row.next_attempt_ms, kT0 + 1'000);
  EXPECT_EQ(appended->row.claimed_by, "send-a");
  auto row = this->outbox_->Get(kKey, 0);
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->state, OutboxState::kSent);
  EXPECT_EQ((*row)->attempts, 1);
  EXPECT_EQ((*row)->next_attempt_ms, kT0 + 1'000);
  EXPECT_EQ((*row)->claimed_by, "send-a");
  EXPECT_EQ((*row)->reply_status, 0);
  EXPECT_EQ((*row)->idempotency_key, "erp-key-0");
  // A pending row appended beside it keeps attempts 0.
  OutboxRow pending = this->Row(kKey, c.fencing_token, 1, "{}");
  pending.attempts = 3;  // ignored too
  pending.next_attempt_ms = kT0 + 5'000;
  auto p = this->outbox_->Append(pending);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->row.attempts, 0);
  EXPECT_EQ((*this->outbox_->Get(kKey, 1))->attempts, 0);

  // Owned until its claim ends; then due once, as sent, for the retry worker.
  EXPECT_TRUE(this->outbox_->DuePending(kT0 + 999, 10)->empty());
  EXPECT_FALSE(this->outbox_->Claim(kKey, 0, kT0 + 999, "send-b", kT0 + 3'000)->has_value());
  auto due = this->outbox_->DuePending(kT0 + 1'000, 10);
  ASSERT_TRUE(due.ok());
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].call_index, 0);
  EXPECT_EQ((*due)[0].state, OutboxState::kSent);
  EXPECT_EQ((*due)[0].attempts, 1);
  // A resend counts on from there.
  ASSERT_TRUE(this->outbox_->Claim(kKey, 0, kT0 + 1'000, "send-b", kT0 + 3'000)->has_value());
  EXPECT_EQ((*this->outbox_->Get(kKey, 0))->attempts, 2);

  // Appending the same call again (a re-run) meets the row as it is, whatever state or owner is
  // asked for: a re-run never takes a row over from its send.
  OutboxRow rerun = this->Row(kKey, c.fencing_token, 0, "{\"qty\":1}");
  rerun.state = OutboxState::kSent;
  rerun.claimed_by = "send-c";
  auto existing = this->outbox_->Append(rerun);
  ASSERT_TRUE(existing.ok());
  EXPECT_EQ(existing->kind, OutboxAppend::Kind::kExisting);
  EXPECT_EQ(existing->row.attempts, 2);
  EXPECT_EQ(existing->row.next_attempt_ms, kT0 + 3'000);
  EXPECT_EQ(existing->row.claimed_by, "send-b");
  rerun.body = "{\"qty\":2}";
  rerun.body_sha256 = Sha256Hex(rerun.body);
  EXPECT_EQ(this->outbox_->Append(rerun)->kind, OutboxAppend::Kind::kMismatch);
  EXPECT_EQ((*this->outbox_->Get(kKey, 0))->attempts, 2);
  // A fenced sent append writes nothing.
  OutboxRow fenced = this->Row(std::string(64, '9'), 1, 0, "{}");
  fenced.state = OutboxState::kSent;
  fenced.claimed_by = "send-d";
  EXPECT_EQ(this->outbox_->Append(fenced)->kind, OutboxAppend::Kind::kFenced);
  EXPECT_FALSE(this->outbox_->Get(std::string(64, '9'), 0)->has_value());

  // Any state but pending, sent or held is refused and writes nothing; so is a sent row that
  // names no send, and a pending or held one that names one.
  for (OutboxState s : {OutboxState::kAnswered, OutboxState::kDead}) {
    OutboxRow bad = this->Row(kKey, c.fencing_token, 5, "{}");
    bad.state = s;
    auto refused = this->outbox_->Append(bad);
    ASSERT_FALSE(refused.ok()) << OutboxStateName(s);
    EXPECT_THAT(refused, HasReason(Reason::kInternal));
  }
  OutboxRow unowned = this->Row(kKey, c.fencing_token, 5, "{}");
  unowned.state = OutboxState::kSent;
  EXPECT_THAT(this->outbox_->Append(unowned), HasReason(Reason::kInternal));
  for (OutboxState s : {OutboxState::kPending, OutboxState::kHeld}) {
    OutboxRow owned = this->Row(kKey, c.fencing_token, 5, "{}");
    owned.state = s;
    owned.claimed_by = "send-e";
    EXPECT_THAT(this->outbox_->Append(owned), HasReason(Reason::kInternal)) << OutboxStateName(s);
  }
  EXPECT_FALSE(this->outbox_->Get(kKey, 5)->has_value());
}

TYPED_TEST(StoreConformanceTest, DeferMovesTheNextAttemptWithoutCountingOne) {
  const ClaimOutcome c = this->MustClaim(kKey, kFp);
  ASSERT_EQ(this->outbox_->Append(this->Row(kKey, c.fencing_token, 0, "{}"))->kind,
            OutboxAppend::Kind::kAppended);
  // pending → deferred: same state, attempts 0, not due before the new time.
  ASSERT_TRUE(this->outbox_->Defer(kKey, 0, kT0, kT0 + 1'000).ok());
  auto row = this->outbox_->Get(kKey, 0);
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->state, OutboxState::kPending);
  EXPECT_EQ((*row)->attempts, 0);
  EXPECT_EQ((*row)->next_attempt_ms, kT0 + 1'000);
  EXPECT_TRUE(this->outbox_->DuePending(kT0 + 999, 10)->empty());
  EXPECT_EQ(this->outbox_->DuePending(kT0 + 1'000, 10)->size(), 1u);
  // Not due (deferred already, or a send owns it): left alone.
  EXPECT_THAT(this->outbox_->Defer(kKey, 0, kT0 + 999, kT0 + 50'000), HasReason(Reason::kNotFound));
  ASSERT_TRUE(this->outbox_->Claim(kKey, 0, kT0 + 1'000, "send-a", kT0 + 2'000)->has_value());
  EXPECT_THAT(this->outbox_->Defer(kKey, 0, kT0 + 1'500, kT0 + 90'000),
              HasReason(Reason::kNotFound));
  EXPECT_EQ((*this->outbox_->Get(kKey, 0))->next_attempt_ms, kT0 + 2'000);
  // sent, its claim ended → deferred: attempts kept.
  ASSERT_TRUE(this->outbox_->Defer(kKey, 0, kT0 + 2'000, kT0 + 90'000).ok());
  row = this->outbox_->Get(kKey, 0);
  EXPECT_EQ((*row)->state, OutboxState::kSent);
  EXPECT_EQ((*row)->attempts, 1);
  EXPECT_EQ((*row)->next_attempt_ms, kT0 + 90'000);
  // answered, dead, held, or no row: kNotFound, nothing changed.
  ASSERT_TRUE(this->outbox_->Claim(kKey, 0, kT0 + 90'000, "send-b", kT0 + 95'000)->has_value());
  ASSERT_TRUE(this->outbox_->MarkAnswered(kKey, 0, "send-b", 200, "{}").ok());
  EXPECT_THAT(this->outbox_->Defer(kKey, 0, INT64_MAX, kT0), HasReason(Reason::kNotFound));
  EXPECT_EQ((*this->outbox_->Get(kKey, 0))->next_attempt_ms, kT0 + 95'000);
  ASSERT_EQ(this->outbox_->Append(this->Row(kKey, c.fencing_token, 1, "{}"))->kind,
            OutboxAppend::Kind::kAppended);
  ASSERT_TRUE(this->outbox_->MarkDead(kKey, 1, /*owner=*/"").ok());
  EXPECT_THAT(this->outbox_->Defer(kKey, 1, INT64_MAX, kT0), HasReason(Reason::kNotFound));
  OutboxRow held = this->Row(kKey, c.fencing_token, 2, "{}");
  held.state = OutboxState::kHeld;
  held.next_attempt_ms = INT64_MAX;
  ASSERT_EQ(this->outbox_->Append(held)->kind, OutboxAppend::Kind::kAppended);
  EXPECT_THAT(this->outbox_->Defer(kKey, 2, INT64_MAX, kT0), HasReason(Reason::kNotFound));
  EXPECT_EQ((*this->outbox_->Get(kKey, 2))->next_attempt_ms, INT64_MAX);
  EXPECT_THAT(this->outbox_->Defer(kKey, 9, INT64_MAX, kT0), HasReason(Reason::kNotFound));
}

TYPED_TEST(StoreConformanceTest, ReviveTurnsDeadOrAnsweredRowsPendingAndDueNow) {
  const ClaimOutcome c = this->MustClaim(kKey, kFp);
  for (int64_t i = 0; i < 4; ++i) {
    ASSERT_EQ(this->outbox_->Append(this->Row(kKey, c.fencing_token, i, "{}"))->kind,
              OutboxAppend::Kind::kAppended);
  }
  // 0: dead after two sends; 1: answered 404; 2: still sent (owned); 3: pending.
  ASSERT_TRUE(this->outbox_->Claim(kKey, 0, kT0, "send-1", kT0 + 1'000)->has_value());
  ASSERT_TRUE(this->outbox_->Release(kKey, 0, "send-1", kT0).ok());
  ASSERT_TRUE(this->outbox_->Claim(kKey, 0, kT0, "send-2", kT0 + 2'000)->has_value());
  ASSERT_TRUE(this->outbox_->MarkDead(kKey, 0, "send-2").ok());
  ASSERT_TRUE(this->outbox_->Claim(kKey, 1, kT0, "send-3", kT0 + 1'000)->has_value());
  ASSERT_TRUE(this->outbox_->MarkAnswered(kKey, 1, "send-3", 404, "{\"error\":\"gone\"}").ok());
  ASSERT_TRUE(this->outbox_->Claim(kKey, 2, kT0, "send-4", kT0 + 7'000)->has_value());

  auto dead = this->outbox_->Revive(kKey, 0, kT0 + 50);
  ASSERT_TRUE(dead.ok()) << dead.error().ToString();
  EXPECT_TRUE(*dead);
  auto row = this->outbox_->Get(kKey, 0);
  EXPECT_EQ((*row)->state, OutboxState::kPending);
  EXPECT_EQ((*row)->attempts, 0);
  EXPECT_EQ((*row)->next_attempt_ms, kT0 + 50);
  EXPECT_EQ((*row)->claimed_by, "");
  EXPECT_EQ((*row)->idempotency_key, "erp-key-0");  // the resend carries the same key
  auto answered = this->outbox_->Revive(kKey, 1, kT0 + 60);
  ASSERT_TRUE(answered.ok());
  EXPECT_TRUE(*answered);
  row = this->outbox_->Get(kKey, 1);
  EXPECT_EQ((*row)->state, OutboxState::kPending);
  EXPECT_EQ((*row)->reply_status, 0);
  EXPECT_EQ((*row)->reply_body, "");
  EXPECT_EQ((*row)->attempts, 0);
  // A send of the old life that answers now changes nothing.
  EXPECT_THAT(this->outbox_->MarkAnswered(kKey, 1, "send-3", 200, "{}"),
              HasReason(Reason::kNotFound));

  // sent / pending / held rows are left as they are.
  EXPECT_FALSE(*this->outbox_->Revive(kKey, 2, kT0 + 70));
  row = this->outbox_->Get(kKey, 2);
  EXPECT_EQ((*row)->state, OutboxState::kSent);
  EXPECT_EQ((*row)->attempts, 1);
  EXPECT_EQ((*row)->next_attempt_ms, kT0 + 7'000);
  EXPECT_EQ((*row)->claimed_by, "send-4");
  EXPECT_FALSE(*this->outbox_->Revive(kKey, 0, kT0 + 80));  // already pending
  EXPECT_EQ((*this->outbox_->Get(kKey, 0))->next_attempt_ms, kT0 + 50);
  OutboxRow held = this->Row(kKey, c.fencing_token, 4, "{}");
  held.state = OutboxState::kHeld;
  held.next_attempt_ms = INT64_MAX;
  ASSERT_EQ(this->outbox_->Append(held)->kind, OutboxAppend::Kind::kAppended);
  EXPECT_FALSE(*this->outbox_->Revive(kKey, 4, kT0));
  EXPECT_EQ((*this->outbox_->Get(kKey, 4))->state, OutboxState::kHeld);
  EXPECT_THAT(this->outbox_->Revive(kKey, 9, kT0), HasReason(Reason::kNotFound));

  auto due = this->outbox_->DuePending(kT0 + 100, 10);
  ASSERT_TRUE(due.ok());
  ASSERT_EQ(due->size(),
            3u);  // 0 and 1 revived, 3 pending since append; 2 is owned until kT0 + 7 s
  EXPECT_EQ((*due)[0].call_index, 3);  // next_attempt 0 (appended without one)
}

TEST(OutboxStateTest, NamesRoundTrip) {
  for (OutboxState s : kAllOutboxStates) EXPECT_EQ(OutboxStateFromName(OutboxStateName(s)), s);
  EXPECT_FALSE(OutboxStateFromName("Pending").has_value());
  EXPECT_FALSE(OutboxStateFromName("").has_value());
}

TYPED_TEST(StoreConformanceTest, ArbitraryBytesRoundTrip) {
  // Header values and bodies are bytes, not text: NUL and bytes that are not UTF-8 survive.
  const std::string odd("id\xff\xfe\0end", 8);
  ClaimMeta meta = this->Meta(odd);
  meta.x_idempotency_key = std::string("\x80\x81", 2);
  auto c = this->store_->Claim(kKey, kFp, meta, kLease);
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  const std::string body("\0\x01\xc3(\xff", 5);
  ASSERT_EQ(this->outbox_->Append(this->Row(kKey, c->fencing_token, 0, body))->kind,
            OutboxAppend::Kind::kAppended);
  ASSERT_TRUE(this->outbox_->Claim(kKey, 0, kT0, "send-a", kT0 + 1'000)->has_value());
  ASSERT_TRUE(this->outbox_->MarkAnswered(kKey, 0, "send-a", 200, body).ok());
  ASSERT_EQ(*this->store_->Complete(kKey, c->fencing_token, 200, std::string("t\xff", 2), body),
            FencedWrite::kApplied);
  auto rec = this->store_->Get(kKey);
  ASSERT_TRUE(rec.ok() && rec->has_value());
  EXPECT_EQ((*rec)->webhook_id, odd);
  EXPECT_EQ((*rec)->x_idempotency_key, std::string("\x80\x81", 2));
  EXPECT_EQ((*rec)->content_type, std::string("t\xff", 2));
  EXPECT_EQ((*rec)->body, body);
  auto row = this->outbox_->Get(kKey, 0);
  EXPECT_EQ((*row)->body, body);
  EXPECT_EQ((*row)->reply_body, body);
}

TYPED_TEST(StoreConformanceTest, TokensOnlyGoUpAcrossTakeoversAndResets) {
  int64_t last = 0;
  for (int round = 0; round < 4; ++round) {
    const ClaimOutcome c = this->MustClaim(kKey, kFp);
    ASSERT_EQ(c.kind, ClaimOutcome::Kind::kClaimed);
    EXPECT_EQ(c.fencing_token, last + 1);
    last = c.fencing_token;
    if (round % 2 == 0) {
      ASSERT_EQ(*this->store_->Complete(kKey, c.fencing_token, 200, "", "x"),
                FencedWrite::kApplied);
      ASSERT_TRUE(*this->store_->Reset(kKey));
    } else {
      this->clock_.Advance(kLease);
    }
  }
  EXPECT_EQ((*this->store_->Get(kKey))->fencing_token, 4);
}

}  // namespace
}  // namespace clawguard
