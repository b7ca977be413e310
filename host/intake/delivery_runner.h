// delivery_runner.h — DeliveryRunner: runs tasks that may block (a claimed webhook delivery:
// store round trips, the plugin, its ERP calls) on threads of their own, at most |max_active| at
// once; later tasks wait in arrival order.
//
// Why not a fixed pool (asio::thread_pool): a plugin that hangs keeps its thread for good, so a
// fixed pool shrinks by one per hung plugin and a join would wait forever. Threads come from
// SpareThreads (runtime/spare_threads.h): a task never waits for a thread, a hung one is simply not
// reused. A task holds one of the |max_active| slots until it returns — or until it releases its
// Slot earlier: a delivery that was answered while its thread stays inside a hung plugin gives
// its slot back, so later deliveries are not held behind it (what the handler pool's bound
// did before: the handler thread returned at handler_timeout and left the plugin's thread behind).
// A task that returns with the slot still held runs the next queued task on the same thread (no
// hand-off to another thread). With |carriers| (host.yaml `listen.execution: fibers`) each task
// runs as a fiber on those carrier threads instead (runtime/fiber.h); the bound, the queue and
// the slots work the same. Thread-safe. The threads are detached and keep the shared state
// alive; the runner may be destroyed while tasks run (queued tasks still run).
#ifndef CLAWGUARD_HOST_INTAKE_DELIVERY_RUNNER_H_
#define CLAWGUARD_HOST_INTAKE_DELIVERY_RUNNER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "runtime/fiber.h"

namespace clawguard::host {

class DeliveryRunner {
 public:
  struct Shared;
  // Slot is a running task's share of |max_active|. Release is idempotent and thread-safe.
  class Slot {
   public:
    explicit Slot(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}
    // Release gives the slot to the next queued task (started on another thread), or back.
    void Release();
    // TakeNext (the task's own thread, after the task returned): if the slot is still held and a
    // task is queued, keeps the slot for it and moves it to |*next|; otherwise releases the slot.
    bool TakeNext(std::function<void(const std::shared_ptr<Slot>&)>* next);

   private:
    std::shared_ptr<Shared> shared_;
    std::atomic<bool> released_{false};
  };
  using Task = std::function<void(const std::shared_ptr<Slot>&)>;

  // |carriers|, if not nullptr, must outlive every task (its destructor waits for them).
  DeliveryRunner(int64_t max_active, std::string thread_name, fiber::Carriers* carriers = nullptr);
  ~DeliveryRunner();
  DeliveryRunner(const DeliveryRunner&) = delete;
  DeliveryRunner& operator=(const DeliveryRunner&) = delete;

  // Run starts |task| now if fewer than max_active run, else queues it. Throws what std::thread
  // throws if a thread (or a carrier) cannot be started (the task is then dropped, unrun, and its
  // captures destroyed). A task must not throw (what escapes is swallowed).
  void Run(Task task);

  // active: slots held now; queued: tasks waiting (for tests and gauges); unfinished: tasks given
  // to Run that have neither returned nor been dropped (a task that released its slot early still
  // counts until it returns).
  int64_t active() const;
  int64_t queued() const;
  int64_t unfinished() const;

  // WaitFinished waits up to |bound| for unfinished() to reach 0 and says whether it did. An owner
  // that frees what its tasks use calls it first (a task may outlive the runner).
  bool WaitFinished(std::chrono::milliseconds bound) const;

 private:
  std::shared_ptr<Shared> shared_;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_INTAKE_DELIVERY_RUNNER_H_
