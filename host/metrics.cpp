// metrics.cpp — metrics registry, Prometheus text rendering and the host's metric declarations
// (see metrics.h).
#include "host/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "host/webhook_pipeline.h"

namespace clawguard::host {
namespace {

constexpr char kSep = '\0';  // label values never contain NUL (checked at Create)

std::string JoinKey(std::initializer_list<std::string_view> labels) {
  std::string key;
  for (std::string_view v : labels) {
    key.append(v);
    key.push_back(kSep);
  }
  return key;
}
std::string JoinKey(const std::vector<std::string>& labels) {
  std::string key;
  for (const auto& v : labels) {
    key.append(v);
    key.push_back(kSep);
  }
  return key;
}

bool ValidName(std::string_view n, bool allow_colon) {
  if (n.empty()) return false;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':');
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

Status ValidLabelValue(std::string_view family, std::string_view v) {
  if (v.empty() || v.size() > kMaxMetricLabelValueBytes) {
    return Status(Reason::kConfigInvalid, "metric " + std::string(family) + ": a label value must be 1.." +
                                              std::to_string(kMaxMetricLabelValueBytes) + " bytes");
  }
  for (unsigned char c : v) {
    if (c < 0x20 || c == 0x7f) {
      return Status(Reason::kConfigInvalid,
                    "metric " + std::string(family) + ": a label value contains a control character");
    }
  }
  return Status::Ok();
}

// FormatNumber renders a sample value as Prometheus expects: shortest round-trip form, +Inf,
// -Inf, NaN.
std::string FormatNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  if (ec != std::errc()) return "NaN";
  return std::string(buf, end);
}

// EscapeHelp escapes `\` and newline (text format: HELP lines).
std::string EscapeHelp(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out.push_back(c);
  }
  return out;
}

// EscapeLabel escapes `\`, `"` and newline (text format: label values).
std::string EscapeLabel(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out.push_back(c);
  }
  return out;
}

void AppendLabels(std::string& out, const std::vector<std::string>& names, const std::vector<std::string>& values,
                  std::string_view le = {}) {
  if (names.empty() && le.empty()) return;
  out.push_back('{');
  bool first = true;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!first) out.push_back(',');
    first = false;
    out += names[i] + "=\"" + EscapeLabel(values[i]) + "\"";
  }
  if (!le.empty()) {
    if (!first) out.push_back(',');
    out += "le=\"" + std::string(le) + "\"";
  }
  out.push_back('}');
}

std::string_view TypeName(MetricType t) {
  switch (t) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
  }
  return "untyped";
}

Status CheckSpec(const MetricFamilySpec& s) {
  const auto bad = [&](const std::string& what) {
    return Status(Reason::kConfigInvalid, "metric " + s.name + ": " + what);
  };
  if (!ValidName(s.name, /*allow_colon=*/true)) return bad("the name is not a Prometheus metric name");
  std::set<std::string> seen;
  for (const auto& l : s.label_names) {
    if (!ValidName(l, /*allow_colon=*/false) || l.starts_with("__")) return bad("bad label name '" + l + "'");
    if (s.type == MetricType::kHistogram && l == "le") return bad("a histogram may not have a label 'le'");
    if (!seen.insert(l).second) return bad("label '" + l + "' declared twice");
  }
  if (s.label_names.empty() && !s.series.empty()) return bad("an unlabelled family declares no series");
  if (!s.label_names.empty() && s.series.empty()) return bad("a labelled family needs at least one series");
  if (s.series.size() > kMaxMetricSeriesPerFamily) {
    return bad(std::to_string(s.series.size()) + " series, at most " + std::to_string(kMaxMetricSeriesPerFamily));
  }
  if (s.type == MetricType::kHistogram) {
    if (s.buckets.empty() || s.buckets.size() > kMaxHistogramBuckets) {
      return bad("a histogram needs 1.." + std::to_string(kMaxHistogramBuckets) + " buckets");
    }
    for (std::size_t i = 0; i < s.buckets.size(); ++i) {
      if (!std::isfinite(s.buckets[i]) || (i > 0 && s.buckets[i] <= s.buckets[i - 1])) {
        return bad("histogram buckets must be finite and strictly increasing");
      }
    }
  } else if (!s.buckets.empty()) {
    return bad("only a histogram has buckets");
  }
  return Status::Ok();
}

}  // namespace

void Histogram::Observe(double v) const {
  if (s_ == nullptr || std::isnan(v)) return;
  const auto it = std::lower_bound(bounds_->begin(), bounds_->end(), v);  // first bound ≥ v (le)
  s_->buckets[static_cast<std::size_t>(it - bounds_->begin())].fetch_add(1, std::memory_order_relaxed);
  s_->value.fetch_add(v, std::memory_order_relaxed);
}

uint64_t Histogram::Count() const {
  if (s_ == nullptr) return 0;
  uint64_t n = 0;
  for (std::size_t i = 0; i <= bounds_->size(); ++i) n += s_->buckets[i].load(std::memory_order_relaxed);
  return n;
}

Result<std::unique_ptr<MetricsRegistry>> MetricsRegistry::Create(std::vector<MetricFamilySpec> specs) {
  std::unique_ptr<MetricsRegistry> reg(new MetricsRegistry());
  for (auto& spec : specs) {
    CLAWGUARD_RETURN_IF_ERROR(CheckSpec(spec));
    if (reg->by_name_.count(spec.name) != 0) {
      return Status(Reason::kConfigInvalid, "metric " + spec.name + " declared twice");
    }
    auto family = std::make_unique<Family>();
    family->spec = std::move(spec);
    const MetricFamilySpec& s = family->spec;
    std::vector<std::vector<std::string>> tuples = s.series;
    if (s.label_names.empty()) tuples.emplace_back();
    for (auto& tuple : tuples) {
      if (tuple.size() != s.label_names.size()) {
        return Status(Reason::kConfigInvalid, "metric " + s.name + ": a series has " + std::to_string(tuple.size()) +
                                                  " label values, expected " + std::to_string(s.label_names.size()));
      }
      for (const auto& v : tuple) CLAWGUARD_RETURN_IF_ERROR(ValidLabelValue(s.name, v));
      auto series = std::make_unique<MetricSeries>();
      if (s.type == MetricType::kHistogram) {
        series->buckets = std::make_unique<std::atomic<uint64_t>[]>(s.buckets.size() + 1);
      }
      series->labels = std::move(tuple);
      if (!family->index.emplace(JoinKey(series->labels), series.get()).second) {
        return Status(Reason::kConfigInvalid, "metric " + s.name + ": a label tuple is declared twice");
      }
      family->series.push_back(std::move(series));
    }
    reg->by_name_.emplace(s.name, family.get());
    reg->families_.push_back(std::move(family));
  }
  return reg;
}

MetricSeries* MetricsRegistry::Find(std::string_view name, MetricType type,
                                    std::initializer_list<std::string_view> labels, const Family** family) const {
  const auto f = by_name_.find(std::string(name));
  if (f == by_name_.end() || f->second->spec.type != type) return nullptr;
  if (labels.size() != f->second->spec.label_names.size()) return nullptr;
  const auto s = f->second->index.find(JoinKey(labels));
  if (s == f->second->index.end()) return nullptr;
  *family = f->second;
  return s->second;
}

std::optional<Counter> MetricsRegistry::FindCounter(std::string_view name,
                                                    std::initializer_list<std::string_view> labels) const {
  const Family* f = nullptr;
  MetricSeries* s = Find(name, MetricType::kCounter, labels, &f);
  if (s == nullptr) return std::nullopt;
  return Counter(s);
}

std::optional<Gauge> MetricsRegistry::FindGauge(std::string_view name,
                                                std::initializer_list<std::string_view> labels) const {
  const Family* f = nullptr;
  MetricSeries* s = Find(name, MetricType::kGauge, labels, &f);
  if (s == nullptr) return std::nullopt;
  return Gauge(s);
}

std::optional<Histogram> MetricsRegistry::FindHistogram(std::string_view name,
                                                        std::initializer_list<std::string_view> labels) const {
  const Family* f = nullptr;
  MetricSeries* s = Find(name, MetricType::kHistogram, labels, &f);
  if (s == nullptr) return std::nullopt;
  return Histogram(s, &f->spec.buckets);
}

std::string MetricsRegistry::RenderPrometheus() const {
  std::string out;
  for (const auto& f : families_) {
    const MetricFamilySpec& s = f->spec;
    out += "# HELP " + s.name + " " + EscapeHelp(s.help) + "\n";
    out += "# TYPE " + s.name + " " + std::string(TypeName(s.type)) + "\n";
    for (const auto& series : f->series) {
      if (s.type == MetricType::kCounter) {
        out += s.name;
        AppendLabels(out, s.label_names, series->labels);
        out += " " + std::to_string(series->count.load(std::memory_order_relaxed)) + "\n";
      } else if (s.type == MetricType::kGauge) {
        out += s.name;
        AppendLabels(out, s.label_names, series->labels);
        out += " " + FormatNumber(series->value.load(std::memory_order_relaxed)) + "\n";
      } else {
        uint64_t cumulative = 0;
        for (std::size_t i = 0; i <= s.buckets.size(); ++i) {
          cumulative += series->buckets[i].load(std::memory_order_relaxed);
          out += s.name + "_bucket";
          AppendLabels(out, s.label_names, series->labels, i < s.buckets.size() ? FormatNumber(s.buckets[i]) : "+Inf");
          out += " " + std::to_string(cumulative) + "\n";
        }
        out += s.name + "_sum";
        AppendLabels(out, s.label_names, series->labels);
        out += " " + FormatNumber(series->value.load(std::memory_order_relaxed)) + "\n";
        out += s.name + "_count";
        AppendLabels(out, s.label_names, series->labels);
        out += " " + std::to_string(cumulative) + "\n";
      }
    }
  }
  return out;
}

uint64_t MetricsRegistry::CounterTotal(std::string_view name) const {
  const auto f = by_name_.find(std::string(name));
  if (f == by_name_.end() || f->second->spec.type != MetricType::kCounter) return 0;
  uint64_t total = 0;
  for (const auto& s : f->second->series) total += s->count.load(std::memory_order_relaxed);
  return total;
}

std::vector<std::string> MetricsRegistry::FamilyNames() const {
  std::vector<std::string> names;
  for (const auto& f : families_) names.push_back(f->spec.name);
  return names;
}

// ---- HostMetrics ----
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
constexpr std::string_view kKeyBreakers = "_keys";  // endpoint label of the per-key breaker count

constexpr ErpCallOutcome kErpOutcomes[] = {
    ErpCallOutcome::kSuccess, ErpCallOutcome::kClientError, ErpCallOutcome::kRateLimited,
    ErpCallOutcome::kServerError, ErpCallOutcome::kTimeout, ErpCallOutcome::kTransportError,
    ErpCallOutcome::kDenied, ErpCallOutcome::kHeld};
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
  for (int i = static_cast<int>(Reason::kUnsigned); i <= static_cast<int>(Reason::kLoadFailed); ++i) {
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
  for (auto& v : values) out.push_back({std::move(v)});
  return out;
}

Status CheckUnique(std::string_view what, const std::vector<std::string>& values) {
  std::set<std::string> seen;
  for (const auto& v : values) {
    CLAWGUARD_RETURN_IF_ERROR(ValidLabelValue(what, v));
    if (v == kUnknownLabel || v == kKeyBreakers) {
      return Status(Reason::kConfigInvalid, std::string(what) + ": '" + v + "' is a reserved label value");
    }
    if (!seen.insert(v).second) {
      return Status(Reason::kConfigInvalid, std::string(what) + ": '" + v + "' is listed twice");
    }
  }
  return Status::Ok();
}

}  // namespace

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
  specs.push_back({n(kRequests), "Webhook deliveries by plugin, route and outcome.", MetricType::kCounter,
                   {"plugin", "route", "outcome"}, Product(routes, outcomes), {}});
  specs.push_back({n(kDuplicates), "Deliveries of an event already seen (replayed or lease held).",
                   MetricType::kCounter, {"plugin", "route"}, routes, {}});
  specs.push_back({n(kDuration), "Time from a webhook's arrival to its answer.", MetricType::kHistogram,
                   {"plugin", "route"}, routes, {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}});
  specs.push_back({n(kCacheHitRatio), "Share of idempotency lookups answered by the in-process cache.",
                   MetricType::kGauge, {}, {}, {}});
  specs.push_back({n(kDlqSize), "Dead-letter queue entries by class.", MetricType::kGauge, {"class"},
                   Singles(dlq), {}});
  specs.push_back({n(kLoadRefusals), "Plugin packages the loader refused, by reason code.", MetricType::kCounter,
                   {"reason"}, Singles(load_reasons), {}});
  specs.push_back({n(kErpCalls), "ERP calls by endpoint (capability) and outcome.", MetricType::kCounter,
                   {"endpoint", "outcome"}, Product(Singles(endpoints), erp_outcomes), {}});
  specs.push_back({n(kBreakerOpen),
                   "1 while an ERP endpoint's breaker is open or half-open; for kind=key the number of open "
                   "per-key breakers.",
                   MetricType::kGauge, {"kind", "endpoint"}, breakers, {}});
  specs.push_back({n(kLeaseTakeovers), "Claims that took over an expired lease.", MetricType::kCounter, {}, {}, {}});
  specs.push_back({n(kSignatureFailures), "Webhooks refused by authentication, by reason code.",
                   MetricType::kCounter, {"reason"}, Singles(sig_reasons), {}});
  if (!names.plugins.empty()) {
    specs.push_back({n(kCertExpiry), "Unix time at which the plugin's signing certificate expires.",
                     MetricType::kGauge, {"plugin"}, Singles(names.plugins), {}});
  } else {
    specs.push_back({n(kCertExpiry), "Unix time at which the plugin's signing certificate expires.",
                     MetricType::kGauge, {"plugin"}, {{n(kUnknownLabel)}}, {}});
  }
  specs.push_back({n(kLedgerRows), "Rows in the release/deploy ledger.", MetricType::kGauge, {}, {}, {}});
  CLAWGUARD_ASSIGN_OR_RETURN(auto registry, MetricsRegistry::Create(std::move(specs)));
  return std::unique_ptr<HostMetrics>(new HostMetrics(std::move(registry)));
}

void HostMetrics::RecordWebhook(std::string_view plugin, std::string_view route, std::string_view outcome) const {
  if (auto c = registry_->FindCounter(kRequests, {plugin, route, outcome})) return c->Inc();
  if (auto c = registry_->FindCounter(kRequests, {kUnknownLabel, kUnknownLabel, outcome})) return c->Inc();
  if (auto c = registry_->FindCounter(kRequests, {plugin, route, kUnknownLabel})) return c->Inc();
  registry_->FindCounter(kRequests, {kUnknownLabel, kUnknownLabel, kUnknownLabel})->Inc();
}

void HostMetrics::RecordDuplicate(std::string_view plugin, std::string_view route) const {
  auto c = registry_->FindCounter(kDuplicates, {plugin, route});
  (c ? c : registry_->FindCounter(kDuplicates, {kUnknownLabel, kUnknownLabel}))->Inc();
}

void HostMetrics::ObserveProcessingSeconds(std::string_view plugin, std::string_view route, double seconds) const {
  auto h = registry_->FindHistogram(kDuration, {plugin, route});
  (h ? h : registry_->FindHistogram(kDuration, {kUnknownLabel, kUnknownLabel}))->Observe(seconds);
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

void HostMetrics::RecordLeaseTakeover() const { registry_->FindCounter(kLeaseTakeovers, {})->Inc(); }

void HostMetrics::RecordSignatureFailure(Reason reason) const {
  auto c = registry_->FindCounter(kSignatureFailures, {ReasonName(reason)});
  (c ? c : registry_->FindCounter(kSignatureFailures, {kUnknownLabel}))->Inc();
}

void HostMetrics::SetCertificateExpiry(std::string_view plugin, int64_t unix_seconds) const {
  if (plugin == kUnknownLabel) return;
  if (auto g = registry_->FindGauge(kCertExpiry, {plugin})) g->Set(static_cast<double>(unix_seconds));
}

void HostMetrics::SetLedgerRows(int64_t rows) const {
  registry_->FindGauge(kLedgerRows, {})->Set(static_cast<double>(rows));
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
