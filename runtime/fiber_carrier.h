// fiber_carrier.h — the inside of fiber.h: a Fiber (its stack, its caller, why it last switched)
// and the Carrier thread that runs fibers — its run queue, its epoll for descriptors and an
// eventfd for wake-ups, its timers. Only runtime/ includes it.
#ifndef CLAWGUARD_RUNTIME_FIBER_CARRIER_H_
#define CLAWGUARD_RUNTIME_FIBER_CARRIER_H_

#include <atomic>
#include <boost/context/fiber.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "runtime/fiber.h"

namespace clawguard::fiber {

using Clock = std::chrono::steady_clock;

struct Carrier;

struct Fiber {
  Carrier* carrier = nullptr;
  boost::context::fiber self;    // the fiber while it is suspended (or not started)
  boost::context::fiber caller;  // the carrier's loop while the fiber runs
  std::function<void()> task;
  enum Action { kPark, kIdle, kYield } action = kPark;  // why it last switched to the loop
  // parked and notified are guarded by carrier->mu (a lock of another object, which the
  // analysis of core/thread_annotations.h cannot name from here).
  bool parked = false;    // suspended, waiting for Unpark
  bool notified = false;  // Unpark came while it was not parked
  // A wait for a descriptor or a time (WaitFd, SleepFor): carrier thread only.
  bool fd_ready = false;
  bool timed_out = false;
  bool has_timer = false;
  std::multimap<Clock::time_point, Fiber*>::iterator timer;
  std::atomic<int> pins{0};
  bool exit = false;  // set by the carrier's destructor: the fiber returns instead of taking a task
  // ASan: the fiber's stack and its fake stack while it is switched out (see SwitchTo*).
  const void* stack_bottom = nullptr;
  size_t stack_size = 0;
  void* fake_stack = nullptr;
  // The stack it switches back to (its carrier's), learned when it is switched in.
  const void* caller_bottom = nullptr;
  size_t caller_size = 0;
};

// t_current is the fiber running on this thread (nullptr on a thread that is not a carrier, or
// while its carrier runs its own loop).
inline thread_local Fiber* t_current = nullptr;

inline int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// Carrier is one carrier thread (fiber.h "Carriers").
struct Carrier {
  // Opens the epoll and eventfd (std::system_error when it cannot); Start starts the thread.
  Carrier(size_t stack, std::string thread_name);
  // Ends its idle fibers (their functions return, so Boost frees each stack) and closes the fds.
  ~Carrier();
  void Close();
  void Start();

  // Wake interrupts the carrier's epoll_wait (the eventfd).
  void Wake() const;
  // MakeReady: a fiber's descriptor or timer fired (carrier thread).
  void MakeReady(Fiber* f);
  // NewFiber makes a fiber with a fresh stack; its loop runs one task each time it is resumed.
  Fiber* NewFiber();
  // Resume runs |f| until it switches back, then files it by why (idle, yielded or parked).
  void Resume(Fiber* f);
  // Poll reports ready descriptors and due timers, waiting at most |timeout_ms| (-1: no limit).
  void Poll(int timeout_ms);
  int NextTimeoutMs() const;
  // Loop is the carrier thread: ready fibers and spawned tasks, then yielded ones, then Poll.
  void Loop();

  const size_t stack_bytes;
  const std::string name;
  int epfd = -1;
  int evfd = -1;
  Mutex mu;
  std::deque<Fiber*> ready CLAWGUARD_GUARDED_BY(mu);
  std::deque<std::function<void()>> spawns CLAWGUARD_GUARDED_BY(mu);
  bool sleeping CLAWGUARD_GUARDED_BY(mu) = false;  // in (or about to enter) epoll_wait
  bool stop CLAWGUARD_GUARDED_BY(mu) = false;
  std::vector<Fiber*> idle;                         // carrier thread only
  std::vector<Fiber*> yielded;                      // carrier thread only
  std::multimap<Clock::time_point, Fiber*> timers;  // carrier thread only
  std::vector<std::unique_ptr<Fiber>> all;          // carrier thread only (then the destructor)
  std::atomic<int64_t> running_since_ns{0};         // when the running fiber was resumed; 0: none
  std::atomic<int64_t> live{0};  // fibers given to this carrier, not yet returned
  std::thread thread;
};

}  // namespace clawguard::fiber

#endif  // CLAWGUARD_RUNTIME_FIBER_CARRIER_H_
