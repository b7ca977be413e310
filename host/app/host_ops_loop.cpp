// host_ops_loop.cpp — the host's background loop (generation, pauses, posting, gauges) and the
// passes of its workers (DLQ replays, outbox, reconciler); see host_ops_loop.h.
#include "host/app/host_ops_loop.h"

#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>

#include "clawguard/json_dump.h"

namespace clawguard::host {
namespace {

nlohmann::json WorkerJson(const OpsWorker* w) {
  const OpsWorker::Stats s = w->stats();
  return {{"busy", s.busy},
          {"busy_since_ms", s.busy ? s.busy_since_ms : 0},
          {"runs", s.runs},
          {"coalesced", s.coalesced},
          {"abandoned", s.abandoned}};
}

nlohmann::json PausesJson(const std::vector<std::pair<std::string, std::string>>& paused) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [plugin, capability] : paused)
    out.push_back({{"plugin", plugin}, {"capability", capability}});
  return out;
}

}  // namespace

std::string ReplayOwner() {
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) != 0) name[0] = '\0';
  const std::string host = name[0] != '\0' ? std::string(name.data()) : std::string("unknown");
  return "host:" + host + ":" + std::to_string(getpid());
}

Result<std::unique_ptr<HostOpsLoop>> HostOpsLoop::Create(OpsLoopDeps deps) {
  if (deps.idempotency == nullptr || deps.dlq == nullptr || deps.retry == nullptr ||
      deps.pipeline == nullptr || deps.pauses == nullptr || deps.advisor == nullptr ||
      deps.observer == nullptr || deps.clock == nullptr || deps.owner.empty()) {
    return Status(Reason::kInternal, "host background loop: a dependency is missing");
  }
  return std::unique_ptr<HostOpsLoop>(new HostOpsLoop(std::move(deps)));
}

HostOpsLoop::~HostOpsLoop() {
  (void)StopWorkers(std::chrono::milliseconds(kOpsWorkerDefaultStopMs));
}

void HostOpsLoop::Audit(const std::string& line) const {
  if (deps_.audit) deps_.audit(line);
}

Status HostOpsLoop::StartWorkers() {
  MutexLock lock(workers_mu_);
  if (outbox_worker_ != nullptr)
    return Status(Reason::kInternal, "host background loop: workers already started");
  // The outbox worker first: the replay worker posts it.
  CLAWGUARD_ASSIGN_OR_RETURN(
      outbox_worker_,
      OpsWorker::Start(
          "cg-outbox", [this](const std::atomic<bool>& stop) { DrainOutbox(&stop); },
          *deps_.clock));
  CLAWGUARD_ASSIGN_OR_RETURN(
      replay_worker_,
      OpsWorker::Start(
          "cg-replays", [this](const std::atomic<bool>& stop) { (void)ReplayDue(&stop); },
          *deps_.clock));
  CLAWGUARD_ASSIGN_OR_RETURN(
      reconcile_worker_,
      OpsWorker::Start(
          "cg-reconcile", [this](const std::atomic<bool>& stop) { Reconcile(&stop); },
          *deps_.clock));
  return Status::Ok();
}

int HostOpsLoop::StopWorkers(std::chrono::milliseconds bound) {
  std::vector<OpsWorker*> workers;
  {
    // Not held while waiting: a pass that ends posts the outbox worker under this lock.
    MutexLock lock(workers_mu_);
    for (OpsWorker* w : {outbox_worker_.get(), replay_worker_.get(), reconcile_worker_.get()}) {
      if (w != nullptr) workers.push_back(w);
    }
  }
  // Each is told before any is waited for, so their last items end side by side within |bound|.
  for (OpsWorker* w : workers) w->RequestStop();
  const auto deadline = std::chrono::steady_clock::now() + bound;
  int abandoned = 0;
  for (OpsWorker* w : workers) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!w->Stop(std::max(left, std::chrono::milliseconds(0)))) ++abandoned;
  }
  return abandoned;
}

void HostOpsLoop::Tick() {
  const int64_t now = deps_.clock->NowMillis();
  PollGeneration(now);
  if (!last_pause_refresh_ms_ || now - *last_pause_refresh_ms_ >= kPauseRefreshMs)
    RefreshPauses(now, "period");
  PostWork(now);
  PublishPeriodic(deps_.clock->NowMillis());
  last_tick_ms_.store(now);
  ticks_.fetch_add(1);
}

void HostOpsLoop::PollGeneration(int64_t now_ms) {
  // A new generation drops the completed-record cache (the caching store does it when it sees the
  // value) and re-reads the pauses (`capability pause|resume`); the outbox worker is posted in
  // the same Tick (`idem confirm`).
  Result<int64_t> g = deps_.idempotency->Generation();
  if (!g.ok()) {
    Audit(DumpJson({{"event", "operations_generation_error"}, {"detail", g.error().message()}}));
    return;
  }
  const bool changed = generation_.has_value() && *g != *generation_;
  generation_ = *g;
  seen_generation_.store(*g);
  if (!changed) return;
  Audit(DumpJson({{"event", "operations_generation"}, {"generation", *g}}));
  RefreshPauses(now_ms, "generation");
}

void HostOpsLoop::RefreshPauses(int64_t now_ms, const char* why) {
  last_pause_refresh_ms_ = now_ms;
  const auto before = deps_.pauses->Snapshot();
  if (Status s = deps_.pauses->Refresh(*deps_.dlq); !s.ok()) {
    // The previous set is kept: a pause is never lifted because the store could not be read.
    Audit(DumpJson({{"event", "capability_pauses_error"}, {"detail", s.message()}}));
    return;
  }
  pauses_refreshed_ms_.store(now_ms);
  const auto after = deps_.pauses->Snapshot();
  if (after == before) return;
  Audit(DumpJson({{"event", "capability_pauses"}, {"why", why}, {"paused", PausesJson(after)}}));
}

void HostOpsLoop::PostWork(int64_t now_ms) {
  MutexLock lock(workers_mu_);
  if (outbox_worker_ == nullptr) return;  // not started: the passes are called directly
  (void)replay_worker_->Post();
  (void)outbox_worker_->Post();
  if (deps_.reconciler != nullptr &&
      (!last_reconcile_ms_ || now_ms - *last_reconcile_ms_ >= kReconcilePeriodMs)) {
    last_reconcile_ms_ = now_ms;
    (void)reconcile_worker_->Post();
  }
}

HostOpsLoop::ReplayStats HostOpsLoop::ReplayDue(const std::atomic<bool>* stop) {
  ReplayStats stats;
  Result<std::vector<DlqEntry>> claimed =
      deps_.dlq->ClaimReplays(deps_.owner, kReplayBatch, kReplayLeaseMs);
  if (!claimed.ok()) {
    Audit(DumpJson({{"event", "dlq_replay_error"}, {"detail", claimed.error().message()}}));
    return stats;
  }
  for (const DlqEntry& e : *claimed) {
    ++stats.claimed;
    if (stop != nullptr && stop->load()) {
      // Handed back due at once (for this host after a restart, or another host), not left
      // leased until kReplayLeaseMs.
      (void)deps_.dlq->MarkReplayed(e.id, e.attempts, /*succeeded=*/false,
                                    "not replayed: the host stopped first",
                                    deps_.clock->NowMillis());
      ++stats.not_done;
      continue;
    }
    const ReplayOutcome r = Replay(e);
    (r.done ? stats.done : stats.not_done) += 1;
    stats.revived += r.revived ? 1 : 0;
    const int64_t now = deps_.clock->NowMillis();
    // A replay that did not finish is tried again later, but not for ever: after kMaxAutoReplays
    // claims (or at once when retrying cannot help) it waits for an operator (next attempt 0).
    const int64_t next =
        r.done || !r.retry || e.attempts >= kMaxAutoReplays ? 0 : now + kReplayRetryMs;
    Result<bool> marked = deps_.dlq->MarkReplayed(e.id, e.attempts, r.done, r.detail, next);
    nlohmann::json line = {{"event", "dlq_replay"},
                           {"id", e.id},
                           {"class", DlqClassName(e.klass)},
                           {"event_key", e.event_key},
                           {"plugin", e.plugin},
                           {"route", e.route},
                           {"call_index", e.call_index},
                           {"attempt", e.attempts},
                           {"done", r.done},
                           {"detail", r.detail},
                           {"next_attempt_ms", next}};
    if (!marked.ok()) {
      line["mark_error"] = marked.error().message();
    } else if (!*marked) {
      line["mark_error"] = "the claim was lost (its lease expired and another host took it)";
    }
    Audit(DumpJson(line));
  }
  if (stats.revived > 0) {
    // Revived rows go out at once, not at the next Tick.
    MutexLock lock(workers_mu_);
    if (outbox_worker_ != nullptr) (void)outbox_worker_->Post();
  }
  return stats;
}

HostOpsLoop::ReplayOutcome HostOpsLoop::Replay(const DlqEntry& e) {
  ReplayOutcome out;
  if (e.call_index == kDlqEventLevel) {
    if (e.request_omitted || !e.request.has_value()) {
      out.detail =
          "no stored request (the body was too large or never stored): the host cannot re-run this "
          "event; the platform's own retries still carry it";
      return out;
    }
    RedeliverResult r = deps_.pipeline->Redeliver(e.plugin, e.route, e.event_key, *e.request);
    out.done = r.done;
    out.detail = std::move(r.detail);
    return out;
  }
  const std::string call = "outbox row of call " + std::to_string(e.call_index);
  Result<CallReplay> replayed = deps_.retry->ReplayCall(e);
  if (!replayed.ok()) {
    out.detail = call + " not revived: " + replayed.error().message();
    return out;
  }
  switch (*replayed) {
    case CallReplay::kQueued:
      out.done = true;
      out.revived = true;
      out.detail = call + " revived: the retry worker resends it with its Idempotency-Key";
      break;
    case CallReplay::kHeld:
      out.detail =
          call + " is a held intent: confirm it (`clawguard idem confirm`), it is not replayed";
      break;
    case CallReplay::kRevoked:
      out.retry = false;  // only loading a version that declares the call again can help
      out.detail = call +
                   " not revived: the plugin version loaded now declares no capability for it "
                   "(see the event's capability_revoked entry)";
      break;
  }
  return out;
}

void HostOpsLoop::DrainOutbox(const std::atomic<bool>* stop) {
  auto drained = deps_.retry->DrainPending(deps_.clock->NowMillis(), kDrainBatch, stop);
  if (!drained.ok())
    Audit(DumpJson({{"event", "retry_worker_error"}, {"detail", drained.error().message()}}));
}

void HostOpsLoop::Reconcile(const std::atomic<bool>* stop) {
  if (deps_.reconciler == nullptr) return;
  Result<ReconcilerStats> r = deps_.reconciler->RunOnce(stop);
  if (!r.ok()) {
    Audit(DumpJson({{"event", "reconciler_error"}, {"detail", r.error().message()}}));
    return;
  }
  if (r->purged == 0 && r->stuck == 0) return;
  Audit(DumpJson({{"event", "reconciler_run"},
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
    deps_.metrics->SetDeliveries(deps_.pipeline->deliveries_in_flight(),
                                 deps_.pipeline->deliveries_queued(),
                                 deps_.plugin_threads ? deps_.plugin_threads() : 0);
  }
  if (Status s = deps_.observer->PublishGauges(); !s.ok()) {
    Audit(DumpJson({{"event", "metrics_gauges_error"}, {"detail", s.message()}}));
  }
  const RetentionReport report = deps_.advisor->Report(deps_.retention_ms);
  if (report.sufficient || !report.advised_ms) return;
  if (last_advice_ms_ && now_ms - *last_advice_ms_ < kAdviceIntervalMs) return;
  last_advice_ms_ = now_ms;
  Audit(
      DumpJson({{"event", "retention_advice"},
                {"samples", report.samples},
                {"p99_ms", report.p99_ms.value_or(0)},
                {"advised_ms", *report.advised_ms},
                {"configured_ms", report.configured_ms},
                {"detail",
                 "idempotency.retention is shorter than p99 × 1.2 of the observed gaps between an "
                 "event's first and later deliveries: late duplicates will hit tombstones"}}));
}

nlohmann::json HostOpsLoop::StatusJson() const {
  const int64_t generation = seen_generation_.load();
  nlohmann::json workers = nlohmann::json::object();
  {
    MutexLock lock(workers_mu_);
    if (outbox_worker_ != nullptr) {
      workers["outbox"] = WorkerJson(outbox_worker_.get());
      workers["replays"] = WorkerJson(replay_worker_.get());
      workers["reconciler"] = WorkerJson(reconcile_worker_.get());
    }
  }
  return {{"period_ms", kOpsLoopPeriodMs},
          {"ticks", ticks_.load()},
          {"last_tick_ms", last_tick_ms_.load()},
          {"generation", generation >= 0 ? nlohmann::json(generation) : nlohmann::json(nullptr)},
          {"pauses",
           {{"refreshed_ms", pauses_refreshed_ms_.load()},
            {"paused", PausesJson(deps_.pauses->Snapshot())}}},
          {"workers", workers}};
}

}  // namespace clawguard::host
