// fiber.h — deliveries as fibers on a few carrier threads (host.yaml `listen.execution: fibers`;
// ARCHITECTURE.md "Execution model").
//
// Why: in the thread-per-delivery model every wait of a first-time delivery (its claim's commit,
// three ERP replies, three outbox appends' commits, the durable completion) puts a kernel thread
// to sleep and wakes it again — ~12 sleeps per delivery, and on the benchmark's hypervisor a
// wake-up plus switch costs ~11 µs of CPU (docs/decisions/0032). A fiber parks instead: its carrier
// thread runs the next runnable fiber without entering the kernel, and sleeps only when none is
// runnable.
//
// Model. A Carriers pool owns |n| carrier threads. Spawn starts a function as a fiber on the
// carrier running the fewest live fibers (not counting one that looks stuck, below). A fiber never
// migrates: it runs, parks and resumes on the carrier that started it, so code that expects one
// thread (OpenSSL's error queue read right after the failing call) works. WARNING: thread-local
// state is the carrier's, not the fiber's: while a fiber is parked, the other fibers of its
// carrier run and may change it (a plugin's thread-locals included; ARCHITECTURE.md "Execution
// model"). A carrier runs its
// runnable fibers in order, then polls its epoll set (the descriptors fibers wait on, and an
// eventfd for wake-ups from other threads) without blocking; it blocks in epoll_wait only when no
// fiber is runnable.
//
// Blocking. Code on a fiber must not block its carrier for long: every wait goes through Park
// (with Unpark from the waker), WaitFd (a descriptor through the carrier's epoll), SleepFor (the
// carrier's timers), or RunBlocking (the call runs on a helper thread while the fiber is parked).
// Each of these works on a plain thread too (it then blocks the thread), so code shared by both
// execution models calls them unconditionally.
//
// A stuck carrier. A plugin that loops or blocks keeps its carrier: the carrier's other fibers
// wait until it returns (the host's watchdog answers their deliveries at handler_timeout, and
// their retries run elsewhere). Spawn never picks a carrier whose current fiber has run longer
// than kStuckAfter, and adds a carrier (up to kMaxExtraCarriers more than |n|) when every carrier
// is stuck, so new work keeps running while a plugin hangs.
//
// Lifetime. Fiber stacks are mmap'd with a guard page (a stack overflow faults instead of
// corrupting memory) and reused. ~Carriers waits until every spawned function has returned, then
// stops the threads; an owner that may hold a fiber that never returns (a hung plugin) must leak
// the pool instead (HostApp does, as it does with threads a plugin keeps).
#ifndef CLAWGUARD_RUNTIME_FIBER_H_
#define CLAWGUARD_RUNTIME_FIBER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace clawguard::fiber {

struct Fiber;

// Current is the fiber running on this thread, nullptr on a plain thread.
Fiber* Current();

// Park suspends the current fiber until Unpark. It may return spuriously (callers re-check their
// condition). Requires Current() != nullptr.
void Park();

// Unpark makes |f| runnable on its carrier (from any thread). If |f| is not parked, its next Park
// returns at once. The caller must know |f| is alive: it is parked or about to park waiting for
// this caller (e.g. the caller holds a lock |f| needs before it can leave its wait).
void Unpark(Fiber* f);

// Pin and UnparkPinned are Unpark for a waker that finds |f| waiting under a lock and wakes it
// after releasing that lock (so the woken fiber does not block on the lock at once): Pin, under
// the lock, keeps |f|'s record alive; UnparkPinned, later, unparks it and drops the pin. A pool is
// destroyed only after every pin is dropped.
void Pin(Fiber* f);
void UnparkPinned(Fiber* f);

// Held says whether |f|'s carrier has been running another fiber for longer than
// Carriers::kStuckAfter — |f| cannot run until that one parks (a plugin blocking the carrier).
// |f| must be alive (e.g. parked or yielded while the caller holds a lock it needs).
bool Held(const Fiber* f);

// Yield lets every other runnable fiber of this carrier run, the work spawned onto it start, and
// the carrier poll its descriptors, before the current fiber continues. On a plain thread it does
// nothing.
void Yield();

// WaitFd waits until |fd| is ready for |events| (POLLIN and/or POLLOUT) or |timeout_ms| passed
// (-1: no limit): 1 when ready (or on an error or hang-up, which the next I/O call reports), 0 on
// time-out, -1 with errno set if the wait itself failed. On a plain thread this is poll().
int WaitFd(int fd, short events, int timeout_ms);

// FdWatch is WaitFd for one descriptor waited on again and again (a pooled connection): it keeps
// the descriptor registered with the epoll of each carrier it was waited on, disarmed between
// waits (EPOLLONESHOT), so a wait re-arms it with one epoll_ctl instead of adding and deleting it
// (two). A disarmed registration never reports an event, and closing the descriptor removes it.
// One wait at a time (the owner of the connection); on a plain thread Wait is poll().
class FdWatch {
 public:
  FdWatch() = default;
  FdWatch(const FdWatch&) = delete;
  FdWatch& operator=(const FdWatch&) = delete;
  // Wait is WaitFd(fd, events, timeout_ms). A new |fd| (the owner reconnected) forgets the
  // carriers of the previous one.
  int Wait(int fd, short events, int timeout_ms);

 private:
  int fd_ = -1;
  std::vector<const void*> carriers_;  // carriers whose epoll holds |fd_| (disarmed)
};

// SleepFor suspends the current fiber (or thread) for at least |d|.
void SleepFor(std::chrono::microseconds d);

// RunBlocking runs |fn| where it may block: on a helper thread while the current fiber is parked,
// or directly on a plain thread. For calls that wait in ways the carrier cannot see (name
// resolution, Asio's own io_context, a blocking client library). An exception from |fn| is
// rethrown to the caller.
void RunBlocking(const std::function<void()>& fn);

class Carriers {
 public:
  // A carrier whose current fiber has run this long without parking is not given new fibers.
  static constexpr std::chrono::milliseconds kStuckAfter{250};
  // Carriers added, at most, while every carrier is stuck.
  static constexpr int kMaxExtraCarriers = 16;
  // Each fiber's stack (virtual; pages are committed as they are touched), plus a guard page.
  static constexpr size_t kDefaultStackBytes = size_t{1} << 20;

  // Starts |n| carrier threads named |name| (at least one).
  Carriers(int n, std::string name, size_t stack_bytes = kDefaultStackBytes);
  ~Carriers();
  Carriers(const Carriers&) = delete;
  Carriers& operator=(const Carriers&) = delete;

  // Spawn runs |fn| as a fiber (see the file comment for which carrier). What |fn| throws is
  // swallowed. Throws std::system_error if a needed carrier thread cannot be started.
  void Spawn(std::function<void()> fn);

  // carriers: threads now (|n| plus any added for stuck ones); live: fibers spawned and not yet
  // returned. For tests and gauges.
  int carriers() const;
  int64_t live() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace clawguard::fiber

#endif  // CLAWGUARD_RUNTIME_FIBER_H_
