// sqlite_wal_vfs_test.cpp — the "clawguard-wal" VFS: a commit reaches the WAL with one write and
// nothing stays buffered after COMMIT; other connections see every commit; and the files as a
// killed process leaves them (copied while the connection is still open) recover, through the
// default VFS, every committed row and none of a rolled-back one — after small commits, a commit
// larger than the buffer, a transaction that spills and rewrites frames, and a WAL restart.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "sqlite/sqlite_db.h"
#include "sqlite/sqlite_wal_vfs.h"
#include "support/temp_dir.h"

namespace clawguard::sqlite {
namespace {

std::string One(SqliteDb& db, const std::string& sql) {
  auto s = db.Prepare(sql);
  EXPECT_TRUE(s.ok()) << sql;
  if (!s.ok()) return "";
  auto row = s->Step();
  EXPECT_TRUE(row.ok() && *row) << sql;
  return row.ok() && *row ? s->Text(0) : "";
}

void Sql(SqliteDb& db, const std::string& sql) {
  const Status s = db.Exec(sql);
  ASSERT_TRUE(s.ok()) << sql << ": " << s.ToString();
}

// Series is a statement prefix naming the rows 1..n as s(value) (no generate_series in Debian's
// SQLite).
std::string Series(int64_t n) {
  return "WITH RECURSIVE s(value) AS (SELECT 1 UNION ALL SELECT value + 1 FROM s WHERE value < " +
         std::to_string(n) + ") ";
}

class SqliteWalVfsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(WalVfsName(), nullptr);
    path_ = dir_.Sub("w.db");
    auto db = SqliteDb::Open(path_, WalVfsName());
    ASSERT_TRUE(db.ok()) << db.error().ToString();
    db_ = std::move(*db);
    Sql(*db_, "PRAGMA wal_autocheckpoint=0");  // the test decides when the WAL restarts
    Sql(*db_, "CREATE TABLE t (k INTEGER PRIMARY KEY, g INTEGER NOT NULL, v BLOB NOT NULL)");
    Sql(*db_, "CREATE INDEX t_g ON t (g, k)");
  }

  // CrashImage copies the database and its WAL as they are in the file system now (what a killed
  // process leaves: its writes are in the page cache), opens the copy with the default VFS and
  // returns "<integrity_check> <rows> <sum of g>".
  std::string CrashImage() {
    const std::string copy = dir_.Sub("copy" + std::to_string(++images_));
    std::filesystem::create_directories(copy);
    std::filesystem::copy_file(path_, copy + "/w.db");
    std::filesystem::copy_file(path_ + "-wal", copy + "/w.db-wal");
    auto db = SqliteDb::Open(copy + "/w.db");
    EXPECT_TRUE(db.ok()) << db.error().ToString();
    if (!db.ok()) return "";
    return One(**db, "PRAGMA integrity_check") + " " +
           One(**db, "SELECT count(*) || ' ' || total(g) FROM t");
  }

  std::string Expected() { return "ok " + One(*db_, "SELECT count(*) || ' ' || total(g) FROM t"); }

  testing::TempDir dir_;
  std::string path_;
  std::unique_ptr<SqliteDb> db_;
  int images_ = 0;
};

TEST_F(SqliteWalVfsTest, ACommitOfManyFramesIsOneWriteAndNothingStaysBuffered) {
  Sql(*db_, "INSERT INTO t (g, v) VALUES (0, randomblob(100))");
  for (int i = 0; i < 50; ++i) {
    const WalWriteCounts before = WalWriteCountsForTesting();
    // Rows spread over the table and its index: several pages, so several frames.
    Sql(*db_, "BEGIN");
    Sql(*db_, Series(6) + "INSERT INTO t (g, v) SELECT " + std::to_string(i) +
                  " * 7 + value % 5, randomblob(900) FROM s");
    Sql(*db_, "UPDATE t SET g = g + 1 WHERE k = 1");
    Sql(*db_, "COMMIT");
    const WalWriteCounts after = WalWriteCountsForTesting();
    EXPECT_EQ(after.buffered, 0) << "commit " << i;
    EXPECT_EQ(after.writes - before.writes, 1) << "commit " << i;
    EXPECT_GE(after.bytes - before.bytes, 2 * (24 + 4096))
        << "commit " << i;  // at least two frames
  }
  EXPECT_EQ(CrashImage(), Expected());
}

TEST_F(SqliteWalVfsTest, OtherConnectionsSeeEveryCommitAtOnce) {
  auto reader = SqliteDb::Open(path_);  // the default VFS
  ASSERT_TRUE(reader.ok());
  for (int i = 1; i <= 20; ++i) {
    Sql(*db_, "INSERT INTO t (g, v) VALUES (" + std::to_string(i) + ", randomblob(3000))");
    EXPECT_EQ(One(**reader, "SELECT count(*) FROM t"), std::to_string(i));
  }
}

TEST_F(SqliteWalVfsTest, TheFilesAKilledProcessLeavesRecoverEveryCommittedRow) {
  // Small commits.
  for (int i = 0; i < 30; ++i)
    Sql(*db_, "INSERT INTO t (g, v) VALUES (" + std::to_string(i) + ", randomblob(500))");
  EXPECT_EQ(WalWriteCountsForTesting().buffered, 0);
  EXPECT_EQ(CrashImage(), Expected());

  // One commit larger than the buffer (written in runs).
  Sql(*db_, Series(3 * kWalBufferBytes / 3000) +
                "INSERT INTO t (g, v) SELECT 1000 + value, randomblob(3000) FROM s");
  EXPECT_EQ(WalWriteCountsForTesting().buffered, 0);
  EXPECT_EQ(CrashImage(), Expected());

  // A transaction that spills to the WAL before its commit (a 10-page cache) and then changes the
  // spilled pages again: SQLite rewrites those frames in place and then their checksums.
  Sql(*db_, "PRAGMA cache_size=10");
  const int64_t rewrites = WalWriteCountsForTesting().rewrites;
  Sql(*db_, "BEGIN");
  Sql(*db_, Series(400) + "INSERT INTO t (g, v) SELECT 5000 + value, randomblob(700) FROM s");
  Sql(*db_, "UPDATE t SET g = g + 1, v = randomblob(650) WHERE g >= 5000");
  Sql(*db_, "UPDATE t SET g = g + 1 WHERE g >= 5000");
  Sql(*db_, "COMMIT");
  EXPECT_EQ(WalWriteCountsForTesting().buffered, 0);
  EXPECT_GT(WalWriteCountsForTesting().rewrites, rewrites);  // the path this step is for
  EXPECT_EQ(CrashImage(), Expected());

  // A rolled-back transaction that spilled: none of it comes back.
  const std::string before = Expected();
  Sql(*db_, "BEGIN");
  Sql(*db_, Series(300) + "INSERT INTO t (g, v) SELECT 9000 + value, randomblob(700) FROM s");
  Sql(*db_, "ROLLBACK");
  Sql(*db_, "INSERT INTO t (g, v) VALUES (1, x'00')");
  EXPECT_NE(Expected(), before);
  EXPECT_EQ(CrashImage(), Expected());
  Sql(*db_, "PRAGMA cache_size=-2000");

  // A WAL restart: the next commit writes the WAL header at offset 0 and frames from its start.
  Sql(*db_, "PRAGMA wal_checkpoint(RESTART)");
  for (int i = 0; i < 10; ++i) {
    const WalWriteCounts w0 = WalWriteCountsForTesting();
    Sql(*db_, Series(3) + "INSERT INTO t (g, v) SELECT " + std::to_string(i) +
                  ", randomblob(2000) FROM s");
    const WalWriteCounts w1 = WalWriteCountsForTesting();
    EXPECT_EQ(w1.buffered, 0);
    // The first commit after the restart also writes the WAL header (at once, not buffered).
    EXPECT_LE(w1.writes - w0.writes, i == 0 ? 2 : 1) << "commit " << i;
  }
  EXPECT_EQ(CrashImage(), Expected());
}

}  // namespace
}  // namespace clawguard::sqlite
