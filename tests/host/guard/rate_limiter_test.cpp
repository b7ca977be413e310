// rate_limiter_test.cpp — the per-plugin token bucket with an injected FixedClock (no sleeps).
#include "host/guard/rate_limiter.h"
#include "support/fixed_time.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard::host {
namespace {

using Millis = std::chrono::milliseconds;

using ::clawguard::testing::kT0;

std::unique_ptr<RateLimiter> Make(const RateLimit& limit, const Clock& clock,
                                  size_t max_plugins = 4096) {
  auto r = RateLimiter::Create(limit, clock, max_plugins);
  EXPECT_TRUE(r.ok()) << r.error().ToString();
  return r.ok() ? std::move(r).value() : nullptr;
}

TEST(RateLimiterTest, BurstThenRefillAtTheRate) {
  FixedClock clock(kT0);
  auto rl = Make(RateLimit{2, Millis(1000), 4}, clock);  // 2/s, burst 4
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(rl->Acquire("acme").allowed) << i;
  auto refused = rl->Acquire("acme");
  EXPECT_FALSE(refused.allowed);
  EXPECT_EQ(refused.retry_after_s, 1);  // a token is back in 500 ms → 1 s
  clock.Advance(499);
  EXPECT_FALSE(rl->Acquire("acme").allowed);
  clock.Advance(1);
  EXPECT_TRUE(rl->Acquire("acme").allowed);
  EXPECT_FALSE(rl->Acquire("acme").allowed);
  clock.Advance(10'000);  // refills to the burst, not beyond
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(rl->Acquire("acme").allowed) << i;
  EXPECT_FALSE(rl->Acquire("acme").allowed);
}

TEST(RateLimiterTest, BucketsArePerPlugin) {
  FixedClock clock(kT0);
  auto rl = Make(RateLimit{1, Millis(1000), 1}, clock);
  EXPECT_TRUE(rl->Acquire("a").allowed);
  EXPECT_FALSE(rl->Acquire("a").allowed);
  EXPECT_TRUE(rl->Acquire("b").allowed);
}

TEST(RateLimiterTest, RetryAfterIsWholeSecondsRoundedUp) {
  FixedClock clock(kT0);
  auto rl = Make(RateLimit{10, Millis(60'000), 1}, clock);  // 10/m: a token every 6 s
  EXPECT_TRUE(rl->Acquire("p").allowed);
  EXPECT_EQ(rl->Acquire("p").retry_after_s, 6);
  clock.Advance(4500);
  EXPECT_EQ(rl->Acquire("p").retry_after_s, 2);  // 1.5 s left → 2
  clock.Advance(1499);
  EXPECT_EQ(rl->Acquire("p").retry_after_s, 1);  // 1 ms left → 1
  clock.Advance(1);
  EXPECT_TRUE(rl->Acquire("p").allowed);
}

TEST(RateLimiterTest, ZeroBurstMeansTheCountAndClockGoingBackAddsNothing) {
  FixedClock clock(kT0);
  auto rl = Make(RateLimit{3, Millis(1000), 0}, clock);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(rl->Acquire("p").allowed);
  EXPECT_FALSE(rl->Acquire("p").allowed);
  clock.Set(kT0 - 3'600'000);
  EXPECT_FALSE(rl->Acquire("p").allowed);
}

TEST(RateLimiterTest, LongIdleDoesNotOverflow) {
  FixedClock clock(kT0);
  auto rl = Make(RateLimit{1'000'000'000, Millis(86'400'000), 1'000'000'000}, clock);
  EXPECT_TRUE(rl->Acquire("p").allowed);
  clock.Advance(int64_t{1} << 50);
  EXPECT_TRUE(rl->Acquire("p").allowed);
}

TEST(RateLimiterTest, PluginCountIsBounded) {
  FixedClock clock(kT0);
  auto rl = Make(RateLimit{1, Millis(1000), 1}, clock, /*max_plugins=*/4);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(rl->Acquire("p" + std::to_string(i)).allowed);
}

TEST(RateLimiterTest, ConcurrentAcquiresNeverExceedTheBurst) {
  FixedClock clock(kT0);
  auto rl = Make(RateLimit{1, Millis(3'600'000), 100}, clock);
  std::atomic<int> allowed{0};
  std::vector<std::thread> threads;
  threads.reserve(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        if (rl->Acquire("hot").allowed) allowed.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(allowed.load(), 100);
}

TEST(RateLimiterTest, RefusesImpossibleLimits) {
  FixedClock clock(kT0);
  EXPECT_THAT(RateLimiter::Create(RateLimit{0, Millis(1000), 1}, clock),
              HasReason(Reason::kConfigInvalid));
  EXPECT_THAT(RateLimiter::Create(RateLimit{1, Millis(0), 1}, clock),
              HasReason(Reason::kConfigInvalid));
  EXPECT_THAT(RateLimiter::Create(RateLimit{1, Millis(1000), 2'000'000'000}, clock),
              HasReason(Reason::kConfigInvalid));
}

}  // namespace
}  // namespace clawguard::host
