// host_ops_loop.h — HostOpsLoop: one pass of the host's background loop (HostApp runs Tick every
// 200 ms on its own thread). ARCHITECTURE.md "Operator commands" and "Dead-letter triage".
//
// Tick, in order:
//   1. the operations generation is polled (≤ 1 s); on a change it is audited and the capability
//      pauses are re-read from the store (an operator paused or resumed one);
//   2. DLQ replays: Dlq::ClaimReplays (owner "host:<hostname>:<pid>", ≤ kReplayBatch entries, a
//      kReplayLeaseMs lease) — an event-level entry is re-run from its stored request through the
//      pipeline (WebhookPipeline::Redeliver); a call-level entry has its outbox row revived
//      (RetryWorker::ReplayCall: the worker resends it with the same Idempotency-Key). Each ends
//      with Dlq::MarkReplayed: done → replayed; not done → open again, due again after
//      kReplayRetryMs (after kMaxAutoReplays claims: left to an operator). Every replay is audited;
//   3. RetryWorker::DrainPending sends due outbox rows (a revived row goes out in the same pass);
//   4. every kReconcilePeriodMs: the reconciler (retention purge into tombstones, stuck records
//      re-driven or handed to manual review — host/reconciler.h); its non-empty runs are audited;
//   5. every kGaugePeriodMs: the DLQ size and breaker gauges (HostObserver::PublishGauges), the
//      completed-record cache's hit ratio, and
//      retention advice — when the advisor has enough samples and advises more than the configured
//      retention, one `retention_advice` audit line per kAdviceIntervalMs at most.
// Errors never stop the loop: they are audited and the next Tick tries again.
// Thread-compatible: one thread calls Tick.
#ifndef CLAWGUARD_HOST_HOST_OPS_LOOP_H_
#define CLAWGUARD_HOST_HOST_OPS_LOOP_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "clawguard/clock.h"
#include "clawguard/error.h"
#include "clawguard/store/dlq.h"
#include "clawguard/store/idempotency_store.h"
#include "host/capability_pauses.h"
#include "host/erp_gateway.h"
#include "host/host_metrics.h"
#include "host/host_observe.h"
#include "host/reconciler.h"
#include "host/record_cache.h"
#include "host/retention_advisor.h"
#include "host/webhook_pipeline.h"

namespace clawguard::host {

inline constexpr int64_t kDrainBatch = 100;            // outbox rows per Tick
inline constexpr int64_t kReplayBatch = 100;           // DLQ entries claimed per Tick
inline constexpr int64_t kReplayLeaseMs = 30'000;      // a claim's lease
inline constexpr int64_t kReplayRetryMs = 60'000;      // a replay that did not finish is due again
inline constexpr int64_t kMaxAutoReplays = 10;         // claims after which a person must ask again
inline constexpr int64_t kGaugePeriodMs = 5'000;       // DLQ and breaker gauges
inline constexpr int64_t kReconcilePeriodMs = 5'000;   // reconciler runs
inline constexpr int64_t kAdviceIntervalMs = 3'600'000;  // at most one retention_advice line an hour

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
  AuditFn audit;                   // may be empty
  std::string owner;               // ReplayOwner() in production
  int64_t retention_ms = 0;        // idempotency.retention
  Reconciler* reconciler = nullptr;                     // optional
  const CachingIdempotencyStore* cache = nullptr;       // optional: its hit ratio is published
  const HostMetrics* metrics = nullptr;                 // optional: cache ratio, delivery gauges
  std::function<int64_t()> plugin_threads;              // optional: PluginDispatcher::running_threads
};

class HostOpsLoop {
 public:
  // Create: kInternal when a dependency is missing.
  static Result<std::unique_ptr<HostOpsLoop>> Create(OpsLoopDeps deps);

  // Tick runs one pass (see the file comment).
  void Tick();

  struct ReplayStats {
    int64_t claimed = 0, done = 0, not_done = 0;
  };
  // ReplayDue claims and replays due DLQ entries (step 2 of Tick).
  ReplayStats ReplayDue();

 private:
  explicit HostOpsLoop(OpsLoopDeps deps) : deps_(std::move(deps)) {}
  void PollGeneration();
  // Replay runs one claimed entry; returns (done, detail).
  std::pair<bool, std::string> Replay(const DlqEntry& entry);
  void PublishPeriodic(int64_t now_ms);
  void Reconcile(int64_t now_ms);
  void Audit(const std::string& line) const;

  const OpsLoopDeps deps_;
  std::optional<int64_t> generation_;
  std::optional<int64_t> last_gauges_ms_;
  std::optional<int64_t> last_advice_ms_;
  std::optional<int64_t> last_reconcile_ms_;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_HOST_OPS_LOOP_H_
