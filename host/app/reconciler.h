// reconciler.h — Reconciler: the host's periodic sweep of the idempotency store (retention and
// stuck records; ARCHITECTURE.md "Host request pipeline" steps 4 and 6, host.yaml
// `idempotency.retention` and `idempotency.tombstones`).
//
// RunOnce, called every few seconds by one thread of the host:
//   1. Purge(now − retention, now + tombstone_ttl, batch): completed records past the retention
//      become tombstones (a later delivery of the key is 409 expired_key_seen → manual review);
//      expired tombstones are deleted.
//   2. ListStuck(now, stuck_for, batch): in-progress records whose lease ended (the worker died,
//      or the plugin failed and released it) and that nobody touched for stuck_for. For each:
//      - reconcile_attempts < max_attempts: NoteReconcileAttempt, then, if the record holds its
//        first claim's request, RedriveFn re-runs the event through the pipeline (without a
//        stored request the platform's own retry carries the event: only the attempt counts);
//      - reconcile_attempts == max_attempts: ONE Dlq::Add class manual_review (event-level, with
//        the stored request when there is one), then NoteReconcileAttempt — in that order, so a
//        failed DLQ write is retried at the next run (a repeated Add folds into the same entry);
//      - more: given up, skipped without a write.
//   NoteReconcileAttempt is a write, so one record is tried at most once per stuck_for.
//
// Store and DLQ failures end the run with their Status (the next run starts over); RedriveFn's
// own failures are its business (false = not completed). Several hosts may run reconcilers on
// one store: an attempt may then be counted twice, and the pipeline's claim lets only one
// re-drive run. A re-drive runs the plugin, which may wait on the ERP: the host runs RunOnce on a
// worker of its own (host/app/host_ops_loop.h), never on its background loop. Thread-compatible:
// one caller at a time.
#ifndef CLAWGUARD_HOST_APP_RECONCILER_H_
#define CLAWGUARD_HOST_APP_RECONCILER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "clawguard/clock.h"
#include "clawguard/error.h"
#include "clawguard/store/dlq.h"
#include "clawguard/store/idempotency_store.h"

namespace clawguard::host {

struct ReconcilerOptions {
  std::chrono::milliseconds stuck_for{std::chrono::minutes(1)};  // > 0
  int64_t batch = 100;                                           // 1..kMaxIdemBatch, per step
  int64_t max_attempts = 3;  // ≥ 1 re-drives before manual review
  std::chrono::milliseconds retention{std::chrono::hours(24 * 7)};  // > 0 (idempotency.retention)
  std::chrono::milliseconds tombstone_ttl{
      std::chrono::hours(24 * 30)};  // ≥ 0 (idempotency.tombstones)
};

struct ReconcilerStats {
  int64_t purged = 0;         // records turned into tombstones
  int64_t stuck = 0;          // stuck records listed
  int64_t redriven = 0;       // RedriveFn calls
  int64_t completed = 0;      // RedriveFn calls that returned true
  int64_t dead_lettered = 0;  // manual_review entries written
};

// RedriveFn re-runs the event of |record| from its stored request (record.has_request is true)
// through the pipeline; true if the event now has a stored answer.
using RedriveFn = std::function<bool(const IdempotencyRecord& record)>;

class Reconciler {
 public:
  // Create checks |options| (kConfigInvalid, naming the field) and that |redrive| is set. |store|,
  // |dlq| and |clock| must outlive the reconciler.
  static Result<std::unique_ptr<Reconciler>> Create(IdempotencyStore& store, Dlq& dlq,
                                                    const Clock& clock, ReconcilerOptions options,
                                                    RedriveFn redrive);

  // RunOnce runs one sweep (see the file comment) and returns what it did. With a |stop| flag it
  // ends early once the flag is set (checked before each stuck record: one not reached is found
  // again by the next run).
  Result<ReconcilerStats> RunOnce(const std::atomic<bool>* stop = nullptr);

 private:
  Reconciler(IdempotencyStore& store, Dlq& dlq, const Clock& clock, ReconcilerOptions options,
             RedriveFn redrive)
      : store_(store), dlq_(dlq), clock_(clock), options_(options), redrive_(std::move(redrive)) {}
  // GiveUp writes the record's manual_review entry.
  Status GiveUp(const IdempotencyRecord& record);

  IdempotencyStore& store_;
  Dlq& dlq_;
  const Clock& clock_;
  const ReconcilerOptions options_;
  const RedriveFn redrive_;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_APP_RECONCILER_H_
