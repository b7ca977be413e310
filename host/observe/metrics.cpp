// metrics.cpp — metrics registry and Prometheus text rendering (see metrics.h).
#include "host/observe/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

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
    const bool alpha =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':');
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

Status ValidLabelValue(std::string_view family, std::string_view v) {
  if (v.empty() || v.size() > kMaxMetricLabelValueBytes) {
    return Status(Reason::kConfigInvalid, "metric " + std::string(family) +
                                              ": a label value must be 1.." +
                                              std::to_string(kMaxMetricLabelValueBytes) + " bytes");
  }
  for (unsigned char c : v) {
    if (c < 0x20 || c == 0x7f) {
      return Status(Reason::kConfigInvalid, "metric " + std::string(family) +
                                                ": a label value contains a control character");
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
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out.push_back(c);
  }
  return out;
}

// EscapeLabel escapes `\`, `"` and newline (text format: label values).
std::string EscapeLabel(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out.push_back(c);
  }
  return out;
}

void AppendLabels(std::string& out, const std::vector<std::string>& names,
                  const std::vector<std::string>& values, std::string_view le = {}) {
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
  if (!ValidName(s.name, /*allow_colon=*/true))
    return bad("the name is not a Prometheus metric name");
  std::set<std::string> seen;
  for (const auto& l : s.label_names) {
    if (!ValidName(l, /*allow_colon=*/false) || l.starts_with("__"))
      return bad("bad label name '" + l + "'");
    if (s.type == MetricType::kHistogram && l == "le")
      return bad("a histogram may not have a label 'le'");
    if (!seen.insert(l).second) return bad("label '" + l + "' declared twice");
  }
  if (s.label_names.empty() && !s.series.empty())
    return bad("an unlabelled family declares no series");
  if (!s.label_names.empty() && s.series.empty())
    return bad("a labelled family needs at least one series");
  if (s.series.size() > kMaxMetricSeriesPerFamily) {
    return bad(std::to_string(s.series.size()) + " series, at most " +
               std::to_string(kMaxMetricSeriesPerFamily));
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

Status CheckMetricLabelValue(std::string_view family, std::string_view value) {
  return ValidLabelValue(family, value);
}

void Histogram::Observe(double v) const {
  if (s_ == nullptr || std::isnan(v)) return;
  const auto it = std::lower_bound(bounds_->begin(), bounds_->end(), v);  // first bound ≥ v (le)
  s_->buckets[static_cast<std::size_t>(it - bounds_->begin())].fetch_add(1,
                                                                         std::memory_order_relaxed);
  s_->value.fetch_add(v, std::memory_order_relaxed);
}

uint64_t Histogram::Count() const {
  if (s_ == nullptr) return 0;
  uint64_t n = 0;
  for (std::size_t i = 0; i <= bounds_->size(); ++i)
    n += s_->buckets[i].load(std::memory_order_relaxed);
  return n;
}

Result<std::unique_ptr<MetricsRegistry>> MetricsRegistry::Create(
    std::vector<MetricFamilySpec> specs) {
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
        return Status(Reason::kConfigInvalid,
                      "metric " + s.name + ": a series has " + std::to_string(tuple.size()) +
                          " label values, expected " + std::to_string(s.label_names.size()));
      }
      for (const auto& v : tuple) CLAWGUARD_RETURN_IF_ERROR(ValidLabelValue(s.name, v));
      auto series = std::make_unique<MetricSeries>();
      if (s.type == MetricType::kHistogram) {
        series->buckets = std::make_unique<std::atomic<uint64_t>[]>(s.buckets.size() + 1);
      }
      series->labels = std::move(tuple);
      if (!family->index.emplace(JoinKey(series->labels), series.get()).second) {
        return Status(Reason::kConfigInvalid,
                      "metric " + s.name + ": a label tuple is declared twice");
      }
      family->series.push_back(std::move(series));
    }
    reg->by_name_.emplace(s.name, family.get());
    reg->families_.push_back(std::move(family));
  }
  return reg;
}

MetricSeries* MetricsRegistry::Find(std::string_view name, MetricType type,
                                    std::initializer_list<std::string_view> labels,
                                    const Family** family) const {
  const auto f = by_name_.find(std::string(name));
  if (f == by_name_.end() || f->second->spec.type != type) return nullptr;
  if (labels.size() != f->second->spec.label_names.size()) return nullptr;
  const auto s = f->second->index.find(JoinKey(labels));
  if (s == f->second->index.end()) return nullptr;
  *family = f->second;
  return s->second;
}

std::optional<Counter> MetricsRegistry::FindCounter(
    std::string_view name, std::initializer_list<std::string_view> labels) const {
  const Family* f = nullptr;
  MetricSeries* s = Find(name, MetricType::kCounter, labels, &f);
  if (s == nullptr) return std::nullopt;
  return Counter(s);
}

std::optional<Gauge> MetricsRegistry::FindGauge(
    std::string_view name, std::initializer_list<std::string_view> labels) const {
  const Family* f = nullptr;
  MetricSeries* s = Find(name, MetricType::kGauge, labels, &f);
  if (s == nullptr) return std::nullopt;
  return Gauge(s);
}

std::optional<Histogram> MetricsRegistry::FindHistogram(
    std::string_view name, std::initializer_list<std::string_view> labels) const {
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
          AppendLabels(out, s.label_names, series->labels,
                       i < s.buckets.size() ? FormatNumber(s.buckets[i]) : "+Inf");
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

}  // namespace clawguard::host
