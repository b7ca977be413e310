// host_capability_recheck_test.cpp — a real host re-checks every retry against the plugin
// version it loads NOW and the pauses in force (ARCHITECTURE.md "Dead-letter triage"). The signed
// example plugin (acme-orders 1.4.2) in a real HostApp on a SQLite store, the test ERP, and the
// operator commands (`clawguard capability|dlq`) run as processes on the same store:
//   - a call left unsent by an ERP outage, then the host restarted with acme-orders 1.5.0 (signed,
//     allowlisted, without that capability) or with no acme-orders at all: the row is never sent
//     (the ERP counts no effect and no request for it) and lands in the DLQ as
//     capability_revoked; an operator's replay of that entry sends nothing either;
//   - a pause set while a row waits for its retry: nothing is sent while paused, and after
//     `capability resume` the call is sent once.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <thread>

#include "clawguard/encoding.h"
#include "host/app/host_app.h"
#include "host/erp/idempotency_key.h"
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
using testing::ErpAnswer;
using testing::HostFixture;
using testing::HostFixtureOptions;

constexpr const char* kRecheckFulfil = "POST /orders/{id}/fulfil";
constexpr const char* kRecheckAdminToken = "recheck-test-admin-token-0123456789abcdef";
constexpr auto kRecheckPatience =
    std::chrono::seconds(30);  // an upper bound for polling, never asserted

std::optional<std::string> RecheckEnv(const std::string& name) {
  if (name == "E2E_ADMIN") return kRecheckAdminToken;
  if (name == "E2E_SECRET") return "whsec_" + Base64Encode(HostFixture::kHookKey);
  if (name == "E2E_ERP") return "Bearer recheck-test-erp-token-0123456789";
  return std::nullopt;
}

// Down is an ERP outage: 503, no effect.
ErpAnswer Down() {
  ErpAnswer a;
  a.status = 503;
  a.body = R"({"error":"down"})";
  return a;
}

bool RecheckWaitFor(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + kRecheckPatience;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

class HostCapabilityRecheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HostFixtureOptions o;
    o.erp_timeout = "2s";
    // Plenty of attempts: the row must still be waiting for its retry when the host restarts.
    o.erp_retry = "{ base: 1s, max: 2s, attempts: 50, jitter: 0%, floor_429: 1s }";
    o.more_versions = {{"1.5.0", {kRecheckFulfil}}};
    ASSERT_NO_FATAL_FAILURE(fixture_.Prepare(o));
  }
  void TearDown() override { StopHost(); }

  void StartHost() {
    const std::string yaml = fixture_.dir().Sub("host.yaml");
    auto config = HostConfig::Parse(ReadFile(yaml), yaml, &RecheckEnv);
    ASSERT_TRUE(config.ok()) << config.error().ToString();
    auto app = HostApp::Create(std::move(config).value(), SystemClock::Instance(),
                               &testing::OpenSqliteStores);
    ASSERT_TRUE(app.ok()) << app.error().ToString();
    app_ = std::move(app).value();
    ASSERT_TRUE(app_->Start().ok());
    if (dlq_ == nullptr) {  // the host made the store
      auto dlq = sqlite::SqliteDlq::Open(fixture_.db_path(), SystemClock::Instance());
      ASSERT_TRUE(dlq.ok()) << dlq.error().ToString();
      dlq_ = std::move(dlq).value();
    }
  }
  void StopHost() {
    if (app_) app_->Stop();
    app_.reset();
  }
  // Install puts |package| (and its .sig) into plugins.dir in place of 1.4.2; "" only removes it.
  void Install(const std::string& package) {
    namespace fs = std::filesystem;
    fs::remove(fixture_.PluginPackage());
    fs::remove(fixture_.PluginPackage() + ".sig");
    if (package.empty()) return;
    const fs::path dir = fs::path(fixture_.PluginPackage()).parent_path();
    fs::rename(package, dir / fs::path(package).filename());
    fs::rename(package + ".sig", dir / (fs::path(package).filename().string() + ".sig"));
  }

  std::string Store() const { return "sqlite:" + fixture_.db_path(); }
  static std::string FulfilPath(const std::string& order) { return "/orders/" + order + "/fulfil"; }
  testing::Reply Deliver(const std::string& webhook_id, const std::string& order) const {
    auto conn = testing::RawConnection::Connect(app_->main_port());
    if (conn == nullptr) return {};
    return HostFixture::DeliverOn(*conn, webhook_id, HostFixture::OrderBody(order));
  }
  size_t RequestsTo(const std::string& path) {
    size_t n = 0;
    for (const auto& r : fixture_.erp().requests()) n += r.path == path ? 1 : 0;
    return n;
  }
  std::set<std::string> KeysSeen(const std::string& path) {
    std::set<std::string> keys;
    for (const auto& r : fixture_.erp().requests()) {
      if (r.path == path) keys.insert(std::string(r.headers.Get("Idempotency-Key").value_or("")));
    }
    return keys;
  }
  // PausedSends is erp_calls_total{endpoint=fulfil, outcome="paused"}: the sends a pause held back.
  double PausedSends() const {
    const std::string line = clawguard::testing::ErpCallsLine(app_->metrics().RenderPrometheus(),
                                                              kRecheckFulfil, "paused");
    return line.empty() ? 0 : std::stod(line.substr(line.rfind(' ') + 1));
  }
  std::optional<DlqEntry> RevokedEntry() {
    DlqFilter f;
    f.klass = DlqClass::kCapabilityRevoked;
    auto list = dlq_->List(f);
    if (!list.ok() || list->empty()) return std::nullopt;
    return list->front();
  }
  std::optional<OutboxRow> FulfilRow() {
    auto outbox = sqlite::SqliteOutbox::Open(fixture_.db_path(), SystemClock::Instance());
    if (!outbox.ok()) return std::nullopt;
    auto all = (*outbox)->ListEvent(event_key_);
    if (!all.ok() || all->empty()) return std::nullopt;
    return all->front();
  }
  // LeaveUnsent delivers an order whose fulfil call meets an ERP outage (503, no effect): the row
  // waits for its retry. Then the host stops and the ERP is repaired.
  void LeaveUnsentAndStop(const std::string& order) {
    fixture_.erp().SetAnswer(FulfilPath(order), Down());
    ASSERT_NO_FATAL_FAILURE(StartHost());
    const testing::Reply r = Deliver("msg_" + order, order);
    ASSERT_TRUE(r.ok);
    ASSERT_EQ(r.status, 503) << "the plugin stops on a call the outbox still owns: " << r.body;
    event_key_ = DeriveEventKey(2, "acme-orders", "order.created", "msg_" + order, order,
                                HostFixture::OrderBody(order))
                     .key;
    StopHost();
    const std::optional<OutboxRow> row = FulfilRow();
    ASSERT_TRUE(row.has_value());
    ASSERT_EQ(row->state, OutboxState::kSent) << "waiting for its retry";
    ASSERT_EQ(fixture_.erp().effects(FulfilPath(order)), 0u);
    fixture_.erp().SetAnswer(FulfilPath(order), ErpAnswer{});
  }

  HostFixture fixture_;
  std::unique_ptr<HostApp> app_;
  std::unique_ptr<sqlite::SqliteDlq> dlq_;
  std::string event_key_;
};

TEST_F(HostCapabilityRecheckTest,
       ARowLeftUnsentByAnOutageIsNeverSentOnceTheNewVersionDropsItsCapability) {
  const std::string path = FulfilPath("R150");
  ASSERT_NO_FATAL_FAILURE(LeaveUnsentAndStop("R150"));
  const size_t before = RequestsTo(path);
  Install(fixture_.VersionPackage("1.5.0"));
  ASSERT_NO_FATAL_FAILURE(StartHost());
  const auto ready = nlohmann::json::parse(app_->ReadyJson());
  ASSERT_EQ(ready["plugins"].size(), 1u) << ready.dump();
  EXPECT_EQ(ready["plugins"][0]["version"], "1.5.0");

  std::optional<DlqEntry> entry;
  ASSERT_TRUE(RecheckWaitFor([&] { return (entry = RevokedEntry()).has_value(); }))
      << "no capability_revoked entry; audit:\n"
      << ReadFile(fixture_.audit_log());
  EXPECT_EQ(entry->plugin, "acme-orders");
  EXPECT_EQ(entry->event_key, event_key_);
  EXPECT_EQ(entry->call_index, 0);
  EXPECT_NE(entry->detail.find("1.5.0"), std::string::npos) << entry->detail;
  EXPECT_EQ(RequestsTo(path), before) << "the row was sent after its capability was revoked";
  EXPECT_EQ(fixture_.erp().effects(path), 0u);
  EXPECT_EQ(FulfilRow()->state, OutboxState::kDead);
  EXPECT_NE(ReadFile(fixture_.audit_log()).find("\"erp_call_revoked\""), std::string::npos);

  // An operator replays the entry: the call is still not allowed, nothing is revived or sent, and
  // the entry is open again for a person (not retried by the host).
  auto replay = RunClawguard({"dlq", "replay", std::to_string(entry->id), "--store", Store()});
  ASSERT_EQ(replay.exit_code, 0) << replay.out << replay.err;
  EXPECT_TRUE(RecheckWaitFor([&] {
    auto e = dlq_->Get(entry->id);
    return e.ok() && e->has_value() && (*e)->attempts >= 1 && (*e)->state == DlqState::kOpen;
  }));
  auto after = dlq_->Get(entry->id);
  ASSERT_TRUE(after.ok() && after->has_value());
  EXPECT_EQ((*after)->next_attempt_ms, 0) << "left to an operator";
  EXPECT_EQ(FulfilRow()->state, OutboxState::kDead);
  EXPECT_EQ(RequestsTo(path), before);
  EXPECT_EQ(fixture_.erp().effects(path), 0u);
}

TEST_F(HostCapabilityRecheckTest, ARowLeftUnsentByAnOutageIsNeverSentOnceItsPluginIsRemoved) {
  const std::string path = FulfilPath("RGONE");
  ASSERT_NO_FATAL_FAILURE(LeaveUnsentAndStop("RGONE"));
  const size_t before = RequestsTo(path);
  Install("");
  ASSERT_NO_FATAL_FAILURE(StartHost());
  EXPECT_TRUE(nlohmann::json::parse(app_->ReadyJson())["plugins"].empty());

  std::optional<DlqEntry> entry;
  ASSERT_TRUE(RecheckWaitFor([&] { return (entry = RevokedEntry()).has_value(); }))
      << "no capability_revoked entry; audit:\n"
      << ReadFile(fixture_.audit_log());
  EXPECT_EQ(entry->plugin, "acme-orders") << "named from the event's idempotency record";
  EXPECT_NE(entry->detail.find("is not loaded"), std::string::npos) << entry->detail;
  EXPECT_EQ(RequestsTo(path), before);
  EXPECT_EQ(fixture_.erp().effects(path), 0u);
  EXPECT_EQ(FulfilRow()->state, OutboxState::kDead);
}

TEST_F(HostCapabilityRecheckTest,
       APauseSetWhileARowWaitsForItsRetrySendsNothingUntilResumedThenOnce) {
  const std::string path = FulfilPath("RPAUSE");
  fixture_.erp().SetAnswer(path, Down());
  ASSERT_NO_FATAL_FAILURE(StartHost());
  const testing::Reply r = Deliver("msg_RPAUSE", "RPAUSE");
  ASSERT_TRUE(r.ok);
  ASSERT_EQ(r.status, 503) << r.body;  // erp_pending: the row waits for its retry

  auto paused =
      RunClawguard({"capability", "pause", "acme-orders", kRecheckFulfil, "--store", Store()});
  ASSERT_EQ(paused.exit_code, 0) << paused.out << paused.err;
  // The worker met the row due and held it back: the host honours the pause.
  ASSERT_TRUE(RecheckWaitFor([&] { return PausedSends() >= 1; })) << ReadFile(fixture_.audit_log());
  fixture_.erp().SetAnswer(path, ErpAnswer{});  // repaired: a send now would be an effect
  const size_t sent = RequestsTo(path);
  const double held = PausedSends();
  ASSERT_TRUE(
      RecheckWaitFor([&] { return PausedSends() >= held + 3; }));  // three more retries held back
  EXPECT_EQ(RequestsTo(path), sent) << "sent while paused";
  EXPECT_EQ(fixture_.erp().effects(path), 0u);

  auto resumed =
      RunClawguard({"capability", "resume", "acme-orders", kRecheckFulfil, "--store", Store()});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  ASSERT_TRUE(RecheckWaitFor([&] { return fixture_.erp().effects(path) >= 1; }));
  EXPECT_EQ(RequestsTo(path), sent + 1) << "sent once after the resume";
  EXPECT_EQ(KeysSeen(path).size(), 1u);
  // The platform's next retry completes the event from the outbox: still one effect.
  const testing::Reply done = Deliver("msg_RPAUSE", "RPAUSE");
  EXPECT_EQ(done.status, 200) << done.body;
  EXPECT_EQ(fixture_.erp().effects(path), 1u);
  EXPECT_TRUE(fixture_.erp().AtMostOneEffectPerKey());
  const std::string audit = ReadFile(fixture_.audit_log());
  EXPECT_NE(audit.find("\"capability_pauses\""), std::string::npos);
  EXPECT_FALSE(RevokedEntry().has_value()) << "a paused call waits; it is not dead-lettered";
}

}  // namespace
}  // namespace clawguard::host
