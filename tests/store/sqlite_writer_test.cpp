// sqlite_writer_test.cpp — SqliteWriter group commit on a real SQLite file: concurrent ops share
// commits, a failing op rolls back only itself, a batch of one op runs without a SAVEPOINT, every
// op is committed when Write returns, every batch commits with synchronous=NORMAL and a durable
// Write returns only after a WAL flush that started after its commit (group fsync: lazy Writes
// commit while a flush runs, concurrent durable Writes share flushes, a failed flush poisons the
// writer), and the stores built on it keep their conditional-write semantics under concurrency.
// Over 400 lines: the flush tests need the blocking/counting seams defined here.
// Over 500 lines on purpose: every property above runs on the one fixture (a real database file
// and the writer that owns it), and group commit and group fsync are two sides of one batch.
#include "sqlite/sqlite_writer.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "clawguard/clock.h"
#include "sqlite/sqlite_idempotency_store.h"
#include "sqlite/sqlite_wal_vfs.h"
#include "support/reason_matchers.h"
#include "support/temp_dir.h"

using ::clawguard::testing::HasReason;

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

// SyncLevel is the connection's PRAGMA synchronous as an op sees it (1 NORMAL, 2 FULL; -1 on
// error).
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

// NewTable opens a writer for a new file and creates table t in its first batch.
std::shared_ptr<SqliteWriter> NewTable(const std::string& path) {
  auto writer = SqliteWriter::ForPath(path);
  EXPECT_TRUE(writer.ok());
  if (!writer.ok()) return nullptr;
  EXPECT_TRUE(
      (*writer)
          ->Write([](SqliteDb& db) { return db.Exec("CREATE TABLE t (v INTEGER PRIMARY KEY)"); })
          .ok());
  return *writer;
}

TEST(SqliteWriterTest, ConcurrentOpsShareCommitsAndAreAllDurable) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  auto writer = SqliteWriter::ForPath(path);
  ASSERT_TRUE(writer.ok()) << writer.error().ToString();
  ASSERT_TRUE(
      (*writer)
          ->Write([](SqliteDb& db) { return db.Exec("CREATE TABLE t (v INTEGER PRIMARY KEY)"); })
          .ok());
  const int64_t commits_before = (*writer)->commits();

  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
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

// Threads mix lazy, durable and Submit'ed ops: each thread's ops keep their order (a Submit'ed op
// is seen by the same thread's next Write, whoever leads the batches) and every op runs exactly
// once. ASan runs this test too (a waiter's state must outlive the leader's wake-up of it).
TEST(SqliteWriterTest, MixedWritesAndSubmitsFromManyThreadsAllRunOnceInEachThreadsOrder) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  std::shared_ptr<SqliteWriter> writer = NewTable(path);
  ASSERT_NE(writer, nullptr);
  std::atomic<int64_t> level{0};  // InsertOp's record of the level; not checked here
  const auto insert = [&level](int64_t v) { return InsertOp(v, level); };
  std::atomic<int> failures{0}, unseen{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kOpsPerThread; ++i) {
        const int64_t v = t * 1000 + i;
        if (i % 3 == 1) {
          writer->Submit(insert(v));
          continue;
        }
        // A Write after a Submit by this thread sees the Submit'ed row (arrival order).
        const int64_t previous = v - 1;
        const bool check = i % 3 == 2;
        const Status s = writer->Write(
            [&, v, previous, check](SqliteDb& db) {
              if (check) {
                auto q = db.Prepare("SELECT count(*) FROM t WHERE v = ?1");
                if (!q.ok()) return q.error();
                q->Bind(1, previous);
                auto step = q->Step();
                if (!step.ok()) return step.error();
                if (q->Int(0) != 1) ++unseen;
              }
              return insert(v)(db);
            },
            i % 2 == 0 ? Durability::kLazy : Durability::kBeforeReturn);
        if (!s.ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  // Whatever Submit'ed ops are still queued run with the next Write.
  ASSERT_TRUE(writer->Write([](SqliteDb&) { return Status::Ok(); }).ok());
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(unseen.load(), 0);
  EXPECT_EQ(writer->queued(), 0);
  EXPECT_EQ(CountRows(path, "t"), kThreads * kOpsPerThread);
}

// The wake-ups (sqlite_wakeups.h): a leader sets a waiter's bit under the lock and
// wakes it after releasing the lock, and a waiter returns as soon as it sees its bit — so a
// waiter's stack word is often reused by its thread's next Write while a wake-up for it is still
// on its way. Many short ops from many threads, mostly lazy, a few durable and Submit'ed: every
// call returns OK exactly once, every op runs once, nothing stays queued (a lost wake-up would
// hang the test; ASan runs it too).
TEST(SqliteWriterTest, ManyShortWritesFromManyThreadsAreAllWokenAndRunOnce) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  std::shared_ptr<SqliteWriter> writer = NewTable(path);
  ASSERT_NE(writer, nullptr);
  constexpr int kStormThreads = 16;
  constexpr int kStormOps = 400;
  std::atomic<int64_t> level{0};
  std::atomic<int> failures{0};
  std::atomic<int64_t> returned{0};
  std::vector<std::thread> threads;
  threads.reserve(kStormThreads);
  for (int t = 0; t < kStormThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kStormOps; ++i) {
        const int64_t v = t * 10000 + i;
        if (i % 7 == 3) {
          writer->Submit(InsertOp(v, level));
          continue;
        }
        const Durability d = i % 50 == 0 ? Durability::kBeforeReturn : Durability::kLazy;
        if (!writer->Write(InsertOp(v, level), d).ok()) ++failures;
        ++returned;
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(writer->Write([](SqliteDb&) { return Status::Ok(); }).ok());
  int64_t submitted = 0;
  for (int i = 0; i < kStormOps; ++i) submitted += i % 7 == 3 ? 1 : 0;
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(returned.load(), kStormThreads * (kStormOps - submitted));
  EXPECT_EQ(writer->queued(), 0);
  EXPECT_EQ(CountRows(path, "t"), kStormThreads * kStormOps);
}

TEST(SqliteWriterTest, FailingOpRollsBackOnlyItself) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  auto writer = SqliteWriter::ForPath(path);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(
      (*writer)
          ->Write([](SqliteDb& db) { return db.Exec("CREATE TABLE t (v INTEGER PRIMARY KEY)"); })
          .ok());
  const Status bad = (*writer)->Write([](SqliteDb& db) -> Status {
    CLAWGUARD_RETURN_IF_ERROR(db.Exec("INSERT INTO t (v) VALUES (1)"));
    return Status(Reason::kNotFound, "refused after a write");
  });
  EXPECT_THAT(bad, HasReason(Reason::kNotFound));
  EXPECT_TRUE(
      (*writer)->Write([](SqliteDb& db) { return db.Exec("INSERT INTO t (v) VALUES (2)"); }).ok());
  EXPECT_EQ(CountRows(path, "t"), 1);
}

// An op that throws fails alone, with kInternal, and the writer goes on: the leader takes its
// lock back and hands the role on as after any failed op (a throw must never leave the writer
// led by nobody, nor release a lock twice).
TEST(SqliteWriterTest, ThrowingOpFailsAloneAndTheWriterGoesOn) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  std::shared_ptr<SqliteWriter> writer = NewTable(path);
  ASSERT_NE(writer, nullptr);
  const Status thrown = writer->Write([](SqliteDb& db) -> Status {
    CLAWGUARD_RETURN_IF_ERROR(db.Exec("INSERT INTO t (v) VALUES (1)"));
    throw std::runtime_error("out of something");
  });
  EXPECT_THAT(thrown, HasReason(Reason::kInternal));
  EXPECT_NE(thrown.message().find("out of something"), std::string::npos) << thrown.ToString();
  writer->Submit([](SqliteDb&) -> Status { throw 7; });  // not even a std::exception
  EXPECT_TRUE(
      writer->Write([](SqliteDb& db) { return db.Exec("INSERT INTO t (v) VALUES (2)"); }).ok());
  EXPECT_EQ(CountRows(path, "t"), 1);  // the throwing op's insert was rolled back
}

// FlushLog is a sync hook that flushes for real and notes, per flush, how many batches the
// writer had run when the flush started and whether the descriptor was the WAL's.
struct FlushLog {
  std::mutex mu;
  std::vector<int64_t> started_after;  // commits() at the start of each flush
  bool all_wal = true;
  SqliteWriter::SyncFn Hook(const SqliteWriter& w, const std::string& db_path) {
    return [this, &w, wal = db_path + "-wal"](int fd) {
      struct stat held {
      }, at_path{};
      const bool is_wal = ::fstat(fd, &held) == 0 && ::stat(wal.c_str(), &at_path) == 0 &&
                          held.st_ino == at_path.st_ino && held.st_dev == at_path.st_dev;
      {
        std::lock_guard lock(mu);
        started_after.push_back(w.commits());
        all_wal = all_wal && is_wal;
      }
      return ::fdatasync(fd) == 0 ? 0 : errno;
    };
  }
};

// The checkpointer's own connection makes SQLite create the WAL when the writer opens, so even the
// first durable batch of a new file commits NORMAL and is flushed through the WAL descriptor.
// (The FULL fallback for a WAL that cannot be opened stays in the writer for other set-ups.)
TEST(SqliteWriterTest, FirstDurableBatchOfANewFileIsFlushedThroughTheWal) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  auto writer = SqliteWriter::ForPath(path);
  ASSERT_TRUE(writer.ok());
  SqliteWriter& w = **writer;
  std::atomic<int64_t> level{0};
  ASSERT_TRUE(w.Write([&](SqliteDb& db) {
                 level = SyncLevel(db);
                 return db.Exec("CREATE TABLE t (v INTEGER PRIMARY KEY)");
               }).ok());
  EXPECT_EQ(level.load(), 1);  // NORMAL, then the WAL flush
  EXPECT_EQ(w.syncs(), 1);
  EXPECT_EQ(w.lazy_commits(), 1);
  ASSERT_TRUE(w.Write(InsertOp(1, level)).ok());
  EXPECT_EQ(level.load(), 1);
  EXPECT_EQ(w.syncs(), 2);
  EXPECT_EQ(w.lazy_commits(), 2);
}

TEST(SqliteWriterTest, EveryBatchCommitsNormalAndDurableWritesWaitForAFlush) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  std::shared_ptr<SqliteWriter> writer = NewTable(path);
  ASSERT_NE(writer, nullptr);
  SqliteWriter& w = *writer;
  FlushLog log;
  w.SetSyncForTesting(log.Hook(w, path));
  const int64_t lazy_before = w.lazy_commits();
  const int64_t syncs_before = w.syncs();
  std::atomic<int64_t> level{0};

  ASSERT_TRUE(w.Write(InsertOp(1, level), Durability::kLazy).ok());
  EXPECT_EQ(level.load(), 1);          // NORMAL
  EXPECT_EQ(CountRows(path, "t"), 1);  // committed: another connection sees it
  EXPECT_EQ(w.syncs(), syncs_before);  // a lazy Write does not flush
  for (const int64_t v : {2, 4}) {
    const int64_t commit = w.commits() + 1;         // the number of this Write's batch
    ASSERT_TRUE(w.Write(InsertOp(v, level)).ok());  // the default is durable
    EXPECT_EQ(level.load(), 1);  // NORMAL as well: the flush comes after the commit
    {
      std::lock_guard lock(log.mu);
      ASSERT_FALSE(log.started_after.empty());
      EXPECT_GE(log.started_after.back(), commit);  // the flush started after this batch committed
    }
    ASSERT_TRUE(w.Write(InsertOp(v + 1, level), Durability::kLazy).ok());
  }
  EXPECT_EQ(w.syncs() - syncs_before, 2);
  EXPECT_TRUE(log.all_wal);                      // what was flushed is the WAL
  EXPECT_EQ(w.lazy_commits() - lazy_before, 5);  // every batch
  EXPECT_EQ(CountRows(path, "t"), 5);
}

// RunQueuedBatch blocks the writer with one op, queues |ops| (in order, each from its own thread)
// behind it and then lets them all run as ONE batch.
void RunQueuedBatch(SqliteWriter& w,
                    const std::vector<std::pair<SqliteWriter::Op, Durability>>& ops,
                    std::vector<Status>& results) {
  std::atomic<bool> started{false}, release{false};
  std::thread blocker([&] {
    EXPECT_TRUE(w.Write(
                     [&](SqliteDb&) {
                       started = true;
                       while (!release) std::this_thread::yield();
                       return Status::Ok();
                     },
                     Durability::kLazy)
                    .ok());
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

TEST(SqliteWriterTest, BatchWithOneDurableOpCommitsInOrderAndFlushesOnce) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  std::shared_ptr<SqliteWriter> writer = NewTable(path);
  ASSERT_NE(writer, nullptr);
  SqliteWriter& w = *writer;

  // Only lazy ops: one NORMAL commit.
  std::atomic<int64_t> a{0}, b{0};
  std::vector<Status> results;
  int64_t commits = w.commits();
  RunQueuedBatch(w, {{InsertOp(1, a), Durability::kLazy}, {InsertOp(2, b), Durability::kLazy}},
                 results);
  EXPECT_TRUE(results[0].ok() && results[1].ok());
  EXPECT_EQ(a.load(), 1);
  EXPECT_EQ(b.load(), 1);
  EXPECT_EQ(w.commits() - commits, 2);  // the blocker's batch and this one

  // Lazy ops around one durable op (and a failing lazy op): the batch runs NORMAL, in arrival
  // order (each op sees the ones before it), the failure rolls back only itself, and the durable
  // op's Write flushes the WAL once.
  std::atomic<int64_t> c{0}, d{0}, e{0}, f{0};
  std::mutex mu;
  std::vector<std::string> order;
  const auto note = [&](const char* name) {
    std::lock_guard lock(mu);
    order.emplace_back(name);
  };
  const SqliteWriter::Op lazy_first = [&, op = InsertOp(3, c)](SqliteDb& db) {
    note("lazy3");
    return op(db);
  };
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
    if (!row.ok() || !*row || s->Int(0) != 1)
      return Status(Reason::kInternal, "expected to see only row 3");
    return op(db);
  };
  const SqliteWriter::Op lazy_last = [&, op = InsertOp(5, e)](SqliteDb& db) {
    note("lazy5");
    return op(db);
  };
  const int64_t lazy_commits = w.lazy_commits();
  const int64_t syncs = w.syncs();
  commits = w.commits();
  RunQueuedBatch(w,
                 {{lazy_first, Durability::kLazy},
                  {failing, Durability::kLazy},
                  {durable, Durability::kBeforeReturn},
                  {lazy_last, Durability::kLazy}},
                 results);
  EXPECT_TRUE(results[0].ok()) << results[0].ToString();
  EXPECT_THAT(results[1], HasReason(Reason::kNotFound));
  EXPECT_TRUE(results[2].ok()) << results[2].ToString();
  EXPECT_TRUE(results[3].ok()) << results[3].ToString();
  EXPECT_EQ(c.load(), 1);
  EXPECT_EQ(f.load(), 1);
  EXPECT_EQ(d.load(), 1);
  EXPECT_EQ(e.load(), 1);
  EXPECT_EQ(order, (std::vector<std::string>{"lazy3", "failing", "durable4", "lazy5"}));
  EXPECT_EQ(w.commits() - commits, 2);  // the blocker's batch and this one: the four shared one
  EXPECT_EQ(w.lazy_commits() - lazy_commits, 2);  // every batch commits NORMAL
  EXPECT_EQ(w.syncs() - syncs, 1);                // the durable op's flush; the lazy ones need none
  EXPECT_EQ(CountRows(path, "t"), 5);             // 1, 2, 3, 4, 5 — not 99
}

// Gate is a sync hook whose first flush blocks until Open (later ones pass); it returns
// |first_result| for that first flush (an errno value, 0 to flush for real). Opened on destruction
// so that a failing test does not hang: declare it after the futures it blocks.
class Gate {
 public:
  explicit Gate(int first_result = 0) : first_result_(first_result) {}
  ~Gate() { Open(); }
  SqliteWriter::SyncFn Hook() {
    return [this](int fd) {
      std::unique_lock lock(mu_);
      if (!entered_) {
        entered_ = true;
        cv_.notify_all();
        cv_.wait(lock, [&] { return open_; });
        if (first_result_ != 0) return first_result_;
      }
      lock.unlock();
      return ::fdatasync(fd) == 0 ? 0 : errno;
    };
  }
  // WaitEntered waits (bounded: a broken writer fails the test instead of hanging it) for the
  // first flush to block.
  bool WaitEntered() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(60), [&] { return entered_; });
  }
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  const int first_result_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool entered_ = false;
  bool open_ = false;
};

// DrainBatches returns once every batch that started before it has committed (batches run one
// at a time, in order, and a lazy Write returns when its own batch committed).
void DrainBatches(SqliteWriter& w) {
  EXPECT_TRUE(w.Write([](SqliteDb&) { return Status::Ok(); }, Durability::kLazy).ok());
}

constexpr auto kNow = std::chrono::seconds(0);

// The point of flushing beside the commit order: a durable Write's flush does not hold up the
// lazy Writes behind it, and the durable Write does not return before its flush finished.
TEST(SqliteWriterTest, LazyWritesCommitWhileAFlushIsBlocked) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  std::shared_ptr<SqliteWriter> w = NewTable(path);
  ASSERT_NE(w, nullptr);
  std::atomic<int64_t> level{0};
  std::future<Status> durable;
  std::future<bool> lazy;
  Gate gate;
  w->SetSyncForTesting(gate.Hook());
  const int64_t syncs_before = w->syncs();

  durable = std::async(std::launch::async, [&] { return w->Write(InsertOp(1, level)); });
  ASSERT_TRUE(gate.WaitEntered());
  lazy = std::async(std::launch::async, [&] {
    bool ok = true;
    for (int64_t v = 2; v <= 11; ++v)
      ok = w->Write(InsertOp(v, level), Durability::kLazy).ok() && ok;
    return ok;
  });
  ASSERT_EQ(lazy.wait_for(std::chrono::seconds(60)),
            std::future_status::ready);  // not behind the flush
  EXPECT_TRUE(lazy.get());
  EXPECT_EQ(CountRows(path, "t"), 11);  // all committed, the durable one too
  EXPECT_EQ(durable.wait_for(kNow), std::future_status::timeout);  // its flush has not finished
  gate.Open();
  EXPECT_TRUE(durable.get().ok());
  EXPECT_EQ(w->syncs() - syncs_before, 1);
}

// Group fsync: durable Writes that commit while a flush runs share the next flush.
TEST(SqliteWriterTest, ConcurrentDurableWritesShareFlushes) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  std::shared_ptr<SqliteWriter> w = NewTable(path);
  ASSERT_NE(w, nullptr);
  std::atomic<int64_t> level{0};
  std::atomic<int> ran{0};
  std::vector<std::future<Status>> durable;
  Gate gate;
  w->SetSyncForTesting(gate.Hook());
  const int64_t syncs_before = w->syncs();

  durable.push_back(std::async(std::launch::async, [&] { return w->Write(InsertOp(0, level)); }));
  ASSERT_TRUE(gate.WaitEntered());  // the first flush blocks; the others commit meanwhile
  for (int64_t v = 1; v < kThreads; ++v) {
    durable.push_back(std::async(std::launch::async, [&, v] {
      return w->Write([&, op = InsertOp(v, level)](SqliteDb& db) {
        ++ran;
        return op(db);
      });
    }));
  }
  while (ran.load() < kThreads - 1) std::this_thread::yield();
  DrainBatches(*w);  // every durable op has committed (and waits for a flush) before the gate opens
  gate.Open();
  for (auto& f : durable) EXPECT_TRUE(f.get().ok());
  // The blocked flush covered only the first op; ONE more covered all the others.
  EXPECT_EQ(w->syncs() - syncs_before, 2);
  EXPECT_EQ(CountRows(path, "t"), kThreads);
}

// Durable wake-ups (sqlite_writer.h): a batch led by a LAZY op holds several durable ops and no
// flush runs. The leader wakes one of them to lead the flush and registers the others as sync
// waiters at once: the lazy op returns without a flush, the flush starts without anyone else
// writing, no durable op returns before that flush ended, and one flush covers them all. (Were
// no flush leader woken, WaitEntered would time out; were a registered waiter never released, the
// test would hang.)
TEST(SqliteWriterTest, DurableOpsInABatchLedByALazyOpShareOneFlushThatOneOfThemLeads) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  std::shared_ptr<SqliteWriter> w = NewTable(path);
  ASSERT_NE(w, nullptr);
  std::atomic<int64_t> level{0};
  Gate gate;
  w->SetSyncForTesting(gate.Hook());
  const int64_t syncs_before = w->syncs();

  // A running batch holds the leader role while the next batch is queued behind it.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> in_blocker{false};
  std::future<Status> blocker = std::async(std::launch::async, [&] {
    return w->Write(
        [&](SqliteDb&) {
          in_blocker = true;
          released.wait();
          return Status::Ok();
        },
        Durability::kLazy);
  });
  while (!in_blocker.load()) std::this_thread::yield();
  std::future<Status> lazy = std::async(
      std::launch::async, [&] { return w->Write(InsertOp(100, level), Durability::kLazy); });
  WaitQueued(*w, 1);  // the lazy op is the oldest queued waiter: it leads the next batch
  std::vector<std::future<Status>> durable;
  for (int64_t v = 1; v <= kThreads; ++v) {
    durable.push_back(
        std::async(std::launch::async, [&, v] { return w->Write(InsertOp(v, level)); }));
  }
  WaitQueued(*w, 1 + kThreads);
  release.set_value();
  EXPECT_TRUE(blocker.get().ok());
  ASSERT_EQ(lazy.wait_for(std::chrono::seconds(60)), std::future_status::ready);  // no flush for it
  EXPECT_TRUE(lazy.get().ok());
  ASSERT_TRUE(gate.WaitEntered());  // one durable op leads the flush
  for (auto& f : durable)
    EXPECT_EQ(f.wait_for(kNow), std::future_status::timeout);  // all wait for it
  gate.Open();
  for (auto& f : durable) EXPECT_TRUE(f.get().ok());
  EXPECT_EQ(w->syncs() - syncs_before, 1);
  EXPECT_EQ(CountRows(path, "t"), kThreads + 1);
}

// fsyncgate: after a failed flush the writer refuses every write, durable or lazy, for good.
TEST(SqliteWriterTest, FailedFlushPoisonsTheWriter) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  std::shared_ptr<SqliteWriter> w = NewTable(path);
  ASSERT_NE(w, nullptr);
  std::atomic<int64_t> level{0};
  std::atomic<bool> ran_after{false};
  std::future<Status> first, waiting;
  Gate gate(/*first_result=*/EIO);
  w->SetSyncForTesting(gate.Hook());
  const int64_t syncs_before = w->syncs();

  first = std::async(std::launch::async, [&] { return w->Write(InsertOp(1, level)); });
  ASSERT_TRUE(gate.WaitEntered());
  waiting = std::async(std::launch::async, [&] { return w->Write(InsertOp(2, level)); });
  DrainBatches(*w);  // the second durable op committed: it waits for a flush
  gate.Open();
  for (std::future<Status>* f : {&first, &waiting}) {
    const Status s = f->get();
    EXPECT_THAT(s, HasReason(Reason::kStoreUnavailable));
    EXPECT_NE(s.message().find("could not be flushed"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("restarts"), std::string::npos) << s.message();
  }
  const auto op = [&](SqliteDb&) {
    ran_after = true;
    return Status::Ok();
  };
  EXPECT_THAT(w->Write(op, Durability::kLazy), HasReason(Reason::kStoreUnavailable));
  EXPECT_THAT(w->Write(op), HasReason(Reason::kStoreUnavailable));
  w->Submit(op);                            // dropped
  EXPECT_FALSE(ran_after.load());           // refused before running
  EXPECT_EQ(w->syncs() - syncs_before, 1);  // and no retried flush
}

TEST(SqliteWriterTest, SubmittedOpRunsNowWhenNoBatchRuns) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  std::shared_ptr<SqliteWriter> w = NewTable(path);
  ASSERT_NE(w, nullptr);
  std::atomic<int64_t> level{0};
  const int64_t commits = w->commits();
  w->Submit(InsertOp(7, level));
  EXPECT_EQ(w->commits(), commits + 1);  // committed by the caller before Submit returned
  EXPECT_EQ(CountRows(path, "t"), 1);
}

TEST(SqliteWriterTest, SubmitDuringABatchReturnsAtOnceAndRunsBeforeLaterWrites) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  std::shared_ptr<SqliteWriter> w = NewTable(path);
  ASSERT_NE(w, nullptr);
  std::atomic<int64_t> level{0};
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  // A batch that stays open until the test releases it.
  std::future<Status> leader = std::async(std::launch::async, [&] {
    return w->Write(
        [&](SqliteDb& db) {
          entered.set_value();
          released.wait();
          return InsertOp(1, level)(db);
        },
        Durability::kLazy);
  });
  entered.get_future().wait();
  w->Submit(InsertOp(2, level));  // returns although the writer is busy
  EXPECT_EQ(w->queued(), 1);
  w->Submit(InsertOp(3, level));
  EXPECT_EQ(w->queued(), 2);
  release.set_value();
  ASSERT_TRUE(leader.get().ok());
  // Nobody waited for the Submit'ed ops: the leader ran them before it returned.
  EXPECT_EQ(w->queued(), 0);
  EXPECT_EQ(CountRows(path, "t"), 3);
  // And a later Write sees them (arrival order): inserting 2 again fails on the primary key.
  EXPECT_FALSE(w->Write(InsertOp(2, level), Durability::kLazy).ok());
}

TEST(SqliteWriterTest, SubmittedOpIsMadeDurableByTheNextDurableWrite) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  std::shared_ptr<SqliteWriter> w = NewTable(path);
  ASSERT_NE(w, nullptr);
  std::atomic<int64_t> level{0};
  std::atomic<int> flushes{0};
  w->SetSyncForTesting([&](int fd) {
    ++flushes;
    return ::fdatasync(fd) == 0 ? 0 : errno;
  });
  w->Submit(InsertOp(1, level));
  EXPECT_EQ(flushes.load(), 0);  // lazy: no flush of its own
  ASSERT_TRUE(w->Write(InsertOp(2, level)).ok());
  EXPECT_EQ(flushes.load(), 1);  // one flush after both commits covers both
  EXPECT_EQ(CountRows(path, "t"), 2);
}

// TraceLog records the SQL the writer's connection runs (sqlite3_trace_v2 on it, from an op).
struct TraceLog {
  std::mutex mu;
  std::vector<std::string> sql;
  static int Note(unsigned, void* self, void* stmt, void*) {
    auto* log = static_cast<TraceLog*>(self);
    std::lock_guard lock(log->mu);
    log->sql.emplace_back(sqlite3_sql(static_cast<sqlite3_stmt*>(stmt)));
    return 0;
  }
  bool Saw(const std::string& text) {
    std::lock_guard lock(mu);
    for (const std::string& s : sql) {
      if (s == text) return true;
    }
    return false;
  }
  void Clear() {
    std::lock_guard lock(mu);
    sql.clear();
  }
};

TEST(SqliteWriterTest, OneOpBatchRunsWithoutSavepoint) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  std::shared_ptr<SqliteWriter> w = NewTable(path);
  ASSERT_NE(w, nullptr);
  TraceLog trace;
  ASSERT_TRUE(w->Write([&](SqliteDb& db) {
                 sqlite3_trace_v2(db.raw(), SQLITE_TRACE_STMT, &TraceLog::Note, &trace);
                 return Status::Ok();
               }).ok());
  std::atomic<int64_t> level{0};

  trace.Clear();
  ASSERT_TRUE(w->Write(InsertOp(1, level), Durability::kLazy).ok());
  EXPECT_TRUE(trace.Saw("BEGIN IMMEDIATE"));
  EXPECT_TRUE(trace.Saw("COMMIT"));
  EXPECT_FALSE(trace.Saw("SAVEPOINT op"));

  trace.Clear();  // a failing op alone: the whole batch rolls back, nothing is committed
  EXPECT_THAT(w->Write([](SqliteDb& db) -> Status {
    CLAWGUARD_RETURN_IF_ERROR(db.Exec("INSERT INTO t (v) VALUES (99)"));
    return Status(Reason::kNotFound, "refused after a write");
  }),
              HasReason(Reason::kNotFound));
  EXPECT_TRUE(trace.Saw("ROLLBACK"));
  EXPECT_FALSE(trace.Saw("SAVEPOINT op"));
  EXPECT_FALSE(trace.Saw("COMMIT"));
  EXPECT_EQ(CountRows(path, "t"), 1);

  trace.Clear();  // two ops in one batch: each in its savepoint
  std::atomic<int64_t> a{0}, b{0};
  std::vector<Status> results;
  RunQueuedBatch(*w, {{InsertOp(2, a), Durability::kLazy}, {InsertOp(3, b), Durability::kLazy}},
                 results);
  EXPECT_TRUE(results[0].ok() && results[1].ok());
  EXPECT_TRUE(trace.Saw("SAVEPOINT op"));
  EXPECT_TRUE(trace.Saw("RELEASE op"));
  EXPECT_EQ(CountRows(path, "t"), 3);
  ASSERT_TRUE(w->Write([](SqliteDb& db) {
                 sqlite3_trace_v2(db.raw(), 0, nullptr, nullptr);
                 return Status::Ok();
               }).ok());
}

// A WAL at the path that is not the file the writer holds (deleted and recreated) is caught
// before the flush: the writer flushes the file it holds, the new one and the database file.
TEST(SqliteWriterTest, ReplacedWalIsFlushedWithTheDatabaseFile) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  std::shared_ptr<SqliteWriter> w = NewTable(path);
  ASSERT_NE(w, nullptr);
  std::atomic<int64_t> level{0};
  ASSERT_TRUE(w->Write(InsertOp(1, level)).ok());  // the writer holds the WAL now
  std::mutex mu;
  std::vector<ino_t> flushed;
  w->SetSyncForTesting([&](int fd) {
    struct stat st {};
    EXPECT_EQ(::fstat(fd, &st), 0);
    std::lock_guard lock(mu);
    flushed.push_back(st.st_ino);
    return 0;
  });
  const auto inode = [](const std::string& file) {
    struct stat st {};
    EXPECT_EQ(::stat(file.c_str(), &st), 0) << file;
    return st.st_ino;
  };
  const std::string wal = path + "-wal";
  const ino_t old_wal = inode(wal);
  ASSERT_EQ(::rename(wal.c_str(), (wal + ".old").c_str()), 0);
  clawguard::testing::WriteFile(wal,
                                "");  // SQLite keeps writing to the old file: that is fine here

  ASSERT_TRUE(w->Write(InsertOp(2, level)).ok());
  EXPECT_EQ(flushed, (std::vector<ino_t>{old_wal, inode(wal), inode(path)}));
  flushed.clear();
  ASSERT_TRUE(w->Write(InsertOp(3, level)).ok());  // the new file is the one held now
  EXPECT_EQ(flushed, (std::vector<ino_t>{inode(wal)}));
}

// Checkpoints run on the writer's checkpointer thread, not inside a commit: after enough pages the
// WAL is copied back into the database file while the writer keeps committing.
TEST(SqliteWriterTest, CheckpointsRunBesideTheWriter) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  auto writer = SqliteWriter::ForPath(path);
  ASSERT_TRUE(writer.ok()) << writer.error().ToString();
  std::shared_ptr<SqliteWriter> w = *writer;
  ASSERT_TRUE(w->Write([](SqliteDb& db) {
                 return db.Exec("CREATE TABLE big (id INTEGER PRIMARY KEY, b BLOB)");
               }).ok());
  const std::string blob(65536, 'x');                           // 16+ pages per row
  const int rows = SqliteWriter::kCheckpointFrames / 16 + 100;  // past the checkpoint threshold
  for (int i = 0; i < rows; ++i) {
    ASSERT_TRUE(w->Write(
                     [&](SqliteDb& db) {
                       auto st = db.Prepare("INSERT INTO big (b) VALUES (?1)");
                       if (!st.ok()) return st.error();
                       st->BindBlob(1, blob);
                       return st->Run();
                     },
                     Durability::kLazy)
                    .ok());
  }
  // Bounded wait for the background thread (no wall-clock assertion: only "it happened").
  for (int i = 0; i < 2000 && w->checkpoints() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_GE(w->checkpoints(), 1);
  // The copied pages are in the database file itself: it grew well past its empty size.
  EXPECT_GT(std::filesystem::file_size(path), 1'000'000u);
  EXPECT_EQ(CountRows(path, "big"), rows);
}

// Writes that never pause: without the leader's own checkpoint the WAL only grows (here the
// background checkpointer's mark is never reached, as under load it is never caught up with);
// with it, the WAL is copied into the database file and written from its start again, so its file
// stays near the mark.
TEST(SqliteWriterTest, TheLeaderRestartsTheWalOnceItHoldsTheMarksFrames) {
  const std::string blob(4000, 'x');  // one 4 KiB page per row
  constexpr int kRows = 400;
  const auto fill = [&](SqliteWriter& w) {
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    threads.reserve(4);
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < kRows / 4; ++i) {
          const Status s = w.Write(
              [&](SqliteDb& db) {
                auto st = db.Prepare("INSERT INTO big (b) VALUES (?1)");
                if (!st.ok()) return st.error();
                st->BindBlob(1, blob);
                return st->Run();
              },
              Durability::kLazy);
          if (!s.ok()) ++failures;
        }
      });
    }
    for (auto& th : threads) th.join();
    return failures.load();
  };
  const auto open = [](const std::string& path) {
    auto writer = SqliteWriter::ForPath(path);
    EXPECT_TRUE(writer.ok()) << writer.error().ToString();
    std::shared_ptr<SqliteWriter> w = writer.ok() ? *writer : nullptr;
    if (w) {
      EXPECT_TRUE(w->Write([](SqliteDb& db) {
                     return db.Exec("CREATE TABLE big (id INTEGER PRIMARY KEY, b BLOB)");
                   }).ok());
    }
    return w;
  };
  clawguard::testing::TempDir dir;
  const std::string grows = dir.Sub("grows.db");
  const std::string bounded = dir.Sub("bounded.db");
  std::shared_ptr<SqliteWriter> unbounded_writer = open(grows);
  std::shared_ptr<SqliteWriter> bounded_writer = open(bounded);
  ASSERT_NE(unbounded_writer, nullptr);
  ASSERT_NE(bounded_writer, nullptr);
  bounded_writer->SetWalRestartFramesForTesting(50);
  ASSERT_EQ(fill(*unbounded_writer), 0);
  ASSERT_EQ(fill(*bounded_writer), 0);

  const uint64_t page_frame = 4096 + 24;
  EXPECT_EQ(unbounded_writer->wal_restarts(), 0);
  EXPECT_GE(std::filesystem::file_size(grows + "-wal"),
            kRows * page_frame);  // every row's page, at least
  EXPECT_GE(bounded_writer->wal_restarts(), 2);
  // The mark (50) plus the batches committed before the leader's checkpoint ran: 4 writers, each
  // op a few pages.
  EXPECT_LE(std::filesystem::file_size(bounded + "-wal"), 100 * page_frame);
  EXPECT_EQ(CountRows(grows, "big"), kRows);
  EXPECT_EQ(CountRows(bounded, "big"), kRows);
}

TEST(SqliteWriterTest, EachBatchReachesTheWalWithOneWriteThroughTheWalVfs) {
  testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  std::shared_ptr<SqliteWriter> writer = NewTable(path);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(
      writer->Write([](SqliteDb& db) { return db.Exec("CREATE TABLE pad (x BLOB)"); }).ok());
  const int64_t commits0 = writer->commits();
  const WalWriteCounts before = WalWriteCountsForTesting();
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&writer, t] {
      for (int i = 0; i < 10; ++i) {
        // A 6,000-byte row in pad fills overflow pages: every batch writes several frames.
        const Status s = writer->Write([t, i](SqliteDb& db) -> Status {
          auto stmt = db.Prepare("INSERT INTO t (v) VALUES (?1)");
          if (!stmt.ok()) return stmt.error();
          stmt->Bind(1, int64_t{t * 1000 + i});
          CLAWGUARD_RETURN_IF_ERROR(stmt->Run());
          return db.Exec("INSERT INTO pad VALUES (randomblob(6000))");
        });
        EXPECT_TRUE(s.ok()) << s.ToString();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  const WalWriteCounts after = WalWriteCountsForTesting();
  const int64_t commits = writer->commits() - commits0;
  EXPECT_EQ(after.buffered, 0);
  EXPECT_EQ(CountRows(path, "t"), kThreads * 10);
  // One write per commit (plus the WAL header once); SQLite alone writes two per frame.
  EXPECT_LE(after.writes - before.writes, commits + 1);
  EXPECT_GT(after.bytes - before.bytes, commits * 2 * (24 + 4096));
}

TEST(SqliteWriterTest, ALoneWriterNeverWaitsToGather) {
  testing::TempDir dir;
  std::shared_ptr<SqliteWriter> writer = NewTable(dir.Sub("w.db"));
  ASSERT_NE(writer, nullptr);
  std::atomic<int64_t> level{0};
  for (int i = 0; i < 50; ++i)
    ASSERT_TRUE(writer->Write(InsertOp(i, level), Durability::kLazy).ok());
  EXPECT_EQ(writer->gathers(), 0);
}

// Under concurrency a leader waits for more ops: batch 1 (one op) is held until four ops are
// queued; they form batch 2, whose first op, once running, lets a sixth op be queued and waits
// for it; the sixth follows a batch of four, so its leader gathers before committing it — and
// every op still runs once.
TEST(SqliteWriterTest, AfterABatchOfSeveralOpsTheNextLeaderGathers) {
  testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  std::shared_ptr<SqliteWriter> writer = NewTable(path);
  ASSERT_NE(writer, nullptr);
  std::atomic<int64_t> level{0};
  std::promise<void> batch1_runs;
  std::promise<void> batch2_runs;
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    EXPECT_TRUE(writer
                    ->Write([&](SqliteDb& db) -> Status {
                      batch1_runs.set_value();
                      WaitQueued(*writer, 4);  // the leader runs ops without the writer's lock
                      return InsertOp(1, level)(db);
                    })
                    .ok());
  });
  batch1_runs.get_future().wait();
  for (int64_t v = 2; v <= 5; ++v) {
    threads.emplace_back([&, v] {
      if (v > 2) {
        EXPECT_TRUE(writer->Write(InsertOp(v, level)).ok());
        return;
      }
      EXPECT_TRUE(writer
                      ->Write([&](SqliteDb& db) -> Status {
                        batch2_runs.set_value();
                        WaitQueued(*writer, 1);
                        return InsertOp(2, level)(db);
                      })
                      .ok());
    });
  }
  batch2_runs.get_future().wait();
  threads.emplace_back([&] { EXPECT_TRUE(writer->Write(InsertOp(6, level)).ok()); });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(CountRows(path, "t"), 6);
  EXPECT_GE(writer->gathers(), 1);
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
  threads.reserve(kThreads);
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
