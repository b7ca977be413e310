// pg_store_test.cpp — what only the PostgreSQL engine has: the database clock, the bounded pool,
// many store objects (hosts) racing on one key, concurrent migrations, URL checks, and a server
// that stops and restarts under a store object that keeps working afterwards.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "clawguard/sha256.h"
#include "pg/support/pg_test_db.h"
#include "postgresql/pg_conn.h"
#include "postgresql/pg_idempotency_store.h"
#include "postgresql/pg_ledger.h"
#include "postgresql/pg_outbox.h"
#include "postgresql/pg_schema.h"
#include "support/fixed_time.h"
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard::pg {
namespace {

using ::clawguard::testing::kLease;
using ::clawguard::testing::kT0;
const std::string kFp(64, 'f');

ClaimMeta Meta() { return ClaimMeta{"acme-orders", "order.created", 2, "msg_1", ""}; }

std::shared_ptr<PgPool> MustPool(const std::string& url, const Clock* clock,
                                 int max_connections = 8) {
  PgOptions o;
  o.clock = clock;
  o.max_connections = max_connections;
  auto p = PgPool::Create(url, o);
  EXPECT_TRUE(p.ok()) << p.error().ToString();
  return p.ok() ? *p : nullptr;
}

std::string KeyOf(int i) { return Sha256Hex("event-" + std::to_string(i)); }

TEST(PgStoreTest, ManyHostsRacingOnEachKeyHaveExactlyOneWinner) {
  testing::PgTestDb db;
  FixedClock clock(kT0);
  constexpr int kStores = 4, kThreadsPerStore = 4, kKeys = 25;
  std::vector<std::unique_ptr<PgIdempotencyStore>> stores;
  stores.reserve(kStores);
  for (int i = 0; i < kStores; ++i)
    stores.push_back(PgIdempotencyStore::Open(MustPool(db.url(), &clock)).value());
  std::vector<std::atomic<int>> claimed(kKeys);
  std::atomic<int> errors{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  threads.reserve(kStores * kThreadsPerStore);
  for (int t = 0; t < kStores * kThreadsPerStore; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      for (int k = 0; k < kKeys; ++k) {
        auto c = stores[static_cast<size_t>(t % kStores)]->Claim(KeyOf(k), kFp, Meta(), kLease);
        if (c.ok() && c->kind == ClaimOutcome::Kind::kClaimed) {
          ++claimed[static_cast<size_t>(k)];
        } else if (!c.ok() || c->kind != ClaimOutcome::Kind::kInProgress) {
          ++errors;
        }
      }
    });
  }
  go = true;
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  for (int k = 0; k < kKeys; ++k)
    EXPECT_EQ(claimed[static_cast<size_t>(k)].load(), 1) << "key " << k;
}

TEST(PgStoreTest, ExpiredLeaseRaceHasExactlyOneTakeover) {
  testing::PgTestDb db;
  FixedClock clock(kT0);
  auto first = PgIdempotencyStore::Open(MustPool(db.url(), &clock)).value();
  ASSERT_EQ(first->Claim(KeyOf(0), kFp, Meta(), kLease)->kind, ClaimOutcome::Kind::kClaimed);
  clock.Advance(kLease);
  std::vector<std::unique_ptr<PgIdempotencyStore>> stores;
  stores.reserve(8);
  for (int i = 0; i < 8; ++i)
    stores.push_back(PgIdempotencyStore::Open(MustPool(db.url(), &clock)).value());
  std::atomic<int> taken{0}, waiting{0}, other{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  threads.reserve(stores.size());
  for (auto& s : stores) {
    threads.emplace_back([&, store = s.get()] {
      while (!go.load()) std::this_thread::yield();
      auto c = store->Claim(KeyOf(0), kFp, Meta(), kLease);
      if (c.ok() && c->kind == ClaimOutcome::Kind::kClaimed && c->taken_over &&
          c->fencing_token == 2) {
        ++taken;
      } else if (c.ok() && c->kind == ClaimOutcome::Kind::kInProgress) {
        ++waiting;
      } else {
        ++other;
      }
    });
  }
  go = true;
  for (auto& th : threads) th.join();
  EXPECT_EQ(taken.load(), 1);
  EXPECT_EQ(waiting.load(), 7);
  EXPECT_EQ(other.load(), 0);
}

TEST(PgStoreTest, DatabaseClockDecidesWhenNoClockIsInjected) {
  testing::PgTestDb db;
  auto store = PgIdempotencyStore::Open(MustPool(db.url(), /*clock=*/nullptr)).value();
  auto c = store->Claim(KeyOf(1), kFp, Meta(), kLease);
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  ASSERT_EQ(c->kind, ClaimOutcome::Kind::kClaimed);
  EXPECT_EQ(c->record.lease_until_ms - c->record.created_ms, kLease);
  // The server runs on this machine: its clock is the system clock (a sanity bound, not a timing).
  EXPECT_LT(std::llabs(c->record.created_ms - SystemClock::Instance().NowMillis()), 600'000);
  auto again = store->Claim(KeyOf(1), kFp, Meta(), kLease);
  ASSERT_EQ(again->kind, ClaimOutcome::Kind::kInProgress);
  EXPECT_GE(again->retry_after_ms, 1);
  EXPECT_LE(again->retry_after_ms, kLease);
  ASSERT_EQ(*store->Release(KeyOf(1), c->fencing_token), FencedWrite::kApplied);
  auto retry = store->Claim(KeyOf(1), kFp, Meta(), kLease);
  EXPECT_EQ(retry->kind, ClaimOutcome::Kind::kClaimed);
  EXPECT_EQ(retry->fencing_token, 2);
  auto ledger = PgLedger::Open(MustPool(db.url(), nullptr)).value();
  auto rec = ledger->Record(LedgerKind::kRelease, "acme-orders", "1.0.0", std::string(64, 'a'));
  ASSERT_TRUE(rec.ok());
  // Recorded after the claim by the same (database) clock: the same second, or a later one when a
  // second boundary passed in between (an exact equality failed once in CI for that reason).
  const int64_t ledger_s = ledger->ReadAll()->front().time;
  EXPECT_GE(ledger_s, retry->record.updated_ms / 1000);
  EXPECT_LE(ledger_s, retry->record.updated_ms / 1000 + 60);
}

TEST(PgStoreTest, PoolNeverOpensMoreThanItsBound) {
  testing::PgTestDb db;
  FixedClock clock(kT0);
  auto store = PgIdempotencyStore::Open(MustPool(db.url(), &clock, /*max_connections=*/2)).value();
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  threads.reserve(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 20; ++k) {
        if (!store->Claim(KeyOf(t * 100 + k), kFp, Meta(), kLease).ok()) ++errors;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  auto admin = MustPool(db.url(), nullptr, 1);
  auto lease = admin->Acquire();
  ASSERT_TRUE(lease.ok());
  auto n = lease->Exec("count",
                       "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND application_name = 'clawguard' AND pid <> pg_backend_pid()");
  ASSERT_TRUE(n.ok()) << n.error().ToString();
  EXPECT_LE(n->Int(0, 0), 2);
}

TEST(PgStoreTest, ConcurrentMigrationsAgreeAndASecondRunAppliesNothing) {
  testing::PgTestDb db;
  std::vector<std::thread> threads;
  threads.reserve(4);
  std::atomic<int> applied{0}, errors{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      auto pool = MustPool(db.url(), nullptr, 1);
      auto r = MigrateSchema(*pool);
      if (!r.ok()) {
        ++errors;
      } else {
        applied += static_cast<int>(r->applied.size());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(applied.load(), static_cast<int>(kPgSchemaVersion));
  auto again = MigrateSchema(*MustPool(db.url(), nullptr));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->from, kPgSchemaVersion);
  EXPECT_TRUE(again->applied.empty());
}

TEST(PgStoreTest, RefusesAPasswordInTheUrl) {
  for (const std::string url : {"postgresql://postgres:s3cret@127.0.0.1:5432/x",
                                "postgresql://postgres@127.0.0.1:5432/x?password=s3cret",
                                "host=127.0.0.1 password=s3cret dbname=x"}) {
    auto p = PgPool::Create(url, PgOptions{});
    ASSERT_FALSE(p.ok()) << url;
    EXPECT_THAT(p, HasReason(Reason::kUsage));
    EXPECT_EQ(p.error().message().find("s3cret"), std::string::npos) << p.error().message();
  }
}

TEST(PgStoreTest, UnreachableServerIsStoreUnavailableAtOpen) {
  // A port nobody listens on (1), then a running server without the database.
  const std::string url = "postgresql://postgres@127.0.0.1:1/none";
  auto pool = MustPool(url, nullptr);
  auto store = PgIdempotencyStore::Open(pool);
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(store, HasReason(Reason::kStoreUnavailable));
  EXPECT_NE(store.error().message().find(url), std::string::npos) << store.error().message();
  auto missing_db = PgLedger::Open(
      MustPool(testing::ReplaceDatabase(testing::PgClusterUrl(), "no_such_db"), nullptr));
  ASSERT_FALSE(missing_db.ok());
  EXPECT_THAT(missing_db, HasReason(Reason::kStoreUnavailable));
  EXPECT_NE(missing_db.error().message().find("no_such_db"), std::string::npos);
}

TEST(PgStoreTest, ServerStoppedIsStoreUnavailableThenRecoversWithoutReopening) {
  testing::PgCluster cluster;
  ASSERT_FALSE(cluster.url().empty());
  testing::PgTestDb db(cluster.url());
  FixedClock clock(kT0);
  auto pool = MustPool(db.url(), &clock);
  auto store = PgIdempotencyStore::Open(pool).value();
  auto outbox = PgOutbox::Open(pool).value();
  auto ledger = PgLedger::Open(pool).value();
  auto first = store->Claim(KeyOf(1), kFp, Meta(), kLease);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->kind, ClaimOutcome::Kind::kClaimed);

  ASSERT_TRUE(cluster.Halt());
  auto down = store->Claim(KeyOf(2), kFp, Meta(), kLease);
  ASSERT_FALSE(down.ok());
  EXPECT_THAT(down, HasReason(Reason::kStoreUnavailable));
  EXPECT_NE(down.error().message().find(db.url()), std::string::npos) << down.error().message();
  OutboxRow row;
  row.event_key = KeyOf(1);
  row.fencing_token = first->fencing_token;
  row.method = "POST";
  row.path = "/orders/1/fulfil";
  row.body = "{}";
  row.body_sha256 = Sha256Hex("{}");
  row.idempotency_key = "k";
  EXPECT_THAT(outbox->Append(row), HasReason(Reason::kStoreUnavailable));
  EXPECT_THAT(store->Complete(KeyOf(1), first->fencing_token, 200, "", "x"),
              HasReason(Reason::kStoreUnavailable));
  EXPECT_THAT(ledger->Head(), HasReason(Reason::kStoreUnavailable));

  ASSERT_TRUE(cluster.Resume());
  // The same objects work again: nothing was half-written while the server was down.
  auto rec = store->Get(KeyOf(1));
  ASSERT_TRUE(rec.ok()) << rec.error().ToString();
  ASSERT_TRUE(rec->has_value());
  EXPECT_EQ((*rec)->state, IdemState::kInProgress);
  EXPECT_FALSE(store->Get(KeyOf(2))->has_value());
  EXPECT_FALSE(outbox->Get(KeyOf(1), 0)->has_value());
  auto up = store->Claim(KeyOf(2), kFp, Meta(), kLease);
  ASSERT_TRUE(up.ok()) << up.error().ToString();
  EXPECT_EQ(up->kind, ClaimOutcome::Kind::kClaimed);
  EXPECT_EQ(outbox->Append(row)->kind, OutboxAppend::Kind::kAppended);
  EXPECT_EQ(*store->Complete(KeyOf(1), first->fencing_token, 200, "", "x"), FencedWrite::kApplied);
  EXPECT_EQ(ledger->Head()->count, 0);
}

}  // namespace
}  // namespace clawguard::pg
