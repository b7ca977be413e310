// spare_threads_test.cpp — SpareThreads: a finished thread takes the next task, a busy (hung) one
// never delays another task, a spare thread ends when none comes. No test asserts a duration.
#include "runtime/spare_threads.h"

#include <gtest/gtest.h>

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "support/gate.h"

namespace clawguard::runtime {
namespace {

using clawguard::testing::Gate;
using clawguard::testing::WaitFor;

TEST(SpareThreadsTest, AFinishedThreadRunsTheNextTask) {
  SpareThreads pool(std::chrono::minutes(1));
  std::thread::id first, second;
  Gate done1, done2;
  pool.Run([&] {
    first = std::this_thread::get_id();
    done1.Open();
  });
  done1.Wait();
  ASSERT_TRUE(WaitFor([&] { return pool.spare() == 1; }));
  pool.Run([&] {
    second = std::this_thread::get_id();
    done2.Open();
  });
  done2.Wait();
  EXPECT_EQ(first, second);
  EXPECT_EQ(pool.started(), 1);
}

TEST(SpareThreadsTest, ThreadsCarryTheGivenName) {
  SpareThreads pool(std::chrono::minutes(1), "cg-test-threads-long-name");
  std::string name;
  Gate done;
  pool.Run([&] {
    char buf[16] = {};
    pthread_getname_np(pthread_self(), buf, sizeof(buf));
    name = buf;
    done.Open();
  });
  done.Wait();
  EXPECT_EQ(name, "cg-test-threads");  // Linux keeps 15 bytes
}

TEST(SpareThreadsTest, ABusyThreadNeverDelaysAnotherTask) {
  SpareThreads pool(std::chrono::minutes(1));
  Gate hung, hung_returned, other_ran;
  pool.Run([&] {  // a plugin that does not return (until the test lets it)
    hung.Wait();
    hung_returned.Open();
  });
  pool.Run([&] { other_ran.Open(); });
  other_ran.Wait();  // would hang here if the second task waited for the first thread
  EXPECT_EQ(pool.started(), 2);
  hung.Open();
  hung_returned.Wait();  // the gates outlive every task that uses them
}

TEST(SpareThreadsTest, EveryTaskRunsExactlyOnceUnderConcurrentSubmitters) {
  SpareThreads pool(std::chrono::minutes(1));
  constexpr int kSubmitters = 8;
  constexpr int kTasksEach = 250;
  std::atomic<int> ran{0};
  std::mutex mu;
  std::set<int> seen;
  bool duplicate = false;
  std::vector<std::thread> submitters;
  submitters.reserve(kSubmitters);
  for (int s = 0; s < kSubmitters; ++s) {
    submitters.emplace_back([&, s] {
      for (int i = 0; i < kTasksEach; ++i) {
        const int id = s * kTasksEach + i;
        pool.Run([&, id] {
          {
            std::lock_guard lock(mu);
            duplicate = duplicate || !seen.insert(id).second;
          }
          ran.fetch_add(1);
        });
      }
    });
  }
  for (auto& t : submitters) t.join();
  ASSERT_TRUE(WaitFor([&] { return ran.load() == kSubmitters * kTasksEach; }));
  EXPECT_FALSE(duplicate);
  EXPECT_LT(pool.started(), kSubmitters * kTasksEach);  // threads were reused
}

TEST(SpareThreadsTest, ASpareThreadEndsWhenNoTaskComes) {
  SpareThreads pool(std::chrono::milliseconds(20));
  Gate done;
  pool.Run([&] { done.Open(); });
  done.Wait();
  ASSERT_TRUE(WaitFor([&] { return pool.spare() == 0; }));
  // The next task starts a new thread.
  Gate again;
  pool.Run([&] { again.Open(); });
  again.Wait();
  EXPECT_EQ(pool.started(), 2);
}

TEST(SpareThreadsTest, TaskCapturesAreReleasedBeforeTheThreadWaits) {
  SpareThreads pool(std::chrono::minutes(1));
  auto held = std::make_shared<int>(7);
  std::weak_ptr<int> watch = held;
  pool.Run([held = std::move(held)] { (void)*held; });
  ASSERT_TRUE(WaitFor([&] { return pool.spare() == 1; }));
  EXPECT_TRUE(watch.expired());  // a spare thread keeps nothing of the last delivery alive
}

}  // namespace
}  // namespace clawguard::runtime
