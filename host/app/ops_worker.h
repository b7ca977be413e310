// ops_worker.h — OpsWorker: one thread for one kind of the host's background work that may wait
// on a peer — outbox resends wait on the ERP; DLQ replays and reconciler re-drives run a plugin,
// which calls the ERP — so that HostOpsLoop's own pass (operations generation, capability pauses,
// gauges) never waits on one (ARCHITECTURE.md "Host request pipeline", "Background work").
//
// Its queue holds at most one request: a Post while one is already queued is coalesced (a pass
// does all the work due when it starts, so a second queued request would find nothing the first
// does not). A Post while the job runs queues one more pass after it. Start makes the one
// thread; no other thread is ever made.
//
// Stop asks the job to end (its stop flag: the jobs check it between items), drops a queued
// request and waits for the thread up to a bound. A thread still in its job then is abandoned:
// detached, it ends by itself once its item does (an ERP call ends by erp.timeout). The worker's
// own state lives in a block the thread shares, so the thread never touches a freed OpsWorker.
// WARNING: what the job uses must outlive an abandoned thread (HostApp keeps it alive on
// purpose). An abandoned send is safe: it owns its outbox row by its claim until erp.timeout +
// kSendClaimMarginMs, and any later send of the row carries the same Idempotency-Key.
//
// Post, RequestStop and stats are thread-safe; Stop is called by the owner (one thread).
#ifndef CLAWGUARD_HOST_APP_OPS_WORKER_H_
#define CLAWGUARD_HOST_APP_OPS_WORKER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "clawguard/clock.h"
#include "clawguard/error.h"

namespace clawguard::host {

// kOpsWorkerDefaultStopMs bounds the wait of a worker destroyed without Stop.
inline constexpr int64_t kOpsWorkerDefaultStopMs = 30'000;

class OpsWorker {
 public:
  // Job runs one pass; its argument becomes true when the worker stops (check it between items).
  using Job = std::function<void(const std::atomic<bool>& stop)>;

  // Start makes the thread, named |name| (Linux keeps 15 bytes), idle until the first Post.
  // |clock| times the passes and must outlive the thread. kInternal when no thread can be made.
  static Result<std::unique_ptr<OpsWorker>> Start(std::string name, Job job, const Clock& clock);
  // ~OpsWorker stops it (Stop(kOpsWorkerDefaultStopMs)) unless Stop already ran.
  ~OpsWorker();
  OpsWorker(const OpsWorker&) = delete;
  OpsWorker& operator=(const OpsWorker&) = delete;

  // Post asks for one pass. false when a request was already queued (coalesced, counted) or the
  // worker is stopping.
  bool Post();

  struct Stats {
    bool busy = false;          // in a pass now
    int64_t busy_since_ms = 0;  // busy: when that pass started (the clock's time)
    int64_t runs = 0;           // passes finished
    int64_t coalesced = 0;      // Posts folded into a request already queued
    bool abandoned = false;     // Stop gave up waiting for the thread
  };
  Stats stats() const;

  // RequestStop sets the stop flag and drops a queued request without waiting (so that several
  // workers can be told before any is waited for).
  void RequestStop();
  // Stop (see the file comment): RequestStop, then true when the thread ended within |bound| and
  // was joined; false when it was abandoned. Once stopped, later calls return the first result.
  bool Stop(std::chrono::milliseconds bound);

 private:
  struct Shared;
  explicit OpsWorker(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}
  // Run is the thread's loop: wait for a request, run the job, until stopping.
  static void Run(const std::shared_ptr<Shared>& s);

  const std::shared_ptr<Shared> shared_;
  std::thread thread_;
  bool stopped_ = false;
  bool joined_ = false;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_APP_OPS_WORKER_H_
