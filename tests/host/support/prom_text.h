// prom_text.h — a small strict parser of the Prometheus text exposition format (0.0.4) for tests:
// it checks what a scraper relies on and returns the samples so tests can assert values.
// Not thread-safe (plain values).
#ifndef CLAWGUARD_TESTS_OPS_SUPPORT_PROM_TEXT_H_
#define CLAWGUARD_TESTS_OPS_SUPPORT_PROM_TEXT_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clawguard::host::testing {

struct PromSample {
  std::string name;                           // e.g. clawguard_x_bucket
  std::map<std::string, std::string> labels;  // unescaped values
  double value = 0;
};

struct PromFamily {
  std::string help;
  std::string type;  // counter, gauge, histogram, ...
};

struct PromText {
  std::map<std::string, PromFamily> families;
  std::vector<PromSample> samples;

  // Value returns the value of sample |name| whose labels are exactly |labels|, or nullopt.
  std::optional<double> Value(std::string_view name,
                              const std::map<std::string, std::string>& labels = {}) const;
  // SeriesCount counts the samples named |name|.
  std::size_t SeriesCount(std::string_view name) const;
};

// ParsePromText parses |text| strictly; on any violation returns nullopt and sets |error| to the
// line number and what was wrong. Checked: line shapes; HELP/TYPE once per family and before its
// samples; metric and label name syntax; label value escapes (\\ \" \n only); no duplicate label
// name in a sample and no duplicate series; every sample belongs to a TYPE'd family (with
// _bucket/_sum/_count for histograms); values parse (+Inf, -Inf, NaN allowed); counters ≥ 0;
// histogram buckets have `le`, are cumulative (non-decreasing), end with le="+Inf", and +Inf
// equals _count; the text ends with a newline.
std::optional<PromText> ParsePromText(std::string_view text, std::string* error);

}  // namespace clawguard::host::testing

#endif  // CLAWGUARD_TESTS_OPS_SUPPORT_PROM_TEXT_H_
