// host_ops_loop.h — HostOpsLoop: the host's background loop (HostApp runs Tick every
// kOpsLoopPeriodMs on its own thread) and the three workers it hands the work to that may wait on
// a peer. ARCHITECTURE.md "Operator commands", "Dead-letter triage" and "Background work".
//
// The loop never waits on a peer (the ERP, a plugin): it reads the store, and posts the rest to
// bounded workers (OpsWorker: one thread each, a queue of one request). Tick, in order:
//   1. the operations generation is polled (every Tick); on a change it is audited and the
//      capability pauses are re-read from the store (an operator paused or resumed one). They are
//      also re-read every kPauseRefreshMs whatever the generation (a pause another host wrote on
//      an ERP 401/403 bumps none). A set of pauses that changed is audited (`capability_pauses`);
//   2. work is posted: the outbox worker and the replay worker every Tick, the reconciler worker
//      every kReconcilePeriodMs. A worker still in its last pass keeps one more request at most;
//   3. every kGaugePeriodMs: the DLQ size and breaker gauges (HostObserver::PublishGauges), the
//      completed-record cache's hit ratio, and retention advice — when the advisor has enough
//      samples and advises more than the configured retention, one `retention_advice` audit
//      line per kAdviceIntervalMs at most;
//   4. the Tick is counted (StatusJson: ticks, the time of the last one, the pauses as last read,
//      each worker's state), so that its period can be watched while a worker waits on the ERP
//      (admin /readyz "background").
// The workers' passes (each also callable directly when no worker runs, as tests do):
//   - ReplayDue (replay worker): Dlq::ClaimReplays (owner "host:<hostname>:<pid>", ≤ kReplayBatch
//     entries, a kReplayLeaseMs lease) — an event-level entry is re-run from its stored request
//     through the pipeline (WebhookPipeline::Redeliver); a call-level entry has its outbox row
//     revived (RetryWorker::ReplayCall: the outbox worker resends it with the same
//     Idempotency-Key; a call the plugin version loaded now no longer declares is not revived).
//     Each ends with Dlq::MarkReplayed: done → replayed; not done → open again, due again after
//     kReplayRetryMs (after kMaxAutoReplays claims, or when the call's capability is revoked: left
//     to an operator). Every replay is audited. A pass that revived a row posts the outbox worker;
//   - DrainOutbox (outbox worker): RetryWorker::DrainPending sends ≤ kDrainBatch due outbox rows,
//     each matched again against the capabilities loaded now and the pauses in force
//     (host/erp/erp_send.h);
//   - Reconcile (reconciler worker): the reconciler (retention purge into tombstones, stuck
//     records re-driven or handed to manual review — host/app/reconciler.h); its non-empty runs are
//     audited.
// Errors never stop the loop or a worker: they are audited and the next pass tries again.
// StartWorkers makes the three threads (none is made later); StopWorkers stops them, each pass
// ending between two items, and waits a bound: a worker still in an item then is abandoned
// (OpsWorker) and reported.
// Thread-safety: Tick from one thread at a time; each pass from one thread at a time (its worker);
// StatusJson from any thread.
#ifndef CLAWGUARD_HOST_APP_HOST_OPS_LOOP_H_
#define CLAWGUARD_HOST_APP_HOST_OPS_LOOP_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "clawguard/clock.h"
#include "clawguard/error.h"
#include "clawguard/store/dlq.h"
#include "clawguard/store/idempotency_store.h"
#include "core/mutex.h"
#include "host/app/host_observe.h"
#include "host/app/ops_worker.h"
#include "host/app/reconciler.h"
#include "host/erp/erp_gateway.h"
#include "host/guard/capability_pauses.h"
#include "host/guard/retention_advisor.h"
#include "host/intake/record_cache.h"
#include "host/intake/webhook_pipeline.h"
#include "host/observe/host_metrics.h"

namespace clawguard::host {

inline constexpr int64_t kOpsLoopPeriodMs = 200;      // the loop's period (HostApp)
inline constexpr int64_t kPauseRefreshMs = 5'000;     // pauses re-read at least this often
inline constexpr int64_t kDrainBatch = 100;           // outbox rows per outbox pass
inline constexpr int64_t kReplayBatch = 100;          // DLQ entries claimed per replay pass
inline constexpr int64_t kReplayLeaseMs = 30'000;     // a claim's lease
inline constexpr int64_t kReplayRetryMs = 60'000;     // a replay that did not finish is due again
inline constexpr int64_t kMaxAutoReplays = 10;        // claims after which a person must ask again
inline constexpr int64_t kGaugePeriodMs = 5'000;      // DLQ and breaker gauges
inline constexpr int64_t kReconcilePeriodMs = 5'000;  // reconciler runs
inline constexpr int64_t kAdviceIntervalMs =
    3'600'000;  // at most one retention_advice line an hour

// ReplayOwner is "host:<hostname>:<pid>" (the DLQ's claimed_by of this process).
std::string ReplayOwner();

struct OpsLoopDeps {
  IdempotencyStore* idempotency = nullptr;  // operations generation
  Dlq* dlq = nullptr;
  RetryWorker* retry = nullptr;
  const WebhookPipeline* pipeline = nullptr;
  CapabilityPauses* pauses = nullptr;
  RetentionAdvisor* advisor = nullptr;
  const HostObserver* observer = nullptr;
  const Clock* clock = nullptr;
  AuditFn audit;                                   // may be empty
  std::string owner;                               // ReplayOwner() in production
  int64_t retention_ms = 0;                        // idempotency.retention
  Reconciler* reconciler = nullptr;                // optional
  const CachingIdempotencyStore* cache = nullptr;  // optional: its hit ratio is published
  const HostMetrics* metrics = nullptr;            // optional: cache ratio, delivery gauges
  std::function<int64_t()> plugin_threads;         // optional: PluginDispatcher::running_threads
};

class HostOpsLoop {
 public:
  // Create: kInternal when a dependency is missing. Makes no thread (StartWorkers does).
  static Result<std::unique_ptr<HostOpsLoop>> Create(OpsLoopDeps deps);
  // ~HostOpsLoop stops the workers still running (OpsWorker's default bound).
  ~HostOpsLoop();

  // Tick runs one pass of the loop (see the file comment).
  void Tick();

  // StartWorkers makes the outbox, replay and reconciler workers (threads "cg-outbox",
  // "cg-replays", "cg-reconcile"); until then Tick posts nothing. kInternal when a thread cannot
  // be made, or when started twice.
  Status StartWorkers();
  // StopWorkers tells every worker to stop, then waits up to |bound| in all for them; returns how
  // many were abandoned (still inside an item). Called by the owner (one thread); again: at once.
  // WARNING: an abandoned worker still runs this loop's pass: the loop and what its deps point to
  // must then outlive it (HostApp keeps them, never freed).
  int StopWorkers(std::chrono::milliseconds bound);

  struct ReplayStats {
    int64_t claimed = 0, done = 0, not_done = 0;
    int64_t revived = 0;  // call-level replays whose row the outbox worker will send
  };
  // ReplayDue claims and replays due DLQ entries (the replay worker's pass). With a |stop| flag
  // set meanwhile, the claimed entries not replayed yet are handed back, due at once.
  ReplayStats ReplayDue(const std::atomic<bool>* stop = nullptr);
  // DrainOutbox sends due outbox rows (the outbox worker's pass).
  void DrainOutbox(const std::atomic<bool>* stop = nullptr);
  // Reconcile runs the reconciler once, if there is one (the reconciler worker's pass).
  void Reconcile(const std::atomic<bool>* stop = nullptr);

  // StatusJson is {period_ms, ticks, last_tick_ms, generation, pauses:{refreshed_ms,
  // paused:[{plugin, capability}]}, workers:{outbox|replays|reconciler:{busy, busy_since_ms, runs,
  // coalesced, abandoned}}} (workers {} until started). Thread-safe.
  nlohmann::json StatusJson() const;

 private:
  explicit HostOpsLoop(OpsLoopDeps deps) : deps_(std::move(deps)) {}
  void PollGeneration(int64_t now_ms);
  void RefreshPauses(int64_t now_ms, const char* why);
  void PostWork(int64_t now_ms) CLAWGUARD_EXCLUDES(workers_mu_);
  struct ReplayOutcome {
    bool done = false;
    bool retry = true;     // not done: due again after kReplayRetryMs (false: left to an operator)
    bool revived = false;  // a call-level row is queued for the outbox worker
    std::string detail;
  };
  // Replay runs one claimed entry.
  ReplayOutcome Replay(const DlqEntry& entry);
  void PublishPeriodic(int64_t now_ms);
  void Audit(const std::string& line) const;

  const OpsLoopDeps deps_;
  // Tick's own state (one thread).
  std::optional<int64_t> generation_;
  std::optional<int64_t> last_gauges_ms_;
  std::optional<int64_t> last_advice_ms_;
  std::optional<int64_t> last_reconcile_ms_;
  std::optional<int64_t> last_pause_refresh_ms_;
  // Read by StatusJson from other threads.
  std::atomic<int64_t> ticks_{0};
  std::atomic<int64_t> last_tick_ms_{0};
  std::atomic<int64_t> seen_generation_{-1};
  std::atomic<int64_t> pauses_refreshed_ms_{0};
  // The workers; made once by StartWorkers, stopped (never reset) by StopWorkers.
  mutable Mutex workers_mu_;
  std::unique_ptr<OpsWorker> outbox_worker_ CLAWGUARD_GUARDED_BY(workers_mu_);
  std::unique_ptr<OpsWorker> replay_worker_ CLAWGUARD_GUARDED_BY(workers_mu_);
  std::unique_ptr<OpsWorker> reconcile_worker_ CLAWGUARD_GUARDED_BY(workers_mu_);
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_APP_HOST_OPS_LOOP_H_
