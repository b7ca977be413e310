// fixed_time.h — the instant the store and host tests start their FakeClock at, and the lease
// they claim with, so that no test depends on today's date.
#ifndef CLAWGUARD_TESTS_SUPPORT_FIXED_TIME_H_
#define CLAWGUARD_TESTS_SUPPORT_FIXED_TIME_H_

#include <cstdint>

namespace clawguard::testing {

inline constexpr int64_t kT0 = 1'796'000'000'000;  // 2026-12-01, in ms since the epoch
inline constexpr int64_t kLease = 30'000;          // ms

}  // namespace clawguard::testing

#endif  // CLAWGUARD_TESTS_SUPPORT_FIXED_TIME_H_
