// host_sandbox_e2e_test.cpp — a sandboxed plugin that crashes on every delivery, in a real
// `clawguard host` (plugins.isolation: sandbox, the default) with a signed plugin built from
// tests/host/plugins/hostile.c: each crash is answered 503 plugin_unavailable and counted as a
// worker fault; max_faults (5) deaths within fault_window mark the plugin failed, after which its
// route answers 503 at once (no new worker), /readyz and /ops say "failed", the audit has one
// plugin_failed line, and the host itself keeps serving and stops cleanly. And a worker whose
// plugin made its own exit fail dies with a host that is killed.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "host/sandbox/worker_cgroup.h"
#include "support/gate.h"
#include "support/host_fixture.h"
#include "support/raw_client.h"
#include "support/temp_dir.h"

namespace clawguard::host {
namespace {

namespace ht = clawguard::host::testing;
using ht::HostFixture;
using ht::HostFixtureOptions;

std::string Attack(const std::string& order, const std::string& attack,
                   const std::string& arg = "") {
  return R"({"type":"order.created","order_id":")" + order + R"(","attack":")" + attack +
         R"(","arg":")" + arg + R"("})";
}

ht::RawResponse AdminGet(const HostFixture& fixture, const std::string& path) {
  auto c = ht::RawConnection::Connect(fixture.admin_port());
  if (c == nullptr || !c->Send(ht::SimpleRequest("GET", path, "",
                                                 std::string("Authorization: Bearer ") +
                                                     HostFixture::kAdminToken + "\r\n"))) {
    return {};
  }
  return c->ReadResponse();
}

nlohmann::json ReadyJson(const HostFixture& fixture) {
  const ht::RawResponse ready = AdminGet(fixture, "/readyz");
  return ready.ok ? nlohmann::json::parse(ready.body, nullptr, false) : nlohmann::json();
}

TEST(HostSandboxE2eTest, ACrashLoopingPluginIsFailedAnsweredAndShownWhileTheHostServes) {
  HostFixture fixture;
  HostFixtureOptions o;
  o.plugin_source = "hostile";
  ASSERT_NO_FATAL_FAILURE(fixture.Prepare(o));
  ASSERT_TRUE(fixture.StartHost());

  const ht::Reply fine = fixture.Deliver("msg_fine", Attack("0", "none"));
  ASSERT_TRUE(fine.ok);
  EXPECT_EQ(fine.status, 200) << fine.body;

  // Crashes until the plugin is failed, paced as a retrying platform is: a delivery that comes
  // while the worker waits out its restart backoff is answered 503 without reaching a worker.
  constexpr int kMaxFaults = 5;  // plugins.max_faults' default
  bool failed = false;
  for (int i = 0; i < 200 && !failed; ++i) {
    const ht::Reply crash =
        fixture.Deliver("msg_crash_" + std::to_string(i), Attack(std::to_string(i + 1), "segv"));
    ASSERT_TRUE(crash.ok) << i;
    EXPECT_EQ(crash.status, 503) << crash.body;
    EXPECT_NE(crash.body.find("/plugin_unavailable\""), std::string::npos) << crash.body;
    const nlohmann::json r = ReadyJson(fixture);
    failed = r.is_object() && r["plugins"][0]["state"] == "failed";
    if (!failed) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(failed);
  // Failed: no new worker, the route answers 503 at once, also for a harmless delivery.
  const ht::Reply after = fixture.Deliver("msg_after", Attack("9", "none"));
  ASSERT_TRUE(after.ok);
  EXPECT_EQ(after.status, 503) << after.body;
  EXPECT_NE(after.body.find("/plugin_unavailable\""), std::string::npos) << after.body;

  const nlohmann::json r = ReadyJson(fixture);
  ASSERT_TRUE(r.is_object());
  ASSERT_EQ(r["plugins"].size(), 1u) << r.dump();
  EXPECT_EQ(r["plugins"][0]["isolation"], "sandbox");
  EXPECT_EQ(r["plugins"][0]["state"], "failed");
  EXPECT_EQ(r["plugins"][0]["worker_faults"], kMaxFaults);

  const ht::RawResponse ops = AdminGet(fixture, "/ops");
  ASSERT_TRUE(ops.ok);
  EXPECT_NE(ops.body.find("<td>sandbox</td><td class=\"bad\">failed</td><td>5</td>"),
            std::string::npos)
      << ops.body;

  const ht::RawResponse metrics = AdminGet(fixture, "/metrics");
  ASSERT_TRUE(metrics.ok);
  EXPECT_NE(
      metrics.body.find("clawguard_plugin_faults_total{plugin=\"acme-orders\",cause=\"crash\"} 5"),
      std::string::npos)
      << metrics.body;

  EXPECT_EQ(fixture.StopHost(), 0);
  const std::string audit = clawguard::testing::ReadFile(fixture.audit_log());
  size_t failed_lines = 0;
  for (size_t at = audit.find("\"event\":\"plugin_failed\""); at != std::string::npos;
       at = audit.find("\"event\":\"plugin_failed\"", at + 1)) {
    ++failed_lines;
  }
  EXPECT_EQ(failed_lines, 1u) << audit;
}

// The plugin's worker SIGKILLed three times mid-storm (under plugins.max_faults), also while
// calls are in flight: the deliveries it held are answered 503 and retried as a platform does,
// and every ERP call still has exactly one effect (SQLite; the PostgreSQL run is
// MultiHostTest.SigkillOfPluginWorkersMidStormKeepsOneEffectPerEvent).
TEST(HostSandboxE2eTest, WorkerKillsMidStormKeepOneEffectPerCall) {
  HostFixture fixture;
  HostFixtureOptions o;
  o.lease = "2s";
  o.handler_timeout = "1s";
  o.erp_timeout = "1s";  // a send cut by a kill is owned for erp.timeout before it is resent
  o.erp_retry = "{ base: 200ms, max: 1s, attempts: 5, jitter: 20%, floor_429: 1s }";
  ASSERT_NO_FATAL_FAILURE(fixture.Prepare(o));
  ASSERT_TRUE(fixture.StartHost());
  constexpr int kEvents = 30;
  constexpr int kDeliveriesPerEvent = 3;
  constexpr int kClients = 6;
  std::vector<int> work;
  for (int e = 0; e < kEvents; ++e) {
    for (int d = 0; d < kDeliveriesPerEvent; ++d) work.push_back(e);
  }
  std::atomic<size_t> next{0};
  std::atomic<int> stored{0}, failures{0};
  std::mutex kill_mu;
  int kills = 0;
  std::vector<std::thread> clients;
  clients.reserve(kClients);
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&] {
      for (size_t i = next++; i < work.size(); i = next++) {
        const ht::Reply r = fixture.DeliverUntilStored(
            "msg_storm_" + std::to_string(work[i]),
            HostFixture::OrderBody("ord_" + std::to_string(work[i])), 600, 50);
        if (!r.ok || r.status != 200) {
          ++failures;
          continue;
        }
        const int n = ++stored;
        std::lock_guard lock(kill_mu);
        // A kill finds no worker while one restarts: the next stored answer tries again.
        if (kills < 3 && n >= (kills + 1) * kEvents / 2 &&
            ht::KillWorkersOf(fixture.host_pid()) > 0) {
          ++kills;
        }
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(kills, 3);
  for (int e = 0; e < kEvents; ++e) {
    EXPECT_EQ(fixture.erp().effects("/orders/ord_" + std::to_string(e) + "/fulfil"), 1u) << e;
  }
  EXPECT_EQ(fixture.erp().effects("/inventory/adjust"), static_cast<size_t>(kEvents));
  EXPECT_TRUE(fixture.erp().AtMostOneEffectPerKey());
  EXPECT_EQ(fixture.StopHost(), 0);
}

// A plugin that tries to make its own exit fail (a seccomp filter of its own, so that a thread
// of it lives on) is refused: installing a filter is a forbidden call. And a worker never
// outlives a host that crashed: its parent-death signal ends it.
TEST(HostSandboxE2eTest, AWorkerHoldingKernelMemoryPastItsLimitIsEndedAndAudited) {
  auto cgroups = sandbox::WorkerCgroups::Open();
  if (!cgroups.ok()) GTEST_SKIP() << cgroups.error().message();
  const std::string where = (*cgroups)->location().dir;
  HostFixture fixture;
  HostFixtureOptions o;
  o.plugin_source = "hostile";
  o.plugins_extra = ", memory_limit: 256MiB, memory_cgroup: required";
  ASSERT_NO_FATAL_FAILURE(fixture.Prepare(o));
  ASSERT_TRUE(fixture.StartHost());
  // 40,000 pages a GiB apart: 160 MiB to RLIMIT_AS, 320 MiB of page tables to the kernel.
  const ht::Reply r = fixture.Deliver("msg_pt", Attack("1", "page_tables", "40000"));
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 503) << r.body;
  ASSERT_TRUE(clawguard::testing::WaitFor([&] {
    return clawguard::testing::ReadFile(fixture.audit_log()).find("\"cause\":\"memory\"") !=
           std::string::npos;
  })) << clawguard::testing::ReadFile(fixture.audit_log());
  const std::string log = clawguard::testing::ReadFile(fixture.audit_log());
  EXPECT_NE(log.find("\"memory_cgroup\":\"cgroup v"), std::string::npos) << log;
  EXPECT_NE(log.find("limit of 268435456 bytes"), std::string::npos) << log;
  const ht::RawResponse metrics = AdminGet(fixture, "/metrics");
  ASSERT_TRUE(metrics.ok);
  EXPECT_NE(
      metrics.body.find("clawguard_plugin_faults_total{plugin=\"acme-orders\",cause=\"memory\"} 1"),
      std::string::npos)
      << metrics.body;
  // The platform's retry of a well-behaved event is served by a new worker.
  const ht::Reply served = fixture.DeliverUntilStored("msg_next", Attack("2", "none"));
  EXPECT_EQ(served.status, 200) << served.body;
  const std::string mine = "clawguard-worker-" + std::to_string(fixture.host_pid()) + "-";
  EXPECT_EQ(fixture.StopHost(), 0);
  // Every worker's cgroup went with its worker.
  for (const auto& e : std::filesystem::directory_iterator(where)) {
    EXPECT_EQ(e.path().filename().string().rfind(mine, 0), std::string::npos) << e.path();
  }
}

TEST(HostSandboxE2eTest, AWorkerCannotBlockItsOwnExitAndDiesWithItsHost) {
  HostFixture fixture;
  HostFixtureOptions o;
  o.plugin_source = "hostile";
  ASSERT_NO_FATAL_FAILURE(fixture.Prepare(o));
  ASSERT_TRUE(fixture.StartHost());
  const ht::Reply armed = fixture.Deliver("msg_outlive", Attack("1", "outlive"));
  ASSERT_TRUE(armed.ok);
  EXPECT_EQ(armed.status, 503) << armed.body;
  ASSERT_TRUE(clawguard::testing::WaitFor([&] {
    const std::string log = clawguard::testing::ReadFile(fixture.audit_log());
    return log.find("\"syscall\":" + std::to_string(SYS_seccomp)) != std::string::npos;
  })) << clawguard::testing::ReadFile(fixture.audit_log());
  // A new worker serves the next event; it is the one the host's death must end.
  const ht::Reply served = fixture.DeliverUntilStored("msg_next", Attack("2", "none"));
  ASSERT_EQ(served.status, 200) << served.body;

  pid_t worker = -1;
  std::istringstream audit(clawguard::testing::ReadFile(fixture.audit_log()));
  for (std::string line; std::getline(audit, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("event", "") == "plugin_worker_started") worker = j["pid"];
  }
  ASSERT_GT(worker, 0);
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, worker, 0));
  ASSERT_GE(pidfd, 0) << "the worker is not running";
  EXPECT_EQ(fixture.KillHost(), 128 + SIGKILL);
  pollfd p{pidfd, POLLIN, 0};
  const int ready = ::poll(&p, 1, 30'000);  // readable once the worker has exited
  ::close(pidfd);
  EXPECT_EQ(ready, 1) << "worker " << worker << " outlived its host";
}

}  // namespace
}  // namespace clawguard::host
