// multihost_test.cpp — two `clawguard host` processes sharing one PostgreSQL database (a fresh
// database on the pg_cluster fixture), the signed example plugin and one test ERP: a storm of
// 1,000 events × 5 deliveries spread at random over both hosts reaches the ERP exactly once per
// effect; with one host SIGKILLed mid-storm, the survivor takes over the expired leases and
// every event still has exactly one effect; and PostgreSQL stopped under running hosts is 503,
// then both recover by themselves with no lost 2xx and no double effect.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "clawguard/encoding.h"
#include "pg/support/pg_test_db.h"
#include "postgresql/pg_conn.h"
#include "support/host_fixture.h"

namespace clawguard::host {
namespace {

using clawguard::testing::ReadFile;
using clawguard::testing::WriteFile;
using testing::HostFixture;
using testing::HostProcess;
using testing::Reply;

constexpr int kEvents = 1000;
constexpr int kDeliveriesPerEvent = 5;
constexpr int kClients = 8;

// PointAtPostgres rewrites the fixture's host.yaml from its SQLite store to |url|.
void PointAtPostgres(const HostFixture& f, const std::string& url) {
  const std::string path = f.dir().Sub("host.yaml");
  std::string yaml = ReadFile(path);
  const std::string from = "store: sqlite:state/state.db\n";
  const size_t at = yaml.find(from);
  ASSERT_NE(at, std::string::npos) << "host.yaml no longer has the SQLite store line: " << yaml;
  yaml.replace(at, from.size(), "store: " + url + "\n");
  WriteFile(path, yaml);
}

// HostEnv is the secrets' environment of the fixture's host.yaml (values for test only).
std::vector<std::pair<std::string, std::string>> HostEnv() {
  return {{"E2E_ADMIN", "multihost-admin-token-0123456789abcdefgh"},
          {"E2E_SECRET", "whsec_" + Base64Encode(HostFixture::kHookKey)},
          {"E2E_ERP", "Bearer e2e-erp-token-0123456789abcdef"}};
}

using testing::MainPort;

using testing::DeliverTo;

struct StormResult {
  int processed = 0;  // 200 not replayed
  int replayed = 0;   // 200 with Idempotent-Replayed
  int failures = 0;
  std::string first_failure;
};

class MultiHostTest : public ::testing::Test {
 protected:
  // StartHosts starts both hosts on |url| (default: this test's database on the fixture cluster).
  void StartHosts(const testing::HostFixtureOptions& options = {}, std::string url = "") {
    if (url.empty()) url = db_.url();
    ASSERT_FALSE(url.empty());
    ASSERT_NO_FATAL_FAILURE(f_.Prepare(options));
    ASSERT_NO_FATAL_FAILURE(PointAtPostgres(f_, url));
    for (auto& h : hosts_) {
      ASSERT_TRUE(h.Start(f_.dir().Sub("host.yaml"), HostEnv())) << ReadFile(f_.audit_log());
      ports_.push_back(MainPort(h));
      ASSERT_NE(ports_.back(), 0) << h.first_line();
    }
  }

  // Storm sends every delivery of |events| events (shuffled) from kClients threads, each to a
  // random host; no answer (a dead host) or a 409 (the other host holds the lease) is retried,
  // as a platform does. |after_each| runs after every stored answer with the count so far.
  StormResult Storm(int events, const std::function<void(int)>& after_each = nullptr) {
    std::vector<int> work;
    for (int e = 0; e < events; ++e) {
      for (int d = 0; d < kDeliveriesPerEvent; ++d) work.push_back(e);
    }
    std::mt19937 shuffle_rng(20261202);
    std::shuffle(work.begin(), work.end(), shuffle_rng);
    std::atomic<size_t> next{0};
    std::atomic<int> processed{0}, replayed{0}, failures{0}, stored{0};
    std::mutex mu;
    std::string first_failure;
    std::vector<std::thread> clients;
    clients.reserve(kClients);
    for (int c = 0; c < kClients; ++c) {
      clients.emplace_back([&, c] {
        std::mt19937 rng(static_cast<uint32_t>(c) + 1);
        for (size_t i = next++; i < work.size(); i = next++) {
          const std::string id = "msg_mh_" + std::to_string(work[i]);
          const std::string body = HostFixture::OrderBody("ord_" + std::to_string(work[i]));
          Reply r;
          for (int attempt = 0; attempt < 1200; ++attempt) {
            r = DeliverTo(ports_[rng() % ports_.size()], id, body);
            if (r.ok && r.status != 409 && r.status != 503) break;
            std::this_thread::sleep_for(
                std::chrono::milliseconds(50));  // platform pacing, not a timing assert
          }
          if (r.ok && r.status == 200) {
            (r.replayed ? replayed : processed)++;
            if (after_each) after_each(++stored);
          } else {
            ++failures;
            std::lock_guard lock(mu);
            if (first_failure.empty()) first_failure = std::to_string(r.status) + " " + r.body;
          }
        }
      });
    }
    for (auto& t : clients) t.join();
    return StormResult{processed.load(), replayed.load(), failures.load(), first_failure};
  }

  // ExpectOneEffectPerEvent checks the ERP and that the records are in PostgreSQL.
  void ExpectOneEffectPerEvent(int events) {
    for (int e = 0; e < events; ++e) {
      EXPECT_EQ(f_.erp().effects("/orders/ord_" + std::to_string(e) + "/fulfil"), 1u) << e;
    }
    EXPECT_EQ(f_.erp().effects("/inventory/adjust"), static_cast<size_t>(events));
    EXPECT_EQ(f_.erp().effects_total(), static_cast<size_t>(2 * events));
    EXPECT_TRUE(f_.erp().AtMostOneEffectPerKey());
    auto pool = clawguard::pg::PgPool::Create(db_.url(), clawguard::pg::PgOptions{});
    ASSERT_TRUE(pool.ok());
    auto lease = (*pool)->Acquire();
    ASSERT_TRUE(lease.ok()) << lease.error().ToString();
    auto n = lease->Exec("count", "SELECT count(*) FROM idem_records WHERE state = 'completed'");
    ASSERT_TRUE(n.ok()) << n.error().ToString();
    EXPECT_EQ(n->Int(0, 0), events);
  }

  clawguard::testing::PgTestDb db_;
  HostFixture f_;
  HostProcess hosts_[2];
  std::vector<uint16_t> ports_;
};

TEST_F(MultiHostTest, DeliveriesSpreadOverTwoHostsHaveOneEffectEach) {
  ASSERT_NO_FATAL_FAILURE(StartHosts());
  const StormResult r = Storm(kEvents);
  EXPECT_EQ(r.failures, 0) << r.first_failure;
  EXPECT_EQ(r.processed, kEvents);
  EXPECT_EQ(r.replayed, kEvents * (kDeliveriesPerEvent - 1));
  ExpectOneEffectPerEvent(kEvents);
  for (auto& h : hosts_) EXPECT_EQ(h.Stop(), 0);
}

TEST_F(MultiHostTest, SigkillOfOneHostMidStormKeepsOneEffectPerEvent) {
  // A short lease so the survivor takes over the dead host's keys quickly.
  testing::HostFixtureOptions options;
  options.lease = "2s";
  options.handler_timeout = "1s";
  options.erp_retry = "{ base: 200ms, max: 1s, attempts: 5, jitter: 20%, floor_429: 1s }";
  ASSERT_NO_FATAL_FAILURE(StartHosts(options));
  constexpr int kKillEvents = 150;
  std::once_flag killed;
  const StormResult r = Storm(kKillEvents, [&](int stored) {
    if (stored >= kKillEvents)
      std::call_once(killed, [&] { EXPECT_EQ(hosts_[0].Kill(), 128 + 9); });
  });
  EXPECT_EQ(r.failures, 0) << r.first_failure;
  EXPECT_EQ(r.processed + r.replayed, kKillEvents * kDeliveriesPerEvent);
  ExpectOneEffectPerEvent(kKillEvents);
  EXPECT_EQ(hosts_[1].Stop(), 0);
}

// Plugin workers SIGKILLed mid-storm on both hosts (three times, under plugins.max_faults): the
// deliveries they held are answered 503 and retried, and every call still has one effect.
TEST_F(MultiHostTest, SigkillOfPluginWorkersMidStormKeepsOneEffectPerEvent) {
  testing::HostFixtureOptions options;
  options.lease = "2s";
  options.handler_timeout = "1s";
  options.erp_retry = "{ base: 200ms, max: 1s, attempts: 5, jitter: 20%, floor_429: 1s }";
  ASSERT_NO_FATAL_FAILURE(StartHosts(options));
  constexpr int kStormEvents = 120;
  std::mutex kill_mu;
  int kills = 0;
  const StormResult r = Storm(kStormEvents, [&](int stored) {
    std::lock_guard lock(kill_mu);
    if (kills < 3 && stored >= (kills + 1) * kStormEvents) {
      int killed = 0;
      for (HostProcess& h : hosts_) killed += testing::KillWorkersOf(h.pid());
      if (killed > 0) ++kills;  // none while both restart: the next stored answer tries again
    }
  });
  EXPECT_EQ(kills, 3);
  EXPECT_EQ(r.failures, 0) << r.first_failure;
  EXPECT_EQ(r.processed + r.replayed, kStormEvents * kDeliveriesPerEvent);
  ExpectOneEffectPerEvent(kStormEvents);
  for (HostProcess& h : hosts_) EXPECT_EQ(h.Stop(), 0);
  EXPECT_NE(ReadFile(f_.audit_log()).find("\"plugin_worker_fault\""), std::string::npos);
}

TEST_F(MultiHostTest, PostgresStoppedUnderRunningHostsIs503ThenRecovers) {
  clawguard::testing::PgCluster cluster;  // a private server this test may stop
  ASSERT_FALSE(cluster.url().empty());
  clawguard::testing::PgTestDb own(cluster.url());
  ASSERT_NO_FATAL_FAILURE(StartHosts({}, own.url()));
  constexpr int kBefore = 10;
  for (int e = 0; e < kBefore; ++e) {
    const Reply r = DeliverTo(ports_[static_cast<size_t>(e) % 2], "msg_mh_" + std::to_string(e),
                              HostFixture::OrderBody("ord_" + std::to_string(e)));
    ASSERT_TRUE(r.ok);
    ASSERT_EQ(r.status, 200) << r.body;
  }

  ASSERT_TRUE(cluster.Halt());
  const std::string down_body = HostFixture::OrderBody("ord_down");
  for (uint16_t port : ports_) {
    const Reply down = DeliverTo(port, "msg_down", down_body);
    ASSERT_TRUE(down.ok);
    EXPECT_EQ(down.status, 503) << down.body;
    EXPECT_NE(down.body.find("store_unavailable"), std::string::npos) << down.body;
  }
  EXPECT_EQ(f_.erp().effects("/orders/ord_down/fulfil"), 0u);

  ASSERT_TRUE(cluster.Resume());
  // Both hosts recover without a restart; the event that met the outage is processed once.
  Reply up;
  for (int attempt = 0; attempt < 600; ++attempt) {
    up = DeliverTo(ports_[static_cast<size_t>(attempt) % 2], "msg_down", down_body);
    if (up.ok && up.status == 200) break;
    std::this_thread::sleep_for(
        std::chrono::milliseconds(100));  // platform pacing, not a timing assert
  }
  ASSERT_EQ(up.status, 200) << up.body;
  for (uint16_t port : ports_) {
    const Reply again =
        DeliverTo(port, "msg_mh_0", HostFixture::OrderBody("ord_0"));  // answered before: kept
    EXPECT_EQ(again.status, 200) << again.body;
    EXPECT_TRUE(again.replayed);
  }
  for (int e = 0; e < kBefore; ++e) {
    EXPECT_EQ(f_.erp().effects("/orders/ord_" + std::to_string(e) + "/fulfil"), 1u) << e;
  }
  EXPECT_EQ(f_.erp().effects("/orders/ord_down/fulfil"), 1u);
  EXPECT_TRUE(f_.erp().AtMostOneEffectPerKey());
  for (auto& h : hosts_) EXPECT_EQ(h.Stop(), 0);
}

}  // namespace
}  // namespace clawguard::host
