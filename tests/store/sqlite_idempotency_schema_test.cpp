// sqlite_idempotency_schema_test.cpp — migrations of the idem_* and outbox_rows tables: a database
// made by an older build keeps every row, reaches the current version once, and the retry
// worker's query runs on the v4 partial index (only pending and sent rows in it); v5's state
// CHECKs admit the same states as before without an ephemeral table per checked row; v6 keys
// outbox rows by their record's id, which VACUUM keeps; v7 names the send that owns a row.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "clawguard/clock.h"
#include "sqlite/sqlite_db.h"
#include "sqlite/sqlite_idempotency_store.h"
#include "sqlite/sqlite_outbox.h"
#include "support/fixed_time.h"
#include "support/reason_matchers.h"
#include "support/temp_dir.h"

using ::clawguard::testing::HasReason;

namespace clawguard::sqlite {
namespace {

using ::clawguard::testing::kT0;

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
      "INSERT INTO outbox_rows (event_key, call_index, fencing_token, method, path, body, "
      "body_sha256, state, "
      "next_attempt_ms, idempotency_key) VALUES (?1, ?2, 1, 'POST', '/orders/1/fulfil', x'7b7d', "
      "'sha', ?3, ?4, "
      "'idem-' || ?1 || '-' || ?2)");
  ASSERT_TRUE(s.ok());
  s->Bind(1, key).Bind(2, call_index).Bind(3, state).Bind(4, next_attempt_ms);
  ASSERT_TRUE(s->Run().ok());
}

// AddRecord inserts an in-progress idempotency record |key| with fencing token 1 (the columns
// every version has).
void AddRecord(SqliteDb& db, const std::string& key) {
  auto s = db.Prepare(
      "INSERT INTO idem_records (key, plugin, route, level, fingerprint, state, lease_until_ms, "
      "fencing_token, "
      "created_ms, updated_ms) VALUES (?1, 'acme', 'orders', 2, 'fp-' || ?1, 'in_progress', 1, 1, "
      "1, 1)");
  ASSERT_TRUE(s.ok());
  s->Bind(1, key);
  ASSERT_TRUE(s->Run().ok());
}

// Upgraded is a database an older build made, after this build opened its outbox (which migrates
// it): the outbox, and a connection to look at the file. Both null if either could not open.
struct Upgraded {
  std::unique_ptr<SqliteOutbox> outbox;
  std::unique_ptr<SqliteDb> db;
};

// Upgrade opens the outbox at |path| with |clock| (which must outlive it) and checks that every
// schema version was applied once.
Upgraded Upgrade(const std::string& path, const Clock& clock) {
  auto outbox = SqliteOutbox::Open(path, clock);
  auto db = SqliteDb::Open(path);
  if (!outbox.ok() || !db.ok()) {
    ADD_FAILURE() << (outbox.ok() ? db.error().ToString() : outbox.error().ToString());
    return {};
  }
  EXPECT_EQ(Rows(**db, "SELECT group_concat(version) FROM idem_schema_version"),
            std::vector<std::string>{"1,2,3,4,5,6,7"});
  return {std::move(*outbox), std::move(*db)};
}

// ExpectTheIndexesWereMadeAgain: a migration that copies the tables makes their named indexes
// again.
void ExpectTheIndexesWereMadeAgain(SqliteDb& db) {
  EXPECT_EQ(
      Rows(db,
           "SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_schema WHERE type = "
           "'index' "
           "AND name NOT LIKE 'sqlite_autoindex%' AND tbl_name IN ('idem_records', 'outbox_rows') "
           "ORDER BY name)"),
      std::vector<std::string>{
          "idem_records_purge,idem_records_stuck,idem_records_tombstones,outbox_rows_due"});
}

TEST(SqliteIdempotencySchemaTest,
     AVersion3DatabaseKeepsEveryRowAndTheWorkerQueryUsesThePartialIndex) {
  testing::TempDir dir;
  const std::string path = dir.Sub("state.db");
  {
    auto db = SqliteDb::Open(path);
    ASSERT_TRUE(db.ok()) << db.error().ToString();
    ASSERT_TRUE(MigrateIdempotencySchemaTo(**db, 3).ok());  // what builds before v4 made
    for (const char* key : {"a", "b", "c", "d", "e"}) AddRecord(**db, key);
    AddRow(**db, "a", 0, "answered", kT0 - 50);
    AddRow(**db, "a", 1, "sent", kT0 - 40);
    AddRow(**db, "b", 0, "pending", kT0 - 40);
    AddRow(**db, "c", 0, "dead", kT0 - 90);
    AddRow(**db, "d", 0, "held", kT0 - 99);
    AddRow(**db, "e", 0, "pending", kT0 + 60'000);  // not due yet
  }
  FixedClock clock(kT0);
  Upgraded up = Upgrade(path, clock);
  ASSERT_NE(up.db, nullptr);
  SqliteDb* db = up.db.get();
  SqliteOutbox* outbox = up.outbox.get();
  EXPECT_EQ(Rows(*db,
                 "SELECT event_key, call_index, state, next_attempt_ms - " + std::to_string(kT0) +
                     " FROM outbox_rows ORDER BY event_key, call_index",
                 0, 3),
            (std::vector<std::string>{"a|0|answered|-50", "a|1|sent|-40", "b|0|pending|-40",
                                      "c|0|dead|-90", "d|0|held|-99", "e|0|pending|60000"}));
  // The index holds only the rows the worker looks for.
  EXPECT_EQ(Rows(*db,
                 "SELECT sql LIKE '%WHERE state IN (''pending'', ''sent'')%' FROM sqlite_schema "
                 "WHERE name = 'outbox_rows_due'"),
            std::vector<std::string>{"1"});

  // DuePending: due rows in next-attempt order, ties by event key; the plan searches the index.
  auto due = outbox->DuePending(kT0, 10);
  ASSERT_TRUE(due.ok()) << due.error().ToString();
  std::vector<std::string> keys;
  for (const OutboxRow& r : *due) keys.push_back(r.event_key + "/" + std::to_string(r.call_index));
  EXPECT_EQ(keys, (std::vector<std::string>{"a/1", "b/0"}));
  const std::vector<std::string> plan = Rows(
      *db,
      "EXPLAIN QUERY PLAN SELECT event_key FROM outbox_rows WHERE state IN ('pending', 'sent') "
      "AND next_attempt_ms <= 1 ORDER BY next_attempt_ms, event_key, call_index LIMIT 10",
      3, 3);  // the detail column
  ASSERT_FALSE(plan.empty());
  EXPECT_NE(plan.front().find("USING INDEX outbox_rows_due"), std::string::npos) << plan.front();

  // A row that is answered is no longer due.
  ASSERT_TRUE(outbox->Claim("a", 1, kT0, "send-a", kT0 + 1'000)->has_value());
  ASSERT_TRUE(outbox->MarkAnswered("a", 1, "send-a", 200, "{}").ok());
  EXPECT_EQ(outbox->DuePending(kT0, 10)->size(), 1u);
}

// Opcodes of |sql|'s compiled program (EXPLAIN's second column).
std::vector<std::string> Opcodes(SqliteDb& db, const std::string& sql) {
  return Rows(db, "EXPLAIN " + sql, 1, 1);
}

bool Has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

TEST(SqliteIdempotencySchemaTest,
     AVersion4DatabaseKeepsEveryColumnAndTheStateChecksStillRefuseUnknownStates) {
  testing::TempDir dir;
  const std::string path = dir.Sub("state.db");
  const std::string insert_record =
      "INSERT INTO idem_records (key, plugin, route, level, fingerprint, state, lease_until_ms, "
      "fencing_token, "
      "status, content_type, body, created_ms, updated_ms, webhook_id, x_idempotency_key, "
      "has_request, "
      "request_content_type, request_body, reconcile_attempts, tombstone_until_ms) VALUES ";
  {
    auto db = SqliteDb::Open(path);
    ASSERT_TRUE(db.ok()) << db.error().ToString();
    ASSERT_TRUE(MigrateIdempotencySchemaTo(**db, 4).ok());  // what builds before v5 made
    // The v4 insert builds an ephemeral table for its CHECK: the cost v5 removes.
    EXPECT_TRUE(
        Has(Opcodes(**db, insert_record +
                              "('k', 'p', 'r', 1, 'f', 'completed', 1, 2, 3, 'c', x'00', 4, "
                              "5, 'w', 'x', 1, 'rc', x'01', 6, 7)"),
            "OpenEphemeral"));
    ASSERT_TRUE(
        (*db)
            ->Exec(
                insert_record +
                "('a', 'acme', 'orders', 2, 'fp-a', 'completed', 10, 3, 200, 'application/json', "
                "x'7b7d', 11, 12, 'msg_a', 'xk', 1, 'application/json', x'5b5d', 2, 0), "
                "('b', 'acme', 'orders', 1, 'fp-b', 'in_progress', 20, 1, 0, '', x'', 21, 22, '', "
                "'', "
                "0, x'', x'', 0, 0), "
                "('c', 'acme', 'orders', 2, 'fp-c', 'tombstone', 30, 5, 409, '', x'', 31, 32, '', "
                "'', "
                "0, x'', x'', 0, 99)")
            .ok());
    AddRow(**db, "a", 0, "answered", kT0 - 50);
    AddRow(**db, "b", 0, "held", kT0 - 40);
  }
  FixedClock clock(kT0);
  Upgraded up = Upgrade(path, clock);
  ASSERT_NE(up.db, nullptr);
  SqliteDb* db = up.db.get();
  EXPECT_EQ(Rows(*db,
                 "SELECT key, plugin, route, level, fingerprint, state, lease_until_ms, "
                 "fencing_token, status, "
                 "content_type, hex(body), created_ms, updated_ms, webhook_id, x_idempotency_key, "
                 "has_request, "
                 "request_content_type, hex(request_body), reconcile_attempts, tombstone_until_ms "
                 "FROM idem_records ORDER BY key",
                 0, 19),
            (std::vector<std::string>{
                "a|acme|orders|2|fp-a|completed|10|3|200|application/json|7B7D|11|12|msg_a|xk|1|"
                "application/json|5B5D|2|0",
                "b|acme|orders|1|fp-b|in_progress|20|1|0|||21|22|||0|||0|0",
                "c|acme|orders|2|fp-c|tombstone|30|5|409|||31|32|||0|||0|99"}));
  EXPECT_EQ(Rows(*db,
                 "SELECT event_key, call_index, state, hex(body), idempotency_key FROM outbox_rows "
                 "ORDER BY event_key",
                 0, 4),
            (std::vector<std::string>{"a|0|answered|7B7D|idem-a-0", "b|0|held|7B7D|idem-b-0"}));
  ExpectTheIndexesWereMadeAgain(*db);

  // Every known state is admitted and nothing else, by insert and by update.
  for (const char* state : {"in_progress", "completed", "tombstone"}) {
    EXPECT_TRUE(
        db->Exec(std::string("UPDATE idem_records SET state = '") + state + "' WHERE key = 'b'")
            .ok())
        << state;
  }
  for (const char* state : {"pending", "sent", "answered", "dead", "held"}) {
    EXPECT_TRUE(db->Exec(std::string("UPDATE outbox_rows SET state = '") + state +
                         "' WHERE event_key = 'a'")
                    .ok())
        << state;
  }
  for (const char* state : {"done", "", "COMPLETED", "completed "}) {
    const Status bad =
        db->Exec(std::string("UPDATE idem_records SET state = '") + state + "' WHERE key = 'b'");
    EXPECT_FALSE(bad.ok()) << state;
    EXPECT_NE(bad.message().find("CHECK constraint failed"), std::string::npos) << bad.message();
    EXPECT_FALSE(db->Exec(std::string("UPDATE outbox_rows SET state = '") + state +
                          "' WHERE event_key = 'a'")
                     .ok())
        << state;
  }
  EXPECT_FALSE(db->Exec(insert_record +
                        "('z', 'p', 'r', 1, 'f', NULL, 1, 2, 3, 'c', x'', 4, 5, '', '', 0, x'', "
                        "x'', 0, 0)")
                   .ok());
  EXPECT_FALSE(db->Exec(insert_record +
                        "('z', 'p', 'r', 1, 'f', 'sent', 1, 2, 3, 'c', x'', 4, 5, '', '', 0, x'', "
                        "x'', 0, 0)")
                   .ok());
  EXPECT_EQ(Rows(*db, "SELECT count(*) FROM idem_records WHERE key = 'z'"),
            std::vector<std::string>{"0"});
  // No ephemeral table per checked row any more.
  EXPECT_FALSE(
      Has(Opcodes(*db, insert_record +
                           "('k', 'p', 'r', 1, 'f', 'completed', 1, 2, 3, 'c', x'00', 4, 5, "
                           "'w', 'x', 1, 'rc', x'01', 6, 7)"),
          "OpenEphemeral"));
  EXPECT_FALSE(Has(
      Opcodes(*db,
              "UPDATE outbox_rows SET state = 'answered' WHERE event_key = 'a' AND call_index = 0"),
      "OpenEphemeral"));
}

TEST(SqliteIdempotencySchemaTest, AVersion5DatabaseKeysOutboxRowsByTheirRecordsIdWhichVacuumKeeps) {
  testing::TempDir dir;
  const std::string path = dir.Sub("state.db");
  {
    auto db = SqliteDb::Open(path);
    ASSERT_TRUE(db.ok()) << db.error().ToString();
    ASSERT_TRUE(MigrateIdempotencySchemaTo(**db, 5).ok());  // what builds before v6 made
    for (const char* key : {"x", "gone", "a", "b"}) AddRecord(**db, key);
    // A gap in the rowids: VACUUM may renumber implicit rowids, never an INTEGER PRIMARY KEY.
    ASSERT_TRUE((*db)->Exec("DELETE FROM idem_records WHERE key = 'gone'").ok());
    AddRow(**db, "b", 0, "answered", kT0 - 50);
    AddRow(**db, "a", 1, "sent", kT0 - 40);
    AddRow(**db, "a", 0, "answered", kT0 - 60);
    AddRow(**db, "x", 0, "held", kT0 - 99);
    // Rows without a record (no build writes them): kept, and those still to be sent become dead.
    AddRow(**db, "orphan", 0, "pending", kT0 - 10);
    AddRow(**db, "orphan", 1, "answered", kT0 - 10);
  }
  FixedClock clock(kT0);
  Upgraded up = Upgrade(path, clock);
  ASSERT_NE(up.db, nullptr);
  SqliteDb* db = up.db.get();
  SqliteOutbox* outbox = up.outbox.get();
  // Each record keeps its rowid as its id; each row points at its record (or below zero).
  EXPECT_EQ(Rows(*db, "SELECT id, key, fingerprint FROM idem_records ORDER BY id", 0, 2),
            (std::vector<std::string>{"1|x|fp-x", "3|a|fp-a", "4|b|fp-b"}));
  EXPECT_EQ(Rows(*db,
                 "SELECT record_id, call_index, event_key, state, next_attempt_ms - " +
                     std::to_string(kT0) +
                     ", hex(body), idempotency_key FROM outbox_rows WHERE record_id > 0 "
                     "ORDER BY record_id, call_index",
                 0, 6),
            (std::vector<std::string>{
                "1|0|x|held|-99|7B7D|idem-x-0", "3|0|a|answered|-60|7B7D|idem-a-0",
                "3|1|a|sent|-40|7B7D|idem-a-1", "4|0|b|answered|-50|7B7D|idem-b-0"}));
  EXPECT_EQ(
      Rows(
          *db,
          "SELECT record_id < 0, call_index, event_key, state FROM outbox_rows WHERE record_id < 0 "
          "ORDER BY call_index",
          0, 3),
      (std::vector<std::string>{"1|0|orphan|dead", "1|1|orphan|answered"}));
  ExpectTheIndexesWereMadeAgain(*db);

  // The outbox works on the migrated rows, addressed by record id and call index.
  auto listed = outbox->ListEvent("a");
  ASSERT_TRUE(listed.ok()) << listed.error().ToString();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[1].state, OutboxState::kSent);
  ASSERT_TRUE(outbox->Claim("a", 1, kT0, "send-a", kT0 + 1'000)->has_value());
  ASSERT_TRUE(outbox->MarkAnswered("a", 1, "send-a", 201, "{\"ok\":true}").ok());
  EXPECT_FALSE(
      outbox->Claim("orphan", 0, kT0, "send-b", kT0 + 1'000)->has_value());  // nothing can reach it
  EXPECT_EQ(outbox->ListEvent("orphan")->size(), 0u);
  auto due = outbox->DuePending(kT0, 10);
  ASSERT_TRUE(due.ok());
  EXPECT_TRUE(due->empty());  // a's call 1 is answered, the orphan is dead, x's row is held
  const std::vector<std::string> plan =
      Rows(*db,
           "EXPLAIN QUERY PLAN UPDATE outbox_rows SET state = 'dead' WHERE record_id = "
           "(SELECT id FROM idem_records WHERE key = 'a') AND call_index = 1 AND event_key = 'a'",
           3, 3);
  bool by_key = false;
  for (const std::string& step : plan)
    by_key = by_key || step.find("(record_id=? AND call_index=?)") != std::string::npos;
  EXPECT_TRUE(by_key) << ::testing::PrintToString(plan);

  // A new record's id comes after every id in use, and its rows are appended under it.
  auto store = SqliteIdempotencyStore::Open(path, clock);
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  ClaimMeta meta;
  meta.plugin = "acme";
  meta.route = "orders";
  meta.level = 2;
  auto claim = (*store)->Claim("new", "fp-new", meta, 30'000);
  ASSERT_TRUE(claim.ok()) << claim.error().ToString();
  OutboxRow row;
  row.event_key = "new";
  row.fencing_token = claim->fencing_token;
  row.call_index = 0;
  row.method = "POST";
  row.path = "/inventory/adjust";
  row.body = "{}";
  row.body_sha256 = "sha";
  row.idempotency_key = "idem-new-0";
  row.state = OutboxState::kHeld;
  row.next_attempt_ms = kT0;
  auto appended = outbox->Append(row);
  ASSERT_TRUE(appended.ok()) << appended.error().ToString();
  EXPECT_EQ(appended->kind, OutboxAppend::Kind::kAppended);
  EXPECT_EQ(
      Rows(*db,
           "SELECT r.id, o.call_index FROM outbox_rows o JOIN idem_records r ON r.id = o.record_id "
           "WHERE o.event_key = 'new'",
           0, 1),
      std::vector<std::string>{"5|0"});

  // VACUUM keeps every id (an explicit INTEGER PRIMARY KEY), so every row still finds its record.
  ASSERT_TRUE(db->Exec("VACUUM").ok());
  EXPECT_EQ(Rows(*db,
                 "SELECT group_concat(id || o, ',') FROM (SELECT r.id, (SELECT count(*) FROM "
                 "outbox_rows o "
                 "WHERE o.record_id = r.id AND o.event_key = r.key) AS o FROM idem_records r ORDER "
                 "BY r.id)"),
            std::vector<std::string>{"11,32,41,51"});
  EXPECT_EQ(outbox->ListEvent("a")->size(), 2u);
  auto confirmed = outbox->ConfirmHeld("x", kT0);
  ASSERT_TRUE(confirmed.ok()) << confirmed.error().ToString();
  EXPECT_EQ(*confirmed, 1);
}

TEST(SqliteIdempotencySchemaTest, AVersion6DatabaseKeepsItsRowsWhichNoSendOwnsYet) {
  testing::TempDir dir;
  const std::string path = dir.Sub("state.db");
  {
    auto db = SqliteDb::Open(path);
    ASSERT_TRUE(db.ok()) << db.error().ToString();
    ASSERT_TRUE(MigrateIdempotencySchemaTo(**db, 6).ok());  // what builds before v7 made
    AddRecord(**db, "a");
    auto s = (*db)->Prepare(
        "INSERT INTO outbox_rows (record_id, call_index, event_key, fencing_token, method, path, "
        "body, body_sha256, "
        "state, attempts, next_attempt_ms, idempotency_key) SELECT id, ?1, 'a', 1, 'POST', "
        "'/orders/1/fulfil', "
        "x'7b7d', 'sha', ?2, ?3, ?4, 'idem-a-' || ?1 FROM idem_records WHERE key = 'a'");
    ASSERT_TRUE(s.ok());
    // A row an older build left sent (its send in flight or failed), one pending, one answered.
    s->Bind(1, int64_t{0}).Bind(2, "sent").Bind(3, int64_t{2}).Bind(4, kT0 - 40);
    ASSERT_TRUE(s->Run().ok());
    ASSERT_TRUE(s->Reset().ok());
    s->Bind(1, int64_t{1}).Bind(2, "pending").Bind(3, int64_t{0}).Bind(4, kT0 + 5'000);
    ASSERT_TRUE(s->Run().ok());
    ASSERT_TRUE(s->Reset().ok());
    s->Bind(1, int64_t{2}).Bind(2, "answered").Bind(3, int64_t{1}).Bind(4, kT0 - 90);
    ASSERT_TRUE(s->Run().ok());
  }
  FixedClock clock(kT0);
  Upgraded up = Upgrade(path, clock);
  ASSERT_NE(up.db, nullptr);
  EXPECT_EQ(
      Rows(*up.db,
           "SELECT call_index, state, attempts, next_attempt_ms - " + std::to_string(kT0) +
               ", claimed_by = '' FROM outbox_rows ORDER BY call_index",
           0, 4),
      (std::vector<std::string>{"0|sent|2|-40|1", "1|pending|0|5000|1", "2|answered|1|-90|1"}));
  ExpectTheIndexesWereMadeAgain(*up.db);
  // The sent row is due as it was, and one send takes it; the pending one waits for its time.
  auto due = up.outbox->DuePending(kT0, 10);
  ASSERT_TRUE(due.ok()) << due.error().ToString();
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].call_index, 0);
  auto claimed = up.outbox->Claim("a", 0, kT0, "send-a", kT0 + 10'000);
  ASSERT_TRUE(claimed.ok() && claimed->has_value());
  EXPECT_EQ((*claimed)->attempts, 3);
  EXPECT_EQ((*claimed)->claimed_by, "send-a");
  EXPECT_FALSE(up.outbox->Claim("a", 0, kT0, "send-b", kT0 + 10'000)->has_value());
  EXPECT_TRUE(up.outbox->DuePending(kT0, 10)->empty());
}

TEST(SqliteIdempotencySchemaTest, ACurrentDatabaseIsNotMigratedAgainAndUnknownVersionsAreRefused) {
  testing::TempDir dir;
  const std::string path = dir.Sub("state.db");
  auto db = SqliteDb::Open(path);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(MigrateIdempotencySchema(**db).ok());
  ASSERT_TRUE(MigrateIdempotencySchema(**db).ok());
  EXPECT_EQ(Rows(**db, "SELECT group_concat(version) FROM idem_schema_version"),
            std::vector<std::string>{"1,2,3,4,5,6,7"});

  const Status none = MigrateIdempotencySchemaTo(**db, 99);
  EXPECT_THAT(none, HasReason(Reason::kInternal));
  ASSERT_TRUE((*db)->Exec("INSERT INTO idem_schema_version (version) VALUES (99)").ok());
  const Status newer = MigrateIdempotencySchema(**db);
  EXPECT_THAT(newer, HasReason(Reason::kStoreUnavailable));
  EXPECT_NE(newer.message().find("newer than this build"), std::string::npos) << newer.message();
}

}  // namespace
}  // namespace clawguard::sqlite
