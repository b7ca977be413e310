// store_cli_test.cpp — the CLI on PostgreSQL through the built binary: `store migrate`, ledger
// commands on a postgresql:// URL, password refusal and an unreachable server (exit codes and
// messages of ARCHITECTURE.md "Commands").
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "pg/support/pg_test_db.h"
#include "postgresql/pg_schema.h"
#include "support/temp_dir.h"

namespace clawguard {
namespace {

using testing::RunClawguard;

TEST(PgStoreCliTest, MigrateAppliesOnceAndSaysWhich) {
  testing::PgTestDb db;
  const auto first = RunClawguard({"store", "migrate", "--store", db.url(), "--json"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto j = nlohmann::json::parse(first.out);
  EXPECT_EQ(j["engine"], "postgresql");
  EXPECT_EQ(j["from"], 0);
  EXPECT_EQ(j["to"], pg::kPgSchemaVersion);
  nlohmann::json all = nlohmann::json::array();
  for (int64_t v = 1; v <= pg::kPgSchemaVersion; ++v) all.push_back(v);
  EXPECT_EQ(j["applied"], all);
  EXPECT_EQ(j["store"], db.url());
  const auto second = RunClawguard({"store", "migrate", "--store", db.url()});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.out.find("already at schema version " + std::to_string(pg::kPgSchemaVersion)),
            std::string::npos)
      << second.out;
}

TEST(PgStoreCliTest, MigrateRefusesANewerSchema) {
  testing::PgTestDb db;
  ASSERT_EQ(RunClawguard({"store", "migrate", "--store", db.url()}).exit_code, 0);
  db.Exec("INSERT INTO clawguard_schema_version (version, applied_ms) VALUES (7, 0)");
  const auto r = RunClawguard({"store", "migrate", "--store", db.url(), "--json"});
  EXPECT_EQ(r.exit_code, 2);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["error"], "store_unavailable");
  EXPECT_NE(j["detail"].get<std::string>().find("version 7"), std::string::npos) << r.out;
}

TEST(PgStoreCliTest, UnreachableServerExitsTwoWithStoreUnavailable) {
  const auto r =
      RunClawguard({"store", "migrate", "--store", "postgresql://postgres@127.0.0.1:1/x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("store_unavailable"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("postgresql://postgres@127.0.0.1:1/x"), std::string::npos) << r.err;
}

TEST(PgStoreCliTest, PasswordInTheUrlIsRefusedAndRedacted) {
  const auto r =
      RunClawguard({"store", "migrate", "--store", "postgresql://postgres:s3cret@127.0.0.1:1/x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("usage"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("s3cret"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("s3cret"), std::string::npos);
}

TEST(PgStoreCliTest, LedgerCommandsOpenAPostgresLedger) {
  testing::PgTestDb db;
  const auto show = RunClawguard({"ledger", "show", "--store", db.url(), "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.err << show.out;
  EXPECT_EQ(nlohmann::json::parse(show.out)["rows"].size(), 0u);
  const auto verify = RunClawguard({"ledger", "verify", "--store", db.url()});
  EXPECT_EQ(verify.exit_code, 0) << verify.err;
  EXPECT_NE(verify.out.find("ok: 0 rows"), std::string::npos) << verify.out;
}

TEST(PgStoreCliTest, MigrateAlsoWorksOnSqlite) {
  clawguard::testing::TempDir dir;
  const auto r =
      RunClawguard({"store", "migrate", "--store", "sqlite:" + dir.Sub("state.db"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["engine"], "sqlite");
  EXPECT_EQ(RunClawguard({"store", "migrate", "--store", "ftp://x"}).exit_code, 2);
}

}  // namespace
}  // namespace clawguard
