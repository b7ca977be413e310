// host_fixture.h — HostProcess and HostFixture: a real `clawguard host` child process serving the
// signed example plugin (examples/acme-orders) against the test ERP, for the end-to-end tests
// (retry storm, crash and restart, load, `idem confirm`).
//
// HostFixture::Prepare makes a SoftHSM2 token and key, the test PKI, packs and signs the staged
// example plugin (its route level optionally rewritten, e.g. to 3), writes trust.yaml,
// allowlist.yaml and host.yaml (SQLite store in the temp dir) and starts the test ERP.
// StartHost / KillHost / StopHost run the host process; it may be restarted on the same store.
// Not thread-safe except Deliver* / the keep-alive connections, which tests use from threads.
#ifndef CLAWGUARD_TESTS_HOST_SUPPORT_HOST_FIXTURE_H_
#define CLAWGUARD_TESTS_HOST_SUPPORT_HOST_FIXTURE_H_

#include <gtest/gtest.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <spawn.h>

#include "clawguard/clock.h"
#include "clawguard/error.h"
#include "host/app/host_app.h"
#include "support/raw_client.h"
#include "support/temp_dir.h"
#include "support/test_erp_server.h"

namespace clawguard::host::testing {

// OpenSqliteStores opens every store of the host on the SQLite file of a "sqlite:PATH" URL,
// creating its directory (HostApp::Create's store opener for tests that build a HostApp in
// process); any other URL is store_unavailable.
Result<HostStores> OpenSqliteStores(const std::string& url, const Clock& clock);

// SpawnHost starts `clawguard host --config |config|` (CLAWGUARD_CLI_PATH) with this process's
// environment plus |env| and the file actions |fa|; returns posix_spawn's result (0: started).
// |nofile| > 0 starts it under `prlimit --nofile=N:N` (RLIMIT_NOFILE soft and hard N; prlimit
// execs the host, so |pid| is the host's).
int SpawnHost(const std::string& config,
              const std::vector<std::pair<std::string, std::string>>& env,
              const posix_spawn_file_actions_t* fa, pid_t* pid, uint64_t nofile = 0);

// HostProcess runs `clawguard host --config F` with extra environment, reads its first stdout
// line (the listening addresses).
class HostProcess {
 public:
  HostProcess() = default;
  HostProcess(const HostProcess&) = delete;
  HostProcess& operator=(const HostProcess&) = delete;
  ~HostProcess() { (void)Stop(); }

  bool Start(const std::string& config, const std::vector<std::pair<std::string, std::string>>& env,
             uint64_t nofile = 0);
  // Stop sends SIGTERM and waits; returns the exit code (128 + signal if killed), -1 if not
  // running.
  int Stop() { return Signal(15); }
  // Kill sends SIGKILL and waits (a crash: nothing is flushed or stopped gracefully).
  int Kill() { return Signal(9); }
  const std::string& first_line() const { return first_line_; }
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

 private:
  int Signal(int sig);
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string first_line_;
};

struct HostFixtureOptions {
  int level = 2;              // the example route's idempotency level in the signed manifest
  std::string lease = "30s";  // idempotency.lease
  std::string handler_timeout = "5s";  // plugins.handler_timeout (< lease)
  std::string erp_timeout = "5s";      // erp.timeout
  std::string erp_retry = "{ base: 1s, max: 1m, attempts: 3, jitter: 20%, floor_429: 60s }";
  int workers = 4;
  std::string execution = "threads";  // listen.execution: threads or fibers (then 2 carriers)
  std::string listen_extra;  // more `listen:` settings, e.g. ", max_connections_per_peer: 64"
  uint64_t nofile = 0;       // > 0: the host runs under RLIMIT_NOFILE N (soft and hard)
  // plugin_source: package tests/host/plugins/NAME.c (built as a shipped plugin is) in place of
  // the example's library, under the example's manifest (name, route, capabilities).
  std::string plugin_source;
  std::vector<std::pair<std::string, std::string>> extra_env;  // more environment for the host
  // more_versions: other releases of the example plugin, packed and signed by Prepare with the
  // same key into dir()/versions/ (not plugins.dir: a test moves one there) and allowlisted —
  // each a version and the capability lines its manifest no longer has.
  struct Version {
    std::string version;
    std::vector<std::string> drop_capabilities;  // e.g. "POST /orders/{id}/fulfil"
  };
  std::vector<Version> more_versions;
  std::string isolation = "sandbox";  // plugins.isolation: sandbox or none
  std::string plugins_extra;          // more `plugins:` settings, e.g. ", memory_limit: 256MiB"
};

// WorkerPath is the clawguard-worker built beside the clawguard command (plugins.worker for a
// host that runs inside a test binary, which finds no worker beside itself).
std::string WorkerPath();

// KillWorkersOf SIGKILLs every plugin worker (a clawguard-worker child) of the host |host| and
// returns how many it killed.
int KillWorkersOf(pid_t host);

// ExecutionTest runs a host test once per listen.execution: INSTANTIATE_TEST_SUITE_P(Execution,
// Suite, Executions(), ExecutionName) for `class Suite : public ExecutionTest {}`.
class ExecutionTest : public ::testing::TestWithParam<std::string> {
 protected:
  HostFixtureOptions Options() const {
    HostFixtureOptions o;
    o.execution = GetParam();
    if (GetParam() == "threads_in_process") {
      o.execution = "threads";
      o.isolation = "none";
    }
    return o;
  }
};
inline auto Executions() {
  return ::testing::Values(std::string("threads"), std::string("fibers"));
}
// ExecutionsAndInProcess adds plugins.isolation: none (threads) to Executions: the example plugin
// runs unchanged in its worker and inside the host.
inline auto ExecutionsAndInProcess() {
  return ::testing::Values(std::string("threads"), std::string("fibers"),
                           std::string("threads_in_process"));
}
inline std::string ExecutionName(const ::testing::TestParamInfo<std::string>& i) { return i.param; }

// Reply is one HTTP answer as a test client saw it.
struct Reply {
  bool ok = false;  // false: no answer (connection failed or closed)
  int status = 0;
  std::string body;
  bool replayed = false;  // Idempotent-Replayed: true
};

class HostFixture {
 public:
  static constexpr std::string_view kHookKey =
      "0123456789abcdef0123456789abcdef";  // the route's HMAC key
  static constexpr const char* kAdminToken = "e2e-admin-token-0123456789abcdefghijkl";
  static constexpr const char* kErpAuth = "Bearer e2e-erp-token-0123456789abcdef";
  static constexpr const char* kRoutePath = "/webhooks/acme-orders/order.created";

  // Prepare: see the file comment. Use as ASSERT_NO_FATAL_FAILURE(fixture.Prepare(options)).
  void Prepare(const HostFixtureOptions& options = {});
  // StartHost starts the host process on the prepared config (again after a kill); false on
  // failure.
  bool StartHost();
  int StopHost() { return host_->Stop(); }
  int KillHost() { return host_->Kill(); }

  TestErpServer& erp() { return *erp_; }
  uint16_t main_port() const { return main_port_; }
  uint16_t admin_port() const { return admin_port_; }
  pid_t host_pid() const { return host_->pid(); }
  // env is what the host is started with in addition to this process's environment.
  const std::vector<std::pair<std::string, std::string>>& env() const { return env_; }
  std::string db_path() const { return dir_.Sub("state/state.db"); }
  std::string audit_log() const { return dir_.Sub("audit.jsonl"); }
  // PluginPackage is the package Prepare put in plugins.dir (acme-orders 1.4.2).
  std::string PluginPackage() const { return dir_.Sub("plugins/acme-orders-1.4.2.claw"); }
  // VersionPackage is the package of a HostFixtureOptions::more_versions entry (its .sig beside
  // it).
  std::string VersionPackage(const std::string& version) const {
    return dir_.Sub("versions/acme-orders-" + version + ".claw");
  }
  const clawguard::testing::TempDir& dir() const { return dir_; }

  // OrderBody is an order.created event for |order_id| (the business key /order_id).
  static std::string OrderBody(const std::string& order_id);
  // SignedRequest renders a delivery of |body| as |webhook_id|, freshly signed now.
  static std::string SignedRequest(const std::string& webhook_id, const std::string& body);
  // Deliver sends one delivery on a fresh connection.
  Reply Deliver(const std::string& webhook_id, const std::string& body) const;
  // DeliverOn sends one delivery on a kept-alive |conn|.
  static Reply DeliverOn(RawConnection& conn, const std::string& webhook_id,
                         const std::string& body);
  // DeliverUntilStored retries (as a platform does, pausing |pause_ms| between attempts) until the
  // answer is 2xx or 4xx other than 409, or |max_attempts| are spent; returns the last answer.
  Reply DeliverUntilStored(const std::string& webhook_id, const std::string& body,
                           int max_attempts = 300, int pause_ms = 200) const;

 private:
  clawguard::testing::TempDir dir_;
  std::unique_ptr<TestErpServer> erp_;
  std::unique_ptr<HostProcess> host_ = std::make_unique<HostProcess>();
  std::vector<std::pair<std::string, std::string>> env_;
  uint16_t main_port_ = 0;
  uint16_t admin_port_ = 0;
  uint64_t nofile_ = 0;
};

// MainPort returns the main listener's port from the first line |p| printed, 0 if it has none.
uint16_t MainPort(const HostProcess& p);
// DeliverTo sends one signed delivery (HostFixture::DeliverOn) to the host on |port| on a new
// connection; an empty Reply if it cannot connect.
Reply DeliverTo(uint16_t port, const std::string& webhook_id, const std::string& body);

}  // namespace clawguard::host::testing

#endif  // CLAWGUARD_TESTS_HOST_SUPPORT_HOST_FIXTURE_H_
