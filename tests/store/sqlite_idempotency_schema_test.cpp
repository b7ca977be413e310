// sqlite_idempotency_schema_test.cpp — migrations of the idem_* and outbox_rows tables: a database
// made by an older build keeps every row, reaches the current version once, and the retry
// worker's query runs on the v4 partial index (only pending and sent rows in it).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "clawguard/clock.h"
#include "sqlite/sqlite_db.h"
#include "sqlite/sqlite_idempotency_store.h"
#include "sqlite/sqlite_outbox.h"
#include "support/temp_dir.h"

namespace clawguard::sqlite {
namespace {

constexpr int64_t kT0 = 1'796'000'000'000;  // 2026-12-01, fixed

// One string per row of |sql|: its columns from |first| to |last| joined by '|'.
std::vector<std::string> Rows(SqliteDb& db, const std::string& sql, int first = 0, int last = 0) {
  std::vector<std::string> out;
  auto s = db.Prepare(sql);
  EXPECT_TRUE(s.ok()) << sql;
  if (!s.ok()) return out;
  while (true) {
    auto row = s->Step();
    EXPECT_TRUE(row.ok());
    if (!row.ok() || !*row) break;
    std::string line;
    for (int i = first; i <= last; ++i) {
      if (i > first) line += "|";
      line += s->IsNull(i) ? "NULL" : s->Text(i);
    }
    out.push_back(line);
  }
  return out;
}

// AddRow inserts an outbox row of event |key| in |state|, due at |next_attempt_ms|.
void AddRow(SqliteDb& db, const std::string& key, int64_t call_index, const std::string& state,
            int64_t next_attempt_ms) {
  auto s = db.Prepare(
      "INSERT INTO outbox_rows (event_key, call_index, fencing_token, method, path, body, body_sha256, state, "
      "next_attempt_ms, idempotency_key) VALUES (?1, ?2, 1, 'POST', '/orders/1/fulfil', x'7b7d', 'sha', ?3, ?4, "
      "'idem-' || ?1 || '-' || ?2)");
  ASSERT_TRUE(s.ok());
  s->Bind(1, key).Bind(2, call_index).Bind(3, state).Bind(4, next_attempt_ms);
  ASSERT_TRUE(s->Run().ok());
}

TEST(SqliteIdempotencySchemaTest, AVersion3DatabaseKeepsEveryRowAndTheWorkerQueryUsesThePartialIndex) {
  testing::TempDir dir;
  const std::string path = dir.Sub("state.db");
  {
    auto db = SqliteDb::Open(path);
    ASSERT_TRUE(db.ok()) << db.error().ToString();
    ASSERT_TRUE(MigrateIdempotencySchemaTo(**db, 3).ok());  // what builds before v4 made
    AddRow(**db, "a", 0, "answered", kT0 - 50);
    AddRow(**db, "a", 1, "sent", kT0 - 40);
    AddRow(**db, "b", 0, "pending", kT0 - 40);
    AddRow(**db, "c", 0, "dead", kT0 - 90);
    AddRow(**db, "d", 0, "held", kT0 - 99);
    AddRow(**db, "e", 0, "pending", kT0 + 60'000);  // not due yet
  }
  FixedClock clock(kT0);
  auto outbox = SqliteOutbox::Open(path, clock);  // migrates to the current version
  ASSERT_TRUE(outbox.ok()) << outbox.error().ToString();

  auto db = SqliteDb::Open(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(Rows(**db, "SELECT group_concat(version) FROM idem_schema_version"), std::vector<std::string>{"1,2,3,4"});
  EXPECT_EQ(Rows(**db, "SELECT event_key, call_index, state, next_attempt_ms - " + std::to_string(kT0) +
                           " FROM outbox_rows ORDER BY event_key, call_index",
                 0, 3),
            (std::vector<std::string>{"a|0|answered|-50", "a|1|sent|-40", "b|0|pending|-40", "c|0|dead|-90",
                                      "d|0|held|-99", "e|0|pending|60000"}));
  // The index holds only the rows the worker looks for.
  EXPECT_EQ(Rows(**db, "SELECT sql LIKE '%WHERE state IN (''pending'', ''sent'')%' FROM sqlite_schema "
                       "WHERE name = 'outbox_rows_due'"),
            std::vector<std::string>{"1"});

  // DuePending: due rows in next-attempt order, ties by event key; the plan searches the index.
  auto due = (*outbox)->DuePending(kT0, 10);
  ASSERT_TRUE(due.ok()) << due.error().ToString();
  std::vector<std::string> keys;
  for (const OutboxRow& r : *due) keys.push_back(r.event_key + "/" + std::to_string(r.call_index));
  EXPECT_EQ(keys, (std::vector<std::string>{"a/1", "b/0"}));
  const std::vector<std::string> plan =
      Rows(**db, "EXPLAIN QUERY PLAN SELECT event_key FROM outbox_rows WHERE state IN ('pending', 'sent') "
                 "AND next_attempt_ms <= 1 ORDER BY next_attempt_ms, event_key, call_index LIMIT 10",
           3, 3);  // the detail column
  ASSERT_FALSE(plan.empty());
  EXPECT_NE(plan.front().find("USING INDEX outbox_rows_due"), std::string::npos) << plan.front();

  // A row that is answered is no longer due.
  ASSERT_TRUE((*outbox)->MarkAnswered("a", 1, 200, "{}").ok());
  EXPECT_EQ((*outbox)->DuePending(kT0, 10)->size(), 1u);
}

TEST(SqliteIdempotencySchemaTest, ACurrentDatabaseIsNotMigratedAgainAndUnknownVersionsAreRefused) {
  testing::TempDir dir;
  const std::string path = dir.Sub("state.db");
  auto db = SqliteDb::Open(path);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(MigrateIdempotencySchema(**db).ok());
  ASSERT_TRUE(MigrateIdempotencySchema(**db).ok());
  EXPECT_EQ(Rows(**db, "SELECT group_concat(version) FROM idem_schema_version"), std::vector<std::string>{"1,2,3,4"});

  const Status none = MigrateIdempotencySchemaTo(**db, 99);
  EXPECT_EQ(none.reason(), Reason::kInternal);
  ASSERT_TRUE((*db)->Exec("INSERT INTO idem_schema_version (version) VALUES (99)").ok());
  const Status newer = MigrateIdempotencySchema(**db);
  EXPECT_EQ(newer.reason(), Reason::kStoreUnavailable);
  EXPECT_NE(newer.message().find("newer than this build"), std::string::npos) << newer.message();
}

}  // namespace
}  // namespace clawguard::sqlite
