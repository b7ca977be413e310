// delivery_runner.cpp — see delivery_runner.h.
#include "host/intake/delivery_runner.h"

#include <condition_variable>
#include <deque>

#include "core/mutex.h"
#include "runtime/spare_threads.h"

namespace clawguard::host {

struct DeliveryRunner::Shared {
  Shared(int64_t max, std::string name, fiber::Carriers* c)
      : max_active(max), carriers(c), threads(std::chrono::seconds(10), std::move(name)) {}
  const int64_t max_active;
  fiber::Carriers* const carriers;  // nullptr: a thread per task
  runtime::SpareThreads threads;
  mutable Mutex mu;
  int64_t active CLAWGUARD_GUARDED_BY(mu) = 0;
  int64_t unfinished CLAWGUARD_GUARDED_BY(mu) = 0;  // given to Run, neither returned nor dropped
  std::condition_variable finished;                 // unfinished went down
  std::deque<Task> queue CLAWGUARD_GUARDED_BY(mu);

  void Finished() {
    MutexLock lock(mu);
    --unfinished;
    finished.notify_all();
  }

  // Start runs |task| (which already holds a slot) on a thread; on failure the slot is released.
  static void Start(const std::shared_ptr<Shared>& self, Task task) {
    try {
      auto run = [self, task = std::move(task)]() mutable { Loop(self, std::move(task)); };
      if (self->carriers != nullptr) {
        self->carriers->Spawn(std::move(run));
      } else {
        self->threads.Run(std::move(run));
      }
    } catch (...) {
      {
        MutexLock lock(self->mu);
        --self->active;
        --self->unfinished;  // |task| is dropped
        self->finished.notify_all();
      }
      throw;
    }
  }

  static void Loop(const std::shared_ptr<Shared>& self, Task task) {
    while (task) {
      auto slot = std::make_shared<Slot>(self);
      try {
        task(slot);
      } catch (...) {
      }
      task = nullptr;  // its captures are released before the next task
      // Its slot is given back (or passed to |task|) before it counts as finished: a waiter that
      // sees none unfinished sees no slot held either.
      const bool next = slot->TakeNext(&task);
      self->Finished();
      if (!next) return;
    }
  }
};

void DeliveryRunner::Slot::Release() {
  if (released_.exchange(true)) return;
  Task next;
  {
    MutexLock lock(shared_->mu);
    if (shared_->queue.empty()) {
      --shared_->active;
      return;
    }
    next = std::move(shared_->queue.front());
    shared_->queue.pop_front();
  }
  try {
    Shared::Start(shared_, std::move(next));  // the slot passes to |next|
  } catch (...) {
    // No thread: |next| is dropped (its Responder answers 500 when destroyed) and the slot freed.
  }
}

bool DeliveryRunner::Slot::TakeNext(Task* next) {
  if (released_.exchange(true)) return false;
  MutexLock lock(shared_->mu);
  if (shared_->queue.empty()) {
    --shared_->active;
    return false;
  }
  *next = std::move(shared_->queue.front());
  shared_->queue.pop_front();
  return true;
}

DeliveryRunner::DeliveryRunner(int64_t max_active, std::string thread_name,
                               fiber::Carriers* carriers)
    : shared_(std::make_shared<Shared>(max_active < 1 ? 1 : max_active, std::move(thread_name),
                                       carriers)) {}

DeliveryRunner::~DeliveryRunner() = default;

void DeliveryRunner::Run(Task task) {
  {
    MutexLock lock(shared_->mu);
    ++shared_->unfinished;
    if (shared_->active >= shared_->max_active) {
      shared_->queue.push_back(std::move(task));
      return;
    }
    ++shared_->active;
  }
  Shared::Start(shared_, std::move(task));
}

int64_t DeliveryRunner::active() const {
  MutexLock lock(shared_->mu);
  return shared_->active;
}

int64_t DeliveryRunner::unfinished() const {
  MutexLock lock(shared_->mu);
  return shared_->unfinished;
}

bool DeliveryRunner::WaitFinished(std::chrono::milliseconds bound) const {
  MutexLock lock(shared_->mu);
  return shared_->mu.WaitFor(shared_->finished, bound, [this]() CLAWGUARD_REQUIRES(shared_->mu) {
    return shared_->unfinished == 0;
  });
}

int64_t DeliveryRunner::queued() const {
  MutexLock lock(shared_->mu);
  return static_cast<int64_t>(shared_->queue.size());
}

}  // namespace clawguard::host
