// metrics.h — a small metrics registry of counters, gauges and histograms whose label sets are
// declared up front, rendered in the Prometheus text exposition format (version 0.0.4). The host's
// own metrics (HostMetrics, every metric of ARCHITECTURE.md) are declared in
// host/observe/host_metrics.h.
//
// Cardinality: every series exists from Create on; looking up an undeclared label tuple finds
// nothing, so a value a request makes up can never become a new series.
//
// Thread-safety: the registry's structure is immutable after Create; every update is one relaxed
// atomic operation on a series found by one hash lookup (no lock), so any thread may update and
// render at once. A render is not a snapshot across series (Prometheus tolerates that); a
// histogram's _count is derived from its buckets so the two always agree.
#ifndef CLAWGUARD_HOST_OBSERVE_METRICS_H_
#define CLAWGUARD_HOST_OBSERVE_METRICS_H_

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
#include "host/http/http_types.h"

namespace clawguard::host {

// Limits on what a registry may declare (the names come from configuration and manifests).
inline constexpr uint64_t kMaxMetricSeriesPerFamily = 200'000;
inline constexpr uint64_t kMaxMetricLabelValueBytes = 512;
inline constexpr uint64_t kMaxHistogramBuckets = 64;

// kUnknownLabel is the label value that stands for any value the host does not know.
inline constexpr std::string_view kUnknownLabel = "_unknown";
// kPrometheusContentType is the Content-Type of RenderPrometheus output.
inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

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
  std::atomic<uint64_t> count{0};  // counter value; histogram: unused (derived from buckets)
  std::atomic<double> value{0.0};  // gauge value; histogram: sum of observations
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

// CheckMetricLabelValue: 1..kMaxMetricLabelValueBytes bytes, no control character; kConfigInvalid
// naming |family| otherwise.
Status CheckMetricLabelValue(std::string_view family, std::string_view value);

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
  std::optional<Counter> FindCounter(std::string_view name,
                                     std::initializer_list<std::string_view> labels) const;
  std::optional<Gauge> FindGauge(std::string_view name,
                                 std::initializer_list<std::string_view> labels) const;
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
  MetricSeries* Find(std::string_view name, MetricType type,
                     std::initializer_list<std::string_view> labels, const Family** family) const;

  std::vector<std::unique_ptr<Family>> families_;
  std::unordered_map<std::string, const Family*> by_name_;
};

}  // namespace clawguard::host

// Compatibility: code written before the split includes this header for HostMetrics.
#include "host/observe/host_metrics.h"  // IWYU pragma: export

#endif  // CLAWGUARD_HOST_OBSERVE_METRICS_H_
