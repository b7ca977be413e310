// sqlite_wakeups.h — how SqliteWriter's waiters sleep and are woken (sqlite_writer.h).
//
// A waiter (a Write's Pending, on its caller's stack) sleeps on its own 32-bit word:
// kDone (its batch ran: result, seq and flushed are set), kLead (it may lead the next batch),
// kSynced (the flush it waited for ended). Bits are only set under mu_, by a leader that knows
// the Pending is alive (a batch member not yet done, a queued waiter, a registered sync waiter);
// the waiter returns only after it saw the bit it waits for. The FUTEX_WAKE comes after mu_ is
// released: woken under mu_ (as a condition variable notified under its lock), the waiter's first
// act was to block on mu_ again — in the host benchmark 14 % of the host's context switches were
// such re-blocks. A wake names an address only (the kernel reads nothing there): if the waiter
// already returned and the stack word is reused, its new owner wakes spuriously and re-checks,
// which every futex user (this one, glibc's mutexes and condition variables) tolerates.
#ifndef CLAWGUARD_STORE_SQLITE_SQLITE_WAKEUPS_H_
#define CLAWGUARD_STORE_SQLITE_SQLITE_WAKEUPS_H_

#include <atomic>
#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/fiber.h"

namespace clawguard::sqlite::wake {

inline constexpr uint32_t kDone = 1;
inline constexpr uint32_t kLead = 2;
inline constexpr uint32_t kSynced = 4;
inline constexpr uint32_t kSleeping = 8;  // the waiter slept (or may sleep): a setter must wake it
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
              std::atomic<uint32_t>::is_always_lock_free);

// A waiter on a fiber (fiber.h) parks instead of sleeping in the kernel: Post pins its fiber
// (under mu_, while the waiter is known to be alive) and WakeAll unparks it.
using Wakes = std::vector<std::pair<std::atomic<uint32_t>*, fiber::Fiber*>>;

// Post sets |bit| in |word| (mu_ held) and notes a wake if its waiter (on |f| if not nullptr) may
// sleep.
void Post(std::atomic<uint32_t>& word, fiber::Fiber* f, uint32_t bit, Wakes& wakes);

// WakeAll wakes what Post noted (after mu_ is released).
void WakeAll(const Wakes& wakes);

// Sleep waits until |word| differs from |seen| (which holds none of the bits waited for); it may
// return early (a spurious wake-up): callers re-check.
void Sleep(std::atomic<uint32_t>& word, uint32_t seen);

// AwaitBit waits until |bit| is set in |word|, then clears it.
void AwaitBit(std::atomic<uint32_t>& word, uint32_t bit);

}  // namespace clawguard::sqlite::wake

#endif  // CLAWGUARD_STORE_SQLITE_SQLITE_WAKEUPS_H_
