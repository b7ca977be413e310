// sqlite_db_cache_test.cpp — the statement cache of SqliteDb: a cached statement comes back with
// fresh bindings and gives the same results as an uncached one, nested use of one SQL text gets
// its own statement, the cache is bounded, survives a schema change, never holds a PRAGMA, and
// Exec caches single statements but runs scripts whole — with the error words of before.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sqlite/sqlite_db.h"
#include "support/reason_matchers.h"
#include "support/temp_dir.h"

using ::clawguard::testing::HasReason;

namespace clawguard::sqlite {
namespace {

// Statements counts the compiled statements the connection holds (cached or checked out).
int Statements(const SqliteDb& db) {
  int n = 0;
  for (sqlite3_stmt* s = sqlite3_next_stmt(db.raw(), nullptr); s != nullptr;
       s = sqlite3_next_stmt(db.raw(), s))
    ++n;
  return n;
}

class SqliteDbCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.Sub("c.db");
    auto db = SqliteDb::Open(path_);
    ASSERT_TRUE(db.ok()) << db.error().ToString();
    db_ = std::move(*db);
    ASSERT_TRUE(db_->Exec("CREATE TABLE t (v INTEGER PRIMARY KEY, s TEXT); "
                          "INSERT INTO t VALUES (1, 'one'), (2, 'two'), (3, 'three');")
                    .ok());
  }

  // Query runs |sql| with |v| bound to ?1 through Prepare and returns "v:s" per row.
  std::vector<std::string> Query(const std::string& sql, int64_t v) {
    std::vector<std::string> rows;
    auto s = db_->Prepare(sql);
    EXPECT_TRUE(s.ok());
    if (!s.ok()) return rows;
    s->Bind(1, v);
    while (true) {
      auto row = s->Step();
      EXPECT_TRUE(row.ok());
      if (!row.ok() || !*row) return rows;
      rows.push_back(std::to_string(s->Int(0)) + ":" + s->Text(1));
    }
  }

  clawguard::testing::TempDir dir_;
  std::string path_;
  std::unique_ptr<SqliteDb> db_;
};

TEST_F(SqliteDbCacheTest, SameSqlTwiceReusesTheStatementWithFreshBindings) {
  const int before = Statements(*db_);
  {
    auto s = db_->Prepare("SELECT ?1, ?2");
    ASSERT_TRUE(s.ok());
    s->Bind(1, int64_t{7}).Bind(2, "x");
    ASSERT_TRUE(*s->Step());
    EXPECT_EQ(s->Int(0), 7);
    EXPECT_EQ(s->Text(1), "x");
  }  // back to the cache mid-result: reset, not finalized
  EXPECT_EQ(Statements(*db_), before + 1);
  auto s = db_->Prepare("SELECT ?1, ?2");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(Statements(*db_), before + 1);  // the same compiled statement
  s->Bind(1, int64_t{8});                   // ?2 left unbound: NULL, not last use's "x"
  ASSERT_TRUE(*s->Step());
  EXPECT_EQ(s->Int(0), 8);
  EXPECT_TRUE(s->IsNull(1));
  EXPECT_FALSE(*s->Step());
}

TEST_F(SqliteDbCacheTest, NestedUseOfTheSameSqlGetsItsOwnStatement) {
  const std::string sql = "SELECT v, s FROM t WHERE v >= ?1 ORDER BY v";
  const int before = Statements(*db_);
  auto outer = db_->Prepare(sql);
  ASSERT_TRUE(outer.ok());
  outer->Bind(1, int64_t{1});
  ASSERT_TRUE(*outer->Step());
  EXPECT_EQ(outer->Int(0), 1);
  {
    auto inner = db_->Prepare(sql);
    ASSERT_TRUE(inner.ok());
    EXPECT_EQ(Statements(*db_), before + 2);
    inner->Bind(1, int64_t{2});
    ASSERT_TRUE(*inner->Step());
    EXPECT_EQ(inner->Int(0), 2);
  }  // uncached: finalized
  EXPECT_EQ(Statements(*db_), before + 1);
  ASSERT_TRUE(*outer->Step());  // the outer cursor did not move
  EXPECT_EQ(outer->Int(0), 2);
}

TEST_F(SqliteDbCacheTest, CachedResultsEqualUncachedResults) {
  const std::string sql = "SELECT v, s FROM t WHERE v >= ?1 ORDER BY v";
  for (int64_t v = 0; v <= 4; ++v) {
    const std::vector<std::string> cached = Query(sql, v);
    auto outer = db_->Prepare(sql);  // holds the cached statement: the query below compiles anew
    ASSERT_TRUE(outer.ok());
    EXPECT_EQ(Query(sql, v), cached) << "v >= " << v;
    EXPECT_EQ(cached.size(), static_cast<size_t>(v <= 1 ? 3 : 4 - v));
  }
}

TEST_F(SqliteDbCacheTest, CachedStatementWorksAfterASchemaChange) {
  EXPECT_EQ(Query("SELECT * FROM t WHERE v = ?1", 1), std::vector<std::string>{"1:one"});
  {
    auto ins = db_->Prepare("INSERT INTO t (v, s) VALUES (?1, 'four')");
    ASSERT_TRUE(ins.ok());
    ASSERT_TRUE(ins->Bind(1, int64_t{4}).Run().ok());
  }
  ASSERT_TRUE(db_->Exec("ALTER TABLE t ADD COLUMN n INTEGER DEFAULT 7").ok());
  auto ins = db_->Prepare("INSERT INTO t (v, s) VALUES (?1, 'four')");
  ASSERT_TRUE(ins.ok());
  ASSERT_TRUE(ins->Bind(1, int64_t{5}).Run().ok());
  auto s = db_->Prepare("SELECT * FROM t WHERE v = ?1");  // cached before; SQLite re-prepares it
  ASSERT_TRUE(s.ok());
  s->Bind(1, int64_t{5});
  ASSERT_TRUE(*s->Step());
  EXPECT_EQ(s->Text(1), "four");
  EXPECT_EQ(s->Int(2), 7);  // the new column: "*" was expanded again
}

TEST_F(SqliteDbCacheTest, CacheIsBounded) {
  for (size_t i = 0; i < kMaxCachedStatements + 40; ++i) {
    auto s = db_->Prepare("SELECT " + std::to_string(i));
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE(*s->Step());
    EXPECT_EQ(s->Int(0), static_cast<int64_t>(i));
  }
  EXPECT_EQ(Statements(*db_), static_cast<int>(kMaxCachedStatements));
}

TEST_F(SqliteDbCacheTest, ExecCachesOneStatementAndRunsScriptsWhole) {
  const int before = Statements(*db_);
  ASSERT_TRUE(db_->Exec("SAVEPOINT op").ok());
  ASSERT_TRUE(db_->Exec("RELEASE op").ok());
  EXPECT_EQ(Statements(*db_), before + 2);
  ASSERT_TRUE(db_->Exec("SAVEPOINT op").ok());
  ASSERT_TRUE(db_->Exec("RELEASE op;  ").ok());  // other text, same statement: cached once more
  EXPECT_THAT(db_->Exec("RELEASE op;  "),
              HasReason(Reason::kStoreUnavailable));  // no savepoint left
  EXPECT_EQ(Statements(*db_), before + 3);

  // A script runs whole (not only its first statement), and is not cached.
  ASSERT_TRUE(db_->Exec("CREATE TABLE a (x); INSERT INTO a VALUES (1); -- a comment\n INSERT INTO "
                        "a VALUES (2);")
                  .ok());
  EXPECT_EQ(Query("SELECT x, 'a' FROM a WHERE x >= ?1", 0),
            (std::vector<std::string>{"1:a", "2:a"}));
  // A statement with a trailing comment or extra semicolons is still one statement.
  ASSERT_TRUE(db_->Exec("INSERT INTO a VALUES (3);; -- trailing\n").ok());
  EXPECT_EQ(Query("SELECT x, 'a' FROM a WHERE x >= ?1", 3), (std::vector<std::string>{"3:a"}));
}

// PRAGMA acts while it is compiled: a cached one would neither set nor read the setting again.
TEST_F(SqliteDbCacheTest, PragmasAreNeverCached) {
  const auto level = [&] {
    auto s = db_->Prepare("PRAGMA synchronous");
    EXPECT_TRUE(s.ok() && *s->Step());
    return s.ok() ? s->Int(0) : -1;
  };
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(db_->Exec("PRAGMA synchronous=NORMAL").ok());
    EXPECT_EQ(level(), 1);
    ASSERT_TRUE(db_->Exec("  /* why */ pragma synchronous=FULL").ok());
    EXPECT_EQ(level(), 2);
  }
}

TEST_F(SqliteDbCacheTest, ErrorsKeepTheirWords) {
  const Status missing = db_->Exec("INSERT INTO missing VALUES (1)");
  EXPECT_THAT(missing, HasReason(Reason::kStoreUnavailable));
  EXPECT_EQ(missing.message(), "SQLite store '" + path_ + "': no such table: missing");

  // A cached statement failing when it runs (the second time) reads like sqlite3_exec's failure.
  ASSERT_TRUE(db_->Exec("INSERT INTO t (v, s) VALUES (9, 'nine')").ok());
  const Status dup = db_->Exec("INSERT INTO t (v, s) VALUES (9, 'nine')");
  EXPECT_THAT(dup, HasReason(Reason::kStoreUnavailable));
  EXPECT_EQ(dup.message(), "SQLite store '" + path_ + "': UNIQUE constraint failed: t.v");

  auto bad = db_->Prepare("SELECT nope FROM t");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad, HasReason(Reason::kStoreUnavailable));
  EXPECT_EQ(bad.error().message(),
            "cannot prepare statement on SQLite store '" + path_ + "': no such column: nope");
}

// ConfigureSqlite (called by Open) turned SQLite's memory statistics off before SQLite started:
// no allocation is counted, so none takes the process-wide statistics mutex.
TEST(SqliteDbConfigTest, MemoryStatisticsAreOff) {
  testing::TempDir dir;
  auto db = SqliteDb::Open(dir.Sub("m.db"));
  ASSERT_TRUE(db.ok()) << db.error().ToString();
  ASSERT_TRUE(
      (*db)->Exec("CREATE TABLE m (v TEXT); INSERT INTO m VALUES (hex(randomblob(100000)));").ok());
  EXPECT_EQ(sqlite3_memory_used(), 0);
}

}  // namespace
}  // namespace clawguard::sqlite
