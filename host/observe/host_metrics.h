// host_metrics.h — HostMetrics: the typed facade over a MetricsRegistry (host/observe/metrics.h)
// that declares every metric of ARCHITECTURE.md "Host request pipeline" and updates them by name.
//
// Cardinality: label values come only from the names the host knows (configured plugin/route
// pairs, plugins, ERP capability strings — MetricsNames) and from fixed enums; a value a request
// makes up is never a new series — HostMetrics maps it to kUnknownLabel, so a hostile request
// cannot grow the output.
//
// Metric names carry the `clawguard_` namespace prefix (Prometheus naming practice, so they cannot
// collide with another exporter's `webhook_requests_total`): `clawguard_webhook_requests_total`…
//
// Thread-safety: as the registry — every update is one hash lookup plus one atomic operation.
#ifndef CLAWGUARD_HOST_OBSERVE_HOST_METRICS_H_
#define CLAWGUARD_HOST_OBSERVE_HOST_METRICS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clawguard/error.h"
#include "host/http/http_types.h"
#include "host/observe/metrics.h"

namespace clawguard::host {

// MetricsNames is the closed vocabulary of the name labels (taken from host.yaml and the loaded
// plugins' manifests when the host starts).
struct MetricsNames {
  std::vector<std::pair<std::string, std::string>> routes;  // (plugin, route) of webhooks.routes
  std::vector<std::string> plugins;                         // plugin names (certificate expiry)
  std::vector<std::string>
      endpoints;  // ERP endpoints: capability strings, "POST /orders/{id}/fulfil"
};

// WebhookOutcome labels what the webhook pipeline did with a request
// (webhook_requests_total{outcome}).
enum class WebhookOutcome {
  kTooLarge,
  kNotFound,
  kAuthFailed,
  kKeyMissing,
  kFingerprintMismatch,
  kReplayed,
  kInProgress,
  kStoreUnavailable,
  kProcessed,
  kNotStored,
  kPluginFailed,
  kPluginTimeout,
  kErpPending,
  kFenced,
  kDeadLettered,
  kRateLimited,        // 429 rate_limited
  kBreakerOpen,        // 503 breaker_open
  kExpiredKeySeen,     // 409 expired_key_seen (tombstone hit; manual review)
  kPluginUnavailable,  // 503 plugin_unavailable (the plugin's worker stopped, or it failed)
  // Keep the enum contiguous: HostMetrics declares its outcome series by walking it.
};
std::string_view WebhookOutcomeName(WebhookOutcome o);

// ErpCallOutcome labels erp_calls_total{outcome}.
enum class ErpCallOutcome {
  kSuccess,         // 2xx
  kClientError,     // 4xx other than 429
  kRateLimited,     // 429
  kServerError,     // 5xx (and any other status)
  kTimeout,         // no answer before the deadline
  kTransportError,  // connect, TLS or protocol failure
  kDenied,          // refused by the capability check (never sent)
  kHeld,            // held as a level-3 intent (not sent yet)
  kBreakerOpen,     // not sent: the endpoint's breaker is open
  kPaused,          // not sent: the capability is paused (ERP 401/403 or an operator)
};
std::string_view ErpCallOutcomeName(ErpCallOutcome o);
// ErpCallOutcomeForStatus maps an ERP answer's HTTP status to its outcome.
ErpCallOutcome ErpCallOutcomeForStatus(int status);

// kDlqClasses are the DLQ classes of ARCHITECTURE.md's status table.
inline constexpr std::string_view kDlqClasses[] = {
    "breaker",   "unconfirmed", "cooldown", "transient_exhausted", "auth",
    "not_found", "conflict",    "mismatch", "manual_review",       "capability_revoked"};

// HostMetrics declares the host's metrics over |names| and updates them by name. Updates with an
// unknown plugin, route or endpoint go to the series whose name labels are kUnknownLabel.
// Thread-safe; each update is one hash lookup plus one atomic operation.
class HostMetrics {
 public:
  // Create: kConfigInvalid when a name is empty, too long, has a control character, or a
  // (plugin, route) pair / plugin / endpoint is listed twice.
  static Result<std::unique_ptr<HostMetrics>> Create(const MetricsNames& names);

  // webhook_requests_total{plugin,route,outcome}; |outcome| is a WebhookOutcomeName value.
  void RecordWebhook(std::string_view plugin, std::string_view route,
                     std::string_view outcome) const;
  // The series RecordWebhook, RecordDuplicate and ObserveProcessingSeconds update for these
  // labels (with the same fallbacks), for callers that resolve them once and then update only
  // the atomics.
  Counter WebhookCounter(std::string_view plugin, std::string_view route,
                         std::string_view outcome) const;
  Counter DuplicateCounter(std::string_view plugin, std::string_view route) const;
  Histogram ProcessingHistogram(std::string_view plugin, std::string_view route) const;
  // webhook_duplicate_requests_total{plugin,route}: a delivery answered from its stored record
  // or refused because another delivery of the same key holds the lease.
  void RecordDuplicate(std::string_view plugin, std::string_view route) const;
  // webhook_processing_duration_seconds{plugin,route}.
  void ObserveProcessingSeconds(std::string_view plugin, std::string_view route,
                                double seconds) const;
  // idempotency_cache_hit_ratio (0..1; values outside are clamped).
  void SetCacheHitRatio(double ratio) const;
  // dead_letter_queue_size{class}; |dlq_class| one of kDlqClasses.
  void SetDeadLetterQueueSize(std::string_view dlq_class, int64_t entries) const;
  // plugin_load_refusals_total{reason}; |reason| a loader reason (ARCHITECTURE.md reason codes).
  void RecordPluginLoadRefusal(Reason reason) const;
  // RecordPluginFault counts a plugin worker's death (clawguard_plugin_faults_total).
  void RecordPluginFault(std::string_view plugin, std::string_view cause) const;
  // erp_calls_total{endpoint,outcome}.
  void RecordErpCall(std::string_view endpoint, ErpCallOutcome outcome) const;
  // circuit_breaker_open{kind="erp",endpoint}: 1 while the endpoint's breaker is not closed.
  void SetErpBreakerOpen(std::string_view endpoint, bool open) const;
  // circuit_breaker_open{kind="key",endpoint=""}: how many per-key breakers are open now.
  void SetOpenKeyBreakers(int64_t open) const;
  // lease_takeovers_total: a claim that took over an expired lease.
  void RecordLeaseTakeover() const;
  // webhook_signature_failures_total{reason}: signature_invalid, timestamp_out_of_tolerance or
  // header_conflict.
  void RecordSignatureFailure(Reason reason) const;
  // plugin_certificate_expiry_seconds{plugin}: the Unix time (seconds) at which the plugin's
  // signing leaf expires (dashboards subtract time()).
  void SetCertificateExpiry(std::string_view plugin, int64_t unix_seconds) const;
  // ledger_rows.
  void SetLedgerRows(int64_t rows) const;
  // deliveries_in_flight (running, at most listen.handlers), deliveries_queued (waiting for one of
  // those slots) and plugin_threads (threads inside a plugin, including ones a timed-out plugin
  // still keeps: a value that stays above deliveries_in_flight means hung plugins).
  void SetDeliveries(int64_t in_flight, int64_t queued, int64_t plugin_threads) const;

  // DeliveriesTotal / DuplicatesTotal sum webhook_requests_total and
  // webhook_duplicate_requests_total over all series (the operator page's duplicate rate).
  uint64_t DeliveriesTotal() const;
  uint64_t DuplicatesTotal() const;

  // RenderPrometheus is the /metrics body (Content-Type kPrometheusContentType).
  std::string RenderPrometheus() const { return registry_->RenderPrometheus(); }
  // ServeMetrics answers GET with the rendered text and no-store caching; other methods 405.
  // Wrap it in RequireBearerToken (host/http/admin_auth.h) before serving it.
  HttpResponse ServeMetrics(const HttpRequest& request) const;

  const MetricsRegistry& registry() const { return *registry_; }

 private:
  explicit HostMetrics(std::unique_ptr<MetricsRegistry> registry)
      : registry_(std::move(registry)) {}
  const std::unique_ptr<MetricsRegistry> registry_;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_OBSERVE_HOST_METRICS_H_
