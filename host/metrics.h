// metrics.h — the host's metrics: a small registry of counters, gauges and histograms whose label
// sets are declared up front, rendered in the Prometheus text exposition format (version 0.0.4),
// and HostMetrics, the typed facade that declares every metric of ARCHITECTURE.md.
//
// Cardinality: every series exists from Create on. Label values come only from the names the host
// knows (configured plugin/route pairs, plugins, ERP capability strings) and from fixed enums; a
// value a request makes up is never a new series — HostMetrics maps it to kUnknownLabel, so a
// hostile request cannot grow the output.
//
// Metric names carry the `clawguard_` namespace prefix (Prometheus naming practice, so they cannot
// collide with another exporter's `webhook_requests_total`): `clawguard_webhook_requests_total`…
//
// Thread-safety: the registry's structure is immutable after Create; every update is one relaxed
// atomic operation on a series found by one hash lookup (no lock), so any thread may update and
// render at once. A render is not a snapshot across series (Prometheus tolerates that); a
// histogram's _count is derived from its buckets so the two always agree.
#ifndef CLAWGUARD_HOST_METRICS_H_
#define CLAWGUARD_HOST_METRICS_H_

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "clawguard/error.h"
#include "host/http_types.h"

namespace clawguard::host {

// Limits on what a registry may declare (the names come from configuration and manifests).
inline constexpr uint64_t kMaxMetricSeriesPerFamily = 200'000;
inline constexpr uint64_t kMaxMetricLabelValueBytes = 512;
inline constexpr uint64_t kMaxHistogramBuckets = 64;

// kUnknownLabel is the label value that stands for any value the host does not know.
inline constexpr std::string_view kUnknownLabel = "_unknown";
// kPrometheusContentType is the Content-Type of RenderPrometheus output.
inline constexpr std::string_view kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

enum class MetricType { kCounter, kGauge, kHistogram };

// MetricFamilySpec declares one metric family: its name ([a-zA-Z_:][a-zA-Z0-9_:]*), help text,
// type, label names ([a-zA-Z_][a-zA-Z0-9_]*, not starting with "__", no "le" on a histogram) and
// every allowed tuple of label values (in label order). A family without labels has one series
// (leave |series| empty). |buckets| are a histogram's finite, strictly increasing upper bounds
// (+Inf is implicit).
struct MetricFamilySpec {
  std::string name;
  std::string help;
  MetricType type = MetricType::kCounter;
  std::vector<std::string> label_names;
  std::vector<std::vector<std::string>> series;
  std::vector<double> buckets;
};

// MetricSeries is one series' storage (the registry owns it; addresses are stable).
struct MetricSeries {
  std::vector<std::string> labels;
  std::atomic<uint64_t> count{0};    // counter value; histogram: unused (derived from buckets)
  std::atomic<double> value{0.0};    // gauge value; histogram: sum of observations
  std::unique_ptr<std::atomic<uint64_t>[]> buckets;  // histogram: non-cumulative, +Inf last
};

// Counter, Gauge and Histogram are cheap handles to one series; a default handle (no series)
// ignores updates and reads 0. Keep a handle for the hot path: it never goes stale.
class Counter {
 public:
  Counter() = default;
  void Inc(uint64_t n = 1) const {
    if (s_ != nullptr) s_->count.fetch_add(n, std::memory_order_relaxed);
  }
  uint64_t Value() const { return s_ == nullptr ? 0 : s_->count.load(std::memory_order_relaxed); }

 private:
  friend class MetricsRegistry;
  explicit Counter(MetricSeries* s) : s_(s) {}
  MetricSeries* s_ = nullptr;
};

class Gauge {
 public:
  Gauge() = default;
  void Set(double v) const {
    if (s_ != nullptr) s_->value.store(v, std::memory_order_relaxed);
  }
  void Add(double v) const {
    if (s_ != nullptr) s_->value.fetch_add(v, std::memory_order_relaxed);
  }
  double Value() const { return s_ == nullptr ? 0.0 : s_->value.load(std::memory_order_relaxed); }

 private:
  friend class MetricsRegistry;
  explicit Gauge(MetricSeries* s) : s_(s) {}
  MetricSeries* s_ = nullptr;
};

class Histogram {
 public:
  Histogram() = default;
  // Observe records |v| (NaN is dropped: it would poison _sum).
  void Observe(double v) const;
  uint64_t Count() const;
  double Sum() const { return s_ == nullptr ? 0.0 : s_->value.load(std::memory_order_relaxed); }

 private:
  friend class MetricsRegistry;
  Histogram(MetricSeries* s, const std::vector<double>* bounds) : s_(s), bounds_(bounds) {}
  MetricSeries* s_ = nullptr;
  const std::vector<double>* bounds_ = nullptr;
};

// MetricsRegistry holds families declared once. Thread-safe (see the file comment).
class MetricsRegistry {
 public:
  // Create validates every spec: names, duplicate families, label tuples of the right arity,
  // no duplicate tuple, label values non-empty, at most kMaxMetricLabelValueBytes and free of
  // control characters, at most kMaxMetricSeriesPerFamily series, histogram buckets.
  // kConfigInvalid (naming the family and the offending value) otherwise.
  static Result<std::unique_ptr<MetricsRegistry>> Create(std::vector<MetricFamilySpec> specs);

  // FindCounter/FindGauge/FindHistogram return the series of family |name| with exactly |labels|,
  // or nullopt when the family does not exist, has another type, or the tuple was not declared.
  std::optional<Counter> FindCounter(std::string_view name, std::initializer_list<std::string_view> labels) const;
  std::optional<Gauge> FindGauge(std::string_view name, std::initializer_list<std::string_view> labels) const;
  std::optional<Histogram> FindHistogram(std::string_view name,
                                         std::initializer_list<std::string_view> labels) const;

  // RenderPrometheus renders every family in declaration order: `# HELP`, `# TYPE`, then one line
  // per series (histograms: cumulative _bucket{le} lines ending with le="+Inf", _sum, _count).
  std::string RenderPrometheus() const;

  // CounterTotal sums every series of counter family |name| (0 when there is no such counter).
  uint64_t CounterTotal(std::string_view name) const;

  // FamilyNames lists the declared family names (for checks such as the Grafana dashboard test).
  std::vector<std::string> FamilyNames() const;

 private:
  struct Family {
    MetricFamilySpec spec;
    std::vector<std::unique_ptr<MetricSeries>> series;
    std::unordered_map<std::string, MetricSeries*> index;  // joined label values → series
  };
  MetricsRegistry() = default;
  MetricSeries* Find(std::string_view name, MetricType type, std::initializer_list<std::string_view> labels,
                     const Family** family) const;

  std::vector<std::unique_ptr<Family>> families_;
  std::unordered_map<std::string, const Family*> by_name_;
};

// ---- HostMetrics: every metric of ARCHITECTURE.md "Host request pipeline" ----

// MetricsNames is the closed vocabulary of the name labels (taken from host.yaml and the loaded
// plugins' manifests when the host starts).
struct MetricsNames {
  std::vector<std::pair<std::string, std::string>> routes;  // (plugin, route) of webhooks.routes
  std::vector<std::string> plugins;                         // plugin names (certificate expiry)
  std::vector<std::string> endpoints;  // ERP endpoints: capability strings, "POST /orders/{id}/fulfil"
};

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
};
std::string_view ErpCallOutcomeName(ErpCallOutcome o);
// ErpCallOutcomeForStatus maps an ERP answer's HTTP status to its outcome.
ErpCallOutcome ErpCallOutcomeForStatus(int status);

// kDlqClasses are the DLQ classes of ARCHITECTURE.md's status table.
inline constexpr std::string_view kDlqClasses[] = {"breaker",  "unconfirmed", "cooldown", "transient_exhausted",
                                                   "auth",     "not_found",   "conflict", "mismatch",
                                                   "manual_review"};

// HostMetrics declares the host's metrics over |names| and updates them by name. Updates with an
// unknown plugin, route or endpoint go to the series whose name labels are kUnknownLabel.
// Thread-safe; each update is one hash lookup plus one atomic operation.
class HostMetrics {
 public:
  // Create: kConfigInvalid when a name is empty, too long, has a control character, or a
  // (plugin, route) pair / plugin / endpoint is listed twice.
  static Result<std::unique_ptr<HostMetrics>> Create(const MetricsNames& names);

  // webhook_requests_total{plugin,route,outcome}; |outcome| is a WebhookOutcomeName value.
  void RecordWebhook(std::string_view plugin, std::string_view route, std::string_view outcome) const;
  // webhook_duplicate_requests_total{plugin,route}: a delivery answered from its stored record
  // or refused because another delivery of the same key holds the lease.
  void RecordDuplicate(std::string_view plugin, std::string_view route) const;
  // webhook_processing_duration_seconds{plugin,route}.
  void ObserveProcessingSeconds(std::string_view plugin, std::string_view route, double seconds) const;
  // idempotency_cache_hit_ratio (0..1; values outside are clamped).
  void SetCacheHitRatio(double ratio) const;
  // dead_letter_queue_size{class}; |dlq_class| one of kDlqClasses.
  void SetDeadLetterQueueSize(std::string_view dlq_class, int64_t entries) const;
  // plugin_load_refusals_total{reason}; |reason| a loader reason (ARCHITECTURE.md reason codes).
  void RecordPluginLoadRefusal(Reason reason) const;
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

  // DeliveriesTotal / DuplicatesTotal sum webhook_requests_total and
  // webhook_duplicate_requests_total over all series (the operator page's duplicate rate).
  uint64_t DeliveriesTotal() const;
  uint64_t DuplicatesTotal() const;

  // RenderPrometheus is the /metrics body (Content-Type kPrometheusContentType).
  std::string RenderPrometheus() const { return registry_->RenderPrometheus(); }
  // ServeMetrics answers GET with the rendered text and no-store caching; other methods 405.
  // Wrap it in RequireBearerToken (host/admin_auth.h) before serving it.
  HttpResponse ServeMetrics(const HttpRequest& request) const;

  const MetricsRegistry& registry() const { return *registry_; }

 private:
  explicit HostMetrics(std::unique_ptr<MetricsRegistry> registry) : registry_(std::move(registry)) {}
  const std::unique_ptr<MetricsRegistry> registry_;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_METRICS_H_
