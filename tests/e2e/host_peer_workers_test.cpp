// host_peer_workers_test.cpp — the host's background loop never waits on a peer (ARCHITECTURE.md
// "Background work"). A real HostApp serving the signed example plugin at level 3 against an ERP
// that never answers (tools/hostile_erp, mode never-answer): an operator confirms an event's
// intents, the outbox worker sends the first one and is held inside that call, and meanwhile
//   - the loop keeps its period (admin /readyz "background": its tick count grows while the
//     outbox worker is still in the same send);
//   - a pause set with `clawguard capability pause` is in force in the host before that send
//     ends (the host re-read the pauses within its refresh period, /readyz and the
//     `capability_pauses` audit line), and the intent of the paused capability is then held back,
//     never sent.
// Nothing here asserts a duration: each check is an ordering (the pause is seen while the send is
// still in flight).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <thread>

#include "clawguard/encoding.h"
#include "host/app/host_app.h"
#include "host/erp/idempotency_key.h"
#include "hostile_erp/hostile_erp.h"
#include "sqlite/sqlite_dlq.h"
#include "sqlite/sqlite_idempotency_store.h"
#include "sqlite/sqlite_ledger.h"
#include "sqlite/sqlite_outbox.h"
#include "support/erp_metric_line.h"
#include "support/host_fixture.h"
#include "support/raw_client.h"

namespace clawguard::host {
namespace {

using clawguard::testing::ReadFile;
using clawguard::testing::RunClawguard;
using clawguard::testing::WriteFile;
using testing::HostFixture;
using testing::HostFixtureOptions;
using tools::HostileErp;
using tools::HostileMode;

constexpr const char* kPlugin = "acme-orders";
constexpr const char* kPeersFulfil = "POST /orders/{id}/fulfil";
constexpr const char* kAdjust = "POST /inventory/adjust";
constexpr const char* kPeersAdminToken = "peers-test-admin-token-0123456789abcdefgh";
constexpr auto kPeersPatience =
    std::chrono::seconds(60);  // an upper bound for polling, never asserted

std::optional<std::string> PeersEnv(const std::string& name) {
  if (name == "E2E_ADMIN") return kPeersAdminToken;
  if (name == "E2E_SECRET") return "whsec_" + Base64Encode(HostFixture::kHookKey);
  if (name == "E2E_ERP") return "Bearer peers-test-erp-token-0123456789ab";
  return std::nullopt;
}

bool PeersWaitFor(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + kPeersPatience;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

class HostPeerWorkersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tools::HostileErpOptions eo;
    eo.mode = HostileMode::kNeverAnswer;  // every request: the effect happens, no answer ever
    auto erp = HostileErp::Start(eo);
    ASSERT_TRUE(erp.ok()) << erp.error().ToString();
    erp_ = std::move(erp).value();

    HostFixtureOptions o;
    o.level = 3;
    // Long enough that the check below is an ordering, not a race: the worker's send is held
    // this long unless the test ends it.
    o.erp_timeout = "25s";
    o.erp_retry = "{ base: 1s, max: 2s, attempts: 50, jitter: 0%, floor_429: 1s }";
    ASSERT_NO_FATAL_FAILURE(fixture_.Prepare(o));
    const std::string path = fixture_.dir().Sub("host.yaml");
    std::string yaml = ReadFile(path);
    const std::string from = "base_url: " + fixture_.erp().base_url() + "\n";
    const size_t at = yaml.find(from);
    ASSERT_NE(at, std::string::npos) << yaml;
    yaml.replace(at, from.size(), "base_url: " + erp_->base_url() + "\n");
    WriteFile(path, yaml);
    auto config = HostConfig::Parse(yaml, path, &PeersEnv);
    ASSERT_TRUE(config.ok()) << config.error().ToString();
    auto app = HostApp::Create(std::move(config).value(), SystemClock::Instance(),
                               &testing::OpenSqliteStores);
    ASSERT_TRUE(app.ok()) << app.error().ToString();
    app_ = std::move(app).value();
    ASSERT_TRUE(app_->Start().ok());
  }
  void TearDown() override {
    if (erp_) erp_->Stop();  // ends the held connection: the worker's send fails at once
    if (app_) app_->Stop();
  }

  std::string Store() const { return "sqlite:" + fixture_.db_path(); }
  nlohmann::json Background() const {
    return nlohmann::json::parse(app_->ReadyJson())["background"];
  }
  static bool Paused(const nlohmann::json& background, const std::string& capability) {
    for (const auto& p : background["pauses"]["paused"]) {
      if (p["plugin"] == kPlugin && p["capability"] == capability) return true;
    }
    return false;
  }
  double Calls(const std::string& endpoint, const std::string& outcome) const {
    const std::string line =
        clawguard::testing::ErpCallsLine(app_->metrics().RenderPrometheus(), endpoint, outcome);
    return line.empty() ? 0 : std::stod(line.substr(line.rfind(' ') + 1));
  }

  std::unique_ptr<HostileErp> erp_;
  HostFixture fixture_;
  std::unique_ptr<HostApp> app_;
};

TEST_F(HostPeerWorkersTest, APauseIsHonouredWithinItsRefreshPeriodWhileTheWorkerHangsOnTheErp) {
  const std::string body = HostFixture::OrderBody("H1");
  auto conn = testing::RawConnection::Connect(app_->main_port());
  ASSERT_NE(conn, nullptr);
  const testing::Reply held = HostFixture::DeliverOn(*conn, "msg_H1", body);
  ASSERT_EQ(held.status, 202) << held.body;
  const std::string key = DeriveEventKey(3, kPlugin, "order.created", "msg_H1", "H1", body).key;
  auto confirm = RunClawguard({"idem", "confirm", key, "--store", Store(), "--json"});
  ASSERT_EQ(confirm.exit_code, 0) << confirm.out << confirm.err;
  ASSERT_EQ(nlohmann::json::parse(confirm.out)["confirmed"], 2);

  // The outbox worker sends the first confirmed intent; the ERP never answers it.
  ASSERT_TRUE(PeersWaitFor([&] { return erp_->Stats().requests >= 1; }))
      << ReadFile(fixture_.audit_log());
  const tools::HostileErpStats first = erp_->Stats();
  ASSERT_EQ(first.requests, 1u);
  const bool fulfil_hung = first.keys.count(ErpCallKey(key, kPlugin, 0)) == 1;
  const std::string waiting = fulfil_hung ? kAdjust : kPeersFulfil;  // the intent queued behind it
  ASSERT_TRUE(PeersWaitFor([&] { return Background()["workers"]["outbox"]["busy"] == true; }));
  const nlohmann::json before = Background();
  const int64_t busy_since = before["workers"]["outbox"]["busy_since_ms"];
  EXPECT_EQ(before["period_ms"], kOpsLoopPeriodMs);

  auto pause = RunClawguard({"capability", "pause", kPlugin, waiting, "--store", Store()});
  ASSERT_EQ(pause.exit_code, 0) << pause.out << pause.err;
  // Wait for the pause to be in force in the host, or for the hung send to end (which would make
  // the check below fail: the pause must not wait for the ERP).
  nlohmann::json seen;
  ASSERT_TRUE(PeersWaitFor([&] {
    seen = Background();
    return Paused(seen, waiting) || seen["workers"]["outbox"]["busy"] != true ||
           seen["workers"]["outbox"]["busy_since_ms"] != busy_since;
  }));
  EXPECT_TRUE(Paused(seen, waiting)) << seen.dump();
  EXPECT_EQ(seen["workers"]["outbox"]["busy"], true)
      << "the pause waited for the hung ERP call: " << seen.dump();
  EXPECT_EQ(seen["workers"]["outbox"]["busy_since_ms"], busy_since) << "still the first send";
  EXPECT_EQ(erp_->Stats().requests, 1u);
  EXPECT_GT(seen["ticks"].get<int64_t>(), before["ticks"].get<int64_t>());
  EXPECT_GE(seen["last_tick_ms"].get<int64_t>(), busy_since);
  EXPECT_NE(ReadFile(fixture_.audit_log()).find("\"capability_pauses\""), std::string::npos);

  // The loop keeps its period: five more ticks while the worker is still in that one send.
  const int64_t ticks = seen["ticks"];
  nlohmann::json later;
  ASSERT_TRUE(PeersWaitFor([&] {
    later = Background();
    return later["ticks"].get<int64_t>() >= ticks + 5 ||
           later["workers"]["outbox"]["busy_since_ms"] != busy_since;
  }));
  EXPECT_EQ(later["workers"]["outbox"]["busy"], true) << later.dump();
  EXPECT_EQ(later["workers"]["outbox"]["busy_since_ms"], busy_since) << later.dump();
  EXPECT_GE(later["ticks"].get<int64_t>(), ticks + 5) << later.dump();
  EXPECT_EQ(erp_->Stats().requests, 1u);

  // The hung call ends (the ERP goes away); the worker moves on to the waiting intent, which the
  // pause holds back: never attempted.
  erp_->Stop();
  ASSERT_TRUE(PeersWaitFor([&] { return Calls(waiting, "paused") >= 1; }))
      << ReadFile(fixture_.audit_log());
  for (const char* outcome :
       {"success", "client_error", "rate_limited", "server_error", "timeout", "transport_error"}) {
    EXPECT_EQ(Calls(waiting, outcome), 0) << outcome;
  }
  EXPECT_EQ(erp_->Stats().keys.count(ErpCallKey(key, kPlugin, fulfil_hung ? 1 : 0)), 0u);
}

}  // namespace
}  // namespace clawguard::host
