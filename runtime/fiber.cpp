// fiber.cpp — the fiber API of fiber.h: park and unpark, waits for descriptors and time,
// RunBlocking, and Carriers (which carrier a spawned task goes to). The carrier thread itself is
// fiber_carrier.{h,cpp}, stacks fiber_stack.{h,cpp}, RunBlocking's threads blocking_pool.{h,cpp}.
#include "runtime/fiber.h"

#include <poll.h>
#include <sys/epoll.h>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/blocking_pool.h"
#include "runtime/fiber_carrier.h"
#include "runtime/fiber_stack.h"

namespace clawguard::fiber {

Fiber* Current() { return t_current; }

void Park() {
  Fiber* f = t_current;
  f->action = Fiber::kPark;
  OutOfFiber(f, /*dying=*/false);
  f->caller = std::move(f->caller).resume();
  IntoFiberDone(f);
}

void Unpark(Fiber* f) {
  Carrier* c = f->carrier;
  bool wake = false;
  {
    MutexLock lock(c->mu);
    if (f->parked) {
      f->parked = false;
      c->ready.push_back(f);
      if (c->sleeping) {
        c->sleeping = false;
        wake = true;
      }
    } else {
      f->notified = true;
    }
  }
  if (wake) c->Wake();
}

bool Held(const Fiber* f) {
  const int64_t since = f->carrier->running_since_ns.load(std::memory_order_relaxed);
  return since != 0 &&
         NowNs() - since >
             std::chrono::duration_cast<std::chrono::nanoseconds>(Carriers::kStuckAfter).count();
}

void Pin(Fiber* f) { f->pins.fetch_add(1, std::memory_order_relaxed); }

void UnparkPinned(Fiber* f) {
  Unpark(f);
  f->pins.fetch_sub(1, std::memory_order_release);
}

void Yield() {
  Fiber* f = t_current;
  if (f == nullptr) return;
  f->action = Fiber::kYield;
  OutOfFiber(f, /*dying=*/false);
  f->caller = std::move(f->caller).resume();
  IntoFiberDone(f);
}

namespace {
// AddTimer and DropTimer: a wait's deadline on the current fiber's carrier.
void AddTimer(Fiber* f, Clock::time_point at) {
  f->timed_out = false;
  f->timer = f->carrier->timers.emplace(at, f);
  f->has_timer = true;
}
void DropTimer(Fiber* f) {
  if (!f->has_timer) return;
  f->carrier->timers.erase(f->timer);
  f->has_timer = false;
}
// AwaitFdEvent parks |f| (armed in its carrier's epoll) until its descriptor is reported or
// |timeout_ms| passed (-1: no limit); whether it was reported.
bool AwaitFdEvent(Fiber* f, int timeout_ms) {
  f->fd_ready = false;
  f->timed_out = false;
  if (timeout_ms >= 0) AddTimer(f, Clock::now() + std::chrono::milliseconds(timeout_ms));
  while (!f->fd_ready && !f->timed_out) Park();
  DropTimer(f);
  const bool ready = f->fd_ready;
  f->fd_ready = false;
  return ready;
}
}  // namespace

int WaitFd(int fd, short events, int timeout_ms) {
  Fiber* f = t_current;
  if (f == nullptr) {
    pollfd p{fd, events, 0};
    int n;
    do {
      n = ::poll(&p, 1, timeout_ms);
    } while (n < 0 && errno == EINTR);
    return n > 0 ? 1 : n;
  }
  Carrier* c = f->carrier;
  epoll_event ev{};
  ev.events =
      EPOLLONESHOT | ((events & POLLIN) ? EPOLLIN : 0u) | ((events & POLLOUT) ? EPOLLOUT : 0u);
  ev.data.ptr = f;
  if (::epoll_ctl(c->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) return -1;
  const bool ready = AwaitFdEvent(f, timeout_ms);
  (void)::epoll_ctl(c->epfd, EPOLL_CTL_DEL, fd, nullptr);
  return ready ? 1 : 0;
}

int FdWatch::Wait(int fd, short events, int timeout_ms) {
  Fiber* f = t_current;
  if (f == nullptr) return WaitFd(fd, events, timeout_ms);
  if (fd != fd_) {
    fd_ = fd;
    carriers_.clear();
  }
  Carrier* c = f->carrier;
  epoll_event ev{};
  ev.events =
      EPOLLONESHOT | ((events & POLLIN) ? EPOLLIN : 0u) | ((events & POLLOUT) ? EPOLLOUT : 0u);
  ev.data.ptr = f;
  const bool known = std::find(carriers_.begin(), carriers_.end(), c) != carriers_.end();
  // Re-arm where it is registered; a carrier that went (or a closed and reused descriptor) answers
  // ENOENT, and one registered without our record EEXIST: then the other operation.
  int rc = ::epoll_ctl(c->epfd, known ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev);
  if (rc != 0 && errno == (known ? ENOENT : EEXIST)) {
    rc = ::epoll_ctl(c->epfd, known ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev);
  }
  if (rc != 0) return -1;
  if (!known) carriers_.push_back(c);
  if (!AwaitFdEvent(f, timeout_ms)) {
    // Still armed with this fiber as its target: removed, so no later event names it.
    (void)::epoll_ctl(c->epfd, EPOLL_CTL_DEL, fd, nullptr);
    carriers_.erase(std::find(carriers_.begin(), carriers_.end(), c));
    return 0;
  }
  return 1;  // the event was reported: EPOLLONESHOT disarmed the registration
}

void SleepFor(std::chrono::microseconds d) {
  Fiber* f = t_current;
  if (f == nullptr) {
    std::this_thread::sleep_for(d);
    return;
  }
  AddTimer(f, Clock::now() + d);
  while (!f->timed_out) Park();
  DropTimer(f);
}

void RunBlocking(const std::function<void()>& fn) {
  Fiber* f = t_current;
  if (f == nullptr) {
    fn();
    return;
  }
  struct Job {
    Mutex mu;
    bool done CLAWGUARD_GUARDED_BY(mu) = false;
    std::exception_ptr error;
  } job;
  BlockingPool::Get().Run([&job, &fn, f] {
    try {
      fn();
    } catch (...) {
      job.error = std::current_exception();
    }
    // Under job.mu: the fiber sees |done| only after this Unpark returned, so |f| is alive here.
    MutexLock lock(job.mu);
    job.done = true;
    Unpark(f);
  });
  for (;;) {
    {
      MutexLock lock(job.mu);
      if (job.done) break;
    }
    Park();
  }
  if (job.error) std::rethrow_exception(job.error);
}

struct Carriers::Impl {
  size_t stack_bytes = 0;
  std::string name;
  int base = 0;
  mutable Mutex mu;
  std::vector<std::unique_ptr<Carrier>> carriers CLAWGUARD_GUARDED_BY(mu);  // only ever appended to

  Carrier* Add() CLAWGUARD_REQUIRES(mu) {
    auto c = std::make_unique<Carrier>(stack_bytes, name);
    c->Start();
    carriers.push_back(std::move(c));
    return carriers.back().get();
  }
};

Carriers::Carriers(int n, std::string name, size_t stack_bytes) : impl_(std::make_unique<Impl>()) {
  impl_->stack_bytes = stack_bytes;
  impl_->name = std::move(name);
  impl_->base = std::max(1, n);
  MutexLock lock(impl_->mu);
  for (int i = 0; i < impl_->base; ++i) impl_->Add();
}

Carriers::~Carriers() {
  // Every spawned function returns first (see fiber.h, "Lifetime"), then no pin may be held.
  while (live() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  MutexLock lock(impl_->mu);
  for (auto& c : impl_->carriers) {
    {
      MutexLock clock(c->mu);
      c->stop = true;
    }
    c->Wake();
    c->thread.join();
  }
  for (auto& c : impl_->carriers) {
    for (auto& f : c->all) {
      while (f->pins.load(std::memory_order_acquire) > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  impl_->carriers.clear();
}

void Carriers::Spawn(std::function<void()> fn) {
  Carrier* target = nullptr;
  {
    MutexLock lock(impl_->mu);
    const int64_t now = NowNs();
    const int64_t stuck_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(kStuckAfter).count();
    Carrier* least = nullptr;
    for (auto& c : impl_->carriers) {
      const int64_t since = c->running_since_ns.load(std::memory_order_relaxed);
      const int64_t live = c->live.load(std::memory_order_relaxed);
      if (least == nullptr || live < least->live.load(std::memory_order_relaxed)) least = c.get();
      if (since != 0 && now - since > stuck_ns) continue;
      if (target == nullptr || live < target->live.load(std::memory_order_relaxed))
        target = c.get();
    }
    if (target == nullptr) {
      target = static_cast<int>(impl_->carriers.size()) < impl_->base + kMaxExtraCarriers
                   ? impl_->Add()
                   : least;
    }
    target->live.fetch_add(1, std::memory_order_acq_rel);
  }
  bool wake = false;
  {
    MutexLock lock(target->mu);
    target->spawns.push_back(std::move(fn));
    if (target->sleeping) {
      target->sleeping = false;
      wake = true;
    }
  }
  if (wake) target->Wake();
}

int Carriers::carriers() const {
  MutexLock lock(impl_->mu);
  return static_cast<int>(impl_->carriers.size());
}

int64_t Carriers::live() const {
  MutexLock lock(impl_->mu);
  int64_t n = 0;
  for (const auto& c : impl_->carriers) n += c->live.load(std::memory_order_acquire);
  return n;
}

}  // namespace clawguard::fiber
