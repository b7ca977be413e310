// retention_advisor_test.cpp — the gap histogram: exact small gaps, bounded relative error,
// nearest-rank p99, the ×1.2 advice and no advice below 100 samples.
#include "host/guard/retention_advisor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

namespace clawguard::host {
namespace {

TEST(RetentionAdvisorTest, NoAdviceBelowAHundredSamples) {
  RetentionAdvisor a;
  EXPECT_FALSE(a.AdvisedRetentionMs().has_value());
  EXPECT_FALSE(a.PercentileMs(0.99).has_value());
  for (int i = 0; i < 99; ++i) a.Observe(1000);
  EXPECT_EQ(a.Samples(), 99u);
  EXPECT_FALSE(a.AdvisedRetentionMs().has_value());
  const RetentionReport r = a.Report(/*configured_retention_ms=*/1);
  EXPECT_EQ(r.samples, 99u);
  EXPECT_FALSE(r.p99_ms.has_value());
  EXPECT_FALSE(r.advised_ms.has_value());
  EXPECT_EQ(r.configured_ms, 1);
  EXPECT_TRUE(r.sufficient);  // nothing shows it is too short yet
  a.Observe(1000);
  EXPECT_TRUE(a.AdvisedRetentionMs().has_value());
}

TEST(RetentionAdvisorTest, P99IsTheNearestRankAndAdviceIsTwentyPercentMore) {
  RetentionAdvisor a;
  for (int64_t g = 1; g <= 100; ++g) a.Observe(g);  // 1..100 ms
  // Rank ceil(0.99 × 100) = 99; 99 ms sits in bucket [98, 99] (2 ms wide above 64 ms).
  EXPECT_EQ(a.PercentileMs(0.99), 99);
  EXPECT_EQ(a.PercentileMs(0.5), 50);
  EXPECT_EQ(a.PercentileMs(1.0), 101);     // 100 is in [100, 101]: the upper bound, never less
  EXPECT_EQ(a.AdvisedRetentionMs(), 119);  // ceil(99 × 1.2) = ceil(118.8)
  const RetentionReport r = a.Report(119);
  EXPECT_EQ(r.samples, 100u);
  EXPECT_EQ(r.p99_ms, 99);
  EXPECT_EQ(r.advised_ms, 119);
  EXPECT_TRUE(r.sufficient);
  EXPECT_FALSE(a.Report(118).sufficient);
}

TEST(RetentionAdvisorTest, OneSlowRetryInAHundredDoesNotSetTheP99ButTwoDo) {
  RetentionAdvisor a;
  constexpr int64_t kMinute = 60'000;
  constexpr int64_t kDay = 86'400'000;
  for (int i = 0; i < 99; ++i) a.Observe(kMinute);
  a.Observe(3 * kDay);
  const int64_t p99 = *a.PercentileMs(0.99);
  EXPECT_GE(p99, kMinute);
  EXPECT_LE(p99, kMinute + kMinute / 32);
  RetentionAdvisor b;
  for (int i = 0; i < 98; ++i) b.Observe(kMinute);
  b.Observe(3 * kDay);
  b.Observe(3 * kDay);
  const int64_t p99b = *b.PercentileMs(0.99);
  EXPECT_GE(p99b, 3 * kDay);
  EXPECT_LE(p99b, 3 * kDay + 3 * kDay / 32);
  EXPECT_GE(*b.AdvisedRetentionMs(), 3 * kDay * 12 / 10);
}

TEST(RetentionAdvisorTest, BucketsAreExactBelow64AndAtMostOneThirtySecondWideAbove) {
  for (int64_t g = 0; g < 64; ++g) {
    EXPECT_EQ(RetentionAdvisor::BucketOf(g), static_cast<size_t>(g));
    EXPECT_EQ(RetentionAdvisor::BucketUpperMs(RetentionAdvisor::BucketOf(g)), g);
  }
  size_t previous = RetentionAdvisor::BucketOf(63);
  for (int64_t g : {int64_t{64}, int64_t{65}, int64_t{1000}, int64_t{123'456}, int64_t{86'400'000},
                    int64_t{30} * 86'400'000, int64_t{1} << 41}) {
    const size_t b = RetentionAdvisor::BucketOf(g);
    EXPECT_GE(b, previous) << g;  // monotonic (64 and 65 share a bucket)
    EXPECT_LT(b, RetentionAdvisor::kBuckets) << g;
    const int64_t upper = RetentionAdvisor::BucketUpperMs(b);
    EXPECT_GE(upper, g) << g;
    EXPECT_LE(upper - g, g / 32) << g;
    EXPECT_EQ(RetentionAdvisor::BucketOf(upper), b) << g;  // the upper bound is in the bucket
    EXPECT_EQ(RetentionAdvisor::BucketOf(upper + 1), b + 1) << g;  // and the next value is not
    previous = b;
  }
  // The largest gap kept is the first value of the last bucket in use; above it, gaps are clamped.
  const size_t top = RetentionAdvisor::BucketOf(kMaxObservedGapMs);
  EXPECT_GT(top, previous);
  EXPECT_LT(top, RetentionAdvisor::kBuckets);
  EXPECT_EQ(RetentionAdvisor::BucketOf(kMaxObservedGapMs + 12345), top);
}

TEST(RetentionAdvisorTest, OutOfRangeGapsAreBoundedOrDropped) {
  RetentionAdvisor a;
  a.Observe(-5);  // the record's clock ran ahead: dropped
  EXPECT_EQ(a.Samples(), 0u);
  for (int i = 0; i < 100; ++i) a.Observe(INT64_MAX);  // counted as kMaxObservedGapMs
  EXPECT_EQ(a.Samples(), 100u);
  const int64_t p99 = *a.PercentileMs(0.99);
  EXPECT_GE(p99, kMaxObservedGapMs);
  EXPECT_LE(p99, kMaxObservedGapMs + kMaxObservedGapMs / 32);
  EXPECT_GT(*a.AdvisedRetentionMs(), p99);  // no overflow
}

TEST(RetentionAdvisorTest, ObserveFromManyThreadsCountsEverySample) {
  RetentionAdvisor a;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&a, t] {
      for (int i = 0; i < 1000; ++i) a.Observe(t * 1000 + i);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(a.Samples(), 4000u);
  const int64_t p99 = *a.PercentileMs(0.99);
  EXPECT_GE(p99, 3959);  // rank 3960 of 0..3999
  EXPECT_LE(p99, 3959 + 3959 / 32);
}

}  // namespace
}  // namespace clawguard::host
