// rate_limiter.cpp — per-plugin token buckets in exact integer arithmetic.
#include "host/guard/rate_limiter.h"

#include <algorithm>

namespace clawguard::host {
namespace {

constexpr int64_t kMaxPeriodMs = 86'400'000;  // 1 day
constexpr uint64_t kMaxCount = 1'000'000'000;

}  // namespace

Result<std::unique_ptr<RateLimiter>> RateLimiter::Create(const RateLimit& limit, const Clock& clock,
                                                         size_t max_plugins) {
  const int64_t period = limit.per.count();
  if (limit.count < 1 || limit.count > kMaxCount || period < 1 || period > kMaxPeriodMs ||
      limit.burst > kMaxCount || max_plugins < 1) {
    return Status(Reason::kConfigInvalid,
                  "webhooks.rate_limit: expected per_plugin 1.." + std::to_string(kMaxCount) +
                      " per 1 ms..1 d and burst 0.." + std::to_string(kMaxCount) + "; found " +
                      std::to_string(limit.count) + " per " + std::to_string(period) +
                      " ms, burst " + std::to_string(limit.burst));
  }
  const auto count = static_cast<int64_t>(limit.count);
  const int64_t burst = limit.burst == 0 ? count : static_cast<int64_t>(limit.burst);
  return std::unique_ptr<RateLimiter>(new RateLimiter(count, period, burst, clock, max_plugins));
}

void RateLimiter::Refill(Bucket& b, int64_t now) const {
  if (now <= b.last_ms) return;  // the clock stood still or went back: nothing to add
  const int64_t elapsed = now - b.last_ms;
  b.last_ms = now;
  const int64_t missing = capacity_ - b.scaled;
  // elapsed × count may overflow for a long idle bucket: compare before multiplying.
  b.scaled = elapsed >= (missing + count_ - 1) / count_ ? capacity_ : b.scaled + elapsed * count_;
}

RateLimiter::Decision RateLimiter::Acquire(std::string_view plugin) {
  MutexLock lock(mu_);
  const int64_t now = clock_.NowMillis();
  auto it = buckets_.find(plugin);
  if (it == buckets_.end()) {
    if (buckets_.size() >= max_plugins_) {
      for (auto b = buckets_.begin(); b != buckets_.end();) {
        Refill(b->second, now);
        b = b->second.scaled == capacity_ ? buckets_.erase(b) : std::next(b);
      }
      if (buckets_.size() >= max_plugins_)
        buckets_.erase(buckets_.begin());  // all busy: forget one
    }
    it = buckets_.emplace(std::string(plugin), Bucket{capacity_, now}).first;
  }
  Bucket& b = it->second;
  Refill(b, now);
  if (b.scaled >= period_ms_) {
    b.scaled -= period_ms_;
    return Decision{};
  }
  const int64_t wait_ms = (period_ms_ - b.scaled + count_ - 1) / count_;  // until one whole token
  return Decision{false, std::max<int64_t>(1, (wait_ms + 999) / 1000)};
}

}  // namespace clawguard::host
