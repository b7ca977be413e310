// erp_triage.h — what an ERP answer (or its absence) means for the call that got it:
// ARCHITECTURE.md status table (ERP rows) and "Dead-letter triage". Pure functions; the actions
// taken on a verdict live in host/erp/erp_send.cpp.
//
//   answer                         verdict          final  breaker   DLQ class
//   2xx                            kSuccess         yes    success   (resolves
//   cooldown/transient/auth) 429                            kRateLimited     no     success
//   cooldown (row waits Retry-After) 401, 403                       kAuth            no     success
//   auth (capability paused) 404                            kNotFound        yes    success
//   not_found (repair ticket) 409 saying its key is in       kInProgress      no     success
//   transient_exhausted when spent
//     progress (SaysKeyInProgress)
//   409 to a row sent before       kInProgress      no     success   conflict when spent (stored
//   then)
//     (attempt ≥ 2), no such sign
//   409 to a row's first send,     kConflict        yes    success   conflict (reconcile)
//     no such sign
//   other 4xx but 408, 425         kRejected        yes    success   —
//   408, 425, 5xx, 1xx, 3xx        kTransient       no     failure   transient_exhausted when spent
//   no answer (timeout, connect,   kTransient       no     failure   transient_exhausted when spent
//     TLS, protocol)
// "breaker success" means the ERP answered: the endpoint is up, whatever it thought of the call.
//
// A 409 is "in progress" when it is about our own Idempotency-Key still being processed — the
// ERP (Stripe, and draft-ietf-httpapi-idempotency-key-header §2.6) answers 409 to a request
// whose key has a request still running, and replays that request's answer once it finished:
// the call is to be asked again, never stored as a conflict. Every send carries the row's key;
// a row's first send has no earlier request for its key, so an unmarked 409 there is a real
// conflict. A 409 to a resend may be either, so it is asked again up to erp.retry.attempts and
// taken as a conflict only when every ask got one.
#ifndef CLAWGUARD_HOST_ERP_ERP_TRIAGE_H_
#define CLAWGUARD_HOST_ERP_ERP_TRIAGE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "clawguard/error.h"
#include "host/erp/erp_client.h"
#include "host/observe/host_metrics.h"

namespace clawguard::host {

// kMaxRetryAfterSeconds bounds an ERP's Retry-After (a day); a larger value is cut to it.
inline constexpr int64_t kMaxRetryAfterSeconds = 86'400;

enum class ErpVerdict {
  kSuccess,
  kRateLimited,
  kAuth,
  kNotFound,
  kConflict,
  kInProgress,
  kRejected,
  kTransient
};

// ErpVerdictName returns "success", "rate_limited", "auth", "not_found", "conflict",
// "in_progress", "rejected" or "transient" (audit lines).
std::string_view ErpVerdictName(ErpVerdict v);

// ErpTriage is the reading of one send's result.
struct ErpTriage {
  ErpVerdict verdict = ErpVerdict::kTransient;
  bool final = false;            // stored as the row's answer (MarkAnswered)
  bool breaker_failure = false;  // counts against the endpoint's breaker
  ErpCallOutcome outcome = ErpCallOutcome::kServerError;  // erp_calls_total{outcome}
  int status = 0;                                         // the ERP's status, 0 when no answer came
  int64_t retry_after_ms = -1;        // 429 or 409 with a delta-seconds Retry-After; else −1
  bool key_in_progress_said = false;  // kInProgress: the 409 itself said so (SaysKeyInProgress)
  std::string detail;  // "status 503", "erp_timeout: …" (never a header value or body)
};

// TriageAnswer classifies the result of ErpSender::Send for the |attempt|-th send (1-based) of
// an outbox row (every send carries the row's Idempotency-Key).
ErpTriage TriageAnswer(const Result<ErpReply>& result, int64_t attempt);

// kMaxInProgressBody bounds the 409 body SaysKeyInProgress parses (a larger one is not read).
inline constexpr size_t kMaxInProgressBody = 64 * 1024;

// SaysKeyInProgress tells whether a 409 |reply| says that a request with the same
// Idempotency-Key is still being processed. Recognised signs: a Retry-After header (a conflict
// has nothing to wait for); a JSON body (≤ kMaxInProgressBody) that is Stripe's
// {"error":{"type":"idempotency_error",…}}, or whose top-level "type" or "title" string names
// an idempotency key ("idempoten", any case: the RFC 9457 problems of
// draft-ietf-httpapi-idempotency-key-header, Sinch's "…/idempotency-conflict").
bool SaysKeyInProgress(const ErpReply& reply);

// ParseRetryAfterSeconds reads a Retry-After value as delta-seconds (RFC 9110 §10.2.3: 1*DIGIT,
// surrounding spaces allowed), capped at kMaxRetryAfterSeconds. An HTTP-date, a negative or
// fractional number or anything else is nullopt (the caller then uses floor_429).
std::optional<int64_t> ParseRetryAfterSeconds(std::string_view value);

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_ERP_ERP_TRIAGE_H_
