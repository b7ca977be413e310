// breaker_test.cpp — KeyBreaker and EndpointBreaker with an injected FixedClock (no sleeps).
#include "host/guard/breaker.h"
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

BreakerSpec KeySpec() { return BreakerSpec{3, Millis(5000), Millis(30'000), 0}; }
BreakerSpec ErpSpec(int probes = 1) { return BreakerSpec{3, Millis(5000), Millis(60'000), probes}; }

class KeyBreakerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto b = KeyBreaker::Create(KeySpec(), clock_);
    ASSERT_TRUE(b.ok()) << b.error().ToString();
    breaker_ = std::move(b).value();
  }
  FixedClock clock_{kT0};
  std::unique_ptr<KeyBreaker> breaker_;
};

TEST_F(KeyBreakerTest, OpensAfterThreeFailuresWithinFiveSeconds) {
  EXPECT_FALSE(breaker_->RecordFailure("k").opened_now);
  clock_.Advance(2000);
  EXPECT_FALSE(breaker_->RecordFailure("k").opened_now);
  EXPECT_TRUE(breaker_->Check("k").allowed);
  clock_.Advance(3000);  // the third exactly 5 s after the first: within the window
  const auto f = breaker_->RecordFailure("k");
  EXPECT_TRUE(f.opened_now);
  EXPECT_EQ(f.retry_after_ms, 30'000);
  const auto a = breaker_->Check("k");
  EXPECT_FALSE(a.allowed);
  EXPECT_EQ(a.retry_after_ms, 30'000);
  EXPECT_EQ(RetryAfterSeconds(a.retry_after_ms), 30);
  EXPECT_TRUE(breaker_->Check("other").allowed);
  EXPECT_EQ(breaker_->OpenKeys(), 1u);
}

TEST_F(KeyBreakerTest, DoesNotOpenForFailuresSpreadOverMoreThanTheWindow) {
  breaker_->RecordFailure("k");
  clock_.Advance(2500);
  breaker_->RecordFailure("k");
  clock_.Advance(2501);  // 5.001 s after the first
  EXPECT_FALSE(breaker_->RecordFailure("k").opened_now);
  EXPECT_TRUE(breaker_->Check("k").allowed);
  clock_.Advance(1000);  // the 2nd, 3rd and this one are within 5 s
  EXPECT_TRUE(breaker_->RecordFailure("k").opened_now);
}

TEST_F(KeyBreakerTest, ReportsOpenedNowOnceAndClosesAfterTheCooldown) {
  for (int i = 0; i < 3; ++i) breaker_->RecordFailure("k");
  clock_.Advance(10'000);
  const auto again = breaker_->RecordFailure("k");  // a rejected retry that still failed
  EXPECT_FALSE(again.opened_now);
  EXPECT_EQ(again.retry_after_ms, 20'000);
  EXPECT_EQ(breaker_->Check("k").retry_after_ms, 20'000);
  clock_.Advance(19'999);
  EXPECT_FALSE(breaker_->Check("k").allowed);
  EXPECT_EQ(RetryAfterSeconds(breaker_->Check("k").retry_after_ms), 1);
  clock_.Advance(1);
  EXPECT_TRUE(breaker_->Check("k").allowed);
  EXPECT_EQ(breaker_->TrackedKeys(), 0u);  // forgotten: a fresh start
  EXPECT_FALSE(breaker_->RecordFailure("k").opened_now);
  EXPECT_FALSE(breaker_->RecordFailure("k").opened_now);
  EXPECT_TRUE(breaker_->RecordFailure("k").opened_now);  // a new opening is reported again
}

TEST_F(KeyBreakerTest, SuccessForgetsFailures) {
  breaker_->RecordFailure("k");
  breaker_->RecordFailure("k");
  breaker_->RecordSuccess("k");
  EXPECT_FALSE(breaker_->RecordFailure("k").opened_now);
  EXPECT_EQ(breaker_->TrackedKeys(), 1u);
}

TEST_F(KeyBreakerTest, MemoryIsBounded) {
  auto small = KeyBreaker::Create(KeySpec(), clock_, /*max_keys=*/10);
  ASSERT_TRUE(small.ok());
  for (int i = 0; i < 100; ++i) (*small)->RecordFailure("key-" + std::to_string(i));
  EXPECT_EQ((*small)->TrackedKeys(), 10u);
  clock_.Advance(5001);  // every failure is out of the window: all forgotten
  EXPECT_EQ((*small)->TrackedKeys(), 0u);
}

TEST_F(KeyBreakerTest, ConcurrentFailuresReportOneOpening) {
  std::atomic<int> openings{0};
  std::vector<std::thread> threads;
  threads.reserve(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        if (breaker_->RecordFailure("hot").opened_now) openings.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(openings.load(), 1);
}

TEST(BreakerCreateTest, RefusesImpossibleSpecs) {
  FixedClock clock(kT0);
  EXPECT_THAT(KeyBreaker::Create(BreakerSpec{0, Millis(5000), Millis(1000), 0}, clock),
              HasReason(Reason::kConfigInvalid));
  EXPECT_THAT(KeyBreaker::Create(BreakerSpec{3, Millis(0), Millis(1000), 0}, clock),
              HasReason(Reason::kConfigInvalid));
  EXPECT_THAT(EndpointBreaker::Create(BreakerSpec{3, Millis(5000), Millis(1000), 0}, clock),
              HasReason(Reason::kConfigInvalid));
  EXPECT_EQ(RetryAfterSeconds(0), 1);
  EXPECT_EQ(RetryAfterSeconds(1001), 2);
}

class EndpointBreakerTest : public ::testing::Test {
 protected:
  std::unique_ptr<EndpointBreaker> Make(int probes) {
    auto b = EndpointBreaker::Create(ErpSpec(probes), clock_);
    EXPECT_TRUE(b.ok()) << b.error().ToString();
    return b.ok() ? std::move(b).value() : nullptr;
  }
  void Trip(EndpointBreaker& b) {
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(b.Acquire(kEp).allowed);
      b.RecordFailure(kEp, false);
    }
  }
  static constexpr std::string_view kEp = "POST /orders/{id}/fulfil";
  FixedClock clock_{kT0};
};

TEST_F(EndpointBreakerTest, OpensThenHalfOpensThenClosesOnAProbeSuccess) {
  auto b = Make(1);
  EXPECT_EQ(b->StateOf(kEp), EndpointBreaker::State::kClosed);
  ASSERT_TRUE(b->Acquire(kEp).allowed);
  EXPECT_FALSE(b->RecordFailure(kEp, false));
  ASSERT_TRUE(b->Acquire(kEp).allowed);
  EXPECT_FALSE(b->RecordFailure(kEp, false));
  ASSERT_TRUE(b->Acquire(kEp).allowed);
  EXPECT_TRUE(b->RecordFailure(kEp, false));  // opened now
  EXPECT_EQ(b->StateOf(kEp), EndpointBreaker::State::kOpen);
  auto p = b->Acquire(kEp);
  EXPECT_FALSE(p.allowed);
  EXPECT_EQ(p.retry_after_ms, 60'000);
  EXPECT_EQ(b->StateOf("GET /orders/{id}"),
            EndpointBreaker::State::kClosed);  // other endpoints unaffected

  clock_.Advance(60'000);
  EXPECT_EQ(b->StateOf(kEp), EndpointBreaker::State::kHalfOpen);
  auto probe = b->Acquire(kEp);
  EXPECT_TRUE(probe.allowed);
  EXPECT_TRUE(probe.probe);
  EXPECT_FALSE(b->Acquire(kEp).allowed);  // one probe at a time
  b->RecordSuccess(kEp, probe.probe);
  EXPECT_EQ(b->StateOf(kEp), EndpointBreaker::State::kClosed);
  EXPECT_TRUE(b->Acquire(kEp).allowed);
}

TEST_F(EndpointBreakerTest, AFailedProbeReopensForAnotherCooldown) {
  auto b = Make(1);
  Trip(*b);
  clock_.Advance(60'000);
  auto probe = b->Acquire(kEp);
  ASSERT_TRUE(probe.probe);
  EXPECT_TRUE(b->RecordFailure(kEp, probe.probe));
  EXPECT_EQ(b->StateOf(kEp), EndpointBreaker::State::kOpen);
  EXPECT_EQ(b->Acquire(kEp).retry_after_ms, 60'000);
}

TEST_F(EndpointBreakerTest, HalfOpenAllowsAtMostTheConfiguredProbes) {
  auto b = Make(2);
  Trip(*b);
  clock_.Advance(60'000);
  auto p1 = b->Acquire(kEp);
  auto p2 = b->Acquire(kEp);
  auto p3 = b->Acquire(kEp);
  EXPECT_TRUE(p1.allowed && p1.probe);
  EXPECT_TRUE(p2.allowed && p2.probe);
  EXPECT_FALSE(p3.allowed);
  EXPECT_GE(p3.retry_after_ms, 1);
  // A late failure of a call from before the opening does not decide anything.
  EXPECT_FALSE(b->RecordFailure(kEp, /*probe=*/false));
  EXPECT_EQ(b->StateOf(kEp), EndpointBreaker::State::kHalfOpen);
  b->RecordSuccess(kEp, p1.probe);
  EXPECT_EQ(b->StateOf(kEp), EndpointBreaker::State::kClosed);
}

TEST_F(EndpointBreakerTest, AbandonedProbesFreeTheirSlotAfterACooldown) {
  auto b = Make(1);
  Trip(*b);
  clock_.Advance(60'000);
  ASSERT_TRUE(b->Acquire(kEp).probe);  // never answered
  EXPECT_FALSE(b->Acquire(kEp).allowed);
  clock_.Advance(60'000);
  EXPECT_TRUE(b->Acquire(kEp).probe);
}

TEST_F(EndpointBreakerTest, FailuresOutsideTheWindowDoNotOpen) {
  auto b = Make(1);
  b->RecordFailure(kEp, false);
  clock_.Advance(3000);
  b->RecordFailure(kEp, false);
  clock_.Advance(2001);
  EXPECT_FALSE(b->RecordFailure(kEp, false));
  auto snap = b->SnapshotAll();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].endpoint, kEp);
  EXPECT_EQ(snap[0].state, EndpointBreaker::State::kClosed);
  EXPECT_EQ(snap[0].recent_failures, 2u);
  EXPECT_EQ(EndpointBreaker::StateName(EndpointBreaker::State::kHalfOpen), "half_open");
}

}  // namespace
}  // namespace clawguard::host
