// pipeline_guards.h — the optional components the webhook pipeline consults or feeds around its
// idempotency gate (ARCHITECTURE.md "Host request pipeline" step 6 and the status table): the
// per-plugin rate limit, the per-key circuit breaker, the dead-letter queue, the metrics, the
// retention advisor and the audit sink. Every member is optional: a null one turns its feature
// off. The pipeline does not own them; each must outlive the pipeline and be thread-safe (they
// are).
//
// The helpers here are the pipeline's side effects that never change an HTTP answer: DLQ writes
// (a failed write is audited as `dlq_write_failed`, never returned), breaker bookkeeping with its
// one DLQ entry per opening, audit lines and retention observations.
#ifndef CLAWGUARD_HOST_INTAKE_PIPELINE_GUARDS_H_
#define CLAWGUARD_HOST_INTAKE_PIPELINE_GUARDS_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "clawguard/clock.h"
#include "clawguard/store/dlq.h"
#include "host/guard/breaker.h"
#include "host/guard/rate_limiter.h"
#include "host/guard/retention_advisor.h"
#include "host/http/http_types.h"

namespace clawguard::host {

class HostMetrics;  // host/observe/metrics.h

struct PipelineGuards {
  RateLimiter* limiter = nullptr;        // per-plugin token bucket → 429 rate_limited
  KeyBreaker* key_breaker = nullptr;     // per-key breaker → 503 breaker_open, DLQ class breaker
  Dlq* dlq = nullptr;                    // breaker, mismatch and manual_review entries
  const HostMetrics* metrics = nullptr;  // webhook_requests_total etc.
  RetentionAdvisor* advisor = nullptr;   // gaps between a key's first and later deliveries
  const Clock* clock = nullptr;          // for the advisor's gaps (no clock: no observations)
  // audit receives one JSON object per line (breaker_opened, dlq_write_failed).
  std::function<void(const std::string& json_line)> audit;
};

// kMaxInProgressRetryAfterMs caps the Retry-After of a 409 in_progress: the other delivery
// usually finishes in well under a lease, and a whole lease (30 s) made platforms wait far longer
// than the plugin needed.
inline constexpr int64_t kMaxInProgressRetryAfterMs = 2000;

// InProgressRetryAfterSeconds is min(|lease_left_ms|, 2 s) in whole seconds rounded up, ≥ 1.
int64_t InProgressRetryAfterSeconds(int64_t lease_left_ms);

// GuardEvent names one event for DLQ entries and audit lines.
struct GuardEvent {
  std::string_view plugin;
  std::string_view route;
  std::string_view event_key;
};

// StoredRequest is the part of an authenticated delivery a replay needs: webhook-id, Content-Type
// (cut to kMaxDlqContentType) and body.
DlqRequest StoredRequest(std::string_view webhook_id, const HttpRequest& request);

// AuditEvent writes {"event":|event|, fields…} to the audit sink, if any.
void AuditEvent(const PipelineGuards& g, std::string_view event,
                std::initializer_list<std::pair<std::string_view, std::string_view>> fields);

// AddDeadLetter writes one event-level DLQ entry of |klass| (folded by the store into an
// unresolved one of the same key and class). Without a DLQ it does nothing; a failed write is
// audited as dlq_write_failed and otherwise ignored (it never changes the HTTP answer).
void AddDeadLetter(const PipelineGuards& g, DlqClass klass, const GuardEvent& ev,
                   std::string detail, std::optional<DlqRequest> request);

// RecordKeyFailure counts a failure of |ev|'s key in the key breaker. When that opens the breaker
// it writes ONE DLQ entry of class breaker with |request| stored and audits breaker_opened, both
// with |why| as detail.
void RecordKeyFailure(const PipelineGuards& g, const GuardEvent& ev, const HttpRequest& request,
                      std::string_view webhook_id, std::string_view why);

// RecordKeySuccess forgets the key's failures (an outcome was stored).
void RecordKeySuccess(const PipelineGuards& g, std::string_view event_key);

// ObserveRedelivery feeds the retention advisor with now − |first_delivery_ms| (needs an advisor
// and a clock; a record time of 0 — unknown — is skipped).
void ObserveRedelivery(const PipelineGuards& g, int64_t first_delivery_ms);

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_INTAKE_PIPELINE_GUARDS_H_
