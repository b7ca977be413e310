// clock.h — Clock is injected wherever time decides an outcome (certificate validity, allowlist
// expiry, webhook tolerance, leases). SystemClock is the production one; FixedClock is for tests.
#ifndef CLAWGUARD_CLOCK_H_
#define CLAWGUARD_CLOCK_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace clawguard {

// Clock returns the current time in Unix seconds and milliseconds. Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t NowMillis() const = 0;
  int64_t NowSeconds() const { return NowMillis() / 1000; }
};

class SystemClock final : public Clock {
 public:
  int64_t NowMillis() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  // Instance is a process-wide SystemClock.
  static const SystemClock& Instance() {
    static const SystemClock clock;
    return clock;
  }
};

// FixedClock is a test clock: it moves only when told.
class FixedClock final : public Clock {
 public:
  explicit FixedClock(int64_t now_ms) : now_ms_(now_ms) {}
  int64_t NowMillis() const override { return now_ms_.load(); }
  void Set(int64_t now_ms) { now_ms_.store(now_ms); }
  void Advance(int64_t ms) { now_ms_.fetch_add(ms); }

 private:
  std::atomic<int64_t> now_ms_;
};

// ParseRfc3339Utc parses "YYYY-MM-DDTHH:MM:SSZ" (UTC only, no fractions) into Unix seconds.
std::optional<int64_t> ParseRfc3339Utc(std::string_view text);
// FormatRfc3339Utc renders Unix seconds as "YYYY-MM-DDTHH:MM:SSZ".
std::string FormatRfc3339Utc(int64_t unix_seconds);

}  // namespace clawguard

#endif  // CLAWGUARD_CLOCK_H_
