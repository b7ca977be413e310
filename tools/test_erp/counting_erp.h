// counting_erp.h — CountingErp: the request handler of clawguard-test-erp, an idempotent ERP for
// the demo and the benchmarks. Every 2xx answer is an effect, counted per path; a request whose
// Idempotency-Key was already acted on gets the stored answer back and is counted as a duplicate,
// not as an effect (so a correct host shows one effect per key however often it retries).
// `GET /_stats` answers the counters as JSON and is not itself counted.
//
// (tests/host/support/test_erp_server.* is the same idea for in-process tests; it cannot serve
// its own counters over HTTP, which the demo needs, hence this small handler on HttpServer.)
//
// Thread-safe: Handle and StatsJson may run on several handler threads at once (one mutex).
#ifndef CLAWGUARD_TOOLS_TEST_ERP_COUNTING_ERP_H_
#define CLAWGUARD_TOOLS_TEST_ERP_COUNTING_ERP_H_

#include <cstddef>
#include <map>
#include <set>
#include <string>

#include "core/mutex.h"
#include "host/http/http_types.h"

namespace clawguard::tools {

class CountingErp {
 public:
  // kMaxStoredKeys bounds the stored answers (a long benchmark must not grow memory without
  // limit); past it new keys still count effects but their answers are not stored, and
  // StatsJson reports "keys_dropped".
  static constexpr size_t kMaxStoredKeys = 1'000'000;
  // kMaxListedKeys bounds the duplicate keys listed in StatsJson (the count is always exact).
  static constexpr size_t kMaxListedKeys = 100;

  // Handle answers one request: GET /_stats → the counters; anything else → 200 {"ok":true}
  // (an effect), or the stored answer of its Idempotency-Key (a duplicate).
  host::HttpResponse Handle(const host::HttpRequest& request) CLAWGUARD_EXCLUDES(mu_);

  // StatsJson is {"requests", "effects": {path: n}, "effects_total", "keyless_effects",
  // "duplicates", "duplicate_keys": [...], "keys_dropped"}.
  std::string StatsJson() const CLAWGUARD_EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  size_t requests_ CLAWGUARD_GUARDED_BY(mu_) = 0;
  size_t duplicates_ CLAWGUARD_GUARDED_BY(mu_) = 0;
  size_t keyless_effects_ CLAWGUARD_GUARDED_BY(mu_) = 0;
  size_t keys_dropped_ CLAWGUARD_GUARDED_BY(mu_) = 0;
  // By Idempotency-Key.
  std::map<std::string, host::HttpResponse> stored_ CLAWGUARD_GUARDED_BY(mu_);
  std::map<std::string, size_t> effects_by_path_ CLAWGUARD_GUARDED_BY(mu_);
  std::set<std::string> duplicate_keys_ CLAWGUARD_GUARDED_BY(mu_);  // at most kMaxListedKeys
};

}  // namespace clawguard::tools

#endif  // CLAWGUARD_TOOLS_TEST_ERP_COUNTING_ERP_H_
