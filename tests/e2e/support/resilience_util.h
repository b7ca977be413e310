// resilience_util.h — small helpers shared by the resilience tests that drive real host
// processes: bounded polling and edits of the fixture's host.yaml.
#ifndef CLAWGUARD_TESTS_RESILIENCE_SUPPORT_RESILIENCE_UTIL_H_
#define CLAWGUARD_TESTS_RESILIENCE_SUPPORT_RESILIENCE_UTIL_H_

#include <chrono>
#include <string>
#include <thread>

#include "support/host_fixture.h"
#include "support/temp_dir.h"

namespace clawguard::host::testing {

// WaitFor polls |done| every 20 ms until it is true or |guard| passed; returns done(). The guard
// only keeps a broken system from hanging a test; it is never a measured duration.
template <typename Fn>
bool WaitFor(Fn done, std::chrono::milliseconds guard = std::chrono::seconds(30)) {
  const auto until = std::chrono::steady_clock::now() + guard;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

// ReplaceInHostYaml replaces the first |from| in the fixture's host.yaml with |to|; false if
// |from| is not there.
inline bool ReplaceInHostYaml(const HostFixture& f, const std::string& from,
                              const std::string& to) {
  const std::string path = f.dir().Sub("host.yaml");
  std::string yaml = clawguard::testing::ReadFile(path);
  const size_t at = yaml.find(from);
  if (at == std::string::npos) return false;
  yaml.replace(at, from.size(), to);
  clawguard::testing::WriteFile(path, yaml);
  return true;
}

// RaiseBreakerThresholds makes the fixture's breakers practically never open, for tests about
// effectively-once delivery rather than breaker timing (a breaker cool-down would stretch the
// recovery past a test's budget). Best effort: a fixture without these lines is left as is.
inline void RaiseBreakerThresholds(const HostFixture& f) {
  (void)ReplaceInHostYaml(f, "key: { failures: 3,", "key: { failures: 1000000,");
  (void)ReplaceInHostYaml(f, "erp: { failures: 10,", "erp: { failures: 1000000,");
}

}  // namespace clawguard::host::testing

#endif  // CLAWGUARD_TESTS_RESILIENCE_SUPPORT_RESILIENCE_UTIL_H_
