// rate_limiter.h — the per-plugin token bucket of host.yaml `webhooks.rate_limit`
// ({ per_plugin: COUNT/PERIOD, burst: B }): a bucket of B tokens per plugin (COUNT if B is 0),
// refilled at COUNT per PERIOD; a delivery takes one token, and without one it is answered 429
// `rate_limited` with Retry-After = the whole seconds (≥ 1) until a token is back.
//
// Arithmetic is exact integers: a bucket holds tokens × PERIOD(ms) and gains COUNT per
// millisecond, so no rounding drifts. Buckets are kept for at most kMaxRateLimitedPlugins
// plugins (plugin names come from loaded, signed plugins; over the cap the fullest — idle —
// buckets are forgotten, which only ever gives a plugin a full bucket it would have had anyway).
// A clock that goes back adds nothing. Thread-safe (one mutex); time only from the Clock.
#ifndef CLAWGUARD_HOST_GUARD_RATE_LIMITER_H_
#define CLAWGUARD_HOST_GUARD_RATE_LIMITER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "clawguard/clock.h"
#include "clawguard/error.h"
#include "core/mutex.h"

namespace clawguard::host {

// RateLimit is a token bucket's settings (host.yaml `webhooks.rate_limit`).
struct RateLimit {
  uint64_t count = 0;  // "200/s": 200 per 1000 ms
  std::chrono::milliseconds per{0};
  uint64_t burst = 0;
};

inline constexpr size_t kMaxRateLimitedPlugins = 4096;

class RateLimiter {
 public:
  // Create checks |limit|: count ≥ 1, period 1 ms .. 1 day, burst ≤ 10^9 (0 means count);
  // kConfigInvalid otherwise. |clock| must outlive the limiter.
  static Result<std::unique_ptr<RateLimiter>> Create(const RateLimit& limit, const Clock& clock,
                                                     size_t max_plugins = kMaxRateLimitedPlugins);

  struct Decision {
    bool allowed = true;
    int64_t retry_after_s = 0;  // !allowed: whole seconds until a token is back (≥ 1)
  };
  // Acquire takes one token from |plugin|'s bucket.
  Decision Acquire(std::string_view plugin);

 private:
  struct Bucket {
    int64_t scaled = 0;   // tokens × period_ms
    int64_t last_ms = 0;  // time of the last refill
  };
  RateLimiter(int64_t count, int64_t period_ms, int64_t burst, const Clock& clock,
              size_t max_plugins)
      : count_(count),
        period_ms_(period_ms),
        capacity_(burst * period_ms),
        clock_(clock),
        max_plugins_(max_plugins) {}
  void Refill(Bucket& b, int64_t now) const CLAWGUARD_REQUIRES(mu_);

  const int64_t count_;  // tokens per period
  const int64_t period_ms_;
  const int64_t capacity_;  // burst × period_ms
  const Clock& clock_;
  const size_t max_plugins_;
  Mutex mu_;
  std::map<std::string, Bucket, std::less<>> buckets_ CLAWGUARD_GUARDED_BY(mu_);
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_GUARD_RATE_LIMITER_H_
