// erp_send.h — the one send path of an outbox row, shared by the gateway's first send and the
// retry worker's resends, with the dead-letter triage of ARCHITECTURE.md ("Dead-letter triage";
// the verdicts are in host/erp/erp_triage.h). It has two parts: CheckSendGate (the checks before a
// send) and SendMarkedRow (one send of a row this send owns, and the triage of its answer).
// SendOutboxRow (the retry worker) runs gate → Claim → SendMarkedRow; the gateway runs the gate
// before it appends the row and appends it already sent and claimed (store/outbox.h), so a first
// send costs no Claim write.
//
// One send at a time per row: a send owns its row from its Claim (or sent Append) under an owner
// of its own (NewSendOwner) until SendClaimMs later; every write after the answer names that
// owner, so a row another send took over (this one's claim ran out) is left to that send.
//
// FIRST, on every resend (SendOutboxRow: the worker's resends, confirmed level-3 intents, revived
// DLQ calls — and so whatever a reconciler re-drive or an event replay leaves to the worker), the
// row's exact method and path are matched again against the capabilities of the plugin version
// loaded NOW (ResolveCallTarget; the gateway's first send was matched by the version that made
// it). No loaded plugin made the call (its plugin was removed), or the loaded version declares no
// capability that allows it (replaced by a version without it) → revoked: the row is claimed
// (so no other send holds it), marked dead by that claim, dead-lettered capability_revoked,
// audited (erp_call_revoked) and counted as erp_calls_total{outcome="denied"}; nothing is sent,
// ever, unless an operator replays it after loading a version that declares the call.
//
// BEFORE sending (nothing is sent, no attempt is counted, the row is Defer'd — or, on the
// gateway's first send, appended pending with that next attempt):
//   - the capability (plugin, endpoint) is paused (the host's mirror of the pauses in force,
//     refreshed by the background loop) → due again in kPausedRecheckMs: a paused call waits,
//     it is not dead-lettered — after `capability resume` it is sent once;
//     erp_calls_total{outcome="paused"};
//   - the endpoint's breaker refuses → due again when it may let calls through;
//     erp_calls_total{outcome="breaker_open"}.
// Then the row is claimed (attempts + 1; a row another send owns, or no longer due, is not sent:
// kBusy) and sent once with its Idempotency-Key. AFTER the answer (each write by the send's
// owner):
//   - 2xx: answered; if earlier attempts failed, the event's cooldown, transient_exhausted and auth
//     DLQ entries are resolved ("retry succeeded");
//   - 404 / 409: answered (the plugin gets the reply) + DLQ not_found ("repair ticket: …") /
//     conflict ("reconcile before any retry: …"); other final 4xx: answered;
//   - 409 "in progress" (erp_triage.h: the ERP is still processing this Idempotency-Key):
//     released, due again after max(Retry-After, the backoff) — asked again, never stored as a
//     conflict; when the attempts are spent: a 409 that said so → dead + DLQ transient_exhausted,
//     an unmarked one → answered 409 + DLQ conflict (every ask got it: a real conflict);
//   - 429: released, due again after max(Retry-After, floor_429) (jittered upwards) + DLQ cooldown;
//   - 401/403: the capability is paused in the store and locally, an alert audit line
//     {"event":"erp_auth_failed","alert":true,…} + DLQ auth; the row waits for the resume;
//   - 5xx, 408, 425, no answer: the breaker counts a failure (an opening is audited as an alert);
//     the row is released to wait its backoff (base·2^(n−1), jittered, from the failure); when the
//     attempts are spent it is dead + DLQ transient_exhausted.
// Every send, pause and breaker refusal is counted in erp_calls_total{endpoint,outcome}. DLQ
// entries are call-level (call_index, endpoint, erp_status; route ""), never carry a body, and
// fold on repeats (one unresolved entry per event and class). DLQ and audit failures never change
// the row's outcome (the outbox is the queue; the DLQ is for people).
#ifndef CLAWGUARD_HOST_ERP_ERP_SEND_H_
#define CLAWGUARD_HOST_ERP_ERP_SEND_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "clawguard/store/outbox.h"
#include "host/erp/erp_env.h"
#include "host/guard/breaker.h"
#include "host/observe/host_metrics.h"

namespace clawguard::host {

// kPausedRecheckMs: a call of a paused capability is looked at again after this long.
inline constexpr int64_t kPausedRecheckMs = 1000;

// ErpCallTarget is the plugin and ERP endpoint (manifest capability string) of a row in the
// plugin version loaded now. plugin is "" when no loaded plugin made the call; endpoint is ""
// when the loaded version has no capability that allows the row's method and path. Either
// empty: the call is revoked (CallRevoked) and never resent.
struct ErpCallTarget {
  std::string plugin;
  std::string endpoint;
  std::string version;  // the loaded version of plugin ("" when unknown)
};

// ResolveCallTarget finds |row|'s plugin among |env|.plugins by its Idempotency-Key, and its
// endpoint through that plugin's capabilities (see ErpPluginCaps). No plugin list: nothing found.
ErpCallTarget ResolveCallTarget(const ErpEnv& env, const OutboxRow& row);

// CallRevoked: |target| names no loaded plugin or no capability of it (see ErpCallTarget).
inline bool CallRevoked(const ErpCallTarget& target) {
  return target.plugin.empty() || target.endpoint.empty();
}

// RecordRevokedCall writes (or folds into) the event's call-level capability_revoked DLQ entry
// for |row| (its plugin: |target|'s, else the event's idempotency record's through |env|.records,
// else "(not loaded)"), audits erp_call_revoked with |via| ("resend", "dlq_replay") and counts
// erp_calls_total{outcome="denied"}. It changes no outbox row. DLQ and audit failures are audited
// or dropped, never returned (the DLQ is for people).
void RecordRevokedCall(const ErpEnv& env, const OutboxRow& row, const ErpCallTarget& target,
                       std::string_view via);

// SendResult is what one SendOutboxRow (or SendMarkedRow) led to.
enum class SendResult {
  kAnswered,    // a final answer is stored; |reply| has it
  kRetryLater,  // sent, not final (or the send could not be recorded): the row waits
  kDead,        // retries spent: the row is dead and dead-lettered
  kNotSent,     // paused capability or open breaker: deferred, no attempt counted
  kBusy,        // not claimed: another send owns the row, or it is no longer due: nothing sent
  kRevoked,     // no loaded capability allows the call: claimed, dead, DLQ capability_revoked; not
                // sent
};

// SendGate is what CheckSendGate decided about one send of a call.
struct SendGate {
  bool allowed = false;
  int64_t now_ms = 0;  // the clock when checked (the base of the next attempt either way)
  // allowed: whether the endpoint's breaker guards the send, and its permit (pass the gate to
  // SendMarkedRow, which records the outcome against it).
  bool guarded = false;
  EndpointBreaker::Permit permit;
  // refused: when the call may be looked at again, and why (kPaused or kBreakerOpen).
  int64_t defer_to_ms = 0;
  ErpCallOutcome refusal = ErpCallOutcome::kPaused;
};

// CheckSendGate runs the checks BEFORE a send to |target| (above): a paused capability → refused,
// defer_to_ms = now + kPausedRecheckMs; the endpoint's breaker refuses → refused, defer_to_ms =
// when it may let calls through. Otherwise allowed, holding the breaker's permit when |target|
// has an endpoint and |env| a breaker. It writes nothing and counts nothing: the caller defers
// the row (or appends it due at defer_to_ms) and counts the refusal with CountNotSent.
// WARNING: an allowed gate that is not followed by a send needs no release: a closed breaker
// counts nothing in flight, and a half-open probe slot frees itself after a cool-down.
SendGate CheckSendGate(const ErpEnv& env, const ErpCallTarget& target);

// CountNotSent counts a refused |gate| in erp_calls_total{endpoint, outcome="paused" or
// "breaker_open"}.
void CountNotSent(const ErpEnv& env, const ErpCallTarget& target, const SendGate& gate);

// SendMarkedRow sends |row| once with its Idempotency-Key and runs the triage of the answer
// (everything AFTER above: metrics, breaker record, NoteAnswer, Release, MarkDead, DLQ, audit).
// |row| must be owned by this send — state sent, attempts = this send's number (1-based),
// claimed_by = this send's owner (CHECKed), by Claim or by an Append of a kSent row — and |gate|
// is the allowed gate of this send (CHECKed). Never returns kNotSent, kBusy or kRevoked. |reply|
// may be null.
SendResult SendMarkedRow(const ErpEnv& env, const OutboxRow& row, const ErpCallTarget& target,
                         const SendGate& gate, ErpReply* reply);

// SendOutboxRow runs the whole send path above for |row| (pending or sent, as listed by
// DuePending at |now_ms|): CallRevoked(|target|) → claimed, MarkDead by that claim and
// RecordRevokedCall, kRevoked (a row not claimed: kBusy; a store failure: kRetryLater — nothing
// sent either way); then CheckSendGate (refused → Defer, CountNotSent, kNotSent), then Claim
// under a new owner, due at and lasting SendClaimMs from the later of |now_ms| and the clock
// (attempts + 1; a store failure → kRetryLater, a row not claimed → kBusy, nothing sent either
// way), then SendMarkedRow. |reply| may be null. Thread-safe as far as |env|'s parts are (they
// all are).
SendResult SendOutboxRow(const ErpEnv& env, const OutboxRow& row, const ErpCallTarget& target,
                         int64_t now_ms, ErpReply* reply);

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_ERP_ERP_SEND_H_
