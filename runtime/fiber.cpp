// fiber.cpp — carrier threads running fibers (Boost.Context), see fiber.h.
#include "runtime/fiber.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "runtime/thread_name.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

namespace clawguard::fiber {
namespace ctx = boost::context;
using Clock = std::chrono::steady_clock;

struct Carrier;

struct Fiber {
  Carrier* carrier = nullptr;
  ctx::fiber self;    // the fiber while it is suspended (or not started)
  ctx::fiber caller;  // the carrier's loop while the fiber runs
  std::function<void()> task;
  enum Action { kPark, kIdle, kYield } action = kPark;  // why it last switched to the loop
  bool parked = false;    // guarded by carrier->mu: suspended, waiting for Unpark
  bool notified = false;  // guarded by carrier->mu: Unpark came while it was not parked
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

namespace {

thread_local Fiber* t_current = nullptr;

// AddressSanitizer must be told of every stack switch (its fake stacks for use-after-return
// detection, and the stack bounds it unpoisons when an exception unwinds); Boost.Context 1.74
// does not tell it for fcontext fibers. These are no-ops in builds without ASan.
// IntoFiber/BackFromFiber: the carrier's side of a resume; OutOfFiber/IntoFiberDone: the fiber's.
void IntoFiber(void** carrier_fake, const Fiber* f) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(carrier_fake, f->stack_bottom, f->stack_size);
#else
  (void)carrier_fake;
  (void)f;
#endif
}
void BackFromFiber(void* carrier_fake) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(carrier_fake, nullptr, nullptr);
#else
  (void)carrier_fake;
#endif
}
// OutOfFiber: the fiber switches back to its caller; |dying|: it will not run again.
void OutOfFiber(Fiber* f, bool dying) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(dying ? nullptr : &f->fake_stack, f->caller_bottom, f->caller_size);
#else
  (void)f;
  (void)dying;
#endif
}
// IntoFiberDone: the fiber runs again (or for the first time); notes its caller's stack.
void IntoFiberDone(Fiber* f) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(f->fake_stack, &f->caller_bottom, &f->caller_size);
#else
  (void)f;
#endif
}

// RecordingStack allocates guarded stacks and notes each one's bounds in its fiber (for ASan).
class RecordingStack {
 public:
  RecordingStack(size_t size, Fiber* f) : inner_(size), fiber_(f) {}
  ctx::stack_context allocate() {
    ctx::stack_context sctx = inner_.allocate();
    fiber_->stack_size = sctx.size;
    fiber_->stack_bottom = static_cast<const char*>(sctx.sp) - sctx.size;
    return sctx;
  }
  void deallocate(ctx::stack_context& sctx) noexcept { inner_.deallocate(sctx); }

 private:
  ctx::protected_fixedsize_stack inner_;
  Fiber* fiber_;
};

int64_t NowNs() { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count(); }

// BlockingPool runs RunBlocking's calls: threads started on demand, each leaving after 10 s idle.
// Process-wide and never destroyed (a detached thread may outlive every other object).
class BlockingPool {
 public:
  static BlockingPool& Get() {
    static auto* pool = new BlockingPool;
    return *pool;
  }
  void Run(std::function<void()> job) {
    std::unique_lock lock(mu_);
    queue_.push_back(std::move(job));
    if (static_cast<size_t>(idle_) >= queue_.size()) {
      lock.unlock();
      cv_.notify_one();
      return;
    }
    ++threads_;
    lock.unlock();
    try {
      std::thread([this] { Loop(); }).detach();
      return;
    } catch (...) {
    }
    lock.lock();
    if (--threads_ > 0) return;  // a running thread takes it when it is free
    // No thread at all: run what is queued here rather than lose it.
    std::deque<std::function<void()>> jobs;
    jobs.swap(queue_);
    lock.unlock();
    for (auto& j : jobs) j();
  }

 private:
  void Loop() {
    NameThisThread("cg-blocking");
    std::unique_lock lock(mu_);
    for (;;) {
      if (queue_.empty()) {
        ++idle_;
        const bool got = cv_.wait_for(lock, std::chrono::seconds(10), [this] { return !queue_.empty(); });
        --idle_;
        if (!got) {
          --threads_;
          return;
        }
      }
      std::function<void()> job = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      job();
      job = nullptr;
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  int idle_ = 0;                             // guarded by mu_
  int threads_ = 0;                          // guarded by mu_
};

}  // namespace

struct Carrier {
  Carrier(size_t stack, std::string thread_name) : stack_bytes(stack), name(std::move(thread_name)) {
    epfd = ::epoll_create1(EPOLL_CLOEXEC);
    evfd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (epfd < 0 || evfd < 0) {
      const int err = errno;
      Close();
      throw std::system_error(err, std::generic_category(), "fiber carrier: epoll/eventfd");
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = nullptr;  // the eventfd
    if (::epoll_ctl(epfd, EPOLL_CTL_ADD, evfd, &ev) != 0) {
      const int err = errno;
      Close();
      throw std::system_error(err, std::generic_category(), "fiber carrier: epoll_ctl");
    }
  }
  ~Carrier() {
    // Idle fibers only (the pool waited for the rest): each returns from its function when
    // resumed with |exit| set, so Boost frees its stack without a forced unwind.
    for (auto& f : all) {
      if (!f->self) continue;
      f->exit = true;
      void* fake = nullptr;
      IntoFiber(&fake, f.get());
      f->self = std::move(f->self).resume();
      BackFromFiber(fake);
    }
    all.clear();
    Close();
  }
  void Close() {
    if (epfd >= 0) ::close(epfd);
    if (evfd >= 0) ::close(evfd);
    epfd = evfd = -1;
  }

  void Start() {
    thread = std::thread([this] { Loop(); });
  }

  void Wake() const {
    const uint64_t one = 1;
    (void)!::write(evfd, &one, sizeof one);
  }

  // MakeReady: a fiber's descriptor or timer fired (carrier thread).
  void MakeReady(Fiber* f) {
    std::lock_guard lock(mu);
    if (f->parked) {
      f->parked = false;
      ready.push_back(f);
    } else {
      f->notified = true;
    }
  }

  Fiber* NewFiber() {
    auto owned = std::make_unique<Fiber>();
    Fiber* f = owned.get();
    f->carrier = this;
    f->self = ctx::fiber(std::allocator_arg, RecordingStack(stack_bytes, f), [f](ctx::fiber&& caller) {
      IntoFiberDone(f);
      f->caller = std::move(caller);
      while (!f->exit) {
        {
          std::function<void()> task = std::move(f->task);
          f->task = nullptr;
          try {
            if (task) task();
          } catch (...) {
          }
        }
        f->action = Fiber::kIdle;
        OutOfFiber(f, /*dying=*/false);
        f->caller = std::move(f->caller).resume();  // back when given the next task (or |exit|)
        IntoFiberDone(f);
      }
      OutOfFiber(f, /*dying=*/true);
      return std::move(f->caller);
    });
    all.push_back(std::move(owned));
    return f;
  }

  void Resume(Fiber* f) {
    t_current = f;
    running_since_ns.store(NowNs(), std::memory_order_relaxed);
    void* fake = nullptr;
    IntoFiber(&fake, f);
    f->self = std::move(f->self).resume();
    BackFromFiber(fake);
    running_since_ns.store(0, std::memory_order_relaxed);
    t_current = nullptr;
    switch (f->action) {
      case Fiber::kIdle:
        f->action = Fiber::kPark;
        {
          std::lock_guard lock(mu);
          f->notified = false;  // an Unpark meant for the finished task
        }
        idle.push_back(f);
        live.fetch_sub(1, std::memory_order_acq_rel);
        return;
      case Fiber::kYield:
        f->action = Fiber::kPark;
        yielded.push_back(f);
        return;
      case Fiber::kPark: {
        std::lock_guard lock(mu);
        if (f->notified) {
          f->notified = false;
          ready.push_back(f);
        } else {
          f->parked = true;
        }
        return;
      }
    }
  }

  void Poll(int timeout_ms) {
    epoll_event evs[64];
    const int n = ::epoll_wait(epfd, evs, 64, timeout_ms);
    for (int i = 0; i < n; ++i) {
      if (evs[i].data.ptr == nullptr) {
        uint64_t drained;
        (void)!::read(evfd, &drained, sizeof drained);
        continue;
      }
      auto* f = static_cast<Fiber*>(evs[i].data.ptr);
      f->fd_ready = true;
      MakeReady(f);
    }
    if (timers.empty()) return;
    const auto now = Clock::now();
    while (!timers.empty() && timers.begin()->first <= now) {
      Fiber* f = timers.begin()->second;
      timers.erase(timers.begin());
      f->has_timer = false;
      f->timed_out = true;
      MakeReady(f);
    }
  }

  int NextTimeoutMs() const {
    if (timers.empty()) return -1;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(timers.begin()->first - Clock::now()).count();
    return left < 0 ? 0 : static_cast<int>(std::min<int64_t>(left, 60'000));
  }

  void Loop() {
    NameThisThread(name);
    std::deque<Fiber*> run;
    std::deque<std::function<void()>> fresh;
    for (;;) {
      {
        std::lock_guard lock(mu);
        if (stop) return;
        run.swap(ready);
        fresh.swap(spawns);
        if (run.empty() && fresh.empty() && yielded.empty()) sleeping = true;
      }
      for (auto& fn : fresh) {
        Fiber* f = nullptr;
        if (!idle.empty()) {
          f = idle.back();
          idle.pop_back();
        } else {
          try {
            f = NewFiber();
          } catch (...) {
            live.fetch_sub(1, std::memory_order_acq_rel);  // no stack: the task is dropped
            continue;
          }
        }
        f->task = std::move(fn);
        run.push_back(f);
      }
      fresh.clear();
      // Yielded fibers run last: after the fibers that were waiting to run and after fresh spawns,
      // so a yield (a writer leader gathering a batch) lets new work reach its first write too.
      for (Fiber* f : yielded) run.push_back(f);
      yielded.clear();
      if (run.empty()) {
        Poll(NextTimeoutMs());
        std::lock_guard lock(mu);
        sleeping = false;
        continue;
      }
      for (Fiber* f : run) Resume(f);
      run.clear();
      Poll(0);
    }
  }

  const size_t stack_bytes;
  const std::string name;
  int epfd = -1;
  int evfd = -1;
  std::mutex mu;
  std::deque<Fiber*> ready;                  // guarded by mu
  std::deque<std::function<void()>> spawns;  // guarded by mu
  bool sleeping = false;                     // guarded by mu: in (or about to enter) epoll_wait
  bool stop = false;                         // guarded by mu
  std::vector<Fiber*> idle;                  // carrier thread only
  std::vector<Fiber*> yielded;               // carrier thread only
  std::multimap<Clock::time_point, Fiber*> timers;  // carrier thread only
  std::vector<std::unique_ptr<Fiber>> all;          // carrier thread only (then the destructor)
  std::atomic<int64_t> running_since_ns{0};         // when the running fiber was resumed; 0: none
  std::atomic<int64_t> live{0};                     // fibers given to this carrier, not yet returned
  std::thread thread;
};

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
    std::lock_guard lock(c->mu);
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
         NowNs() - since > std::chrono::duration_cast<std::chrono::nanoseconds>(Carriers::kStuckAfter).count();
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
  ev.events = EPOLLONESHOT | ((events & POLLIN) ? EPOLLIN : 0u) | ((events & POLLOUT) ? EPOLLOUT : 0u);
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
  ev.events = EPOLLONESHOT | ((events & POLLIN) ? EPOLLIN : 0u) | ((events & POLLOUT) ? EPOLLOUT : 0u);
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
    std::mutex mu;
    bool done = false;  // guarded by mu
    std::exception_ptr error;
  } job;
  BlockingPool::Get().Run([&job, &fn, f] {
    try {
      fn();
    } catch (...) {
      job.error = std::current_exception();
    }
    // Under job.mu: the fiber sees |done| only after this Unpark returned, so |f| is alive here.
    std::lock_guard lock(job.mu);
    job.done = true;
    Unpark(f);
  });
  for (;;) {
    {
      std::lock_guard lock(job.mu);
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
  mutable std::mutex mu;
  std::vector<std::unique_ptr<Carrier>> carriers;  // guarded by mu (only ever appended to)

  Carrier* Add() {  // mu held
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
  std::lock_guard lock(impl_->mu);
  for (int i = 0; i < impl_->base; ++i) impl_->Add();
}

Carriers::~Carriers() {
  // Every spawned function returns first (see fiber.h, "Lifetime"), then no pin may be held.
  while (live() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::lock_guard lock(impl_->mu);
  for (auto& c : impl_->carriers) {
    {
      std::lock_guard clock(c->mu);
      c->stop = true;
    }
    c->Wake();
    c->thread.join();
  }
  for (auto& c : impl_->carriers) {
    for (auto& f : c->all) {
      while (f->pins.load(std::memory_order_acquire) > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  impl_->carriers.clear();
}

void Carriers::Spawn(std::function<void()> fn) {
  Carrier* target = nullptr;
  {
    std::lock_guard lock(impl_->mu);
    const int64_t now = NowNs();
    const int64_t stuck_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(kStuckAfter).count();
    Carrier* least = nullptr;
    for (auto& c : impl_->carriers) {
      const int64_t since = c->running_since_ns.load(std::memory_order_relaxed);
      const int64_t live = c->live.load(std::memory_order_relaxed);
      if (least == nullptr || live < least->live.load(std::memory_order_relaxed)) least = c.get();
      if (since != 0 && now - since > stuck_ns) continue;
      if (target == nullptr || live < target->live.load(std::memory_order_relaxed)) target = c.get();
    }
    if (target == nullptr) {
      target = static_cast<int>(impl_->carriers.size()) < impl_->base + kMaxExtraCarriers ? impl_->Add() : least;
    }
    target->live.fetch_add(1, std::memory_order_acq_rel);
  }
  bool wake = false;
  {
    std::lock_guard lock(target->mu);
    target->spawns.push_back(std::move(fn));
    if (target->sleeping) {
      target->sleeping = false;
      wake = true;
    }
  }
  if (wake) target->Wake();
}

int Carriers::carriers() const {
  std::lock_guard lock(impl_->mu);
  return static_cast<int>(impl_->carriers.size());
}

int64_t Carriers::live() const {
  std::lock_guard lock(impl_->mu);
  int64_t n = 0;
  for (const auto& c : impl_->carriers) n += c->live.load(std::memory_order_acquire);
  return n;
}

}  // namespace clawguard::fiber
