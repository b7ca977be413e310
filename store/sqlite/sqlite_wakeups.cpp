// sqlite_wakeups.cpp — see sqlite_wakeups.h.
#include "sqlite/sqlite_wakeups.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace clawguard::sqlite::wake {

void Post(std::atomic<uint32_t>& word, fiber::Fiber* f, uint32_t bit, Wakes& wakes) {
  if ((word.fetch_or(bit, std::memory_order_acq_rel) & kSleeping) == 0) return;
  if (f != nullptr) fiber::Pin(f);
  wakes.emplace_back(&word, f);
}

void WakeAll(const Wakes& wakes) {
  for (const auto& [word, f] : wakes) {
    if (f != nullptr) {
      fiber::UnparkPinned(f);
      continue;
    }
    ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr,
              0);
  }
}

void Sleep(std::atomic<uint32_t>& word, uint32_t seen) {
  if ((seen & kSleeping) == 0) {
    if (!word.compare_exchange_strong(seen, seen | kSleeping, std::memory_order_acq_rel)) return;
    seen |= kSleeping;
  }
  if (fiber::Current() != nullptr) {
    fiber::Park();  // a setter saw kSleeping and unparks us (or already did: Park returns at once)
    return;
  }
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, seen, nullptr,
            nullptr, 0);
}

void AwaitBit(std::atomic<uint32_t>& word, uint32_t bit) {
  for (uint32_t s = word.load(std::memory_order_acquire); (s & bit) == 0;
       s = word.load(std::memory_order_acquire)) {
    Sleep(word, s);
  }
  word.fetch_and(~bit, std::memory_order_relaxed);
}

}  // namespace clawguard::sqlite::wake
