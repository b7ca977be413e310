// ops_worker_test.cpp — OpsWorker: one thread, a queue of one request (Posts coalesce), a stop
// flag the job sees, and a bounded Stop that abandons a job stuck past the bound — whose thread
// still ends by itself, touching nothing of the destroyed worker. Jobs block on gates the test
// opens; no assertion is about time.
#include "host/app/ops_worker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace clawguard::host {
namespace {

// JobGate blocks a job until opened; it counts the jobs that reached it.
struct JobGate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  int reached = 0;
  int left = 0;
  void Pass() {
    std::unique_lock lock(mu);
    ++reached;
    cv.notify_all();
    cv.wait(lock, [this] { return open; });
    ++left;
    cv.notify_all();
  }
  void Open() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
  // WaitFor waits until |pred| holds (a generous guard against a hung test, never asserted).
  template <typename Pred>
  bool WaitFor(Pred pred) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(30), pred);
  }
};

FixedClock worker_clock{1'800'000'000'000};

TEST(OpsWorkerTest, APostWhileOneIsQueuedIsCoalescedAndAPostWhileRunningQueuesOneMore) {
  auto gate = std::make_shared<JobGate>();
  auto w = OpsWorker::Start(
      "cg-test", [gate](const std::atomic<bool>&) { gate->Pass(); }, worker_clock);
  ASSERT_TRUE(w.ok()) << w.error().ToString();
  EXPECT_FALSE((*w)->stats().busy);
  EXPECT_TRUE((*w)->Post());
  ASSERT_TRUE(gate->WaitFor([&] { return gate->reached == 1; }));
  const OpsWorker::Stats running = (*w)->stats();
  EXPECT_TRUE(running.busy);
  EXPECT_EQ(running.busy_since_ms, worker_clock.NowMillis());
  EXPECT_TRUE((*w)->Post());   // queued behind the running pass
  EXPECT_FALSE((*w)->Post());  // folded into the queued one
  EXPECT_FALSE((*w)->Post());
  gate->Open();
  ASSERT_TRUE(gate->WaitFor([&] { return gate->left == 2; }));
  EXPECT_TRUE((*w)->Stop(std::chrono::seconds(30)));
  const OpsWorker::Stats done = (*w)->stats();
  EXPECT_EQ(done.runs, 2);
  EXPECT_EQ(done.coalesced, 2);
  EXPECT_FALSE(done.abandoned);
  EXPECT_FALSE((*w)->Post()) << "a stopped worker takes no request";
}

TEST(OpsWorkerTest, StopSetsTheJobsFlagAndJoinsOnceTheJobEnds) {
  auto gate = std::make_shared<JobGate>();
  auto w = OpsWorker::Start(
      "cg-test",
      [gate](const std::atomic<bool>& stop) {
        {
          std::lock_guard lock(gate->mu);
          ++gate->reached;
          gate->cv.notify_all();
        }
        while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // items
      },
      worker_clock);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Post());
  ASSERT_TRUE(gate->WaitFor([&] { return gate->reached == 1; }));
  EXPECT_TRUE((*w)->Stop(std::chrono::seconds(30)));
  EXPECT_EQ((*w)->stats().runs, 1);
  EXPECT_TRUE((*w)->Stop(std::chrono::seconds(30))) << "a second Stop returns the first result";
}

TEST(OpsWorkerTest, AJobStuckPastTheBoundIsAbandonedAndItsThreadEndsByItself) {
  auto gate = std::make_shared<JobGate>();
  auto w = OpsWorker::Start(
      "cg-test", [gate](const std::atomic<bool>&) { gate->Pass(); }, worker_clock);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Post());
  ASSERT_TRUE(gate->WaitFor([&] { return gate->reached == 1; }));
  // The job ignores the stop flag (an ERP call in flight): Stop gives up and detaches it.
  EXPECT_FALSE((*w)->Stop(std::chrono::milliseconds(20)));
  EXPECT_TRUE((*w)->stats().abandoned);
  w->reset();  // the worker is gone; its thread still holds the shared state
  gate->Open();
  EXPECT_TRUE(gate->WaitFor([&] { return gate->left == 1; }));
}

TEST(OpsWorkerTest, AWorkerNeverPostedStopsAtOnce) {
  auto w = OpsWorker::Start(
      "cg-test", [](const std::atomic<bool>&) {}, worker_clock);
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE((*w)->Stop(std::chrono::seconds(30)));
  EXPECT_EQ((*w)->stats().runs, 0);
}

}  // namespace
}  // namespace clawguard::host
