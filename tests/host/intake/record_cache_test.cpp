// record_cache_test.cpp — CachingIdempotencyStore over the real SQLite engine: replays of completed
// records come from memory and equal the engine's answer; another fingerprint is still 422; an
// operator reset (directly, or by another process through the operations generation) is never
// answered from memory; bounds evict.
#include "host/intake/record_cache.h"
#include "support/fixed_time.h"

#include <gtest/gtest.h>

#include <memory>

#include "clawguard/clock.h"
#include "sqlite/sqlite_idempotency_store.h"
#include "support/temp_dir.h"

namespace clawguard::host {
namespace {

using ::clawguard::testing::kLease;
using ::clawguard::testing::kT0;

class RecordCacheTest : public ::testing::Test {
 protected:
  std::unique_ptr<IdempotencyStore> OpenEngine() {
    auto s = sqlite::SqliteIdempotencyStore::Open(dir_.Sub("state.db"), clock_);
    EXPECT_TRUE(s.ok()) << s.error().ToString();
    return std::move(s).value();
  }
  std::unique_ptr<CachingIdempotencyStore> OpenCached(RecordCacheOptions options = {}) {
    auto c = CachingIdempotencyStore::Create(OpenEngine(), std::move(options));
    EXPECT_TRUE(c.ok());
    return std::move(c).value();
  }
  // Completes |key| with fingerprint |fp| through |store|.
  static void Complete(IdempotencyStore& store, const std::string& key, const std::string& fp,
                       const std::string& body) {
    auto c = store.Claim(key, fp, ClaimMeta{"acme", "order.created", 2, "msg", ""}, kLease);
    ASSERT_TRUE(c.ok());
    ASSERT_EQ(c->kind, ClaimOutcome::Kind::kClaimed);
    auto done = store.Complete(key, c->fencing_token, 200, "application/json", body);
    ASSERT_TRUE(done.ok());
    ASSERT_EQ(*done, FencedWrite::kApplied);
  }
  static std::string Key(char c) { return std::string(64, c); }

  clawguard::testing::TempDir dir_;
  FixedClock clock_{kT0};
};

TEST_F(RecordCacheTest, ReplaysComeFromMemoryAndEqualTheEngine) {
  auto cached = OpenCached();
  ASSERT_NO_FATAL_FAILURE(Complete(*cached, Key('a'), "fp-a", R"({"ok":1})"));
  for (int i = 0; i < 3; ++i) {
    auto r =
        cached->Claim(Key('a'), "fp-a", ClaimMeta{"acme", "order.created", 2, "msg", ""}, kLease);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->kind, ClaimOutcome::Kind::kCompleted);
    EXPECT_EQ(r->record.status, 200);
    EXPECT_EQ(r->record.content_type, "application/json");
    EXPECT_EQ(r->record.body, R"({"ok":1})");
  }
  // The first replay filled the cache from the engine; the next two were answered from memory.
  EXPECT_EQ(cached->lookups(), 4u);
  EXPECT_EQ(cached->hits(), 2u);
  auto other =
      cached->Claim(Key('a'), "fp-other", ClaimMeta{"acme", "order.created", 2, "msg", ""}, kLease);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->kind, ClaimOutcome::Kind::kFingerprintMismatch);
}

TEST_F(RecordCacheTest, AResetIsNeverAnsweredFromMemory) {
  auto cached = OpenCached();
  ASSERT_NO_FATAL_FAILURE(Complete(*cached, Key('b'), "fp-b", "{}"));
  ASSERT_TRUE(cached->Claim(Key('b'), "fp-b", ClaimMeta{}, kLease).ok());  // cached now
  ASSERT_EQ(cached->size(), 1u);
  // This process resets it: dropped at once, the next delivery runs again.
  auto reset = cached->Reset(Key('b'));
  ASSERT_TRUE(reset.ok());
  EXPECT_TRUE(*reset);
  auto again = cached->Claim(Key('b'), "fp-b", ClaimMeta{}, kLease);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->kind, ClaimOutcome::Kind::kClaimed);
}

TEST_F(RecordCacheTest, AnotherProcessesResetDropsTheCacheAtTheNextGenerationPoll) {
  auto cached = OpenCached();
  ASSERT_TRUE(cached->Generation().ok());  // the host polls it: the generation seen
  ASSERT_NO_FATAL_FAILURE(Complete(*cached, Key('c'), "fp-c", "{}"));
  ASSERT_TRUE(cached->Claim(Key('c'), "fp-c", ClaimMeta{}, kLease).ok());
  ASSERT_EQ(cached->size(), 1u);
  auto operator_store = OpenEngine();  // `clawguard idem reset` in another process
  ASSERT_TRUE(operator_store->Reset(Key('c')).ok());
  ASSERT_TRUE(cached->Generation().ok());  // the next poll (≤ 200 ms in the host)
  EXPECT_EQ(cached->size(), 0u);
  auto again = cached->Claim(Key('c'), "fp-c", ClaimMeta{}, kLease);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->kind, ClaimOutcome::Kind::kClaimed);
}

TEST_F(RecordCacheTest, BoundsEvictTheOldestAndInProgressIsNeverCached) {
  RecordCacheOptions options;
  options.max_entries = 2;
  auto cached = OpenCached(options);
  for (char c : {'d', 'e', 'f'}) {
    ASSERT_NO_FATAL_FAILURE(Complete(*cached, Key(c), std::string("fp-") + c, "{}"));
    ASSERT_TRUE(cached->Claim(Key(c), std::string("fp-") + c, ClaimMeta{}, kLease).ok());
  }
  EXPECT_EQ(cached->size(), 2u);
  // An in-progress key answers 409 from the engine every time: nothing cached.
  auto first = cached->Claim(Key('g'), "fp-g", ClaimMeta{}, kLease);
  ASSERT_TRUE(first.ok());
  auto second = cached->Claim(Key('g'), "fp-g", ClaimMeta{}, kLease);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->kind, ClaimOutcome::Kind::kInProgress);
  EXPECT_EQ(cached->size(), 2u);
  RecordCacheOptions zero;
  zero.max_entries = 0;
  EXPECT_FALSE(CachingIdempotencyStore::Create(OpenEngine(), zero).ok());
}

TEST_F(RecordCacheTest, AnExpiredEntryIsRefreshedFromTheEngineAndStillEvictedInOrder) {
  // A steady time the test moves (the TTL is the cache's only use of time).
  auto now = std::make_shared<std::chrono::steady_clock::time_point>(
      std::chrono::steady_clock::time_point{});
  RecordCacheOptions options;
  options.max_entries = 2;
  options.ttl = std::chrono::seconds(60);
  options.now = [now] { return *now; };
  auto cached = OpenCached(options);
  const auto replay = [&](char c) {
    auto r = cached->Claim(Key(c), std::string("fp-") + c, ClaimMeta{}, kLease);
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r->kind, ClaimOutcome::Kind::kCompleted);
  };
  for (char c : {'h', 'i'}) {
    ASSERT_NO_FATAL_FAILURE(Complete(*cached, Key(c), std::string("fp-") + c, "{}"));
  }
  replay('h');  // fills h
  *now += std::chrono::seconds(30);
  replay('i');  // fills i
  EXPECT_EQ(cached->hits(), 0u);
  *now += std::chrono::seconds(31);  // h expired, i live
  replay('h');                       // a miss: read from the engine, and the entry refreshed
  EXPECT_EQ(cached->hits(), 0u);
  replay('h');  // from memory again (before the fix, an expired entry was never replaced)
  replay('i');
  EXPECT_EQ(cached->hits(), 2u);
  // A third key evicts the oldest live entry (i), not h, whose first insertion is older but stale.
  ASSERT_NO_FATAL_FAILURE(Complete(*cached, Key('j'), "fp-j", "{}"));
  replay('j');
  EXPECT_EQ(cached->size(), 2u);
  const uint64_t before = cached->hits();
  replay('h');
  EXPECT_EQ(cached->hits(), before + 1);  // h still held
  replay('i');
  EXPECT_EQ(cached->hits(), before + 1);  // i was evicted: read from the engine
  // Many refreshes keep the bookkeeping bounded and the answers right.
  for (int k = 0; k < 3000; ++k) {
    *now += std::chrono::seconds(61);
    replay(k % 2 == 0 ? 'h' : 'i');
  }
  EXPECT_EQ(cached->size(), 2u);
}

}  // namespace
}  // namespace clawguard::host
