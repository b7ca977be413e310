// erp_triage.h — what an ERP answer (or its absence) means for the call that got it: ARCHITECTURE.md
// status table (ERP rows) and "Dead-letter triage". Pure functions; the actions taken on a verdict
// live in host/erp_send.cpp.
//
//   answer                         verdict          final  breaker   DLQ class
//   2xx                            kSuccess         yes    success   (resolves cooldown/transient/auth)
//   429                            kRateLimited     no     success   cooldown (row waits Retry-After)
//   401, 403                       kAuth            no     success   auth (capability paused)
//   404                            kNotFound        yes    success   not_found (repair ticket)
//   409                            kConflict        yes    success   conflict (reconcile)
//   other 4xx but 408, 425         kRejected        yes    success   —
//   408, 425, 5xx, 1xx, 3xx        kTransient       no     failure   transient_exhausted when spent
//   no answer (timeout, connect,   kTransient       no     failure   transient_exhausted when spent
//     TLS, protocol)
// "breaker success" means the ERP answered: the endpoint is up, whatever it thought of the call.
#ifndef CLAWGUARD_HOST_ERP_TRIAGE_H_
#define CLAWGUARD_HOST_ERP_TRIAGE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "clawguard/error.h"
#include "host/erp_client.h"
#include "host/host_metrics.h"

namespace clawguard::host {

// kMaxRetryAfterSeconds bounds an ERP's Retry-After (a day); a larger value is cut to it.
inline constexpr int64_t kMaxRetryAfterSeconds = 86'400;

enum class ErpVerdict { kSuccess, kRateLimited, kAuth, kNotFound, kConflict, kRejected, kTransient };

// ErpVerdictName returns "success", "rate_limited", "auth", "not_found", "conflict", "rejected"
// or "transient" (audit lines).
std::string_view ErpVerdictName(ErpVerdict v);

// ErpTriage is the reading of one send's result.
struct ErpTriage {
  ErpVerdict verdict = ErpVerdict::kTransient;
  bool final = false;               // stored as the row's answer (MarkAnswered)
  bool breaker_failure = false;     // counts against the endpoint's breaker
  ErpCallOutcome outcome = ErpCallOutcome::kServerError;  // erp_calls_total{outcome}
  int status = 0;                   // the ERP's status, 0 when no answer came
  int64_t retry_after_ms = -1;      // 429 with a delta-seconds Retry-After; else −1
  std::string detail;               // "status 503", "erp_timeout: …" (never a header value or body)
};

// TriageAnswer classifies the result of ErpSender::Send.
ErpTriage TriageAnswer(const Result<ErpReply>& result);

// ParseRetryAfterSeconds reads a Retry-After value as delta-seconds (RFC 9110 §10.2.3: 1*DIGIT,
// surrounding spaces allowed), capped at kMaxRetryAfterSeconds. An HTTP-date, a negative or
// fractional number or anything else is nullopt (the caller then uses floor_429).
std::optional<int64_t> ParseRetryAfterSeconds(std::string_view value);

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_ERP_TRIAGE_H_
