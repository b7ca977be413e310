// spare_threads.cpp — see spare_threads.h.
#include "runtime/spare_threads.h"

#include <condition_variable>
#include <deque>
#include <thread>

#include "core/mutex.h"
#include "runtime/thread_name.h"

namespace clawguard::runtime {

struct SpareThreads::Shared {
  std::chrono::milliseconds spare_for;
  std::string name;  // the threads' name (runtime/thread_name.h)
  Mutex mu;
  std::condition_variable cv;
  // Tasks handed to waiting threads. Run queues a task only when more threads wait than tasks
  // are queued, so every queued task has a thread that will take it.
  std::deque<std::function<void()>> queue CLAWGUARD_GUARDED_BY(mu);
  int64_t waiting CLAWGUARD_GUARDED_BY(mu) = 0;  // threads waiting for a task
  int64_t started CLAWGUARD_GUARDED_BY(mu) = 0;

  // Loop runs |task|, then the tasks it is handed while it waits, and ends after |spare_for|
  // without one.
  static void Loop(const std::shared_ptr<Shared>& self, std::function<void()> task) {
    NameThisThread(self->name);
    for (;;) {
      task();
      task = nullptr;  // its captures are released before the wait
      MutexLock lock(self->mu);
      ++self->waiting;
      self->mu.WaitFor(self->cv, self->spare_for,
                       [&]() CLAWGUARD_REQUIRES(self->mu) { return !self->queue.empty(); });
      --self->waiting;
      // Checked under the lock after the wait, timed out or not: a task queued for this thread
      // while it timed out is still taken.
      if (self->queue.empty()) return;
      task = std::move(self->queue.front());
      self->queue.pop_front();
    }
  }
};

SpareThreads::SpareThreads(std::chrono::milliseconds spare_for, std::string name)
    : shared_(std::make_shared<Shared>()) {
  shared_->spare_for = spare_for;
  shared_->name = std::move(name);
}

SpareThreads::~SpareThreads() = default;

void SpareThreads::Run(std::function<void()> task) {
  {
    MutexLock lock(shared_->mu);
    if (shared_->waiting > static_cast<int64_t>(shared_->queue.size())) {
      shared_->queue.push_back(std::move(task));
      lock.Unlock();
      shared_->cv.notify_one();  // after unlocking: the woken thread need not block on mu again
      return;
    }
    ++shared_->started;
  }
  try {
    std::thread([shared = shared_, task = std::move(task)]() mutable {
      Shared::Loop(shared, std::move(task));
    }).detach();
  } catch (...) {
    MutexLock lock(shared_->mu);
    --shared_->started;
    throw;
  }
}

int64_t SpareThreads::started() const {
  MutexLock lock(shared_->mu);
  return shared_->started;
}

int64_t SpareThreads::spare() const {
  MutexLock lock(shared_->mu);
  return shared_->waiting - static_cast<int64_t>(shared_->queue.size());
}

}  // namespace clawguard::runtime
