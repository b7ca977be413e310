// delivery_runner_test.cpp — DeliveryRunner: at most max_active tasks at once, the rest in
// arrival order; a slot released early (an answered delivery whose thread a hung plugin keeps)
// lets the next task start while the first still runs; a task that returns holding its slot runs
// the next queued one on its own thread. No test asserts a duration.
#include "host/intake/delivery_runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/fiber.h"
#include "support/gate.h"

namespace clawguard::host {
namespace {

using clawguard::testing::Gate;
using clawguard::testing::WaitFor;

TEST(DeliveryRunnerTest, AtMostMaxActiveRunTheRestWaitInOrderAndAnEarlyReleaseStartsTheNext) {
  DeliveryRunner runner(2, "cg-test");
  Gate hang, second_done;
  std::atomic<int> started{0};
  std::mutex mu;
  std::vector<int> order;
  std::shared_ptr<DeliveryRunner::Slot> first_slot;
  // Task 0 "hangs" (like a plugin that never returns) after handing out its slot.
  runner.Run([&](const std::shared_ptr<DeliveryRunner::Slot>& slot) {
    {
      std::lock_guard lock(mu);
      first_slot = slot;
      order.push_back(0);
    }
    ++started;
    hang.Wait();
  });
  runner.Run([&](const std::shared_ptr<DeliveryRunner::Slot>&) {
    {
      std::lock_guard lock(mu);
      order.push_back(1);
    }
    ++started;
    second_done.Wait();
  });
  for (int i = 2; i < 4; ++i) {
    runner.Run([&, i](const std::shared_ptr<DeliveryRunner::Slot>&) {
      std::lock_guard lock(mu);
      order.push_back(i);
      ++started;
    });
  }
  ASSERT_TRUE(WaitFor([&] { return started.load() == 2; }));
  EXPECT_EQ(runner.active(), 2);
  EXPECT_EQ(runner.queued(), 2);
  // Task 0 was answered by someone else: it gives its slot to task 2 while it still runs.
  {
    std::lock_guard lock(mu);
    ASSERT_NE(first_slot, nullptr);
  }
  first_slot->Release();
  first_slot->Release();                                      // idempotent
  ASSERT_TRUE(WaitFor([&] { return started.load() == 4; }));  // 2 ran, then 3 on the same slot
  EXPECT_EQ(runner.queued(), 0);
  EXPECT_TRUE(WaitFor([&] { return runner.active() == 1; }));  // task 1 only: task 0's slot is gone
  second_done.Open();
  EXPECT_TRUE(WaitFor([&] { return runner.active() == 0; }));
  hang.Open();  // task 0 returns late: its slot was released already, nothing is counted twice
  runner.Run([&](const std::shared_ptr<DeliveryRunner::Slot>&) { ++started; });
  EXPECT_TRUE(WaitFor([&] { return started.load() == 5; }));
  EXPECT_TRUE(WaitFor([&] { return runner.active() == 0; }));
  std::lock_guard lock(mu);
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order[0] + order[1], 1);  // 0 and 1, in either order (two threads)
  EXPECT_EQ(order[2], 2);             // then the queued ones, in arrival order
  EXPECT_EQ(order[3], 3);
}

TEST(DeliveryRunnerTest, ATaskThatReturnsHoldingItsSlotRunsTheNextQueuedOneOnItsThread) {
  DeliveryRunner runner(1, "cg-test");
  Gate go;
  std::atomic<int> done{0};
  std::thread::id first, second;
  runner.Run([&](const std::shared_ptr<DeliveryRunner::Slot>&) {
    go.Wait();
    first = std::this_thread::get_id();
    ++done;
  });
  runner.Run([&](const std::shared_ptr<DeliveryRunner::Slot>&) {
    second = std::this_thread::get_id();
    ++done;
  });
  EXPECT_EQ(runner.queued(), 1);
  go.Open();
  ASSERT_TRUE(WaitFor([&] { return done.load() == 2; }));
  EXPECT_EQ(first, second);
  EXPECT_TRUE(WaitFor([&] { return runner.active() == 0; }));
}

TEST(DeliveryRunnerTest, TheRunnerMayGoWhileATaskStillRuns) {
  Gate go;
  std::atomic<bool> done{false};
  {
    DeliveryRunner runner(1, "cg-test");
    runner.Run([&](const std::shared_ptr<DeliveryRunner::Slot>& slot) {
      go.Wait();
      slot->Release();  // touches the runner's shared state after the runner is gone
      done = true;
    });
  }
  go.Open();
  EXPECT_TRUE(WaitFor([&] { return done.load(); }));
}

// An owner waits for every task given to Run — one that released its slot early, one still
// queued — before it frees what they use.
TEST(DeliveryRunnerTest, WaitFinishedCountsEveryTaskUntilItReturns) {
  Gate early, queued;
  DeliveryRunner runner(1, "cg-test");
  runner.Run([&](const std::shared_ptr<DeliveryRunner::Slot>& slot) {
    slot->Release();  // answered: the next task starts while this one still runs
    early.Wait();
  });
  runner.Run([&](const std::shared_ptr<DeliveryRunner::Slot>&) { queued.Wait(); });
  EXPECT_EQ(runner.unfinished(), 2);
  EXPECT_FALSE(runner.WaitFinished(std::chrono::milliseconds(20)));
  early.Open();
  EXPECT_TRUE(WaitFor([&] { return runner.unfinished() == 1; }));
  EXPECT_EQ(runner.active(), 1);
  queued.Open();
  EXPECT_TRUE(runner.WaitFinished(std::chrono::seconds(30)));
  EXPECT_EQ(runner.unfinished(), 0);
  EXPECT_EQ(runner.active(), 0);
}

// With carriers (listen.execution: fibers) each task runs as a fiber: the same bound and order.
TEST(DeliveryRunnerTest, WithCarriersTasksRunAsFibersWithTheSameBoundAndOrder) {
  fiber::Carriers carriers(1, "cg-test-carrier");  // one carrier: the order is deterministic
  DeliveryRunner runner(2, "cg-test", &carriers);
  std::mutex mu;
  std::vector<int> order;             // guarded by mu
  std::vector<fiber::Fiber*> parked;  // guarded by mu
  bool go = false;                    // guarded by mu
  std::atomic<int> on_fiber{0}, done{0};
  for (int i = 0; i < 5; ++i) {
    runner.Run([&, i](const std::shared_ptr<DeliveryRunner::Slot>&) {
      {
        std::lock_guard lock(mu);
        order.push_back(i);
        if (fiber::Current() != nullptr) ++on_fiber;
      }
      for (;;) {
        {
          std::lock_guard lock(mu);  // the test unparks under mu: the fiber cannot leave meanwhile
          if (go) break;
          if (std::find(parked.begin(), parked.end(), fiber::Current()) == parked.end()) {
            parked.push_back(fiber::Current());
          }
        }
        fiber::Park();
      }
      ++done;
    });
  }
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard lock(mu);
    return parked.size() == 2;
  }));
  EXPECT_EQ(runner.active(), 2);
  EXPECT_EQ(runner.queued(), 3);
  {
    std::lock_guard lock(mu);
    go = true;
    for (fiber::Fiber* f : parked) fiber::Unpark(f);
  }
  ASSERT_TRUE(WaitFor([&] { return done.load() == 5; }));
  EXPECT_TRUE(WaitFor([&] { return runner.active() == 0; }));
  std::lock_guard lock(mu);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(on_fiber.load(), 5);
}

}  // namespace
}  // namespace clawguard::host
