// spare_threads.h — SpareThreads: runs each task on a thread of its own at once, reusing a thread
// that finished an earlier task instead of creating one.
//
// Why not a fixed pool: a plugin that hangs keeps its thread (plugins.handler_timeout abandons the
// delivery, not the thread), so a fixed pool could run out and queue later deliveries behind hung
// ones. Here a task never waits for a thread: if no spare thread is waiting, a new one is started,
// as before. Why not a thread per task: creating and ending a thread per delivery cost more than
// the delivery's own work under load (clone, a fresh stack, and the madvise that frees the old one,
// which interrupts every core to flush its TLB).
//
// The threads are named |name| (runtime/thread_name.h: at most 15 bytes are kept).
// A thread that finished its task waits up to |spare_for| for the next one, then ends. Thread-safe.
// The threads are detached and keep the shared state alive; the object may be destroyed while
// tasks still run (they finish, and their threads end when they find no next task).
#ifndef CLAWGUARD_RUNTIME_SPARE_THREADS_H_
#define CLAWGUARD_RUNTIME_SPARE_THREADS_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace clawguard::runtime {

class SpareThreads {
 public:
  explicit SpareThreads(std::chrono::milliseconds spare_for = std::chrono::seconds(10),
                        std::string name = "cg-spare");
  ~SpareThreads();
  SpareThreads(const SpareThreads&) = delete;
  SpareThreads& operator=(const SpareThreads&) = delete;

  // Run starts |task| on a spare thread, or on a new one if none is waiting. Throws what
  // std::thread throws if a new thread cannot be started (the task is then not run).
  void Run(std::function<void()> task);

  // started is how many threads were created; spare how many wait for a task now (for tests).
  int64_t started() const;
  int64_t spare() const;

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

}  // namespace clawguard::runtime

#endif  // CLAWGUARD_RUNTIME_SPARE_THREADS_H_
