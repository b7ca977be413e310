// erp_send.cpp — the gate before a send, one send, and the dead-letter triage of its answer.
#include "host/erp_send.h"

#include <nlohmann/json.hpp>

#include <limits>

#include "clawguard/store/dlq.h"
#include "host/breaker.h"
#include "host/capability_pauses.h"
#include "host/erp_triage.h"
#include "host/host_metrics.h"
#include "host/idempotency_key.h"

namespace clawguard::host {
namespace {

constexpr std::string_view kIdempotencyKeyHeader = "Idempotency-Key";

// SendContext is one send of one row: what every triage step needs to act and to say what it did.
struct SendContext {
  const ErpEnv& env;
  const OutboxRow& row;
  const ErpCallTarget& target;
  int64_t attempt = 0;  // this send's number (1-based)

  std::string Call() const {
    return row.method + " " + row.path + " (call " + std::to_string(row.call_index) + ")";
  }

  void Emit(nlohmann::json j) const {
    if (!env.audit) return;
    j["event_key"] = row.event_key;
    j["call_index"] = row.call_index;
    if (!target.plugin.empty()) j["plugin"] = target.plugin;
    if (!target.endpoint.empty()) j["endpoint"] = target.endpoint;
    j["method"] = row.method;
    j["path"] = row.path;
    // Plugin-chosen paths may hold invalid UTF-8: replace rather than throw.
    env.audit(j.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace));
  }

  void Metric(ErpCallOutcome outcome) const {
    if (env.metrics != nullptr) env.metrics->RecordErpCall(target.endpoint, outcome);
  }

  // DeadLetter adds (or folds into) the event's call-level entry of |klass|.
  void DeadLetter(DlqClass klass, int erp_status, const std::string& detail) const {
    if (env.dlq == nullptr) return;
    DlqNewEntry e;
    e.klass = klass;
    e.event_key = row.event_key;
    e.plugin = target.plugin;
    e.route = "";  // not known to the outbox
    e.call_index = row.call_index;
    e.endpoint = target.endpoint;
    e.erp_status = erp_status;
    e.detail = detail;
    e.next_attempt_ms = 0;  // the outbox row is the queue; the entry is for people
    const Result<DlqAdded> added = env.dlq->Add(e);
    if (!added.ok()) {
      Emit({{"event", "dlq_write_failed"}, {"dlq_class", DlqClassName(klass)}, {"detail", added.error().message()}});
    }
  }

  void DeferTo(int64_t next_attempt_ms) const {
    // A failed Defer leaves the row due (or at its backoff): it is only looked at again sooner.
    (void)env.outbox->Defer(row.event_key, row.call_index, next_attempt_ms);
  }
};

// ResolveAfterSuccess closes the event's entries that a successful retry makes moot.
void ResolveAfterSuccess(const SendContext& c, int status) {
  if (c.env.dlq == nullptr || c.attempt <= 1) return;  // no earlier attempt failed
  const std::string detail = "retry succeeded: " + c.Call() + " answered " + std::to_string(status) +
                             " at attempt " + std::to_string(c.attempt);
  for (DlqClass k : {DlqClass::kCooldown, DlqClass::kTransientExhausted, DlqClass::kAuth}) {
    (void)c.env.dlq->Resolve(c.row.event_key, k, detail);
  }
}

// OnAuthFailure: ERP 401/403. The credentials are the host's, not the plugin's: pausing the
// capability stops every call of it until an operator has fixed them and resumed it.
SendResult OnAuthFailure(const SendContext& c, const ErpTriage& t) {
  const std::string why = "ERP answered " + std::to_string(t.status);
  const bool can_pause = c.env.dlq != nullptr && !c.target.plugin.empty() && !c.target.endpoint.empty();
  bool paused = false;
  if (can_pause) {
    const Result<bool> p = c.env.dlq->Pause(c.target.plugin, c.target.endpoint, why, "host");
    paused = p.ok();
    if (paused && c.env.pauses != nullptr) c.env.pauses->MarkPaused(c.target.plugin, c.target.endpoint);
  }
  c.Emit({{"event", "erp_auth_failed"},
          {"alert", true},
          {"erp_status", t.status},
          {"capability_paused", paused},
          {"attempt", c.attempt}});
  std::string detail = "capability paused: " + why + " to " + c.Call();
  if (paused) {
    detail += "; fix the ERP credentials, then `clawguard capability resume " + c.target.plugin + " '" +
              c.target.endpoint + "'`";
    c.DeadLetter(DlqClass::kAuth, t.status, detail);
    c.DeferTo(c.env.clock->NowMillis() + kPausedRecheckMs);
    return SendResult::kRetryLater;
  }
  // Nothing paused (no DLQ, the row's plugin or endpoint is unknown, or the store refused the
  // pause): retry on the backoff like a transient failure, dead when the attempts are spent.
  detail = why + " to " + c.Call() + "; capability not paused (no DLQ, unknown plugin or endpoint, or store error)";
  c.DeadLetter(DlqClass::kAuth, t.status, detail);
  if (c.attempt >= c.env.retry.attempts) {
    (void)c.env.outbox->MarkDead(c.row.event_key, c.row.call_index);
    return SendResult::kDead;
  }
  return SendResult::kRetryLater;
}

SendResult OnTransient(const SendContext& c, const ErpTriage& t) {
  const bool spent = c.attempt >= c.env.retry.attempts;
  c.Emit({{"event", spent ? "erp_call_dead" : "erp_call_retry"}, {"attempt", c.attempt}, {"detail", t.detail}});
  if (!spent) return SendResult::kRetryLater;
  (void)c.env.outbox->MarkDead(c.row.event_key, c.row.call_index);
  c.DeadLetter(DlqClass::kTransientExhausted, t.status,
               "retries spent: " + c.Call() + " got no final answer in " + std::to_string(c.attempt) +
                   " attempts; last: " + t.detail);
  return SendResult::kDead;
}

SendResult OnRateLimited(const SendContext& c, const ErpTriage& t) {
  const int64_t wait = c.env.retry.CooldownMs(t.retry_after_ms, DrawUniform01(c.env));
  c.DeferTo(c.env.clock->NowMillis() + wait);
  const std::string ra =
      t.retry_after_ms >= 0 ? "Retry-After " + std::to_string(t.retry_after_ms / 1000) + " s" : "no usable Retry-After";
  c.Emit({{"event", "erp_call_cooldown"}, {"attempt", c.attempt}, {"wait_ms", wait}});
  c.DeadLetter(DlqClass::kCooldown, 429,
               "ERP answered 429 (" + ra + ") to " + c.Call() + "; next attempt in " +
                   std::to_string((wait + 999) / 1000) + " s");
  return SendResult::kRetryLater;
}

}  // namespace

ErpCallTarget ResolveCallTarget(const ErpEnv& env, const OutboxRow& row) {
  if (env.plugins == nullptr || row.call_index < 0 || row.call_index > std::numeric_limits<uint32_t>::max()) {
    return {};
  }
  for (const ErpPluginCaps& p : *env.plugins) {
    if (ErpCallKey(row.event_key, p.plugin, static_cast<uint32_t>(row.call_index)) != row.idempotency_key) continue;
    const std::optional<std::string_view> endpoint = p.capabilities.Match(row.method, row.path);
    return ErpCallTarget{p.plugin, endpoint ? std::string(*endpoint) : std::string()};
  }
  return {};
}

SendGate CheckSendGate(const ErpEnv& env, const ErpCallTarget& target) {
  SendGate gate;
  gate.now_ms = env.clock->NowMillis();
  // A paused capability or an open breaker sends nothing and counts no attempt.
  if (env.pauses != nullptr && !target.plugin.empty() && !target.endpoint.empty() &&
      env.pauses->IsPaused(target.plugin, target.endpoint)) {
    gate.defer_to_ms = gate.now_ms + kPausedRecheckMs;
    gate.refusal = ErpCallOutcome::kPaused;
    return gate;
  }
  gate.guarded = env.endpoint_breaker != nullptr && !target.endpoint.empty();
  if (gate.guarded) {
    gate.permit = env.endpoint_breaker->Acquire(target.endpoint);
    if (!gate.permit.allowed) {
      gate.guarded = false;  // nothing to record against a refusal
      gate.defer_to_ms = gate.now_ms + gate.permit.retry_after_ms;
      gate.refusal = ErpCallOutcome::kBreakerOpen;
      return gate;
    }
  }
  gate.allowed = true;
  return gate;
}

void CountNotSent(const ErpEnv& env, const ErpCallTarget& target, const SendGate& gate) {
  if (env.metrics != nullptr) env.metrics->RecordErpCall(target.endpoint, gate.refusal);
}

SendResult SendOutboxRow(const ErpEnv& env, const OutboxRow& row, const ErpCallTarget& target, ErpReply* reply) {
  const SendGate gate = CheckSendGate(env, target);
  if (!gate.allowed) {
    // A failed Defer leaves the row due (or at its backoff): it is only looked at again sooner.
    (void)env.outbox->Defer(row.event_key, row.call_index, gate.defer_to_ms);
    CountNotSent(env, target, gate);
    return SendResult::kNotSent;
  }
  OutboxRow marked = row;
  marked.state = OutboxState::kSent;
  marked.attempts = row.attempts + 1;
  marked.next_attempt_ms =
      gate.now_ms + env.retry.JitteredMs(env.retry.BackoffMs(marked.attempts), DrawUniform01(env));
  if (!env.outbox->MarkSent(row.event_key, row.call_index, marked.next_attempt_ms).ok()) {
    // Not sent (store down, or the row was answered meanwhile). The permit needs no release: a
    // closed breaker counts nothing in flight, and a half-open probe slot frees itself after a
    // cool-down.
    return SendResult::kRetryLater;
  }
  return SendMarkedRow(env, marked, target, gate, reply);
}

SendResult SendMarkedRow(const ErpEnv& env, const OutboxRow& row, const ErpCallTarget& target, const SendGate& gate,
                         ErpReply* reply) {
  CLAWGUARD_CHECK(gate.allowed);
  const SendContext c{env, row, target, row.attempts};
  HttpHeaders headers;
  headers.Set(kIdempotencyKeyHeader, row.idempotency_key);
  if (!row.body.empty()) headers.Set("Content-Type", "application/json");
  Result<ErpReply> r = env.sender->Send(row.method, row.path, headers, row.body);
  const ErpTriage t = TriageAnswer(r);
  c.Metric(t.outcome);
  if (gate.guarded) {
    if (!t.breaker_failure) {
      env.endpoint_breaker->RecordSuccess(target.endpoint, gate.permit.probe);
    } else if (env.endpoint_breaker->RecordFailure(target.endpoint, gate.permit.probe)) {
      c.Emit({{"event", "erp_breaker_opened"}, {"alert", true}, {"detail", t.detail}});
    }
  }

  if (t.final) {
    // If storing the answer fails the row stays sent: a resend carries the same key and the ERP
    // replays its answer, so the effect still happens once. Not waited for (Outbox::NoteAnswer).
    env.outbox->NoteAnswer(row.event_key, row.call_index, r->status, r->body);
    switch (t.verdict) {
      case ErpVerdict::kSuccess: ResolveAfterSuccess(c, t.status); break;
      case ErpVerdict::kNotFound:
        c.DeadLetter(DlqClass::kNotFound, 404, "repair ticket: ERP answered 404 to " + c.Call() +
                                                   "; the plugin got the 404, nothing is retried");
        break;
      case ErpVerdict::kConflict:
        c.DeadLetter(DlqClass::kConflict, 409,
                     "reconcile before any retry: ERP answered 409 to " + c.Call() + "; the plugin got the 409");
        break;
      case ErpVerdict::kRejected:
      case ErpVerdict::kRateLimited:
      case ErpVerdict::kAuth:
      case ErpVerdict::kTransient: break;
    }
    if (reply != nullptr) *reply = std::move(r).value();
    return SendResult::kAnswered;
  }
  switch (t.verdict) {
    case ErpVerdict::kRateLimited: return OnRateLimited(c, t);
    case ErpVerdict::kAuth: return OnAuthFailure(c, t);
    case ErpVerdict::kTransient:
    case ErpVerdict::kSuccess:
    case ErpVerdict::kNotFound:
    case ErpVerdict::kConflict:
    case ErpVerdict::kRejected: break;
  }
  return OnTransient(c, t);
}

}  // namespace clawguard::host
