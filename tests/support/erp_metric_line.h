// erp_metric_line.h — the erp_calls_total line of a Prometheus text rendering (tests).
#ifndef CLAWGUARD_TESTS_SUPPORT_ERP_METRIC_LINE_H_
#define CLAWGUARD_TESTS_SUPPORT_ERP_METRIC_LINE_H_

#include <string>
#include <string_view>

namespace clawguard::testing {

// ErpCallsLine returns the erp_calls_total{…} line of |text| labelled with |endpoint| and
// outcome=|outcome|, or "" when there is none.
inline std::string ErpCallsLine(const std::string& text, std::string_view endpoint,
                                std::string_view outcome) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    if (line.find("erp_calls_total{") != std::string::npos &&
        line.find("\"" + std::string(endpoint) + "\"") != std::string::npos &&
        line.find("outcome=\"" + std::string(outcome) + "\"") != std::string::npos) {
      return line;
    }
    start = end + 1;
  }
  return "";
}

}  // namespace clawguard::testing

#endif  // CLAWGUARD_TESTS_SUPPORT_ERP_METRIC_LINE_H_
