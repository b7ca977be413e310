// counting_erp.cpp — see counting_erp.h.
#include "test_erp/counting_erp.h"

#include <nlohmann/json.hpp>

namespace clawguard::tools {

host::HttpResponse CountingErp::Handle(const host::HttpRequest& request) {
  if (request.method == "GET" && request.target == "/_stats") {
    host::HttpResponse stats;
    stats.headers.Set("Content-Type", "application/json");
    stats.body = StatsJson();
    return stats;
  }
  MutexLock lock(mu_);
  ++requests_;
  const std::optional<std::string_view> key = request.headers.Get("Idempotency-Key");
  if (key) {
    auto stored = stored_.find(std::string(*key));
    if (stored != stored_.end()) {
      ++duplicates_;
      if (duplicate_keys_.size() < kMaxListedKeys) duplicate_keys_.emplace(*key);
      return stored->second;
    }
  }
  host::HttpResponse response;
  response.headers.Set("Content-Type", "application/json");
  response.body = R"({"ok":true})";
  ++effects_by_path_[request.target];
  if (!key) {
    ++keyless_effects_;
  } else if (stored_.size() < kMaxStoredKeys) {
    stored_.emplace(std::string(*key), response);
  } else {
    ++keys_dropped_;
  }
  return response;
}

std::string CountingErp::StatsJson() const {
  MutexLock lock(mu_);
  nlohmann::json effects = nlohmann::json::object();
  size_t total = 0;
  for (const auto& [path, n] : effects_by_path_) {
    effects[path] = n;
    total += n;
  }
  return nlohmann::json{{"requests", requests_},        {"effects", effects},
                        {"effects_total", total},       {"keyless_effects", keyless_effects_},
                        {"duplicates", duplicates_},    {"duplicate_keys", duplicate_keys_},
                        {"keys_dropped", keys_dropped_}}
      .dump();
}

}  // namespace clawguard::tools
