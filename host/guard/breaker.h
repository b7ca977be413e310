// breaker.h — the circuit breakers of ARCHITECTURE.md "Host request pipeline" step 6, configured
// from host.yaml `breaker.key` and `breaker.erp` (BreakerSpec).
//
// KeyBreaker counts failures per idempotency key: `failures` of them within `window` (the oldest
// at most `window` before the newest) open it for `cooldown`; while open the pipeline answers 503
// `breaker_open` with Retry-After = the remaining cool-down, and after the cool-down the key starts
// afresh (closed, no failures). RecordFailure reports `opened_now` exactly once per opening, so the
// caller writes ONE DLQ entry (class breaker). Memory is bounded: a key is forgotten once its
// failures are all older than the window or its cool-down ended, and at most `max_keys` keys are
// tracked — over the cap the key closest to being forgotten is evicted first (WARNING: under a
// flood of distinct failing keys an evicted open key may run again before its cool-down ends; the
// idempotency record and the DLQ de-duplication still hold).
//
// EndpointBreaker guards one ERP endpoint (a manifest capability string exactly): closed → open
// after `failures` within `window`; open refuses calls for `cooldown`; then half-open lets at most
// `half_open_probes` calls through at once — a probe's success closes it, a probe's failure opens
// it again for another cool-down. A probe whose result never arrives frees its slot after a
// cool-down. At most `max_endpoints` endpoints are tracked; one beyond the cap is let through
// untracked (endpoints come from signed manifests, so the cap is never reached in practice).
//
// Both are thread-safe (one mutex each) and read time only from the injected Clock.
#ifndef CLAWGUARD_HOST_GUARD_BREAKER_H_
#define CLAWGUARD_HOST_GUARD_BREAKER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clawguard/clock.h"
#include "clawguard/error.h"
#include "core/mutex.h"

namespace clawguard::host {

// BreakerSpec is one breaker's settings (host.yaml `breaker.key`, `breaker.erp`).
struct BreakerSpec {
  int failures = 0;
  std::chrono::milliseconds window{0}, cooldown{0};
  int half_open_probes = 0;  // erp only (0 for key)
};

inline constexpr size_t kMaxBreakerKeys = 100'000;    // idempotency keys tracked at once
inline constexpr size_t kMaxBreakerEndpoints = 4096;  // ERP endpoints tracked at once

// RetryAfterSeconds renders a remaining time as a Retry-After value: whole seconds, rounded up,
// at least 1.
int64_t RetryAfterSeconds(int64_t remaining_ms);

class KeyBreaker {
 public:
  // Create checks |spec| (failures ≥ 1, window and cooldown > 0) and |max_keys| ≥ 1; kConfigInvalid
  // otherwise. |clock| must outlive the breaker.
  static Result<std::unique_ptr<KeyBreaker>> Create(const BreakerSpec& spec, const Clock& clock,
                                                    size_t max_keys = kMaxBreakerKeys);

  struct Admission {
    bool allowed = true;
    int64_t retry_after_ms = 0;  // !allowed: the cool-down left (≥ 1)
  };
  // Check is called before running a claimed key: not allowed while its breaker is open.
  Admission Check(std::string_view key);

  struct Failure {
    bool opened_now = false;     // this failure opened the breaker: write the DLQ entry now
    int64_t retry_after_ms = 0;  // > 0 while open: the cool-down left
  };
  // RecordFailure counts a failure of |key| (plugin failed or timed out, store refused, …).
  Failure RecordFailure(std::string_view key);
  // RecordSuccess forgets |key|'s failures (not an open breaker's cool-down).
  void RecordSuccess(std::string_view key);

  size_t TrackedKeys();
  size_t OpenKeys();  // for the circuit_breaker_open metric

 private:
  struct KeyState {
    std::deque<int64_t> failures;  // times within the window, oldest first (≤ spec.failures)
    int64_t open_until = 0;        // > now: open
    int64_t expires_at = 0;        // when the state is worth nothing
  };
  KeyBreaker(const BreakerSpec& spec, const Clock& clock, size_t max_keys)
      : failures_(spec.failures),
        window_ms_(spec.window.count()),
        cooldown_ms_(spec.cooldown.count()),
        max_keys_(max_keys),
        clock_(clock) {}
  void Sweep(int64_t now) CLAWGUARD_REQUIRES(mu_);  // forget expired keys
  // Touch re-indexes |s| (the state of |key|) under its new expiry.
  void Touch(const std::string& key, KeyState& s, int64_t new_expiry) CLAWGUARD_REQUIRES(mu_);
  void Erase(std::map<std::string, KeyState, std::less<>>::iterator it) CLAWGUARD_REQUIRES(mu_);

  const int failures_;
  const int64_t window_ms_, cooldown_ms_;
  const size_t max_keys_;
  const Clock& clock_;
  Mutex mu_;
  std::map<std::string, KeyState, std::less<>> keys_ CLAWGUARD_GUARDED_BY(mu_);
  // (expires_at, key)
  std::set<std::pair<int64_t, std::string>> by_expiry_ CLAWGUARD_GUARDED_BY(mu_);
};

class EndpointBreaker {
 public:
  enum class State { kClosed, kOpen, kHalfOpen };
  static std::string_view StateName(State s);  // "closed", "open", "half_open"

  // Create checks |spec| (failures ≥ 1, window and cooldown > 0, half_open_probes ≥ 1);
  // kConfigInvalid otherwise. |clock| must outlive the breaker.
  static Result<std::unique_ptr<EndpointBreaker>> Create(
      const BreakerSpec& spec, const Clock& clock, size_t max_endpoints = kMaxBreakerEndpoints);

  struct Permit {
    bool allowed = true;
    bool probe = false;          // a half-open probe: pass it back to Record*
    int64_t retry_after_ms = 0;  // !allowed: when to try again (≥ 1)
  };
  // Acquire asks to send one call to |endpoint|. Every allowed call must be followed by exactly
  // one RecordSuccess or RecordFailure with the permit's |probe|.
  Permit Acquire(std::string_view endpoint);
  // RecordFailure: the ERP failed (5xx, timeout, connection error). Returns true when this
  // failure opened the breaker (closed → open, or a failed probe) — log, alert, count it.
  bool RecordFailure(std::string_view endpoint, bool probe);
  // RecordSuccess: the ERP answered (any status that is not a failure above). A probe closes it.
  void RecordSuccess(std::string_view endpoint, bool probe);

  struct Snapshot {
    std::string endpoint;
    State state = State::kClosed;
    int64_t retry_after_ms = 0;  // open: the cool-down left
    size_t recent_failures = 0;  // closed: failures within the window
  };
  State StateOf(std::string_view endpoint);
  // SnapshotAll returns every tracked endpoint by name (for /ops and metrics).
  std::vector<Snapshot> SnapshotAll();

 private:
  struct EndpointState {
    State state = State::kClosed;
    std::deque<int64_t> failures;
    int64_t open_until = 0;
    int probes_in_flight = 0;
    int64_t probe_deadline = 0;  // half-open: when unanswered probes are given up
  };
  EndpointBreaker(const BreakerSpec& spec, const Clock& clock, size_t max_endpoints)
      : failures_(spec.failures),
        window_ms_(spec.window.count()),
        cooldown_ms_(spec.cooldown.count()),
        probes_(spec.half_open_probes),
        max_endpoints_(max_endpoints),
        clock_(clock) {}
  // Advance applies the passage of time to |s| (open → half-open, stale failures and probes).
  // |s| is an element of endpoints_.
  void Advance(EndpointState& s, int64_t now) const CLAWGUARD_REQUIRES(mu_);
  void Open(EndpointState& s, int64_t now) const CLAWGUARD_REQUIRES(mu_);
  EndpointState* Find(std::string_view endpoint, bool create, int64_t now) CLAWGUARD_REQUIRES(mu_);

  const int failures_;
  const int64_t window_ms_, cooldown_ms_;
  const int probes_;
  const size_t max_endpoints_;
  const Clock& clock_;
  Mutex mu_;
  std::map<std::string, EndpointState, std::less<>> endpoints_ CLAWGUARD_GUARDED_BY(mu_);
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_GUARD_BREAKER_H_
