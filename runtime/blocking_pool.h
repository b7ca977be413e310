// blocking_pool.h — BlockingPool: the threads fiber::RunBlocking hands blocking calls to.
#ifndef CLAWGUARD_RUNTIME_BLOCKING_POOL_H_
#define CLAWGUARD_RUNTIME_BLOCKING_POOL_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>

#include "core/mutex.h"

namespace clawguard::fiber {

// BlockingPool runs RunBlocking's calls: threads started on demand, each leaving after 10 s idle.
// Process-wide and never destroyed (a detached thread may outlive every other object).
class BlockingPool {
 public:
  static BlockingPool& Get() {
    static auto* pool = new BlockingPool;
    return *pool;
  }
  // Run queues |job|: an idle thread takes it, else a new thread starts (or, when no thread can
  // start and none runs, the caller runs the queue itself).
  void Run(std::function<void()> job);

 private:
  void Loop();

  Mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_ CLAWGUARD_GUARDED_BY(mu_);
  int idle_ CLAWGUARD_GUARDED_BY(mu_) = 0;
  int threads_ CLAWGUARD_GUARDED_BY(mu_) = 0;
};

}  // namespace clawguard::fiber

#endif  // CLAWGUARD_RUNTIME_BLOCKING_POOL_H_
