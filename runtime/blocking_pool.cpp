// blocking_pool.cpp — see blocking_pool.h.
#include "runtime/blocking_pool.h"

#include <chrono>
#include <thread>

#include "runtime/thread_name.h"

namespace clawguard::fiber {

void BlockingPool::Run(std::function<void()> job) {
  MutexLock lock(mu_);
  queue_.push_back(std::move(job));
  if (static_cast<size_t>(idle_) >= queue_.size()) {
    lock.Unlock();
    cv_.notify_one();
    return;
  }
  ++threads_;
  lock.Unlock();
  try {
    std::thread([this] { Loop(); }).detach();
    return;
  } catch (...) {
  }
  lock.Lock();
  if (--threads_ > 0) return;  // a running thread takes it when it is free
  // No thread at all: run what is queued here rather than lose it.
  std::deque<std::function<void()>> jobs;
  jobs.swap(queue_);
  lock.Unlock();
  for (auto& j : jobs) j();
}

void BlockingPool::Loop() {
  NameThisThread("cg-blocking");
  MutexLock lock(mu_);
  for (;;) {
    if (queue_.empty()) {
      ++idle_;
      const bool got = mu_.WaitFor(cv_, std::chrono::seconds(10),
                                   [this]() CLAWGUARD_REQUIRES(mu_) { return !queue_.empty(); });
      --idle_;
      if (!got) {
        --threads_;
        return;
      }
    }
    std::function<void()> job = std::move(queue_.front());
    queue_.pop_front();
    lock.Unlock();
    job();
    job = nullptr;
    lock.Lock();
  }
}

}  // namespace clawguard::fiber
