// grafana_dashboard_test.cpp — docs/grafana/clawguard-dashboard.json is valid JSON, every metric
// its queries use is declared by HostMetrics (histogram series through _bucket/_sum/_count), and
// every declared metric is on the dashboard.
#include <gtest/gtest.h>

#include <cctype>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "host/observe/host_metrics.h"
#include "support/temp_dir.h"

namespace clawguard::host {
namespace {

void CollectExprs(const nlohmann::json& j, std::vector<std::string>* out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      if (k == "expr" && v.is_string())
        out->push_back(v.get<std::string>());
      else
        CollectExprs(v, out);
    }
  } else if (j.is_array()) {
    for (const auto& v : j) CollectExprs(v, out);
  }
}

// MetricNames returns the identifiers starting with "clawguard_" in a PromQL expression.
std::vector<std::string> MetricNames(const std::string& expr) {
  std::vector<std::string> names;
  for (std::size_t at = expr.find("clawguard_"); at != std::string::npos;
       at = expr.find("clawguard_", at + 1)) {
    if (at > 0 && (std::isalnum(static_cast<unsigned char>(expr[at - 1])) || expr[at - 1] == '_'))
      continue;
    std::size_t end = at;
    while (end < expr.size() &&
           (std::isalnum(static_cast<unsigned char>(expr[end])) || expr[end] == '_'))
      ++end;
    names.push_back(expr.substr(at, end - at));
  }
  return names;
}

TEST(GrafanaDashboardTest, QueriesOnlyDeclaredMetricsAndCoversThemAll) {
  const std::string text = clawguard::testing::ReadFile(std::string(CLAWGUARD_SOURCE_DIR) +
                                                        "/docs/grafana/clawguard-dashboard.json");
  ASSERT_FALSE(text.empty()) << "docs/grafana/clawguard-dashboard.json is missing";
  const auto dashboard = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(dashboard.is_discarded()) << "the dashboard is not valid JSON";
  ASSERT_TRUE(dashboard.contains("panels"));
  EXPECT_FALSE(dashboard.value("title", "").empty());

  auto metrics = HostMetrics::Create(MetricsNames{});
  ASSERT_TRUE(metrics.ok());
  std::set<std::string> declared, histograms;
  for (const auto& name : (*metrics)->registry().FamilyNames()) declared.insert(name);
  std::istringstream rendered((*metrics)->RenderPrometheus());
  for (std::string line; std::getline(rendered, line);) {
    if (line.starts_with("# TYPE ") && line.ends_with(" histogram")) {
      histograms.insert(line.substr(7, line.size() - 7 - 10));
    }
  }
  ASSERT_FALSE(histograms.empty());

  std::vector<std::string> exprs;
  CollectExprs(dashboard, &exprs);
  ASSERT_FALSE(exprs.empty());
  std::set<std::string> used;
  for (const auto& expr : exprs) {
    const auto names = MetricNames(expr);
    EXPECT_FALSE(names.empty()) << "a query uses no ClawGuard metric: " << expr;
    for (std::string name : names) {
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        const std::string s(suffix);
        if (name.ends_with(s) && histograms.count(name.substr(0, name.size() - s.size())) != 0) {
          name.resize(name.size() - s.size());
        }
      }
      EXPECT_EQ(declared.count(name), 1u)
          << "the dashboard queries undeclared metric " << name << " in " << expr;
      used.insert(name);
    }
  }
  for (const auto& name : declared)
    EXPECT_EQ(used.count(name), 1u) << name << " is not on the dashboard";
}

}  // namespace
}  // namespace clawguard::host
