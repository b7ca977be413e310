// retention_advisor.cpp — the gap histogram and its percentiles.
#include "host/guard/retention_advisor.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace clawguard::host {
namespace {

constexpr int64_t kSubBuckets = int64_t{1} << RetentionAdvisor::kSubBucketBits;  // per power of two
constexpr int kFirstExponent = RetentionAdvisor::kSubBucketBits + 1;  // 2^6 = kLinearLimit

}  // namespace

size_t RetentionAdvisor::BucketOf(int64_t gap_ms) {
  const int64_t v = std::clamp<int64_t>(gap_ms, 0, kMaxObservedGapMs);
  if (v < kLinearLimit) return static_cast<size_t>(v);
  const int e = static_cast<int>(std::bit_width(static_cast<uint64_t>(v))) -
                1;  // floor(log2 v), ≥ kFirstExponent
  const int64_t sub = (v >> (e - kSubBucketBits)) & (kSubBuckets - 1);
  return static_cast<size_t>(kLinearLimit + (e - kFirstExponent) * kSubBuckets + sub);
}

int64_t RetentionAdvisor::BucketUpperMs(size_t bucket) {
  const auto i = static_cast<int64_t>(bucket);
  if (i < kLinearLimit) return i;
  const int64_t j = i - kLinearLimit;
  const int e = kFirstExponent + static_cast<int>(j / kSubBuckets);
  const int64_t sub = j % kSubBuckets;
  return ((kSubBuckets + sub + 1) << (e - kSubBucketBits)) - 1;
}

void RetentionAdvisor::Observe(int64_t gap_ms) {
  if (gap_ms < 0) return;  // the record's clock ran ahead of ours: no information
  const size_t b = BucketOf(gap_ms);
  MutexLock lock(mu_);
  ++counts_[b];
  ++samples_;
}

uint64_t RetentionAdvisor::Samples() const {
  MutexLock lock(mu_);
  return samples_;
}

std::optional<int64_t> RetentionAdvisor::PercentileLocked(double q) const {
  if (samples_ == 0 || !(q > 0.0)) return std::nullopt;
  // Nearest rank: the smallest sample with at least ceil(q × n) samples at or below it. The small
  // epsilon keeps 0.99 × 100 (= 99.000…01 in binary) at rank 99.
  const double exact = std::min(q, 1.0) * static_cast<double>(samples_);
  const auto rank =
      std::clamp<uint64_t>(static_cast<uint64_t>(std::ceil(exact - 1e-9)), 1, samples_);
  uint64_t seen = 0;
  for (size_t b = 0; b < kBuckets; ++b) {
    seen += counts_[b];
    if (seen >= rank) return BucketUpperMs(b);
  }
  return BucketUpperMs(kBuckets - 1);  // not reached: the counts sum to samples_
}

std::optional<int64_t> RetentionAdvisor::PercentileMs(double q) const {
  MutexLock lock(mu_);
  return PercentileLocked(q);
}

std::optional<int64_t> RetentionAdvisor::AdvisedRetentionMs() const { return Report(0).advised_ms; }

RetentionReport RetentionAdvisor::Report(int64_t configured_retention_ms) const {
  RetentionReport r;
  r.configured_ms = configured_retention_ms;
  MutexLock lock(mu_);
  r.samples = samples_;
  if (samples_ < kMinRetentionSamples) return r;
  r.p99_ms = PercentileLocked(0.99);
  r.advised_ms = (*r.p99_ms * 12 + 9) / 10;  // ceil(p99 × 1.2); p99 < 2^43, no overflow
  r.sufficient = configured_retention_ms >= *r.advised_ms;
  return r;
}

}  // namespace clawguard::host
