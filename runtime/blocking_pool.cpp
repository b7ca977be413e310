// blocking_pool.cpp — see blocking_pool.h.
#include "runtime/blocking_pool.h"

#include <chrono>
#include <thread>

#include "runtime/thread_name.h"

namespace clawguard::fiber {

void BlockingPool::Run(std::function<void()> job) {
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

void BlockingPool::Loop() {
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

}  // namespace clawguard::fiber
