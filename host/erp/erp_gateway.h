// erp_gateway.h — ErpGateway: a plugin's `erp_call` for one delivery, and RetryWorker: the
// host's worker that resends pending outbox rows (ARCHITECTURE.md "Host request pipeline" steps
// 5–6). What they share is ErpEnv (host/erp/erp_env.h); the send itself, with the pause and breaker
// checks before it (CheckSendGate) and the dead-letter triage after it (SendMarkedRow), is in
// host/erp/erp_send.h.
//
// ErpGateway::Call, in order:
//   1. capability check on the EXACT method and path that would be sent (CapabilitySet::Match):
//      undeclared → CG_DENIED, audited, counted (erp_calls_total{outcome="denied"}), nothing
//      written, nothing sent, call index not advanced; the matching capability is the endpoint;
//   2. call index i (from 0 within the delivery); Idempotency-Key = ErpCallKey(event key, plugin,
//   i);
//   3. levels 1–2: CheckSendGate — is the capability paused, does the endpoint's breaker refuse?
//      Then the outbox row is appended BEFORE anything is sent (fenced by the claim's token):
//      gate allowed → appended sent and owned by this send (attempts 1, claimed by a new owner
//      until erp.timeout + kSendClaimMarginMs: the append records this send, no Claim, and no
//      worker or host sends the row meanwhile); gate refused → appended pending, due when the gate
//      may allow it; level 3 → appended held. kFenced → CG_FENCED; kMismatch → CG_MISMATCH, the row
//      is marked dead and the outcome records dead_lettered ("mismatch"); kExisting → answered:
//      its stored reply, nothing sent; pending/sent: CG_DEFERRED; dead: CG_UNAVAILABLE (nothing
//      sent and no pause or breaker refusal counted, whatever the gate said);
//   4. level 3: the row is an intent — parked (never due) and CG_HELD returned; nothing is sent
//      until RetryWorker::Confirm;
//   5. gate refused (paused capability, open endpoint breaker): nothing sent, the refusal counted
//      → CG_UNAVAILABLE; else SendMarkedRow sends the row once through the ErpSender with the
//      Idempotency-Key (the sender adds the ERP credentials; the plugin never sees them). A
//      final answer (2xx, 4xx but 401/403/408/425/429 and an in-progress 409) is stored
//      (NoteAnswer, by this send's owner) and its status returned, *reply pointing into
//      gateway-owned memory valid while the gateway lives; no answer, 5xx, 401, 403, 408, 425,
//      429 or a 409 saying the key is in progress → CG_UNAVAILABLE, the row is released to
//      RetryWorker (triage and DLQ entries: host/erp/erp_send.h).
// Before step 1, a body over limits::kMaxErpRequestBody is CG_DENIED (audited, nothing written).
// Call reads |method|, |path| and |body| once each; the caller passes host-owned copies (a plugin
// thread may rewrite its own buffers while the call runs: what is matched must be what is sent).
// Once CG_FENCED or CG_MISMATCH was returned, every later call returns the same code.
// An ErpGateway is used by one delivery; Call is NOT thread-safe (the dispatcher serialises calls
// per cg_call). Store failures are CG_UNAVAILABLE.
#ifndef CLAWGUARD_HOST_ERP_ERP_GATEWAY_H_
#define CLAWGUARD_HOST_ERP_ERP_GATEWAY_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>

#include "clawguard/error.h"
#include "clawguard/limits.h"
#include "clawguard/plugin.h"
#include "clawguard/store/dlq.h"
#include "clawguard/store/outbox.h"
#include "host/erp/capability.h"
#include "host/erp/erp_env.h"
#include "host/erp/erp_send.h"

namespace clawguard::host {

// kHeldIntentMs is the next_attempt_ms of a parked level-3 intent: never due until confirmed.
inline constexpr int64_t kHeldIntentMs = INT64_MAX;

// ErpDelivery names the claimed delivery a gateway works for.
struct ErpDelivery {
  std::string plugin;
  std::string event_key;  // 64 lowercase hex
  int64_t fencing_token = 0;
  int level = 2;  // 3: every call is held as an intent
};

// GatewayOutcome summarises a delivery's ERP calls for the dispatcher.
struct GatewayOutcome {
  int64_t calls = 0;   // call indices used
  int64_t denied = 0;  // CG_DENIED answers
  int64_t held = 0;    // intents written (level 3)
  bool fenced = false;
  bool dead_lettered = false;
  std::string dead_letter_reason;  // "mismatch"
  // pending_in_ms: the last erp_call left its row to the outbox — CG_DEFERRED (a row of an
  // earlier run still pending or in flight) or CG_UNAVAILABLE after the row was written (no
  // answer yet, or the gate refused the send) — and the row is next due this many ms after the
  // call returned (at least 1; 0: not pending). A plugin that stops on such a call did not fail:
  // the host answers 503 erp_pending.
  int64_t pending_in_ms = 0;
};

class ErpGateway {
 public:
  // Create checks that |env| is complete (outbox, sender, clock; a valid retry policy) and the
  // delivery well-formed (kInternal otherwise). |env| and |capabilities| must outlive the gateway.
  static Result<std::unique_ptr<ErpGateway>> Create(const ErpEnv& env,
                                                    const CapabilitySet& capabilities,
                                                    ErpDelivery delivery);

  // Call implements cg_host_api.erp_call (see the file comment). |reply| may be null.
  int Call(std::string_view method, std::string_view path, std::string_view body, cg_bytes* reply);

  const GatewayOutcome& outcome() const { return outcome_; }
  // ForgetReplies frees the answers kept for *reply: for a caller that copied the last one (the
  // sandbox sends it to the worker at once), so a delivery's calls do not pile up in the host.
  void ForgetReplies() { replies_.clear(); }

 private:
  ErpGateway(const ErpEnv& env, const CapabilitySet& capabilities, ErpDelivery delivery)
      : env_(env), caps_(capabilities), delivery_(std::move(delivery)) {}
  int Reply(int status, std::string body, cg_bytes* reply);
  int64_t PendingIn(int64_t due_ms) const;  // ms from now until |due_ms|, at least 1
  void Audit(std::string_view event, std::string_view method, std::string_view path, int64_t index,
             std::string_view detail) const;
  // AuditDenied writes an erp_call_denied line, at most kMaxDeniedAuditsPerDelivery per delivery
  // and then one erp_call_denied_dropped line: a plugin looping on a refused call cannot fill the
  // audit log (each refusal is still counted and answered CG_DENIED).
  void AuditDenied(std::string_view method, std::string_view path, std::string_view detail);

  const ErpEnv& env_;
  const CapabilitySet& caps_;
  const ErpDelivery delivery_;
  GatewayOutcome outcome_;
  int latched_ = 0;                  // CG_FENCED / CG_MISMATCH once returned
  std::deque<std::string> replies_;  // stable addresses for *reply
  int denied_audits_ = 0;            // erp_call_denied lines written for this delivery
  uint64_t body_bytes_ = 0;          // request bodies of this delivery's calls so far
};

inline constexpr int kMaxDeniedAuditsPerDelivery = 100;
// ERP calls one delivery may make; more are refused (each would be a stored outbox row).
inline constexpr int64_t kMaxErpCallsPerDelivery = 1000;
// The request bodies of one delivery's ERP calls together (each is stored in the outbox before
// it is sent, a level-3 one kept until intent_expiry): a call past it is refused. Without it one
// delivery could store 1,000 bodies of limits::kMaxErpRequestBody — a GiB of store for each event
// a malicious plugin is given.
inline constexpr uint64_t kMaxErpBodyBytesPerDelivery = 8 * limits::kMaxErpRequestBody;

// CallReplay is what RetryWorker::ReplayCall did with a call-level DLQ entry's outbox row.
enum class CallReplay {
  kQueued,   // revived, or already pending/sent: the worker sends it with its Idempotency-Key
  kHeld,     // a held level-3 intent: it needs `idem confirm`, not a replay
  kRevoked,  // no capability of the plugin version loaded now allows the call: not revived
};

// RetryWorker resends due pending/sent rows with their same Idempotency-Key, through
// SendOutboxRow (each row's plugin and endpoint found with ResolveCallTarget in the plugins
// loaded now: a row they no longer allow is revoked, never sent), each row claimed first:
// several workers (threads, hosts) may drain one outbox; each row goes out once at a time.
// Thread-safe.
class RetryWorker {
 public:
  // Create: kInternal without outbox, sender, clock or the loaded plugins (env.plugins; an empty
  // list is a host with no plugin: every row is revoked); kConfigInvalid for a bad retry policy
  // or a send_timeout ≤ 0.
  static Result<std::unique_ptr<RetryWorker>> Create(ErpEnv env);

  struct DrainStats {
    int64_t answered = 0, retry_later = 0, dead = 0;
    int64_t not_sent = 0;  // paused capability or open breaker: deferred, no attempt counted
    int64_t busy = 0;      // claimed by another send meanwhile (another worker or host): skipped
    int64_t revoked = 0;   // no loaded capability allows the call: dead + capability_revoked
  };
  // DrainPending sends up to |limit| rows due at |now_ms|, one after the other; with a |stop|
  // flag it returns early once the flag is set (checked before each row: a row not reached stays
  // due, a send under way ends as sends do — its claim protects its row meanwhile).
  // kStoreUnavailable if the outbox fails.
  Result<DrainStats> DrainPending(int64_t now_ms, int64_t limit = 100,
                                  const std::atomic<bool>* stop = nullptr);

  // ReplayCall is an operator's `dlq replay` of a call-level entry (|e|.call_index ≥ 0). The
  // row's call is matched again against the plugins loaded now: revoked → RecordRevokedCall,
  // nothing revived (kRevoked). Otherwise the row is revived (dead or answered → pending, due
  // now, attempts 0) and the next DrainPending sends it with its same Idempotency-Key (kQueued,
  // also when it was already pending/sent); a held intent is left held (kHeld). kUsage for an
  // event-level entry; kNotFound when the row does not exist; kStoreUnavailable on a store
  // failure.
  Result<CallReplay> ReplayCall(const DlqEntry& e);

  // Confirm flips the parked intents of |event_key| to due now (an operator confirmed them);
  // returns how many. kStoreUnavailable on a store failure.
  Result<int64_t> Confirm(const std::string& event_key);

 private:
  explicit RetryWorker(ErpEnv env) : env_(std::move(env)) {}
  const ErpEnv env_;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_ERP_ERP_GATEWAY_H_
