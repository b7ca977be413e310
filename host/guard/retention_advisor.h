// retention_advisor.h — RetentionAdvisor: how long idempotency records must be kept, learnt from
// the deliveries themselves.
//
// A platform retries (or a client repeats) an event some time after its first delivery. Every
// later delivery of a key that still has its record (a replay, a live lease, a fingerprint
// mismatch, and a tombstone hit whose record time is known) tells the pipeline the gap between
// the first delivery (record.created_ms) and now; the advisor keeps those gaps and advises a
// retention of p99 × 1.2. A retention shorter than that means late duplicates hit tombstones
// (manual review) or, worse, run again once the tombstone is gone too.
//
// Memory is bounded and constant: gaps go to a log-linear histogram (exact below 64 ms, then 32
// buckets per power of two, so a bucket is at most 1/32 ≈ 3 % wide). Percentiles are the upper
// bound of the bucket holding the nearest-rank sample: they over-estimate by at most that width,
// never under-estimate (the safe side for a retention). Gaps above kMaxObservedGapMs count as
// kMaxObservedGapMs; negative gaps (the record's clock ran ahead of ours) are dropped.
//
// Thread-safe (one mutex; Observe runs only on duplicate deliveries).
#ifndef CLAWGUARD_HOST_GUARD_RETENTION_ADVISOR_H_
#define CLAWGUARD_HOST_GUARD_RETENTION_ADVISOR_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "core/mutex.h"

namespace clawguard::host {

inline constexpr int64_t kMaxObservedGapMs = int64_t{1} << 42;  // ≈ 139 years
inline constexpr uint64_t kMinRetentionSamples = 100;           // no advice below this many gaps

struct RetentionReport {
  uint64_t samples = 0;               // gaps observed so far
  std::optional<int64_t> p99_ms;      // nullopt below kMinRetentionSamples
  std::optional<int64_t> advised_ms;  // ceil(p99 × 1.2); nullopt below kMinRetentionSamples
  int64_t configured_ms = 0;          // what the caller passed (idempotency retention)
  // sufficient: configured_ms ≥ advised_ms; true while there is no advice yet (nothing shows the
  // configured retention to be too short).
  bool sufficient = true;
};

class RetentionAdvisor {
 public:
  RetentionAdvisor() = default;
  RetentionAdvisor(const RetentionAdvisor&) = delete;
  RetentionAdvisor& operator=(const RetentionAdvisor&) = delete;

  // Observe records one gap between a key's first delivery and a later delivery of it.
  void Observe(int64_t gap_ms);
  // Samples is the number of gaps recorded.
  uint64_t Samples() const;
  // PercentileMs returns the nearest-rank |q|-quantile (0 < q ≤ 1) as its bucket's upper bound;
  // nullopt without samples.
  std::optional<int64_t> PercentileMs(double q) const;
  // AdvisedRetentionMs is ceil(p99 × 1.2), or nullopt below kMinRetentionSamples gaps.
  std::optional<int64_t> AdvisedRetentionMs() const;
  // Report compares the advice with |configured_retention_ms|.
  RetentionReport Report(int64_t configured_retention_ms) const;

  // Bucket helpers (exposed for tests): the bucket of |gap_ms| and the largest gap it holds.
  static size_t BucketOf(int64_t gap_ms);
  static int64_t BucketUpperMs(size_t bucket);

  static constexpr int kSubBucketBits = 5;  // 32 buckets per power of two
  static constexpr int64_t kLinearLimit = int64_t{2}
                                          << kSubBucketBits;  // 0..63 ms: one bucket each
  static constexpr size_t kBuckets =
      static_cast<size_t>(kLinearLimit) +
      (42 - (kSubBucketBits + 1) + 1) * (size_t{1} << kSubBucketBits);

 private:
  std::optional<int64_t> PercentileLocked(double q) const CLAWGUARD_REQUIRES(mu_);

  mutable Mutex mu_;
  std::array<uint64_t, kBuckets> counts_ CLAWGUARD_GUARDED_BY(mu_) = {};
  uint64_t samples_ CLAWGUARD_GUARDED_BY(mu_) = 0;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_GUARD_RETENTION_ADVISOR_H_
