// host_ops_loop.cpp — the host's background pass: generation, DLQ replays, outbox, gauges (see
// host_ops_loop.h).
#include "host/host_ops_loop.h"

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <array>

namespace clawguard::host {
namespace {

std::string Dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

}  // namespace

std::string ReplayOwner() {
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) != 0) name[0] = '\0';
  const std::string host = name[0] != '\0' ? std::string(name.data()) : std::string("unknown");
  return "host:" + host + ":" + std::to_string(getpid());
}

Result<std::unique_ptr<HostOpsLoop>> HostOpsLoop::Create(OpsLoopDeps deps) {
  if (deps.idempotency == nullptr || deps.dlq == nullptr || deps.retry == nullptr || deps.pipeline == nullptr ||
      deps.pauses == nullptr || deps.advisor == nullptr || deps.observer == nullptr || deps.clock == nullptr ||
      deps.owner.empty()) {
    return Status(Reason::kInternal, "host background loop: a dependency is missing");
  }
  return std::unique_ptr<HostOpsLoop>(new HostOpsLoop(std::move(deps)));
}

void HostOpsLoop::Audit(const std::string& line) const {
  if (deps_.audit) deps_.audit(line);
}

void HostOpsLoop::Tick() {
  PollGeneration();
  (void)ReplayDue();
  auto drained = deps_.retry->DrainPending(deps_.clock->NowMillis(), kDrainBatch);
  if (!drained.ok()) Audit(Dump({{"event", "retry_worker_error"}, {"detail", drained.error().message()}}));
  Reconcile(deps_.clock->NowMillis());
  PublishPeriodic(deps_.clock->NowMillis());
}

void HostOpsLoop::PollGeneration() {
  // A new generation drops the completed-record cache (the caching store does it when it sees the
  // value), re-reads the pauses (`capability pause|resume`), and the outbox is drained in the same
  // pass (`idem confirm`).
  Result<int64_t> g = deps_.idempotency->Generation();
  if (!g.ok()) {
    Audit(Dump({{"event", "operations_generation_error"}, {"detail", g.error().message()}}));
    return;
  }
  const bool changed = generation_.has_value() && *g != *generation_;
  generation_ = *g;
  if (!changed) return;
  Audit(Dump({{"event", "operations_generation"}, {"generation", *g}}));
  if (Status s = deps_.pauses->Refresh(*deps_.dlq); !s.ok()) {
    Audit(Dump({{"event", "capability_pauses_error"}, {"detail", s.message()}}));
  }
}

HostOpsLoop::ReplayStats HostOpsLoop::ReplayDue() {
  ReplayStats stats;
  Result<std::vector<DlqEntry>> claimed = deps_.dlq->ClaimReplays(deps_.owner, kReplayBatch, kReplayLeaseMs);
  if (!claimed.ok()) {
    Audit(Dump({{"event", "dlq_replay_error"}, {"detail", claimed.error().message()}}));
    return stats;
  }
  for (const DlqEntry& e : *claimed) {
    ++stats.claimed;
    auto [done, detail] = Replay(e);
    (done ? stats.done : stats.not_done) += 1;
    const int64_t now = deps_.clock->NowMillis();
    // A replay that did not finish is tried again later, but not for ever: after kMaxAutoReplays
    // claims it waits for an operator (next attempt 0).
    const int64_t next = done || e.attempts >= kMaxAutoReplays ? 0 : now + kReplayRetryMs;
    Result<bool> marked = deps_.dlq->MarkReplayed(e.id, e.attempts, done, detail, next);
    nlohmann::json line = {{"event", "dlq_replay"},
                           {"id", e.id},
                           {"class", DlqClassName(e.klass)},
                           {"event_key", e.event_key},
                           {"plugin", e.plugin},
                           {"route", e.route},
                           {"call_index", e.call_index},
                           {"attempt", e.attempts},
                           {"done", done},
                           {"detail", detail},
                           {"next_attempt_ms", next}};
    if (!marked.ok()) {
      line["mark_error"] = marked.error().message();
    } else if (!*marked) {
      line["mark_error"] = "the claim was lost (its lease expired and another host took it)";
    }
    Audit(Dump(line));
  }
  return stats;
}

std::pair<bool, std::string> HostOpsLoop::Replay(const DlqEntry& e) {
  if (e.call_index == kDlqEventLevel) {
    if (e.request_omitted || !e.request.has_value()) {
      return {false, "no stored request (the body was too large or never stored): the host cannot re-run this "
                     "event; the platform's own retries still carry it"};
    }
    RedeliverResult r = deps_.pipeline->Redeliver(e.plugin, e.route, e.event_key, *e.request);
    return {r.done, r.detail};
  }
  Result<bool> revived = deps_.retry->ReplayCall(e);
  if (!revived.ok()) return {false, "outbox row not revived: " + revived.error().message()};
  if (!*revived) return {false, "outbox row of call " + std::to_string(e.call_index) + " not found or not replayable"};
  return {true, "outbox row of call " + std::to_string(e.call_index) +
                    " revived: the retry worker resends it with its Idempotency-Key"};
}

void HostOpsLoop::Reconcile(int64_t now_ms) {
  if (deps_.reconciler == nullptr) return;
  if (last_reconcile_ms_ && now_ms - *last_reconcile_ms_ < kReconcilePeriodMs) return;
  last_reconcile_ms_ = now_ms;
  Result<ReconcilerStats> r = deps_.reconciler->RunOnce();
  if (!r.ok()) {
    Audit(Dump({{"event", "reconciler_error"}, {"detail", r.error().message()}}));
    return;
  }
  if (r->purged == 0 && r->stuck == 0) return;
  Audit(Dump({{"event", "reconciler_run"},
              {"purged", r->purged},
              {"stuck", r->stuck},
              {"redriven", r->redriven},
              {"completed", r->completed},
              {"dead_lettered", r->dead_lettered}}));
}

void HostOpsLoop::PublishPeriodic(int64_t now_ms) {
  if (last_gauges_ms_ && now_ms - *last_gauges_ms_ < kGaugePeriodMs) return;
  last_gauges_ms_ = now_ms;
  if (deps_.cache != nullptr && deps_.metrics != nullptr && deps_.cache->lookups() > 0) {
    deps_.metrics->SetCacheHitRatio(static_cast<double>(deps_.cache->hits()) /
                                    static_cast<double>(deps_.cache->lookups()));
  }
  if (deps_.metrics != nullptr && deps_.pipeline != nullptr) {
    deps_.metrics->SetDeliveries(deps_.pipeline->deliveries_in_flight(), deps_.pipeline->deliveries_queued(),
                                 deps_.plugin_threads ? deps_.plugin_threads() : 0);
  }
  if (Status s = deps_.observer->PublishGauges(); !s.ok()) {
    Audit(Dump({{"event", "metrics_gauges_error"}, {"detail", s.message()}}));
  }
  const RetentionReport report = deps_.advisor->Report(deps_.retention_ms);
  if (report.sufficient || !report.advised_ms) return;
  if (last_advice_ms_ && now_ms - *last_advice_ms_ < kAdviceIntervalMs) return;
  last_advice_ms_ = now_ms;
  Audit(Dump({{"event", "retention_advice"},
              {"samples", report.samples},
              {"p99_ms", report.p99_ms.value_or(0)},
              {"advised_ms", *report.advised_ms},
              {"configured_ms", report.configured_ms},
              {"detail", "idempotency.retention is shorter than p99 × 1.2 of the observed gaps between an "
                         "event's first and later deliveries: late duplicates will hit tombstones"}}));
}

}  // namespace clawguard::host
