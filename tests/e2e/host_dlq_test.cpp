// host_dlq_test.cpp — the running host's dead-letter handling end to end: the signed example
// plugin (acme-orders) in a real HostApp on a SQLite store, the test ERP answering 429, 404, 409,
// 500 or too late, and the operator commands (`clawguard dlq|capability`) run as processes on
// the same store while the host polls it. ARCHITECTURE.md "Dead-letter triage".
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
#include "sqlite/sqlite_dlq.h"
#include "sqlite/sqlite_idempotency_store.h"
#include "sqlite/sqlite_ledger.h"
#include "sqlite/sqlite_outbox.h"
#include "support/host_fixture.h"
#include "support/raw_client.h"

namespace clawguard::host {
namespace {

using clawguard::testing::ReadFile;
using clawguard::testing::RunClawguard;
using testing::ErpAnswer;
using testing::HostFixture;
using testing::HostFixtureOptions;

constexpr const char* kDlqFulfil = "POST /orders/{id}/fulfil";
constexpr const char* kDlqAdminToken = "dlq-test-admin-token-0123456789abcdefgh";
constexpr auto kDlqPatience =
    std::chrono::seconds(20);  // an upper bound for polling, never asserted

std::optional<std::string> DlqEnv(const std::string& name) {
  if (name == "E2E_ADMIN") return kDlqAdminToken;
  if (name == "E2E_SECRET") return "whsec_" + Base64Encode(HostFixture::kHookKey);
  if (name == "E2E_ERP") return "Bearer dlq-test-erp-token-0123456789";
  return std::nullopt;
}

ErpAnswer Answer(int status, std::string body) {
  ErpAnswer a;
  a.status = status;
  a.body = std::move(body);
  return a;
}

// DlqWaitFor polls |done| until it holds or kDlqPatience passed.
bool DlqWaitFor(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + kDlqPatience;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

class HostDlqTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HostFixtureOptions o;
    o.erp_timeout = "300ms";
    o.erp_retry = "{ base: 50ms, max: 200ms, attempts: 3, jitter: 0%, floor_429: 1s }";
    ASSERT_NO_FATAL_FAILURE(fixture_.Prepare(o));
    const std::string yaml = fixture_.dir().Sub("host.yaml");
    auto config = HostConfig::Parse(ReadFile(yaml), yaml, &DlqEnv);
    ASSERT_TRUE(config.ok()) << config.error().ToString();
    auto app = HostApp::Create(std::move(config).value(), SystemClock::Instance(),
                               &testing::OpenSqliteStores);
    ASSERT_TRUE(app.ok()) << app.error().ToString();
    app_ = std::move(app).value();
    ASSERT_TRUE(app_->Start().ok());
    auto dlq = sqlite::SqliteDlq::Open(fixture_.db_path(), SystemClock::Instance());
    ASSERT_TRUE(dlq.ok()) << dlq.error().ToString();
    dlq_ = std::move(dlq).value();
  }
  void TearDown() override {
    if (app_) app_->Stop();
  }

  std::string Store() const { return "sqlite:" + fixture_.db_path(); }
  static std::string FulfilPath(const std::string& order) { return "/orders/" + order + "/fulfil"; }

  testing::Reply Deliver(const std::string& webhook_id, const std::string& order) const {
    auto conn = testing::RawConnection::Connect(app_->main_port());
    if (conn == nullptr) return {};
    return HostFixture::DeliverOn(*conn, webhook_id, HostFixture::OrderBody(order));
  }

  // EntryFor waits for the unresolved DLQ entry of class |klass| with ERP status |erp_status|.
  std::optional<DlqEntry> EntryFor(DlqClass klass, int erp_status) {
    std::optional<DlqEntry> found;
    DlqWaitFor([&] {
      DlqFilter f;
      f.klass = klass;
      auto list = dlq_->List(f);
      if (!list.ok()) return false;
      for (const DlqEntry& e : *list) {
        if (e.erp_status == erp_status && DlqStateUnresolved(e.state)) found = e;
      }
      return found.has_value();
    });
    return found;
  }
  std::optional<DlqState> StateOf(int64_t id) {
    auto e = dlq_->Get(id);
    if (!e.ok() || !e->has_value()) return std::nullopt;
    return (*e)->state;
  }
  // KeysSeen are the Idempotency-Keys of every request the ERP saw on |path|.
  std::set<std::string> KeysSeen(const std::string& path) {
    std::set<std::string> keys;
    for (const auto& r : fixture_.erp().requests()) {
      if (r.path == path) keys.insert(std::string(r.headers.Get("Idempotency-Key").value_or("")));
    }
    return keys;
  }
  size_t RequestsTo(const std::string& path) {
    size_t n = 0;
    for (const auto& r : fixture_.erp().requests()) n += r.path == path ? 1 : 0;
    return n;
  }

  HostFixture fixture_;
  std::unique_ptr<HostApp> app_;
  std::unique_ptr<sqlite::SqliteDlq> dlq_;
};

TEST_F(HostDlqTest, EachErpFailureLandsInItsClass) {
  struct Case {
    std::string order;
    ErpAnswer answer;
    DlqClass klass;
    int erp_status;  // as recorded (0: no answer)
  };
  ErpAnswer rate_limited = Answer(429, R"({"error":"slow down"})");
  rate_limited.retry_after = "1";
  // No answer within erp.timeout (300 ms), every time: a timeout whose retries are spent.
  ErpAnswer too_late = Answer(503, R"({"error":"busy"})");
  too_late.delay = std::chrono::milliseconds(1000);
  // The ERP acted but answered late: the retry gets its stored answer — one effect, no entry.
  ErpAnswer acted_late = Answer(200, R"({"ok":true})");
  acted_late.delay = std::chrono::milliseconds(1000);
  const std::vector<Case> cases = {
      {"C429", rate_limited, DlqClass::kCooldown, 429},
      {"C404", Answer(404, R"({"error":"no such order"})"), DlqClass::kNotFound, 404},
      {"C409", Answer(409, R"({"error":"already fulfilled"})"), DlqClass::kConflict, 409},
      {"C500", Answer(500, R"({"error":"boom"})"), DlqClass::kTransientExhausted, 500},
      {"CTIMEOUT", too_late, DlqClass::kTransientExhausted, 0},
  };
  for (const Case& c : cases) fixture_.erp().SetAnswer(FulfilPath(c.order), c.answer);
  fixture_.erp().SetAnswer(FulfilPath("CLATE"), acted_late);
  ASSERT_TRUE(Deliver("msg_CLATE", "CLATE").ok);
  for (const Case& c : cases) {
    const testing::Reply r = Deliver("msg_" + c.order, c.order);
    ASSERT_TRUE(r.ok) << c.order;
    // A final refusal (404, 409) is the plugin's to handle: it stops, a plugin failure (500). A
    // call the host retries (429, 5xx, no answer) is still the outbox's: 503 erp_pending.
    const bool retried = c.erp_status == 429 || c.erp_status >= 500 || c.erp_status == 0;
    EXPECT_EQ(r.status, retried ? 503 : 500)
        << c.order << ": the plugin stops when its ERP call fails: " << r.body;
  }
  for (const Case& c : cases) {
    std::optional<DlqEntry> e = EntryFor(c.klass, c.erp_status);
    ASSERT_TRUE(e.has_value()) << c.order << ": no " << DlqClassName(c.klass) << " entry";
    EXPECT_EQ(e->plugin, "acme-orders") << c.order;
    EXPECT_EQ(e->endpoint, kDlqFulfil) << c.order;
    EXPECT_EQ(e->call_index, 0) << c.order;
  }
  // 5xx and timeouts: exactly the configured attempts were sent, all with one Idempotency-Key.
  EXPECT_EQ(RequestsTo(FulfilPath("C500")), 3u);
  EXPECT_EQ(KeysSeen(FulfilPath("C500")).size(), 1u);
  EXPECT_TRUE(DlqWaitFor([&] { return RequestsTo(FulfilPath("CLATE")) >= 2; }));
  EXPECT_EQ(fixture_.erp().effects(FulfilPath("CLATE")), 1u);

  // The operator's view agrees.
  auto listed = RunClawguard({"dlq", "list", "--store", Store(), "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const auto j = nlohmann::json::parse(listed.out);
  for (const char* klass : {"cooldown", "not_found", "conflict", "transient_exhausted"}) {
    EXPECT_TRUE(j["unresolved"].contains(klass)) << klass << " missing in " << listed.out;
  }
  EXPECT_TRUE(fixture_.erp().AtMostOneEffectPerKey());
}

TEST_F(HostDlqTest, AuthFailurePausesTheCapabilityUntilResumedThenOneEffect) {
  const std::string path = FulfilPath("A401");
  fixture_.erp().SetAnswer(path, Answer(401, R"({"error":"token expired"})"));
  ASSERT_TRUE(Deliver("msg_A401", "A401").ok);
  std::optional<DlqEntry> entry = EntryFor(DlqClass::kAuth, 401);
  ASSERT_TRUE(entry.has_value());

  auto paused = RunClawguard({"capability", "list", "--store", Store(), "--json"});
  ASSERT_EQ(paused.exit_code, 0) << paused.err;
  EXPECT_NE(paused.out.find("acme-orders"), std::string::npos) << paused.out;
  EXPECT_NE(paused.out.find(kDlqFulfil), std::string::npos) << paused.out;

  // While paused nothing more is sent, though the outbox row stays due (deferred, not dead).
  const size_t sent = RequestsTo(path);
  EXPECT_EQ(sent, 1u);
  std::this_thread::sleep_for(
      std::chrono::milliseconds(1500));  // > the 1 s deferral and several loop passes
  EXPECT_EQ(RequestsTo(path), sent);

  // The ERP is repaired; the operator asks for the replay, then lifts the pause.
  fixture_.erp().SetAnswer(path, ErpAnswer{});
  auto replay = RunClawguard({"dlq", "replay", std::to_string(entry->id), "--store", Store()});
  ASSERT_EQ(replay.exit_code, 0) << replay.out << replay.err;
  EXPECT_TRUE(DlqWaitFor([&] { return StateOf(entry->id) == DlqState::kReplayed; }));
  auto resume =
      RunClawguard({"capability", "resume", "acme-orders", kDlqFulfil, "--store", Store()});
  ASSERT_EQ(resume.exit_code, 0) << resume.out << resume.err;
  EXPECT_TRUE(DlqWaitFor([&] { return fixture_.erp().effects(path) >= 1; }));
  EXPECT_EQ(fixture_.erp().effects(path), 1u);
  EXPECT_EQ(KeysSeen(path).size(), 1u);

  // The platform's next retry completes the event from the outbox: still one effect.
  const testing::Reply done = Deliver("msg_A401", "A401");
  EXPECT_EQ(done.status, 200) << done.body;
  EXPECT_EQ(fixture_.erp().effects(path), 1u);
  EXPECT_TRUE(fixture_.erp().AtMostOneEffectPerKey());
  const std::string audit = ReadFile(fixture_.audit_log());
  EXPECT_NE(audit.find("\"dlq_replay\""), std::string::npos);
  EXPECT_EQ(audit.find("dlq-test-erp-token"), std::string::npos);
}

TEST_F(HostDlqTest, ReplayAfterRetriesSpentResendsWithTheSameIdempotencyKey) {
  const std::string path = FulfilPath("S500");
  fixture_.erp().SetAnswer(path, Answer(500, R"({"error":"storm"})"));
  ASSERT_TRUE(Deliver("msg_S500", "S500").ok);
  std::optional<DlqEntry> entry = EntryFor(DlqClass::kTransientExhausted, 500);
  ASSERT_TRUE(entry.has_value());
  EXPECT_EQ(RequestsTo(path), 3u);  // erp.retry.attempts
  EXPECT_EQ(fixture_.erp().effects(path), 0u);

  fixture_.erp().SetAnswer(path, ErpAnswer{});
  auto replay = RunClawguard({"dlq", "replay", std::to_string(entry->id), "--store", Store()});
  ASSERT_EQ(replay.exit_code, 0) << replay.out << replay.err;
  EXPECT_TRUE(DlqWaitFor([&] { return fixture_.erp().effects(path) >= 1; }));
  EXPECT_TRUE(DlqWaitFor([&] { return StateOf(entry->id) == DlqState::kReplayed; }));
  EXPECT_EQ(fixture_.erp().effects(path), 1u);
  EXPECT_EQ(RequestsTo(path), 4u);
  EXPECT_EQ(KeysSeen(path).size(), 1u) << "the replay must reuse the call's Idempotency-Key";

  // A second replay request is refused (the entry is resolved); nothing more reaches the ERP.
  auto again = RunClawguard({"dlq", "replay", std::to_string(entry->id), "--store", Store()});
  EXPECT_EQ(again.exit_code, 1) << again.out << again.err;
  const testing::Reply done = Deliver("msg_S500", "S500");
  EXPECT_EQ(done.status, 200) << done.body;
  EXPECT_EQ(fixture_.erp().effects(path), 1u);
  EXPECT_TRUE(fixture_.erp().AtMostOneEffectPerKey());
}

}  // namespace
}  // namespace clawguard::host
