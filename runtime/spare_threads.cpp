// spare_threads.cpp — see spare_threads.h.
#include "runtime/spare_threads.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "runtime/thread_name.h"

namespace clawguard::runtime {

struct SpareThreads::Shared {
  std::chrono::milliseconds spare_for;
  std::string name;  // the threads' name (runtime/thread_name.h)
  std::mutex mu;
  std::condition_variable cv;
  // Tasks handed to waiting threads. Run queues a task only when more threads wait than tasks
  // are queued, so every queued task has a thread that will take it.
  std::deque<std::function<void()>> queue;  // guarded by mu
  int64_t waiting = 0;                      // threads waiting for a task; guarded by mu
  int64_t started = 0;                      // guarded by mu

  // Loop runs |task|, then the tasks it is handed while it waits, and ends after |spare_for|
  // without one.
  static void Loop(const std::shared_ptr<Shared>& self, std::function<void()> task) {
    NameThisThread(self->name);
    for (;;) {
      task();
      task = nullptr;  // its captures are released before the wait
      std::unique_lock lock(self->mu);
      ++self->waiting;
      self->cv.wait_for(lock, self->spare_for, [&] { return !self->queue.empty(); });
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
    std::unique_lock lock(shared_->mu);
    if (shared_->waiting > static_cast<int64_t>(shared_->queue.size())) {
      shared_->queue.push_back(std::move(task));
      lock.unlock();
      shared_->cv.notify_one();  // after unlocking: the woken thread need not block on mu again
      return;
    }
    ++shared_->started;
  }
  try {
    std::thread([shared = shared_, task = std::move(task)]() mutable { Shared::Loop(shared, std::move(task)); })
        .detach();
  } catch (...) {
    std::lock_guard lock(shared_->mu);
    --shared_->started;
    throw;
  }
}

int64_t SpareThreads::started() const {
  std::lock_guard lock(shared_->mu);
  return shared_->started;
}

int64_t SpareThreads::spare() const {
  std::lock_guard lock(shared_->mu);
  return shared_->waiting - static_cast<int64_t>(shared_->queue.size());
}

}  // namespace clawguard::runtime
