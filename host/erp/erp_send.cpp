// erp_send.cpp — the gate before a send, one send, and the dead-letter triage of its answer.
#include "host/erp/erp_send.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>

#include "clawguard/json_dump.h"
#include "clawguard/store/dlq.h"
#include "clawguard/store/idempotency_store.h"
#include "host/erp/erp_triage.h"
#include "host/erp/idempotency_key.h"
#include "host/guard/breaker.h"
#include "host/guard/capability_pauses.h"
#include "host/observe/host_metrics.h"

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
    env.audit(DumpJson(j));
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
      Emit({{"event", "dlq_write_failed"},
            {"dlq_class", DlqClassName(klass)},
            {"detail", added.error().message()}});
    }
  }

  // ReleaseTo ends this send without a final answer, the row due at |next_attempt_ms|. A failed
  // release leaves the row claimed until its claim ends: it is only looked at again later.
  void ReleaseTo(int64_t next_attempt_ms) const {
    (void)env.outbox->Release(row.event_key, row.call_index, row.claimed_by, next_attempt_ms);
  }
  // ReleaseAfterBackoff: due again after this attempt's jittered backoff, counted from now.
  void ReleaseAfterBackoff() const {
    ReleaseTo(env.clock->NowMillis() +
              env.retry.JitteredMs(env.retry.BackoffMs(attempt), DrawUniform01(env)));
  }
  void MarkDead() const {
    (void)env.outbox->MarkDead(row.event_key, row.call_index, row.claimed_by);
  }
};

// ResolveAfterSuccess closes the event's entries that a successful retry makes moot.
void ResolveAfterSuccess(const SendContext& c, int status) {
  if (c.env.dlq == nullptr || c.attempt <= 1) return;  // no earlier attempt failed
  const std::string detail = "retry succeeded: " + c.Call() + " answered " +
                             std::to_string(status) + " at attempt " + std::to_string(c.attempt);
  for (DlqClass k : {DlqClass::kCooldown, DlqClass::kTransientExhausted, DlqClass::kAuth}) {
    (void)c.env.dlq->Resolve(c.row.event_key, k, detail);
  }
}

// OnAuthFailure: ERP 401/403. The credentials are the host's, not the plugin's: pausing the
// capability stops every call of it until an operator has fixed them and resumed it.
SendResult OnAuthFailure(const SendContext& c, const ErpTriage& t) {
  const std::string why = "ERP answered " + std::to_string(t.status);
  const bool can_pause =
      c.env.dlq != nullptr && !c.target.plugin.empty() && !c.target.endpoint.empty();
  bool paused = false;
  if (can_pause) {
    const Result<bool> p = c.env.dlq->Pause(c.target.plugin, c.target.endpoint, why, "host");
    paused = p.ok();
    if (paused && c.env.pauses != nullptr)
      c.env.pauses->MarkPaused(c.target.plugin, c.target.endpoint);
  }
  c.Emit({{"event", "erp_auth_failed"},
          {"alert", true},
          {"erp_status", t.status},
          {"capability_paused", paused},
          {"attempt", c.attempt}});
  std::string detail = "capability paused: " + why + " to " + c.Call();
  if (paused) {
    detail += "; fix the ERP credentials, then `clawguard capability resume " + c.target.plugin +
              " '" + c.target.endpoint + "'`";
    c.DeadLetter(DlqClass::kAuth, t.status, detail);
    c.ReleaseTo(c.env.clock->NowMillis() + kPausedRecheckMs);
    return SendResult::kRetryLater;
  }
  // Nothing paused (no DLQ, the row's plugin or endpoint is unknown, or the store refused the
  // pause): retry on the backoff like a transient failure, dead when the attempts are spent.
  detail = why + " to " + c.Call() +
           "; capability not paused (no DLQ, unknown plugin or endpoint, or store error)";
  c.DeadLetter(DlqClass::kAuth, t.status, detail);
  if (c.attempt >= c.env.retry.attempts) {
    c.MarkDead();
    return SendResult::kDead;
  }
  c.ReleaseAfterBackoff();
  return SendResult::kRetryLater;
}

SendResult OnTransient(const SendContext& c, const ErpTriage& t) {
  const bool spent = c.attempt >= c.env.retry.attempts;
  c.Emit({{"event", spent ? "erp_call_dead" : "erp_call_retry"},
          {"attempt", c.attempt},
          {"detail", t.detail}});
  if (!spent && t.outcome == ErpCallOutcome::kTimeout) {
    // The request may still be running at the ERP, and an ERP that deduplicates a key only once
    // its request finished would act on a resend too: wait at least erp.timeout more (the resend
    // starts ≥ 2 × erp.timeout after this send did). An ERP slower than that is not told apart
    // from a lost request — erp.timeout must exceed its worst processing time (ARCHITECTURE.md).
    const int64_t backoff =
        c.env.retry.JitteredMs(c.env.retry.BackoffMs(c.attempt), DrawUniform01(c.env));
    c.ReleaseTo(c.env.clock->NowMillis() + std::max<int64_t>(backoff, c.env.send_timeout.count()));
    return SendResult::kRetryLater;
  }
  if (!spent) {
    c.ReleaseAfterBackoff();
    return SendResult::kRetryLater;
  }
  c.MarkDead();
  c.DeadLetter(DlqClass::kTransientExhausted, t.status,
               "retries spent: " + c.Call() + " got no final answer in " +
                   std::to_string(c.attempt) + " attempts; last: " + t.detail);
  return SendResult::kDead;
}

SendResult OnRateLimited(const SendContext& c, const ErpTriage& t) {
  const int64_t wait = c.env.retry.CooldownMs(t.retry_after_ms, DrawUniform01(c.env));
  c.ReleaseTo(c.env.clock->NowMillis() + wait);
  const std::string ra = t.retry_after_ms >= 0
                             ? "Retry-After " + std::to_string(t.retry_after_ms / 1000) + " s"
                             : "no usable Retry-After";
  c.Emit({{"event", "erp_call_cooldown"}, {"attempt", c.attempt}, {"wait_ms", wait}});
  c.DeadLetter(DlqClass::kCooldown, 429,
               "ERP answered 429 (" + ra + ") to " + c.Call() + "; next attempt in " +
                   std::to_string((wait + 999) / 1000) + " s");
  return SendResult::kRetryLater;
}

// DeadLetterConflict: the ERP's answer 409 is final (the plugin gets it); reconcile before any
// retry.
void DeadLetterConflict(const SendContext& c) {
  c.DeadLetter(
      DlqClass::kConflict, 409,
      "reconcile before any retry: ERP answered 409 to " + c.Call() + "; the plugin got the 409");
}

// OnInProgress: a 409 that is about this row's own Idempotency-Key still being processed (or may
// be: a resend). Asked again after max(Retry-After, the backoff); never stored as a conflict
// while attempts are left. |r| is the answer (for the spent, unmarked case).
SendResult OnInProgress(const SendContext& c, const ErpTriage& t, Result<ErpReply>& r,
                        ErpReply* reply) {
  const bool spent = c.attempt >= c.env.retry.attempts;
  if (!spent) {
    const int64_t backoff =
        c.env.retry.JitteredMs(c.env.retry.BackoffMs(c.attempt), DrawUniform01(c.env));
    const int64_t wait = std::max(backoff, t.retry_after_ms);
    c.ReleaseTo(c.env.clock->NowMillis() + wait);
    c.Emit({{"event", "erp_call_in_progress"},
            {"attempt", c.attempt},
            {"wait_ms", wait},
            {"said_by_erp", t.key_in_progress_said}});
    return SendResult::kRetryLater;
  }
  if (t.key_in_progress_said) {
    // The ERP said every time that this key is still running: nobody knows the outcome yet.
    c.Emit({{"event", "erp_call_dead"},
            {"attempt", c.attempt},
            {"detail", "409: the key is still in progress"}});
    c.MarkDead();
    c.DeadLetter(DlqClass::kTransientExhausted, 409,
                 "retries spent: " + c.Call() +
                     " was answered 409 (this Idempotency-Key still in progress) in " +
                     std::to_string(c.attempt) +
                     " attempts; replay it once the ERP has finished the call");
    return SendResult::kDead;
  }
  // Every ask since the first send got an unmarked 409: a real conflict, stored as the answer.
  c.env.outbox->NoteAnswer(c.row.event_key, c.row.call_index, c.row.claimed_by, r->status, r->body);
  DeadLetterConflict(c);
  if (reply != nullptr) *reply = std::move(r).value();
  return SendResult::kAnswered;
}

// RevokeRow ends a row whose call no loaded capability allows (SendOutboxRow).
SendResult RevokeRow(const ErpEnv& env, const OutboxRow& row, const ErpCallTarget& target,
                     int64_t now_ms) {
  // Claimed first, as for a send: a send another worker or host still has in flight keeps the
  // row (kBusy) until its claim ends, and of several revokers one writes. Dead by this claim, the
  // row is never due again.
  const int64_t now = std::max(now_ms, env.clock->NowMillis());
  const std::string owner = NewSendOwner();
  Result<std::optional<OutboxRow>> claimed =
      env.outbox->Claim(row.event_key, row.call_index, now, owner, now + SendClaimMs(env));
  if (!claimed.ok()) return SendResult::kRetryLater;  // store down: looked at again later
  if (!claimed->has_value()) return SendResult::kBusy;
  // A failed MarkDead leaves the row claimed until its claim ends; then it is revoked again.
  if (!env.outbox->MarkDead(row.event_key, row.call_index, owner).ok())
    return SendResult::kRetryLater;
  RecordRevokedCall(env, **claimed, target, "resend");
  return SendResult::kRevoked;
}

}  // namespace

ErpCallTarget ResolveCallTarget(const ErpEnv& env, const OutboxRow& row) {
  if (env.plugins == nullptr || row.call_index < 0 ||
      row.call_index > std::numeric_limits<uint32_t>::max()) {
    return {};
  }
  for (const ErpPluginCaps& p : *env.plugins) {
    if (ErpCallKey(row.event_key, p.plugin, static_cast<uint32_t>(row.call_index)) !=
        row.idempotency_key)
      continue;
    // The exact stored method and path, as the gateway matched them when the call was made.
    const std::optional<std::string_view> endpoint = p.capabilities.Match(row.method, row.path);
    return ErpCallTarget{p.plugin, endpoint ? std::string(*endpoint) : std::string(), p.version};
  }
  return {};
}

void RecordRevokedCall(const ErpEnv& env, const OutboxRow& row, const ErpCallTarget& target,
                       std::string_view via) {
  const SendContext c{env, row, target, row.attempts};
  std::string plugin = target.plugin;
  if (plugin.empty() && env.records != nullptr) {
    // The event's record names the plugin that ran it (gone after the retention: then unnamed).
    Result<std::optional<IdempotencyRecord>> record = env.records->Get(row.event_key);
    if (record.ok() && record->has_value()) plugin = (*record)->plugin;
  }
  if (plugin.empty()) plugin = "(not loaded)";
  std::string detail = "capability revoked: ";
  if (!target.plugin.empty()) {
    detail += "plugin " + target.plugin + (target.version.empty() ? "" : " " + target.version) +
              " (loaded now) declares no capability that allows " + c.Call();
  } else {
    detail += "plugin " + plugin + " is not loaded (removed or renamed): no loaded plugin made " +
              c.Call();
  }
  detail += "; the call was never sent. Replay it only after loading a version that declares it.";
  c.Metric(ErpCallOutcome::kDenied);  // no endpoint any more: counted under _unknown
  c.Emit({{"event", "erp_call_revoked"}, {"via", via}, {"row_plugin", plugin}, {"detail", detail}});
  if (env.dlq == nullptr) return;
  DlqNewEntry e;
  e.klass = DlqClass::kCapabilityRevoked;
  e.event_key = row.event_key;
  e.plugin = plugin;
  e.route = "";  // not known to the outbox
  e.call_index = row.call_index;
  e.endpoint = "";  // no capability of the loaded version allows the call
  e.detail = detail;
  e.next_attempt_ms = 0;  // for people: replaying it is an operator's decision
  const Result<DlqAdded> added = env.dlq->Add(e);
  if (!added.ok()) {
    c.Emit({{"event", "dlq_write_failed"},
            {"dlq_class", DlqClassName(DlqClass::kCapabilityRevoked)},
            {"detail", added.error().message()}});
  }
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

SendResult SendOutboxRow(const ErpEnv& env, const OutboxRow& row, const ErpCallTarget& target,
                         int64_t now_ms, ErpReply* reply) {
  if (CallRevoked(target)) return RevokeRow(env, row, target, now_ms);
  const SendGate gate = CheckSendGate(env, target);
  // The worker listed the row as due at |now_ms|; the claim is checked against the later of that
  // and the clock now, and lasts from then.
  const int64_t now = std::max(now_ms, gate.now_ms);
  if (!gate.allowed) {
    // Only a row no live send owns is moved; a failed Defer leaves the row due (or at its
    // backoff): it is only looked at again sooner.
    (void)env.outbox->Defer(row.event_key, row.call_index, now, gate.defer_to_ms);
    CountNotSent(env, target, gate);
    return SendResult::kNotSent;
  }
  // The claim decides who sends: of every worker and host that listed the row, one.
  const std::string owner = NewSendOwner();
  Result<std::optional<OutboxRow>> claimed =
      env.outbox->Claim(row.event_key, row.call_index, now, owner, now + SendClaimMs(env));
  // Not sent either way. The permit needs no release: a closed breaker counts nothing in flight,
  // and a half-open probe slot frees itself after a cool-down.
  if (!claimed.ok()) return SendResult::kRetryLater;  // store down
  if (!claimed->has_value()) return SendResult::kBusy;
  return SendMarkedRow(env, **claimed, target, gate, reply);
}

SendResult SendMarkedRow(const ErpEnv& env, const OutboxRow& row, const ErpCallTarget& target,
                         const SendGate& gate, ErpReply* reply) {
  CLAWGUARD_CHECK(gate.allowed);
  CLAWGUARD_CHECK(row.state == OutboxState::kSent && !row.claimed_by.empty());
  const SendContext c{env, row, target, row.attempts};
  HttpHeaders headers;
  headers.Set(kIdempotencyKeyHeader, row.idempotency_key);
  if (!row.body.empty()) headers.Set("Content-Type", "application/json");
  Result<ErpReply> r = env.sender->Send(row.method, row.path, headers, row.body);
  const ErpTriage t = TriageAnswer(r, row.attempts);
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
    env.outbox->NoteAnswer(row.event_key, row.call_index, row.claimed_by, r->status, r->body);
    switch (t.verdict) {
      case ErpVerdict::kSuccess: ResolveAfterSuccess(c, t.status); break;
      case ErpVerdict::kNotFound:
        c.DeadLetter(DlqClass::kNotFound, 404,
                     "repair ticket: ERP answered 404 to " + c.Call() +
                         "; the plugin got the 404, nothing is retried");
        break;
      case ErpVerdict::kConflict: DeadLetterConflict(c); break;
      case ErpVerdict::kInProgress:
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
    case ErpVerdict::kInProgress: return OnInProgress(c, t, r, reply);
    case ErpVerdict::kTransient:
    case ErpVerdict::kSuccess:
    case ErpVerdict::kNotFound:
    case ErpVerdict::kConflict:
    case ErpVerdict::kRejected: break;
  }
  return OnTransient(c, t);
}

}  // namespace clawguard::host
