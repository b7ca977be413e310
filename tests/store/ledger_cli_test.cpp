// ledger_cli_test.cpp — `clawguard ledger show|verify` end to end through the built binary:
// output, anchoring (--expect-head, the anchor file, --write-anchor), and detection of an edited,
// truncated or re-hashed SQLite ledger.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "sqlite/sqlite_db.h"
#include "sqlite/sqlite_ledger.h"
#include "support/temp_dir.h"

namespace clawguard {
namespace {

using testing::ReadFile;
using testing::RunClawguard;
using testing::TempDir;
using testing::WriteFile;

class LedgerCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto l = SqliteLedger::Open(path_, clock_).value();
    for (int i = 1; i <= 4; ++i) {
      ASSERT_TRUE(l->Record(LedgerKind::kRelease, "acme-orders", "1." + std::to_string(i) + ".0",
                            std::string(64, static_cast<char>('a' + i)))
                      .ok());
    }
    head_ = l->Head().value();
    third_ = l->ReadAll().value()[2].hash;
  }
  void Exec(const std::string& sql) {
    auto db = sqlite::SqliteDb::Open(path_);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec(sql).ok()) << sql;
  }
  std::string Anchor() const { return std::to_string(head_.count) + ":" + head_.head; }
  // Rehash rewrites row 1's bytes and re-chains every row: internally consistent again.
  void Rehash() {
    Exec("UPDATE ledger SET sha256 = '" + std::string(64, 'f') + "' WHERE seq = 1");
    auto rows = SqliteLedger::Open(path_, clock_).value()->ReadAll().value();
    std::string prev(64, '0');
    for (auto& row : rows) {
      row.prev_hash = prev;
      row.hash = LedgerRowHash(row);
      prev = row.hash;
      Exec("UPDATE ledger SET prev_hash = '" + row.prev_hash + "', hash = '" + row.hash +
           "' WHERE seq = " + std::to_string(row.seq));
    }
  }

  TempDir dir_;
  std::string path_ = dir_.Sub("state.db");
  FixedClock clock_{1764633600000};  // 2025-12-02T00:00:00Z
  LedgerCheckpoint head_;
  std::string third_;
};

TEST_F(LedgerCliTest, ShowPrintsEveryRow) {
  auto r = RunClawguard({"ledger", "show", "--store", "sqlite:" + path_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1\trelease\tacme-orders\t1.1.0\t" + std::string(64, 'b') +
                       "\t2025-12-02T00:00:00Z"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("4 rows"), std::string::npos);
  auto j = RunClawguard({"ledger", "show", "--store", path_, "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  auto doc = nlohmann::json::parse(j.out);
  ASSERT_EQ(doc["rows"].size(), 4u);
  EXPECT_EQ(doc["rows"][3]["version"], "1.4.0");
  EXPECT_EQ(doc["rows"][3]["kind"], "release");
}

TEST_F(LedgerCliTest, VerifySaysWhetherItIsAnchored) {
  auto plain = RunClawguard({"ledger", "verify", "--store", "sqlite:" + path_});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(
      plain.out,
      "ok: 4 rows, head " + head_.head +
          " — not anchored (pass --anchor FILE, or --expect-head N:HEX from a ledger anchor or an "
          "audit log's ledger_checkpoint)\n");
  auto anchored = RunClawguard({"ledger", "verify", "--expect-head", Anchor(), "--store", path_});
  ASSERT_EQ(anchored.exit_code, 0) << anchored.err;
  EXPECT_EQ(anchored.out, "ok: 4 rows, head " + head_.head + ", anchored at 4\n");
  auto older = RunClawguard(
      {"ledger", "verify", "--expect-head", "3:" + third_, "--store", path_, "--json"});
  ASSERT_EQ(older.exit_code, 0) << older.err;
  auto doc = nlohmann::json::parse(older.out);
  EXPECT_EQ(doc["verdict"], "ok");
  EXPECT_EQ(doc["rows"], 4);
  EXPECT_EQ(doc["anchored"], true);
  EXPECT_EQ(doc["anchor"]["count"], 3);
}

TEST_F(LedgerCliTest, BadExpectHeadIsUsage) {
  for (const std::string& bad : std::vector<std::string>{
           "4", "x:" + head_.head, "4:" + head_.head.substr(1), "-1:" + head_.head, "4:XYZ"}) {
    auto r = RunClawguard({"ledger", "verify", "--expect-head", bad, "--store", path_});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("usage"), std::string::npos) << r.err;
  }
  EXPECT_EQ(RunClawguard({"ledger", "verify"}).exit_code, 2);  // --store is required
}

TEST_F(LedgerCliTest, MissingStoreOrPasswordUrlExits2WithoutLeaking) {
  auto missing = RunClawguard({"ledger", "verify", "--store", dir_.Sub("nope.db")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("store_unavailable"), std::string::npos) << missing.err;
  auto pw = RunClawguard({"ledger", "show", "--store", "postgresql://cg:hunter2@db:5432/cg"});
  EXPECT_EQ(pw.exit_code, 2);
  EXPECT_EQ(pw.err.find("hunter2"), std::string::npos) << pw.err;
  EXPECT_NE(pw.err.find("postgresql://cg:***@db:5432/cg"), std::string::npos) << pw.err;
  auto query = RunClawguard(
      {"ledger", "show", "--store", "postgresql://cg@db/cg?sslmode=require&password=hunter2"});
  EXPECT_EQ(query.exit_code, 2);
  EXPECT_EQ(query.err.find("hunter2"), std::string::npos) << query.err;
  EXPECT_EQ(RunClawguard({"ledger", "show", "--store", "mysql://cg@db/cg"}).exit_code, 2);
  auto pg = RunClawguard({"ledger", "show", "--store", "postgresql://cg@db:5432/cg", "--json"});
  EXPECT_EQ(pg.exit_code, 2);
  EXPECT_EQ(nlohmann::json::parse(pg.out)["error"], "store_unavailable");
}

TEST_F(LedgerCliTest, DetectsAnEditedRow) {
  Exec("UPDATE ledger SET sha256 = '" + std::string(64, 'f') + "' WHERE seq = 2");
  auto r = RunClawguard({"ledger", "verify", "--store", path_});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("ledger_tampered"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("seq 2"), std::string::npos) << r.err;
  auto j = RunClawguard({"ledger", "verify", "--store", path_, "--json"});
  EXPECT_EQ(j.exit_code, 1);
  EXPECT_EQ(nlohmann::json::parse(j.out)["error"], "ledger_tampered");
}

TEST_F(LedgerCliTest, DetectsATruncatedTailOnlyWithAnAnchor) {
  Exec("DELETE FROM ledger WHERE seq = 4");
  EXPECT_EQ(RunClawguard({"ledger", "verify", "--store", path_}).exit_code, 0);
  auto r = RunClawguard({"ledger", "verify", "--expect-head", Anchor(), "--store", path_});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("ledger_tampered"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("seq 4"), std::string::npos) << r.err;
}

TEST_F(LedgerCliTest, DetectsARehashedLedgerOnlyWithAnAnchor) {
  Rehash();
  EXPECT_EQ(RunClawguard({"ledger", "verify", "--store", path_}).exit_code, 0);
  auto r = RunClawguard({"ledger", "verify", "--expect-head", Anchor(), "--store", path_});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("ledger_tampered"), std::string::npos) << r.err;
}

// A new host is anchored from a checkpoint it did not write; afterwards the anchor file alone
// catches a full rewrite.
TEST_F(LedgerCliTest, WriteAnchorFromAnExpectedHeadThenTheAnchorFileCatchesARewrite) {
  const std::string anchor = dir_.Sub("anchor/ledger-anchor.json");
  auto written = RunClawguard({"ledger", "verify", "--store", path_, "--anchor", anchor,
                               "--expect-head", "3:" + third_, "--write-anchor"});
  ASSERT_EQ(written.exit_code, 0) << written.err;
  EXPECT_NE(written.out.find("anchor written: " + anchor + " at 4:" + head_.head),
            std::string::npos)
      << written.out;
  const auto file = nlohmann::json::parse(ReadFile(anchor));
  EXPECT_EQ(file["schema"], "clawguard/ledger-anchor/v1");
  EXPECT_EQ(file["count"], 4);
  EXPECT_EQ(file["head"], head_.head);
  EXPECT_TRUE(file["trust_on_first_use"].is_null());

  auto checked = RunClawguard({"ledger", "verify", "--store", path_, "--anchor", anchor, "--json"});
  ASSERT_EQ(checked.exit_code, 0) << checked.err;
  const auto doc = nlohmann::json::parse(checked.out);
  EXPECT_EQ(doc["anchored"], true);
  EXPECT_EQ(doc["anchor"]["count"], 4);
  EXPECT_EQ(doc["anchor_file"]["path"], anchor);
  EXPECT_TRUE(doc["anchor_file"]["trust_on_first_use"].is_null());

  Rehash();
  auto caught = RunClawguard({"ledger", "verify", "--store", path_, "--anchor", anchor});
  EXPECT_EQ(caught.exit_code, 1);
  EXPECT_NE(caught.err.find("ledger_tampered"), std::string::npos) << caught.err;
  EXPECT_NE(caught.err.find("anchor file " + anchor), std::string::npos) << caught.err;
  // A chain that does not hold the expected head is never anchored.
  auto refused =
      RunClawguard({"ledger", "verify", "--store", path_, "--anchor", dir_.Sub("other.json"),
                    "--expect-head", Anchor(), "--write-anchor"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("other.json")));
}

TEST_F(LedgerCliTest, ATrustOnFirstUseAnchorIsShownUntilConfirmed) {
  const std::string anchor = dir_.Sub("ledger-anchor.json");
  const nlohmann::json checkpoint = {
      {"count", head_.count}, {"head", head_.head}, {"time", "2025-12-02T00:00:00Z"}};
  nlohmann::json file = checkpoint;  // what a host writes when it trusted the head on first use
  file["schema"] = "clawguard/ledger-anchor/v1";
  file["trust_on_first_use"] = checkpoint;
  WriteFile(anchor, file.dump());
  auto shown = RunClawguard({"ledger", "verify", "--store", path_, "--anchor", anchor});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("warning: the anchor began by trusting 4:" + head_.head +
                           " on first use, not confirmed"),
            std::string::npos)
      << shown.out;
  auto confirmed = RunClawguard({"ledger", "verify", "--store", path_, "--anchor", anchor,
                                 "--expect-head", Anchor(), "--write-anchor"});
  ASSERT_EQ(confirmed.exit_code, 0) << confirmed.err;
  EXPECT_EQ(confirmed.out.find("warning"), std::string::npos) << confirmed.out;
  EXPECT_TRUE(nlohmann::json::parse(ReadFile(anchor))["trust_on_first_use"].is_null());
}

TEST_F(LedgerCliTest, MissingAnchorFileWithRowsIsNotAQuietPass) {
  auto r = RunClawguard({"ledger", "verify", "--store", path_, "--anchor", dir_.Sub("gone.json")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("does not exist while the ledger holds 4 rows"), std::string::npos) << r.err;
  auto usage = RunClawguard(
      {"ledger", "verify", "--store", path_, "--anchor", dir_.Sub("gone.json"), "--write-anchor"});
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_NE(usage.err.find("--write-anchor needs --anchor FILE and --expect-head N:HEX"),
            std::string::npos)
      << usage.err;
}

TEST_F(LedgerCliTest, AnchorThatIsAFifoIsAClearError) {
  const std::string fifo = dir_.Sub("fifo-anchor");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto r = RunClawguard({"ledger", "verify", "--store", path_, "--anchor", fifo});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("the ledger anchor '" + fifo + "' is a FIFO, expected a regular file"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace clawguard
