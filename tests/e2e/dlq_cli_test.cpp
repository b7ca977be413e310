// dlq_cli_test.cpp — `clawguard dlq …` and `clawguard capability …` run as the built binary
// against a real SQLite store in a temp dir (entries written through the engine, as a host would).
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "clawguard/clock.h"
#include "clawguard/store/dlq.h"
#include "sqlite/sqlite_dlq.h"
#include "sqlite/sqlite_idempotency_store.h"
#include "support/temp_dir.h"

namespace clawguard {
namespace {

using clawguard::testing::CommandResult;
using clawguard::testing::ReadFile;
using testing::RunClawguard;

class DlqCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.Sub("state.db");
    url_ = "sqlite:" + path_;
    auto d = sqlite::SqliteDlq::Open(path_, SystemClock::Instance());
    ASSERT_TRUE(d.ok()) << d.error().ToString();
    dlq_ = std::move(d).value();
    auto s = sqlite::SqliteIdempotencyStore::Open(path_, SystemClock::Instance());
    ASSERT_TRUE(s.ok()) << s.error().ToString();
    idem_ = std::move(s).value();
  }
  int64_t Add(DlqClass c, char key, bool event_level) {
    DlqNewEntry e;
    e.klass = c;
    e.event_key = std::string(64, key);
    e.plugin = "acme-orders";
    e.route = "order.created";
    if (event_level) {
      e.request = DlqRequest{"msg_" + std::string(1, key), "application/json", R"({"order":1001})"};
    } else {
      e.call_index = 0;
      e.endpoint = "POST /orders/{id}/fulfil";
      e.erp_status = 409;
    }
    e.detail = "test entry";
    auto a = dlq_->Add(e);
    EXPECT_TRUE(a.ok()) << a.error().ToString();
    return a.ok() ? a->id : 0;
  }
  int64_t Generation() {
    auto g = idem_->Generation();
    EXPECT_TRUE(g.ok());
    return g.ok() ? *g : -1;
  }
  static nlohmann::json Json(const CommandResult& r) {
    auto j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(j.is_discarded()) << "not JSON: " << r.out << r.err;
    return j;
  }

  clawguard::testing::TempDir dir_;
  std::string path_, url_;
  std::unique_ptr<Dlq> dlq_;
  std::unique_ptr<IdempotencyStore> idem_;
};

TEST_F(DlqCliTest, ListGroupsByClassAndAge) {
  Add(DlqClass::kBreaker, 'a', true);
  Add(DlqClass::kBreaker, 'b', true);
  Add(DlqClass::kConflict, 'c', false);
  const CommandResult r = RunClawguard({"dlq", "list", "--store", url_, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = Json(r);
  EXPECT_EQ(j["unresolved"]["breaker"]["lt_1h"], 2);
  EXPECT_EQ(j["unresolved"]["conflict"]["lt_1h"], 1);
  EXPECT_EQ(j["unresolved_total"], 3);
  ASSERT_EQ(j["groups"].size(), 2u);
  EXPECT_EQ(j["groups"][0]["class"], "breaker");
  EXPECT_EQ(j["groups"][0]["age"], "lt_1h");
  EXPECT_EQ(j["groups"][0]["entries"].size(), 2u);
  EXPECT_EQ(j["groups"][1]["entries"][0]["endpoint"], "POST /orders/{id}/fulfil");

  const CommandResult text = RunClawguard({"dlq", "list", "--store", url_});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("breaker\t2\t0\t0"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("breaker, < 1 h:"), std::string::npos) << text.out;

  const CommandResult filtered =
      RunClawguard({"dlq", "list", "--store", url_, "--class", "conflict", "--json"});
  ASSERT_EQ(filtered.exit_code, 0) << filtered.err;
  EXPECT_EQ(Json(filtered)["groups"].size(), 1u);
}

TEST_F(DlqCliTest, ShowPrintsTheEntryButNeverTheBody) {
  const int64_t id = Add(DlqClass::kBreaker, 'a', true);
  const CommandResult r =
      RunClawguard({"dlq", "show", std::to_string(id), "--store", url_, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = Json(r);
  EXPECT_EQ(j["id"], id);
  EXPECT_EQ(j["class"], "breaker");
  EXPECT_EQ(j["state"], "open");
  EXPECT_EQ(j["call_index"], nullptr);
  EXPECT_EQ(j["request"]["webhook_id"], "msg_a");
  EXPECT_EQ(j["request"]["body_bytes"], 14);
  EXPECT_EQ(r.out.find("1001"), std::string::npos);  // the body itself is not printed
}

TEST_F(DlqCliTest, ReplayAndDropWriteAuditAndBumpTheGeneration) {
  const int64_t a = Add(DlqClass::kBreaker, 'a', true);
  const int64_t b = Add(DlqClass::kConflict, 'b', false);
  const int64_t gen0 = Generation();
  const std::string audit = dir_.Sub("audit.jsonl");

  CommandResult r =
      RunClawguard({"dlq", "replay", std::to_string(a), "--store", url_, "--audit-log", audit});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Generation(), gen0 + 1);
  auto e = dlq_->Get(a);
  ASSERT_TRUE(e.ok() && e->has_value());
  EXPECT_EQ((*e)->state, DlqState::kReplayRequested);

  r = RunClawguard({"dlq", "drop", std::to_string(b), "--reason", "reconciled by hand", "--store",
                    url_, "--json", "--audit-log", audit});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json(r)["state"], "dropped");
  EXPECT_EQ(Generation(), gen0 + 2);
  e = dlq_->Get(b);
  ASSERT_TRUE(e.ok() && e->has_value());
  EXPECT_EQ((*e)->resolution, "reconciled by hand");

  auto actions = dlq_->ListOperatorActions(10);
  ASSERT_TRUE(actions.ok());
  ASSERT_EQ(actions->size(), 2u);
  EXPECT_EQ((*actions)[0].action, "dlq.drop");
  EXPECT_EQ((*actions)[0].actor.rfind("cli:", 0), 0u);
  EXPECT_EQ((*actions)[1].action, "dlq.replay");

  const std::string log = ReadFile(audit);
  const size_t nl = log.find('\n');
  ASSERT_NE(nl, std::string::npos);
  const auto first = nlohmann::json::parse(log.substr(0, nl));
  EXPECT_EQ(first["event"], "operator_action");
  EXPECT_EQ(first["action"], "dlq.replay");
  EXPECT_EQ(first["target"], std::to_string(a));
  EXPECT_EQ(first["generation"], gen0 + 1);
  EXPECT_NE(log.find("\"dlq.drop\""), std::string::npos);
}

TEST_F(DlqCliTest, RefusalsExitOneAndStoreErrorsExitTwo) {
  const int64_t a = Add(DlqClass::kBreaker, 'a', true);
  CommandResult r = RunClawguard({"dlq", "replay", "999", "--store", url_, "--json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(Json(r)["error"], "not_found");
  r = RunClawguard({"dlq", "show", "999", "--store", url_});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("not_found"), std::string::npos) << r.err;

  ASSERT_EQ(RunClawguard({"dlq", "drop", std::to_string(a), "--store", url_}).exit_code, 0);
  r = RunClawguard({"dlq", "replay", std::to_string(a), "--store", url_});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is dropped"), std::string::npos) << r.err;

  r = RunClawguard({"dlq", "list", "--store", "sqlite:" + dir_.Sub("missing.db")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("store_unavailable"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("missing.db")));  // never invents a store
  r = RunClawguard({"dlq", "list", "--store", "postgresql://u:hunter2@localhost/db"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.find("hunter2"), std::string::npos) << r.err;
  EXPECT_EQ(RunClawguard({"dlq", "show", "--store", url_}).exit_code, 2);  // ID missing: usage
  EXPECT_EQ(RunClawguard({"dlq", "list", "--store", url_, "--class", "nope"}).exit_code, 2);
}

TEST_F(DlqCliTest, CapabilityPauseAndResume) {
  const std::string cap = "POST /orders/{id}/fulfil";
  const int64_t gen0 = Generation();
  CommandResult r = RunClawguard({"capability", "pause", "acme-orders", cap, "--reason",
                                  "ERP maintenance", "--store", url_, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json(r)["changed"], true);
  EXPECT_TRUE(*dlq_->IsPaused("acme-orders", cap));
  EXPECT_EQ(Generation(), gen0 + 1);

  r = RunClawguard({"capability", "pause", "acme-orders", cap, "--store", url_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("already paused"), std::string::npos);

  r = RunClawguard({"capability", "list", "--store", url_, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(Json(r)["paused"].size(), 1u);
  EXPECT_EQ(Json(r)["paused"][0]["reason"], "ERP maintenance");

  r = RunClawguard({"capability", "resume", "acme-orders", cap, "--store", url_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("resumed"), std::string::npos);
  EXPECT_FALSE(*dlq_->IsPaused("acme-orders", cap));

  auto actions = dlq_->ListOperatorActions(10);
  ASSERT_TRUE(actions.ok());
  ASSERT_EQ(actions->size(), 3u);
  EXPECT_EQ((*actions)[0].action, "capability.resume");
  EXPECT_EQ((*actions)[2].target, "acme-orders " + cap);

  EXPECT_EQ(
      RunClawguard({"capability", "pause", "acme-orders", "/orders", "--store", url_}).exit_code,
      2);
  EXPECT_EQ(
      RunClawguard({"capability", "pause", "acme-orders", "post /x", "--store", url_}).exit_code,
      2);
}

}  // namespace
}  // namespace clawguard
