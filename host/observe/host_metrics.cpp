// host_metrics.cpp — the host's metric declarations and typed updates (see host_metrics.h).
#include "host/observe/host_metrics.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace clawguard::host {
namespace {

constexpr std::string_view kRequests = "clawguard_webhook_requests_total";
constexpr std::string_view kDuplicates = "clawguard_webhook_duplicate_requests_total";
constexpr std::string_view kDuration = "clawguard_webhook_processing_duration_seconds";
constexpr std::string_view kCacheHitRatio = "clawguard_idempotency_cache_hit_ratio";
constexpr std::string_view kDlqSize = "clawguard_dead_letter_queue_size";
constexpr std::string_view kLoadRefusals = "clawguard_plugin_load_refusals_total";
constexpr std::string_view kErpCalls = "clawguard_erp_calls_total";
constexpr std::string_view kBreakerOpen = "clawguard_circuit_breaker_open";
constexpr std::string_view kLeaseTakeovers = "clawguard_lease_takeovers_total";
constexpr std::string_view kSignatureFailures = "clawguard_webhook_signature_failures_total";
constexpr std::string_view kCertExpiry = "clawguard_plugin_certificate_expiry_seconds";
constexpr std::string_view kLedgerRows = "clawguard_ledger_rows";
constexpr std::string_view kInFlight = "clawguard_deliveries_in_flight";
constexpr std::string_view kQueued = "clawguard_deliveries_queued";
constexpr std::string_view kPluginThreads = "clawguard_plugin_threads";
constexpr std::string_view kPluginFaults = "clawguard_plugin_faults_total";
// The causes a worker fault is counted under (host/dispatch/plugin_worker.h WorkerFault::cause).
constexpr std::string_view kFaultCauses[] = {"crash",   "seccomp",  "memory", "exit",
                                             "timeout", "protocol", "queue",  "start"};
constexpr std::string_view kKeyBreakers = "_keys";  // endpoint label of the per-key breaker count

constexpr ErpCallOutcome kErpOutcomes[] = {
    ErpCallOutcome::kSuccess,     ErpCallOutcome::kClientError, ErpCallOutcome::kRateLimited,
    ErpCallOutcome::kServerError, ErpCallOutcome::kTimeout,     ErpCallOutcome::kTransportError,
    ErpCallOutcome::kDenied,      ErpCallOutcome::kHeld,        ErpCallOutcome::kBreakerOpen,
    ErpCallOutcome::kPaused};
constexpr Reason kSignatureReasons[] = {Reason::kSignatureInvalid, Reason::kTimestampOutOfTolerance,
                                        Reason::kHeaderConflict};

// WebhookOutcomeNames enumerates WebhookOutcomeName over the (contiguous) enum until it answers
// "unknown", so an outcome added to the pipeline gets its series without a change here.
std::vector<std::string> WebhookOutcomeNames() {
  std::vector<std::string> names;
  for (int i = 0; i < 64; ++i) {
    const std::string_view n = WebhookOutcomeName(static_cast<WebhookOutcome>(i));
    if (n == "unknown") break;
    names.emplace_back(n);
  }
  return names;
}

// LoaderReasons are the loader's reason codes (Reason::kUnsigned … Reason::kLoadFailed).
std::vector<std::string> LoaderReasons() {
  std::vector<std::string> names;
  for (int i = static_cast<int>(Reason::kUnsigned); i <= static_cast<int>(Reason::kLoadFailed);
       ++i) {
    names.emplace_back(ReasonName(static_cast<Reason>(i)));
  }
  return names;
}

std::vector<std::vector<std::string>> Product(const std::vector<std::vector<std::string>>& prefixes,
                                              const std::vector<std::string>& tail) {
  std::vector<std::vector<std::string>> out;
  for (const auto& p : prefixes) {
    for (const auto& t : tail) {
      out.push_back(p);
      out.back().push_back(t);
    }
  }
  return out;
}

std::vector<std::vector<std::string>> Singles(std::vector<std::string> values) {
  std::vector<std::vector<std::string>> out;
  out.reserve(values.size());
  for (auto& v : values) out.push_back({std::move(v)});
  return out;
}

Status CheckUnique(std::string_view what, const std::vector<std::string>& values) {
  std::set<std::string> seen;
  for (const auto& v : values) {
    CLAWGUARD_RETURN_IF_ERROR(CheckMetricLabelValue(what, v));
    if (v == kUnknownLabel || v == kKeyBreakers) {
      return Status(Reason::kConfigInvalid,
                    std::string(what) + ": '" + v + "' is a reserved label value");
    }
    if (!seen.insert(v).second) {
      return Status(Reason::kConfigInvalid, std::string(what) + ": '" + v + "' is listed twice");
    }
  }
  return Status::Ok();
}

}  // namespace

std::string_view WebhookOutcomeName(WebhookOutcome o) {
  switch (o) {
    case WebhookOutcome::kTooLarge: return "too_large";
    case WebhookOutcome::kNotFound: return "not_found";
    case WebhookOutcome::kAuthFailed: return "auth_failed";
    case WebhookOutcome::kKeyMissing: return "key_missing";
    case WebhookOutcome::kFingerprintMismatch: return "fingerprint_mismatch";
    case WebhookOutcome::kReplayed: return "replayed";
    case WebhookOutcome::kInProgress: return "in_progress";
    case WebhookOutcome::kStoreUnavailable: return "store_unavailable";
    case WebhookOutcome::kProcessed: return "processed";
    case WebhookOutcome::kNotStored: return "not_stored";
    case WebhookOutcome::kPluginFailed: return "plugin_failed";
    case WebhookOutcome::kPluginTimeout: return "plugin_timeout";
    case WebhookOutcome::kErpPending: return "erp_pending";
    case WebhookOutcome::kFenced: return "fenced";
    case WebhookOutcome::kDeadLettered: return "dead_lettered";
    case WebhookOutcome::kRateLimited: return "rate_limited";
    case WebhookOutcome::kBreakerOpen: return "breaker_open";
    case WebhookOutcome::kExpiredKeySeen: return "expired_key_seen";
    case WebhookOutcome::kPluginUnavailable: return "plugin_unavailable";
  }
  return "unknown";
}

std::string_view ErpCallOutcomeName(ErpCallOutcome o) {
  switch (o) {
    case ErpCallOutcome::kSuccess: return "success";
    case ErpCallOutcome::kClientError: return "client_error";
    case ErpCallOutcome::kRateLimited: return "rate_limited";
    case ErpCallOutcome::kServerError: return "server_error";
    case ErpCallOutcome::kTimeout: return "timeout";
    case ErpCallOutcome::kTransportError: return "transport_error";
    case ErpCallOutcome::kDenied: return "denied";
    case ErpCallOutcome::kHeld: return "held";
    case ErpCallOutcome::kBreakerOpen: return "breaker_open";
    case ErpCallOutcome::kPaused: return "paused";
  }
  return "server_error";
}

ErpCallOutcome ErpCallOutcomeForStatus(int status) {
  if (status >= 200 && status < 300) return ErpCallOutcome::kSuccess;
  if (status == 429) return ErpCallOutcome::kRateLimited;
  if (status >= 400 && status < 500) return ErpCallOutcome::kClientError;
  return ErpCallOutcome::kServerError;
}

Result<std::unique_ptr<HostMetrics>> HostMetrics::Create(const MetricsNames& names) {
  std::vector<std::string> route_keys;
  std::vector<std::vector<std::string>> routes;
  for (const auto& [plugin, route] : names.routes) {
    CLAWGUARD_RETURN_IF_ERROR(CheckUnique("metrics plugin name", {plugin}));
    CLAWGUARD_RETURN_IF_ERROR(CheckUnique("metrics route name", {route}));
    route_keys.push_back(plugin + "/" + route);
    routes.push_back({plugin, route});
  }
  CLAWGUARD_RETURN_IF_ERROR(CheckUnique("metrics routes", route_keys));
  CLAWGUARD_RETURN_IF_ERROR(CheckUnique("metrics plugins", names.plugins));
  CLAWGUARD_RETURN_IF_ERROR(CheckUnique("metrics endpoints", names.endpoints));
  routes.push_back({std::string(kUnknownLabel), std::string(kUnknownLabel)});

  std::vector<std::string> outcomes = WebhookOutcomeNames();
  outcomes.emplace_back(kUnknownLabel);
  std::vector<std::string> erp_outcomes;
  for (ErpCallOutcome o : kErpOutcomes) erp_outcomes.emplace_back(ErpCallOutcomeName(o));
  std::vector<std::string> endpoints = names.endpoints;
  endpoints.emplace_back(kUnknownLabel);
  std::vector<std::string> dlq(std::begin(kDlqClasses), std::end(kDlqClasses));
  dlq.emplace_back(kUnknownLabel);
  std::vector<std::string> load_reasons = LoaderReasons();
  load_reasons.emplace_back(kUnknownLabel);
  std::vector<std::string> sig_reasons;
  for (Reason r : kSignatureReasons) sig_reasons.emplace_back(ReasonName(r));
  sig_reasons.emplace_back(kUnknownLabel);
  std::vector<std::vector<std::string>> breakers;
  for (const auto& e : names.endpoints) breakers.push_back({"erp", e});
  breakers.push_back({"key", std::string(kKeyBreakers)});

  const auto n = [](std::string_view s) { return std::string(s); };
  std::vector<MetricFamilySpec> specs;
  specs.push_back({n(kRequests),
                   "Webhook deliveries by plugin, route and outcome.",
                   MetricType::kCounter,
                   {"plugin", "route", "outcome"},
                   Product(routes, outcomes),
                   {}});
  specs.push_back({n(kDuplicates),
                   "Deliveries of an event already seen (replayed or lease held).",
                   MetricType::kCounter,
                   {"plugin", "route"},
                   routes,
                   {}});
  specs.push_back({n(kDuration),
                   "Time from a webhook's arrival to its answer.",
                   MetricType::kHistogram,
                   {"plugin", "route"},
                   routes,
                   {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}});
  specs.push_back({n(kCacheHitRatio),
                   "Share of idempotency lookups answered by the in-process cache.",
                   MetricType::kGauge,
                   {},
                   {},
                   {}});
  specs.push_back({n(kDlqSize),
                   "Dead-letter queue entries by class.",
                   MetricType::kGauge,
                   {"class"},
                   Singles(dlq),
                   {}});
  specs.push_back({n(kLoadRefusals),
                   "Plugin packages the loader refused, by reason code.",
                   MetricType::kCounter,
                   {"reason"},
                   Singles(load_reasons),
                   {}});
  specs.push_back({n(kErpCalls),
                   "ERP calls by endpoint (capability) and outcome.",
                   MetricType::kCounter,
                   {"endpoint", "outcome"},
                   Product(Singles(endpoints), erp_outcomes),
                   {}});
  specs.push_back(
      {n(kBreakerOpen),
       "1 while an ERP endpoint's breaker is open or half-open; for kind=key the number of open "
       "per-key breakers.",
       MetricType::kGauge,
       {"kind", "endpoint"},
       breakers,
       {}});
  specs.push_back({n(kLeaseTakeovers),
                   "Claims that took over an expired lease.",
                   MetricType::kCounter,
                   {},
                   {},
                   {}});
  specs.push_back({n(kSignatureFailures),
                   "Webhooks refused by authentication, by reason code.",
                   MetricType::kCounter,
                   {"reason"},
                   Singles(sig_reasons),
                   {}});
  if (!names.plugins.empty()) {
    specs.push_back({n(kCertExpiry),
                     "Unix time at which the plugin's signing certificate expires.",
                     MetricType::kGauge,
                     {"plugin"},
                     Singles(names.plugins),
                     {}});
  } else {
    specs.push_back({n(kCertExpiry),
                     "Unix time at which the plugin's signing certificate expires.",
                     MetricType::kGauge,
                     {"plugin"},
                     {{n(kUnknownLabel)}},
                     {}});
  }
  specs.push_back(
      {n(kLedgerRows), "Rows in the release/deploy ledger.", MetricType::kGauge, {}, {}, {}});
  specs.push_back(
      {n(kInFlight),
       "Webhook deliveries running now (claim, plugin, outcome; at most listen.handlers).",
       MetricType::kGauge,
       {},
       {},
       {}});
  specs.push_back({n(kQueued),
                   "Webhook deliveries waiting for a free delivery slot.",
                   MetricType::kGauge,
                   {},
                   {},
                   {}});
  {
    std::vector<std::string> causes;
    for (std::string_view c : kFaultCauses) causes.emplace_back(c);
    std::vector<std::string> plugins = names.plugins;
    plugins.emplace_back(kUnknownLabel);
    specs.push_back(
        {n(kPluginFaults),
         "Plugin worker processes that died, by plugin and cause (crash, seccomp, exit, "
         "timeout, protocol, queue, start).",
         MetricType::kCounter,
         {"plugin", "cause"},
         Product(Singles(plugins), causes),
         {}});
  }
  specs.push_back(
      {n(kPluginThreads),
       "Threads inside a plugin, including those a timed-out plugin still keeps (hung plugins).",
       MetricType::kGauge,
       {},
       {},
       {}});
  CLAWGUARD_ASSIGN_OR_RETURN(auto registry, MetricsRegistry::Create(std::move(specs)));
  return std::unique_ptr<HostMetrics>(new HostMetrics(std::move(registry)));
}

Counter HostMetrics::WebhookCounter(std::string_view plugin, std::string_view route,
                                    std::string_view outcome) const {
  if (auto c = registry_->FindCounter(kRequests, {plugin, route, outcome})) return *c;
  if (auto c = registry_->FindCounter(kRequests, {kUnknownLabel, kUnknownLabel, outcome}))
    return *c;
  if (auto c = registry_->FindCounter(kRequests, {plugin, route, kUnknownLabel})) return *c;
  return *registry_->FindCounter(kRequests, {kUnknownLabel, kUnknownLabel, kUnknownLabel});
}

Counter HostMetrics::DuplicateCounter(std::string_view plugin, std::string_view route) const {
  auto c = registry_->FindCounter(kDuplicates, {plugin, route});
  return c ? *c : *registry_->FindCounter(kDuplicates, {kUnknownLabel, kUnknownLabel});
}

Histogram HostMetrics::ProcessingHistogram(std::string_view plugin, std::string_view route) const {
  auto h = registry_->FindHistogram(kDuration, {plugin, route});
  return h ? *h : *registry_->FindHistogram(kDuration, {kUnknownLabel, kUnknownLabel});
}

void HostMetrics::RecordWebhook(std::string_view plugin, std::string_view route,
                                std::string_view outcome) const {
  WebhookCounter(plugin, route, outcome).Inc();
}

void HostMetrics::RecordDuplicate(std::string_view plugin, std::string_view route) const {
  DuplicateCounter(plugin, route).Inc();
}

void HostMetrics::ObserveProcessingSeconds(std::string_view plugin, std::string_view route,
                                           double seconds) const {
  ProcessingHistogram(plugin, route).Observe(seconds);
}

void HostMetrics::SetCacheHitRatio(double ratio) const {
  if (std::isnan(ratio)) return;
  registry_->FindGauge(kCacheHitRatio, {})->Set(std::clamp(ratio, 0.0, 1.0));
}

void HostMetrics::SetDeadLetterQueueSize(std::string_view dlq_class, int64_t entries) const {
  auto g = registry_->FindGauge(kDlqSize, {dlq_class});
  (g ? g : registry_->FindGauge(kDlqSize, {kUnknownLabel}))->Set(static_cast<double>(entries));
}

void HostMetrics::RecordPluginLoadRefusal(Reason reason) const {
  auto c = registry_->FindCounter(kLoadRefusals, {ReasonName(reason)});
  (c ? c : registry_->FindCounter(kLoadRefusals, {kUnknownLabel}))->Inc();
}

void HostMetrics::RecordPluginFault(std::string_view plugin, std::string_view cause) const {
  auto c = registry_->FindCounter(kPluginFaults, {plugin, cause});
  if (!c) c = registry_->FindCounter(kPluginFaults, {kUnknownLabel, cause});
  if (!c) c = registry_->FindCounter(kPluginFaults, {kUnknownLabel, "crash"});
  if (c) c->Inc();
}

void HostMetrics::RecordErpCall(std::string_view endpoint, ErpCallOutcome outcome) const {
  auto c = registry_->FindCounter(kErpCalls, {endpoint, ErpCallOutcomeName(outcome)});
  (c ? c : registry_->FindCounter(kErpCalls, {kUnknownLabel, ErpCallOutcomeName(outcome)}))->Inc();
}

void HostMetrics::SetErpBreakerOpen(std::string_view endpoint, bool open) const {
  if (endpoint == kKeyBreakers) return;
  if (auto g = registry_->FindGauge(kBreakerOpen, {"erp", endpoint})) g->Set(open ? 1.0 : 0.0);
}

void HostMetrics::SetOpenKeyBreakers(int64_t open) const {
  registry_->FindGauge(kBreakerOpen, {"key", kKeyBreakers})->Set(static_cast<double>(open));
}

void HostMetrics::RecordLeaseTakeover() const {
  registry_->FindCounter(kLeaseTakeovers, {})->Inc();
}

void HostMetrics::RecordSignatureFailure(Reason reason) const {
  auto c = registry_->FindCounter(kSignatureFailures, {ReasonName(reason)});
  (c ? c : registry_->FindCounter(kSignatureFailures, {kUnknownLabel}))->Inc();
}

void HostMetrics::SetCertificateExpiry(std::string_view plugin, int64_t unix_seconds) const {
  if (plugin == kUnknownLabel) return;
  if (auto g = registry_->FindGauge(kCertExpiry, {plugin}))
    g->Set(static_cast<double>(unix_seconds));
}

void HostMetrics::SetLedgerRows(int64_t rows) const {
  registry_->FindGauge(kLedgerRows, {})->Set(static_cast<double>(rows));
}

void HostMetrics::SetDeliveries(int64_t in_flight, int64_t queued, int64_t plugin_threads) const {
  registry_->FindGauge(kInFlight, {})->Set(static_cast<double>(in_flight));
  registry_->FindGauge(kQueued, {})->Set(static_cast<double>(queued));
  registry_->FindGauge(kPluginThreads, {})->Set(static_cast<double>(plugin_threads));
}

uint64_t HostMetrics::DeliveriesTotal() const { return registry_->CounterTotal(kRequests); }
uint64_t HostMetrics::DuplicatesTotal() const { return registry_->CounterTotal(kDuplicates); }

HttpResponse HostMetrics::ServeMetrics(const HttpRequest& request) const {
  HttpResponse r;
  if (request.method != "GET") {
    r.status = 405;
    r.headers.Set("Allow", "GET");
    r.headers.Set("Content-Type", "text/plain; charset=utf-8");
    r.body = "method not allowed: /metrics answers GET\n";
    return r;
  }
  r.headers.Set("Content-Type", std::string(kPrometheusContentType));
  r.headers.Set("Cache-Control", "no-store");
  r.body = RenderPrometheus();
  return r;
}

}  // namespace clawguard::host
