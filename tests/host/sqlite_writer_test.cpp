// sqlite_writer_test.cpp — SqliteWriter group commit on a real SQLite file: concurrent ops share
// commits, a failing op rolls back only itself, every op is durable when Write returns, and the
// stores built on it keep their conditional-write semantics under concurrency.
#include "sqlite/sqlite_writer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <thread>
#include <vector>

#include "clawguard/clock.h"
#include "sqlite/sqlite_idempotency_store.h"
#include "support/temp_dir.h"

namespace clawguard::sqlite {
namespace {

constexpr int kThreads = 8;
constexpr int kOpsPerThread = 40;

int64_t CountRows(const std::string& path, const std::string& table) {
  auto db = SqliteDb::Open(path);
  EXPECT_TRUE(db.ok());
  auto s = (*db)->Prepare("SELECT COUNT(*) FROM " + table);
  EXPECT_TRUE(s.ok());
  auto row = s->Step();
  EXPECT_TRUE(row.ok() && *row);
  return s->Int(0);
}

TEST(SqliteWriterTest, ConcurrentOpsShareCommitsAndAreAllDurable) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  auto writer = SqliteWriter::ForPath(path);
  ASSERT_TRUE(writer.ok()) << writer.error().ToString();
  ASSERT_TRUE((*writer)->Write([](SqliteDb& db) { return db.Exec("CREATE TABLE t (v INTEGER PRIMARY KEY)"); }).ok());
  const int64_t commits_before = (*writer)->commits();

  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kOpsPerThread; ++i) {
        const int64_t v = t * 1000 + i;
        const Status s = (*writer)->Write([v](SqliteDb& db) {
          auto stmt = db.Prepare("INSERT INTO t (v) VALUES (?1)");
          if (!stmt.ok()) return stmt.error();
          stmt->Bind(1, v);
          return stmt->Run();
        });
        if (!s.ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(CountRows(path, "t"), kThreads * kOpsPerThread);  // a fresh connection sees every op
  const int64_t commits = (*writer)->commits() - commits_before;
  EXPECT_GE(commits, 1);
  EXPECT_LE(commits, kThreads * kOpsPerThread);
  std::cout << "[ group ] " << kThreads * kOpsPerThread << " ops in " << commits << " commits\n";
}

TEST(SqliteWriterTest, FailingOpRollsBackOnlyItself) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  auto writer = SqliteWriter::ForPath(path);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->Write([](SqliteDb& db) { return db.Exec("CREATE TABLE t (v INTEGER PRIMARY KEY)"); }).ok());
  const Status bad = (*writer)->Write([](SqliteDb& db) -> Status {
    CLAWGUARD_RETURN_IF_ERROR(db.Exec("INSERT INTO t (v) VALUES (1)"));
    return Status(Reason::kNotFound, "refused after a write");
  });
  EXPECT_EQ(bad.reason(), Reason::kNotFound);
  EXPECT_TRUE((*writer)->Write([](SqliteDb& db) { return db.Exec("INSERT INTO t (v) VALUES (2)"); }).ok());
  EXPECT_EQ(CountRows(path, "t"), 1);
}

TEST(SqliteWriterTest, OneWriterPerFileIsShared) {
  clawguard::testing::TempDir dir;
  auto a = SqliteWriter::ForPath(dir.Sub("w.db"));
  auto b = SqliteWriter::ForPath(dir.Sub("./w.db"));
  auto c = SqliteWriter::ForPath(dir.Sub("other.db"));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_NE(a->get(), c->get());
}

// Many concurrent claims of a few keys through the group-committed store: each key is claimed
// exactly once (the conditional write still decides), the others see it in progress.
TEST(SqliteWriterTest, ConcurrentClaimsStayExclusive) {
  clawguard::testing::TempDir dir;
  FixedClock clock(1'790'000'000'000);
  auto store = SqliteIdempotencyStore::Open(dir.Sub("s.db"), clock);
  ASSERT_TRUE(store.ok());
  constexpr int kKeys = 5;
  std::atomic<int> claimed{0}, busy{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int k = 0; k < kKeys; ++k) {
        const std::string key(64, static_cast<char>('a' + k));
        auto c = (*store)->Claim(key, "fp", ClaimMeta{"p", "r", 2, "id", ""}, 30'000);
        if (!c.ok()) {
          ++errors;
        } else if (c->kind == ClaimOutcome::Kind::kClaimed) {
          ++claimed;
        } else if (c->kind == ClaimOutcome::Kind::kInProgress) {
          ++busy;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(claimed.load(), kKeys);
  EXPECT_EQ(busy.load(), kKeys * (kThreads - 1));
}

}  // namespace
}  // namespace clawguard::sqlite
