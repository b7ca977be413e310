// sqlite_writer_test.cpp — SqliteWriter group commit on a real SQLite file: concurrent ops share
// commits, a failing op rolls back only itself, every op is committed when Write returns, a batch
// of lazy ops commits with synchronous=NORMAL and a batch with one durable op with FULL, and the
// stores built on it keep their conditional-write semantics under concurrency.
#include "sqlite/sqlite_writer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <mutex>
#include <string>
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

// SyncLevel is the connection's PRAGMA synchronous as an op sees it (1 NORMAL, 2 FULL; -1 on error).
int64_t SyncLevel(SqliteDb& db) {
  auto s = db.Prepare("PRAGMA synchronous");
  if (!s.ok()) return -1;
  auto row = s->Step();
  if (!row.ok() || !*row) return -1;
  return s->Int(0);
}

// InsertOp inserts |v| into t and records the op's synchronous level in |level|.
SqliteWriter::Op InsertOp(int64_t v, std::atomic<int64_t>& level) {
  return [v, &level](SqliteDb& db) -> Status {
    level = SyncLevel(db);
    auto stmt = db.Prepare("INSERT INTO t (v) VALUES (?1)");
    if (!stmt.ok()) return stmt.error();
    stmt->Bind(1, v);
    return stmt->Run();
  };
}

// WaitQueued spins until |n| ops wait for the next batch (the current one is blocked by the test).
void WaitQueued(const SqliteWriter& w, int64_t n) {
  while (w.queued() < n) std::this_thread::yield();
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

TEST(SqliteWriterTest, LazyBatchCommitsWithNormalSyncAndDurableWithFull) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  auto writer = SqliteWriter::ForPath(path);
  ASSERT_TRUE(writer.ok());
  SqliteWriter& w = **writer;
  ASSERT_TRUE(w.Write([](SqliteDb& db) { return db.Exec("CREATE TABLE t (v INTEGER PRIMARY KEY)"); }).ok());
  const int64_t lazy_before = w.lazy_commits();
  std::atomic<int64_t> level{0};

  ASSERT_TRUE(w.Write(InsertOp(1, level), Durability::kLazy).ok());
  EXPECT_EQ(level.load(), 1);  // NORMAL
  EXPECT_EQ(CountRows(path, "t"), 1);  // committed: another connection sees it
  ASSERT_TRUE(w.Write(InsertOp(2, level)).ok());  // the default is durable
  EXPECT_EQ(level.load(), 2);  // FULL
  ASSERT_TRUE(w.Write(InsertOp(3, level), Durability::kLazy).ok());
  EXPECT_EQ(level.load(), 1);  // back to NORMAL
  ASSERT_TRUE(w.Write(InsertOp(4, level), Durability::kBeforeReturn).ok());
  EXPECT_EQ(level.load(), 2);
  EXPECT_EQ(w.lazy_commits() - lazy_before, 2);
  EXPECT_EQ(CountRows(path, "t"), 4);
}

// RunQueuedBatch blocks the writer with one op, queues |ops| (in order, each from its own thread)
// behind it and then lets them all run as ONE batch.
void RunQueuedBatch(SqliteWriter& w, const std::vector<std::pair<SqliteWriter::Op, Durability>>& ops,
                    std::vector<Status>& results) {
  std::atomic<bool> started{false}, release{false};
  std::thread blocker([&] {
    EXPECT_TRUE(w.Write([&](SqliteDb&) {
                   started = true;
                   while (!release) std::this_thread::yield();
                   return Status::Ok();
                 }).ok());
  });
  while (!started) std::this_thread::yield();
  results.assign(ops.size(), Status::Ok());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ops.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = w.Write(ops[i].first, ops[i].second); });
    WaitQueued(w, static_cast<int64_t>(i) + 1);  // arrival order = the order of |ops|
  }
  release = true;
  blocker.join();
  for (auto& t : threads) t.join();
}

TEST(SqliteWriterTest, BatchWithOneDurableOpCommitsFullInOrder) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  auto writer = SqliteWriter::ForPath(path);
  ASSERT_TRUE(writer.ok());
  SqliteWriter& w = **writer;
  ASSERT_TRUE(w.Write([](SqliteDb& db) { return db.Exec("CREATE TABLE t (v INTEGER PRIMARY KEY)"); }).ok());

  // Only lazy ops: one NORMAL commit.
  std::atomic<int64_t> a{0}, b{0};
  std::vector<Status> results;
  int64_t commits = w.commits();
  RunQueuedBatch(w, {{InsertOp(1, a), Durability::kLazy}, {InsertOp(2, b), Durability::kLazy}}, results);
  EXPECT_TRUE(results[0].ok() && results[1].ok());
  EXPECT_EQ(a.load(), 1);
  EXPECT_EQ(b.load(), 1);
  EXPECT_EQ(w.commits() - commits, 2);  // the blocker's batch and this one

  // Lazy ops around one durable op (and a failing lazy op): the whole batch runs FULL, in
  // arrival order (each op sees the ones before it), and the failure rolls back only itself.
  std::atomic<int64_t> c{0}, d{0}, e{0}, f{0};
  std::mutex mu;
  std::vector<std::string> order;
  const auto note = [&](const char* name) {
    std::lock_guard lock(mu);
    order.emplace_back(name);
  };
  const SqliteWriter::Op lazy_first = [&, op = InsertOp(3, c)](SqliteDb& db) { note("lazy3"); return op(db); };
  const SqliteWriter::Op failing = [&](SqliteDb& db) -> Status {
    note("failing");
    f = SyncLevel(db);
    CLAWGUARD_RETURN_IF_ERROR(db.Exec("INSERT INTO t (v) VALUES (99)"));
    return Status(Reason::kNotFound, "refused after a write");
  };
  const SqliteWriter::Op durable = [&, op = InsertOp(4, d)](SqliteDb& db) -> Status {
    note("durable4");
    // Sees lazy3 (earlier in the batch) and not the failing op's rolled-back row.
    auto s = db.Prepare("SELECT COUNT(*) FROM t WHERE v IN (3, 99)");
    if (!s.ok()) return s.error();
    auto row = s->Step();
    if (!row.ok() || !*row || s->Int(0) != 1) return Status(Reason::kInternal, "expected to see only row 3");
    return op(db);
  };
  const SqliteWriter::Op lazy_last = [&, op = InsertOp(5, e)](SqliteDb& db) { note("lazy5"); return op(db); };
  const int64_t lazy_commits = w.lazy_commits();
  commits = w.commits();
  RunQueuedBatch(w,
                 {{lazy_first, Durability::kLazy},
                  {failing, Durability::kLazy},
                  {durable, Durability::kBeforeReturn},
                  {lazy_last, Durability::kLazy}},
                 results);
  EXPECT_TRUE(results[0].ok()) << results[0].ToString();
  EXPECT_EQ(results[1].reason(), Reason::kNotFound);
  EXPECT_TRUE(results[2].ok()) << results[2].ToString();
  EXPECT_TRUE(results[3].ok()) << results[3].ToString();
  EXPECT_EQ(c.load(), 2);
  EXPECT_EQ(f.load(), 2);
  EXPECT_EQ(d.load(), 2);
  EXPECT_EQ(e.load(), 2);
  EXPECT_EQ(order, (std::vector<std::string>{"lazy3", "failing", "durable4", "lazy5"}));
  EXPECT_EQ(w.commits() - commits, 2);  // the blocker's batch and this one: the four shared one
  EXPECT_EQ(w.lazy_commits() - lazy_commits, 0);  // the blocker's op is durable too
  EXPECT_EQ(CountRows(path, "t"), 5);  // 1, 2, 3, 4, 5 — not 99
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
