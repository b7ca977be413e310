// fiber_carrier.cpp — a carrier thread's loop: new fibers and spawned tasks, resumes, epoll and
// timers (fiber_carrier.h).
#include "runtime/fiber_carrier.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "runtime/fiber_stack.h"
#include "runtime/thread_name.h"

namespace clawguard::fiber {

namespace ctx = boost::context;

Carrier::Carrier(size_t stack, std::string thread_name)
    : stack_bytes(stack), name(std::move(thread_name)) {
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

Carrier::~Carrier() {
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

void Carrier::Close() {
  if (epfd >= 0) ::close(epfd);
  if (evfd >= 0) ::close(evfd);
  epfd = evfd = -1;
}

void Carrier::Start() {
  thread = std::thread([this] { Loop(); });
}

void Carrier::Wake() const {
  const uint64_t one = 1;
  (void)!::write(evfd, &one, sizeof one);
}

void Carrier::MakeReady(Fiber* f) {
  MutexLock lock(mu);
  if (f->parked) {
    f->parked = false;
    ready.push_back(f);
  } else {
    f->notified = true;
  }
}

Fiber* Carrier::NewFiber() {
  auto owned = std::make_unique<Fiber>();
  Fiber* f = owned.get();
  f->carrier = this;
  f->self =
      ctx::fiber(std::allocator_arg, RecordingStack(stack_bytes, f), [f](ctx::fiber&& caller) {
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

void Carrier::Resume(Fiber* f) {
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
        MutexLock lock(mu);
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
      MutexLock lock(mu);
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

void Carrier::Poll(int timeout_ms) {
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

int Carrier::NextTimeoutMs() const {
  if (timers.empty()) return -1;
  const auto left =
      std::chrono::ceil<std::chrono::milliseconds>(timers.begin()->first - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(std::min<int64_t>(left, 60'000));
}

void Carrier::Loop() {
  NameThisThread(name);
  std::deque<Fiber*> run;
  std::deque<std::function<void()>> fresh;
  for (;;) {
    {
      MutexLock lock(mu);
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
      MutexLock lock(mu);
      sleeping = false;
      continue;
    }
    for (Fiber* f : run) Resume(f);
    run.clear();
    Poll(0);
  }
}

}  // namespace clawguard::fiber
