// hostile_erp_multihost_test.cpp — two `clawguard host` processes on one PostgreSQL database and
// one slow ERP that deduplicates keys only after a request finished (tools/hostile_erp,
// dedup-after-completion): a second send of a call while the first is in flight would be a
// second effect. Still one send per outbox row at a time, across hosts:
//   - first sends that take longer than the retry base are not sent again by either host's
//     retry worker while they are in flight (the row is owned by its send);
//   - rows that become due on both hosts at the same moment (level-3 intents confirmed by an
//     operator) are claimed by one host each, never sent by both.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "clawguard/encoding.h"
#include "host/erp/idempotency_key.h"
#include "hostile_erp/hostile_erp.h"
#include "pg/support/pg_test_db.h"
#include "support/host_fixture.h"

namespace clawguard::host {
namespace {

using clawguard::testing::ReadFile;
using clawguard::testing::RunClawguard;
using clawguard::testing::WriteFile;
using testing::HostFixture;
using testing::HostProcess;
using testing::Reply;
using tools::HostileErp;

constexpr int kHostileEvents = 12;

using testing::MainPort;

using testing::DeliverTo;

class MultiHostHostileErpTest : public ::testing::Test {
 protected:
  // StartHosts starts the slow ERP and two hosts on this test's database, pointed at it.
  void StartHosts(int level, int delay_ms) {
    tools::HostileErpOptions eo;
    eo.mode = tools::HostileMode::kDedupAfterCompletion;
    eo.delay = std::chrono::milliseconds(delay_ms);
    auto erp = HostileErp::Start(eo);
    ASSERT_TRUE(erp.ok()) << erp.error().ToString();
    erp_ = std::move(erp).value();
    testing::HostFixtureOptions o;
    o.level = level;
    o.erp_timeout = "5s";
    o.erp_retry = "{ base: 200ms, max: 2s, attempts: 8, jitter: 20%, floor_429: 1s }";
    ASSERT_NO_FATAL_FAILURE(f_.Prepare(o));
    ASSERT_FALSE(db_.url().empty());
    const std::string path = f_.dir().Sub("host.yaml");
    std::string yaml = ReadFile(path);
    for (const auto& [from, to] :
         {std::pair<std::string, std::string>{"store: sqlite:state/state.db\n",
                                              "store: " + db_.url() + "\n"},
          {"base_url: " + f_.erp().base_url() + "\n", "base_url: " + erp_->base_url() + "\n"}}) {
      const size_t at = yaml.find(from);
      ASSERT_NE(at, std::string::npos) << from << " not in " << yaml;
      yaml.replace(at, from.size(), to);
    }
    WriteFile(path, yaml);
    const std::vector<std::pair<std::string, std::string>> env = {
        {"E2E_ADMIN", "multihost-admin-token-0123456789abcdefgh"},
        {"E2E_SECRET", "whsec_" + Base64Encode(HostFixture::kHookKey)},
        {"E2E_ERP", "Bearer e2e-erp-token-0123456789abcdef"}};
    for (auto& h : hosts_) {
      ASSERT_TRUE(h.Start(path, env)) << ReadFile(f_.audit_log());
      ports_.push_back(MainPort(h));
      ASSERT_NE(ports_.back(), 0) << h.first_line();
    }
  }
  void TearDown() override {
    if (erp_) erp_->Stop();
  }

  // Deliver sends every event to a random host, retried as a platform does until |done|.
  void Deliver(int level, const std::function<bool(const Reply&)>& done) {
    std::vector<std::thread> platform;
    platform.reserve(kHostileEvents);
    for (int e = 0; e < kHostileEvents; ++e) {
      platform.emplace_back([&, e] {
        std::mt19937 rng(static_cast<uint32_t>(e) + 7);
        Reply r;
        for (int attempt = 0; attempt < 400; ++attempt) {
          r = DeliverTo(ports_[rng() % ports_.size()], Id(e), Body(e));
          if (r.ok && done(r)) break;
          std::this_thread::sleep_for(
              std::chrono::milliseconds(100));  // platform pacing, not a timing assert
        }
        EXPECT_TRUE(r.ok && done(r))
            << "event " << e << " level " << level << ": " << r.status << " " << r.body;
      });
    }
    for (auto& t : platform) t.join();
  }

  static std::string Id(int e) { return "msg_mh_hostile_" + std::to_string(e); }
  static std::string Body(int e) { return HostFixture::OrderBody("ord_" + std::to_string(e)); }
  static std::string EventKey(int level, int e) {
    return DeriveEventKey(level, "acme-orders", "order.created", Id(e), "ord_" + std::to_string(e),
                          Body(e))
        .key;
  }

  // ExpectOneSendPerRowAtATime: one effect per call, and no request for a key while an earlier
  // one for it was in flight.
  void ExpectOneSendPerRowAtATime(int level) {
    const tools::HostileErpStats s = erp_->Stats();
    EXPECT_EQ(s.effects, 2 * static_cast<size_t>(kHostileEvents)) << erp_->StatsJson();
    EXPECT_EQ(s.max_effects_per_key, 1u) << erp_->StatsJson();
    EXPECT_EQ(s.overlapping, 0u) << erp_->StatsJson();
    for (int e = 0; e < kHostileEvents; ++e) {
      for (uint32_t i = 0; i < 2; ++i) {
        const std::string key = ErpCallKey(EventKey(level, e), "acme-orders", i);
        auto it = s.keys.find(key);
        ASSERT_NE(it, s.keys.end()) << key;
        EXPECT_EQ(it->second.effects, 1u) << key;
        EXPECT_EQ(it->second.overlapping, 0u) << key;
      }
    }
  }

  clawguard::testing::PgTestDb db_;
  std::unique_ptr<HostileErp> erp_;
  HostFixture f_;
  HostProcess hosts_[2];
  std::vector<uint16_t> ports_;
};

TEST_F(MultiHostHostileErpTest, ASlowErpGetsOneSendPerRowAtATimeFromTwoHosts) {
  // Each call takes 1.5 s at the ERP, longer than the 200 ms retry base: both hosts' retry
  // workers see the rows of calls in flight, which their sends own.
  ASSERT_NO_FATAL_FAILURE(StartHosts(/*level=*/2, /*delay_ms=*/1'500));
  Deliver(2, [](const Reply& r) { return r.status == 200; });
  for (auto& h : hosts_) EXPECT_EQ(h.Stop(), 0);
  ExpectOneSendPerRowAtATime(2);
}

TEST_F(MultiHostHostileErpTest, IntentsConfirmedWhileTwoHostsRunAreEachSentByOneHost) {
  // Level 3: the calls are held; `idem confirm` makes each event's two rows due at once, and
  // both hosts' retry workers (every 200 ms) list them: one claim each wins.
  ASSERT_NO_FATAL_FAILURE(StartHosts(/*level=*/3, /*delay_ms=*/500));
  Deliver(3, [](const Reply& r) { return r.status == 202; });
  EXPECT_EQ(erp_->Stats().requests, 0u);
  for (int e = 0; e < kHostileEvents; ++e) {
    auto confirm = RunClawguard({"idem", "confirm", EventKey(3, e), "--store", db_.url(),
                                 "--audit-log", f_.dir().Sub("operator.jsonl")});
    ASSERT_EQ(confirm.exit_code, 0) << confirm.out << confirm.err;
  }
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::seconds(120);  // a guard, not a measure
  while (erp_->Stats().effects < 2 * static_cast<size_t>(kHostileEvents) &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // Both hosts keep running a while longer: a second send of any row would show now.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  for (auto& h : hosts_) EXPECT_EQ(h.Stop(), 0);
  ExpectOneSendPerRowAtATime(3);
}

}  // namespace
}  // namespace clawguard::host
