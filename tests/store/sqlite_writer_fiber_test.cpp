// sqlite_writer_fiber_test.cpp — SqliteWriter used from fibers (runtime/fiber.h): every op runs
// once and durably, commits are shared, a fiber's durable op is flushed by the flusher thread and
// never on a carrier, and a failed flush reaches the fibers waiting for it and poisons the writer.
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "runtime/fiber.h"
#include "sqlite/sqlite_writer.h"
#include "support/reason_matchers.h"
#include "support/temp_dir.h"

using ::clawguard::testing::HasReason;

namespace clawguard::sqlite {
namespace {

using namespace std::chrono_literals;

std::string ThreadName() {
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof name);
  return name;
}

int64_t CountRows(const std::string& path) {
  auto db = SqliteDb::Open(path);
  EXPECT_TRUE(db.ok());
  auto s = (*db)->Prepare("SELECT COUNT(*) FROM t");
  EXPECT_TRUE(s.ok());
  auto row = s->Step();
  EXPECT_TRUE(row.ok() && *row);
  return s->Int(0);
}

SqliteWriter::Op Insert(int64_t v) {
  return [v](SqliteDb& db) -> Status {
    auto stmt = db.Prepare("INSERT INTO t (v) VALUES (?1)");
    if (!stmt.ok()) return stmt.error();
    stmt->Bind(1, v);
    return stmt->Run();
  };
}

// NewFiberTable opens the writer of a new file and creates table t.
std::shared_ptr<SqliteWriter> NewFiberTable(const std::string& path) {
  auto writer = SqliteWriter::ForPath(path);
  EXPECT_TRUE(writer.ok()) << writer.error().ToString();
  if (!writer.ok()) return nullptr;
  EXPECT_TRUE(
      (*writer)
          ->Write([](SqliteDb& db) { return db.Exec("CREATE TABLE t (v INTEGER PRIMARY KEY)"); })
          .ok());
  return *writer;
}

template <class Pred>
bool WaitUntil(Pred pred) {  // bounds a hang only; no wall-clock assertion
  for (int i = 0; i < 30000 && !pred(); ++i) std::this_thread::sleep_for(1ms);
  return pred();
}

TEST(SqliteWriterFiberTest, FibersWritesRunOnceDurablyShareCommitsAndAreFlushedOffTheCarriers) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  std::shared_ptr<SqliteWriter> w = NewFiberTable(path);
  ASSERT_NE(w, nullptr);
  std::mutex mu;
  std::set<std::string> flushed_on;  // guarded by mu
  w->SetSyncForTesting([&](int fd) {
    {
      std::lock_guard lock(mu);
      flushed_on.insert(ThreadName());
    }
    return ::fdatasync(fd) == 0 ? 0 : errno;
  });
  const int64_t commits_before = w->commits();
  constexpr int kFibers = 24;
  constexpr int kOps = 30;  // per fiber: durable, lazy and submitted in turn
  std::atomic<int> failures{0}, finished{0};
  {
    fiber::Carriers carriers(2, "cg-test-carrier");
    for (int f = 0; f < kFibers; ++f) {
      carriers.Spawn([&, f] {
        for (int i = 0; i < kOps; ++i) {
          const int64_t v = f * 1000 + i;
          switch (i % 3) {
            case 0:
              if (!w->Write(Insert(v)).ok()) ++failures;
              break;
            case 1:
              if (!w->Write(Insert(v), Durability::kLazy).ok()) ++failures;
              break;
            default: w->Submit(Insert(v));
          }
        }
        // A durable write makes every earlier op of this fiber durable too.
        if (!w->Write([](SqliteDb&) { return Status::Ok(); }).ok()) ++failures;
        ++finished;
      });
    }
  }  // every fiber returned
  EXPECT_EQ(finished.load(), kFibers);
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(CountRows(path), kFibers * kOps);
  const int64_t ops = kFibers * (kOps * 2 / 3 + 1) + kFibers * kOps / 3;
  EXPECT_LT(w->commits() - commits_before, ops);  // commits were shared
  EXPECT_GT(w->gathers(), 0);                     // fiber leaders yielded to gather
  std::lock_guard lock(mu);
  EXPECT_EQ(flushed_on, std::set<std::string>{"cg-flush"});  // never on a carrier ("cg-test-carri")
}

TEST(SqliteWriterFiberTest, FailedFlushReachesTheFibersWaitingForItAndPoisonsTheWriter) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  std::shared_ptr<SqliteWriter> w = NewFiberTable(path);
  ASSERT_NE(w, nullptr);
  w->SetSyncForTesting([](int) { return EIO; });
  std::atomic<int> unavailable{0}, done{0};
  {
    fiber::Carriers carriers(1, "cg-test-carrier");
    for (int f = 0; f < 4; ++f) {
      carriers.Spawn([&, f] {
        const Status s = w->Write(Insert(f));
        if (s.reason() == Reason::kStoreUnavailable &&
            s.message().find("could not be flushed") != std::string::npos) {
          ++unavailable;
        }
        ++done;
      });
    }
    ASSERT_TRUE(WaitUntil([&] { return done.load() == 4; }));
  }
  EXPECT_EQ(unavailable.load(), 4);
  EXPECT_THAT(w->Write(Insert(99), Durability::kLazy), HasReason(Reason::kStoreUnavailable));
}

// A fiber leader yields to gather, and then a plugin blocks its carrier (here: a fiber that
// busy-waits). Nothing else may wait for that fiber for good: the flusher takes the leader role
// over once the carrier counts as held, so a thread's write still commits — and runs the held
// fiber's queued op with its own. (With the role kept by the held fiber, this write never returns.)
TEST(SqliteWriterFiberTest, AFiberHeldWhileGatheringNeverStallsOtherWriters) {
  clawguard::testing::TempDir dir;
  const std::string path = dir.Sub("w.db");
  std::shared_ptr<SqliteWriter> w = NewFiberTable(path);
  ASSERT_NE(w, nullptr);
  std::atomic<bool> holding{false}, release{false}, a_done{false};
  {
    fiber::Carriers carriers(1, "cg-test-carrier");
    carriers.Spawn([&] {
      (void)w->Write(Insert(1));  // queues, yields to gather, and is then held with its carrier
      a_done = true;
    });
    carriers.Spawn([&] {
      while (w->queued() == 0) fiber::Yield();  // until the first fiber's op waits in the queue
      holding = true;
      while (!release.load()) std::this_thread::sleep_for(1ms);  // blocks the carrier
    });
    ASSERT_TRUE(WaitUntil([&] { return holding.load(); }));
    auto other = std::async(std::launch::async, [&] { return w->Write(Insert(2)); });
    ASSERT_EQ(other.wait_for(30s), std::future_status::ready) << "a write waited for a held fiber";
    EXPECT_TRUE(other.get().ok());
    EXPECT_GE(w->steals(), 1);
    EXPECT_EQ(CountRows(path), 2);  // the held fiber's op ran in this thread's batch
    EXPECT_FALSE(a_done.load());    // its fiber has not run since
    release = true;
  }
  EXPECT_TRUE(a_done.load());
}

}  // namespace
}  // namespace clawguard::sqlite
