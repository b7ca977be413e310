// ops_cli_test.cpp — the operator commands `idem`, `dlq` and `capability` on a
// postgresql://user@host:port/db store, run as the built binary against a fresh database of the
// fixture cluster (entries and records written through the engines, as a host would). An operator
// command never creates a store: a missing database and an empty one are store_unavailable.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "clawguard/sha256.h"
#include "clawguard/store/dlq.h"
#include "pg/support/pg_test_db.h"
#include "postgresql/pg_conn.h"
#include "postgresql/pg_dlq.h"
#include "postgresql/pg_idempotency_store.h"
#include "postgresql/pg_outbox.h"
#include "support/temp_dir.h"

namespace clawguard {
namespace {

using clawguard::testing::CommandResult;
using clawguard::testing::ReadFile;
using testing::RunClawguard;

nlohmann::json Json(const CommandResult& r) {
  auto j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON: " << r.out << r.err;
  return j;
}

// PgOpsCliTest opens the engines a host would on the test's database (database clock).
class PgOpsCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(db_.url().empty());
    auto pool = pg::PgPool::Create(db_.url(), pg::PgOptions{});
    ASSERT_TRUE(pool.ok()) << pool.error().ToString();
    auto d = pg::PgDlq::Open(*pool);
    ASSERT_TRUE(d.ok()) << d.error().ToString();
    dlq_ = std::move(d).value();
    auto s = pg::PgIdempotencyStore::Open(*pool);
    ASSERT_TRUE(s.ok()) << s.error().ToString();
    idem_ = std::move(s).value();
    auto o = pg::PgOutbox::Open(*pool);
    ASSERT_TRUE(o.ok()) << o.error().ToString();
    outbox_ = std::move(o).value();
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
  std::vector<std::string> Actions() {
    auto a = dlq_->ListOperatorActions(100);
    EXPECT_TRUE(a.ok());
    std::vector<std::string> out;
    if (a.ok()) {
      for (const auto& x : *a) out.push_back(x.action);
    }
    return out;
  }

  clawguard::testing::TempDir dir_;
  testing::PgTestDb db_;
  std::unique_ptr<Dlq> dlq_;
  std::unique_ptr<IdempotencyStore> idem_;
  std::unique_ptr<Outbox> outbox_;
};

TEST_F(PgOpsCliTest, DlqListShowReplayDrop) {
  const int64_t a = Add(DlqClass::kBreaker, 'a', true);
  const int64_t b = Add(DlqClass::kConflict, 'b', false);
  const std::string url = db_.url();
  CommandResult r = RunClawguard({"dlq", "list", "--store", url, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json(r)["unresolved"]["breaker"]["lt_1h"], 1);
  EXPECT_EQ(Json(r)["unresolved_total"], 2);
  EXPECT_EQ(Json(r)["store"], url);

  r = RunClawguard({"dlq", "show", std::to_string(a), "--store", url, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json(r)["request"]["webhook_id"], "msg_a");
  EXPECT_EQ(r.out.find("1001"), std::string::npos);  // never the body

  const int64_t gen0 = Generation();
  const std::string audit = dir_.Sub("audit.jsonl");
  r = RunClawguard({"dlq", "replay", std::to_string(a), "--store", url, "--audit-log", audit});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Generation(), gen0 + 1);
  EXPECT_EQ((*dlq_->Get(a))->state, DlqState::kReplayRequested);
  r = RunClawguard(
      {"dlq", "drop", std::to_string(b), "--reason", "reconciled", "--store", url, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json(r)["state"], "dropped");
  EXPECT_EQ((*dlq_->Get(b))->resolution, "reconciled");
  EXPECT_EQ(Actions(), (std::vector<std::string>{"dlq.drop", "dlq.replay"}));
  EXPECT_NE(ReadFile(audit).find("\"dlq.replay\""), std::string::npos);

  r = RunClawguard({"dlq", "replay", "999", "--store", url, "--json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(Json(r)["error"], "not_found");
  r = RunClawguard({"dlq", "replay", std::to_string(b), "--store", url});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is dropped"), std::string::npos) << r.err;
}

TEST_F(PgOpsCliTest, CapabilityPauseListResume) {
  const std::string cap = "POST /orders/{id}/fulfil";
  const std::string url = db_.url();
  CommandResult r = RunClawguard({"capability", "pause", "acme-orders", cap, "--reason",
                                  "ERP maintenance", "--store", url, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json(r)["changed"], true);
  EXPECT_TRUE(*dlq_->IsPaused("acme-orders", cap));
  r = RunClawguard({"capability", "pause", "acme-orders", cap, "--store", url});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("already paused"), std::string::npos) << r.out;
  r = RunClawguard({"capability", "list", "--store", url, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(Json(r)["paused"].size(), 1u);
  EXPECT_EQ(Json(r)["paused"][0]["reason"], "ERP maintenance");
  r = RunClawguard({"capability", "resume", "acme-orders", cap, "--store", url});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(*dlq_->IsPaused("acme-orders", cap));
  EXPECT_EQ(Actions(), (std::vector<std::string>{"capability.resume", "capability.pause",
                                                 "capability.pause"}));
}

TEST_F(PgOpsCliTest, IdemShowResetConfirm) {
  const std::string key = Sha256Hex("pg-ops-cli-event");
  const std::string url = db_.url();
  auto claim =
      idem_->Claim(key, "fp-1", ClaimMeta{"acme-orders", "order.created", 3, "msg_1", ""}, 30'000);
  ASSERT_TRUE(claim.ok()) << claim.error().ToString();
  OutboxRow row;
  row.event_key = key;
  row.fencing_token = claim->fencing_token;
  row.call_index = 0;
  row.method = "POST";
  row.path = "/orders/1001/fulfil";
  row.body = R"({"order":1001})";
  row.body_sha256 = Sha256Hex(row.body);
  row.state = OutboxState::kHeld;
  row.idempotency_key = "erp-key-0";
  ASSERT_TRUE(outbox_->Append(row).ok());

  CommandResult r = RunClawguard({"idem", "show", key, "--store", url, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json(r)["record"]["state"], "in_progress");
  ASSERT_EQ(Json(r)["outbox"].size(), 1u);
  EXPECT_EQ(Json(r)["outbox"][0]["state"], "held");

  const int64_t gen0 = Generation();
  r = RunClawguard({"idem", "confirm", key, "--store", url, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json(r)["confirmed"], 1);
  EXPECT_EQ(Generation(), gen0 + 1);
  EXPECT_EQ((*outbox_->Get(key, 0))->state, OutboxState::kPending);
  r = RunClawguard({"idem", "confirm", key, "--store", url, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json(r)["confirmed"], 0);  // nothing held any more: a no-op

  r = RunClawguard({"idem", "reset", key, "--store", url});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ((*idem_->Get(key))->fingerprint, "");
  EXPECT_EQ(Actions(), (std::vector<std::string>{"idem.reset", "idem.confirm"}));

  r = RunClawguard({"idem", "reset", std::string(64, 'f'), "--store", url, "--json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(Json(r)["error"], "not_found");
}

TEST(PgOpsCliStoreTest, NeverCreatesAStore) {
  testing::PgTestDb db;
  ASSERT_FALSE(db.url().empty());
  // A database that does not exist: libpq's refusal, and it is still not there afterwards.
  const std::string missing = testing::ReplaceDatabase(db.url(), "cg_no_such_db");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"dlq", "list", "--store", missing},
        std::vector<std::string>{"capability", "list", "--store", missing},
        std::vector<std::string>{"idem", "show", std::string(64, 'a'), "--store", missing}}) {
    const CommandResult r = RunClawguard(args);
    EXPECT_EQ(r.exit_code, 2) << args[0];
    EXPECT_NE(r.err.find("store_unavailable"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("cg_no_such_db"), std::string::npos) << r.err;
  }
  // An existing database without ClawGuard's schema is refused and left empty.
  const CommandResult empty = RunClawguard({"dlq", "list", "--store", db.url(), "--json"});
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_EQ(Json(empty)["error"], "store_unavailable");
  EXPECT_NE(Json(empty)["detail"].get<std::string>().find("no ClawGuard schema"), std::string::npos)
      << empty.out;
  auto pool = pg::PgPool::Create(db.url(), pg::PgOptions{});
  ASSERT_TRUE(pool.ok());
  auto lease = (*pool)->Acquire();
  ASSERT_TRUE(lease.ok()) << lease.error().ToString();
  auto tables = lease->Exec("count", "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'");
  ASSERT_TRUE(tables.ok());
  EXPECT_EQ(tables->Int(0, 0), 0);

  // A password in the URL is refused before connecting, and never echoed.
  const CommandResult pw = RunClawguard({"capability", "pause", "acme-orders", "POST /x", "--store",
                                         "postgresql://postgres:hunter2@127.0.0.1:1/x"});
  EXPECT_EQ(pw.exit_code, 2);
  EXPECT_NE(pw.err.find("PGPASSWORD"), std::string::npos) << pw.err;
  EXPECT_EQ(pw.err.find("hunter2"), std::string::npos) << pw.err;
}

}  // namespace
}  // namespace clawguard
