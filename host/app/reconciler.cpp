// reconciler.cpp — one sweep: purge, then the stuck records.
#include "host/app/reconciler.h"

#include <string>
#include <utility>
#include <vector>

namespace clawguard::host {
namespace {

Status Invalid(const std::string& what) {
  return Status(Reason::kConfigInvalid, "reconciler: " + what);
}

}  // namespace

Result<std::unique_ptr<Reconciler>> Reconciler::Create(IdempotencyStore& store, Dlq& dlq,
                                                       const Clock& clock,
                                                       ReconcilerOptions options,
                                                       RedriveFn redrive) {
  if (options.stuck_for.count() <= 0) {
    return Invalid("stuck_for must be > 0 ms, got " + std::to_string(options.stuck_for.count()));
  }
  if (options.batch < 1 || options.batch > kMaxIdemBatch) {
    return Invalid("batch must be 1.." + std::to_string(kMaxIdemBatch) + ", got " +
                   std::to_string(options.batch));
  }
  if (options.max_attempts < 1) {
    return Invalid("max_attempts must be >= 1, got " + std::to_string(options.max_attempts));
  }
  if (options.retention.count() <= 0) {
    return Invalid("retention must be > 0 ms, got " + std::to_string(options.retention.count()));
  }
  if (options.tombstone_ttl.count() < 0) {
    return Invalid("tombstone_ttl must be >= 0 ms, got " +
                   std::to_string(options.tombstone_ttl.count()));
  }
  if (!redrive) return Invalid("a re-drive function is required, got none");
  return std::unique_ptr<Reconciler>(
      new Reconciler(store, dlq, clock, options, std::move(redrive)));
}

Status Reconciler::GiveUp(const IdempotencyRecord& record) {
  DlqNewEntry e;
  e.klass = DlqClass::kManualReview;
  e.event_key = record.key;
  e.plugin = record.plugin;
  e.route = record.route;
  e.call_index = kDlqEventLevel;
  e.detail = "reconciler gave up after " + std::to_string(options_.max_attempts) + " attempts";
  if (record.has_request) {
    e.request = DlqRequest{record.webhook_id, record.request_content_type, record.request_body};
  } else {
    e.detail += " (no stored request: the platform's retry carries the event)";
  }
  auto added = dlq_.Add(e);
  if (!added.ok()) return added.error();
  return Status::Ok();
}

Result<ReconcilerStats> Reconciler::RunOnce(const std::atomic<bool>* stop) {
  ReconcilerStats stats;
  const int64_t now = clock_.NowMillis();
  CLAWGUARD_ASSIGN_OR_RETURN(stats.purged,
                             store_.Purge(now - options_.retention.count(),
                                          now + options_.tombstone_ttl.count(), options_.batch));
  CLAWGUARD_ASSIGN_OR_RETURN(std::vector<IdempotencyRecord> stuck,
                             store_.ListStuck(now, options_.stuck_for.count(), options_.batch));
  stats.stuck = static_cast<int64_t>(stuck.size());
  for (const IdempotencyRecord& record : stuck) {
    if (stop != nullptr && stop->load()) break;
    if (record.reconcile_attempts > options_.max_attempts) continue;  // given up earlier
    if (record.reconcile_attempts == options_.max_attempts) {
      // DLQ first: if the Add fails, the attempt is not counted and the next run tries again.
      CLAWGUARD_RETURN_IF_ERROR(GiveUp(record));
      ++stats.dead_lettered;
      auto noted = store_.NoteReconcileAttempt(record.key);
      if (!noted.ok() && noted.error().reason() != Reason::kNotFound) return noted.error();
      continue;
    }
    auto attempt = store_.NoteReconcileAttempt(record.key);
    if (!attempt.ok()) {
      if (attempt.error().reason() == Reason::kNotFound) continue;  // gone since the listing
      return attempt.error();
    }
    if (*attempt > options_.max_attempts) continue;  // another reconciler counted it meanwhile
    if (!record.has_request) continue;               // the platform's retry carries the event
    ++stats.redriven;
    if (redrive_(record)) ++stats.completed;
  }
  return stats;
}

}  // namespace clawguard::host
