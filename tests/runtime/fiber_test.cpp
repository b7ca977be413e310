// fiber_test.cpp — the carrier threads and fibers of runtime/fiber.h.
#include "runtime/fiber.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace clawguard::fiber {
namespace {

using namespace std::chrono_literals;

// WaitUntil polls |pred| for up to 20 s (tests never assert wall-clock times: this only bounds a
// hang).
template <class Pred>
bool WaitUntil(Pred pred) {
  for (int i = 0; i < 20000; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return pred();
}

TEST(FiberTest, PlainThreadHasNoFiberAndItsHelpersBlockTheThread) {
  EXPECT_EQ(Current(), nullptr);
  Yield();  // nothing to do
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  EXPECT_EQ(WaitFd(fds[0], POLLIN, 0), 0);  // nothing to read
  ASSERT_EQ(::write(fds[1], "x", 1), 1);
  EXPECT_EQ(WaitFd(fds[0], POLLIN, 1000), 1);
  bool ran = false;
  RunBlocking([&] { ran = true; });
  EXPECT_TRUE(ran);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(FiberTest, SpawnedFunctionsRunAsFibersAndTheDestructorWaitsForThem) {
  std::atomic<int> ran{0};
  std::atomic<int> on_fiber{0};
  {
    Carriers carriers(2, "cg-test-fiber");
    EXPECT_EQ(carriers.carriers(), 2);
    for (int i = 0; i < 200; ++i) {
      carriers.Spawn([&] {
        if (Current() != nullptr) ++on_fiber;
        Yield();
        ++ran;
      });
    }
  }  // ~Carriers: every spawned function has returned
  EXPECT_EQ(ran.load(), 200);
  EXPECT_EQ(on_fiber.load(), 200);
}

TEST(FiberTest, ParkedFiberIsResumedByUnparkFromAnotherThreadAndItsCarrierRunsOthersMeanwhile) {
  Carriers carriers(
      1, "cg-test-fiber");  // one carrier: the second fiber can only run while the first is parked
  std::mutex mu;
  Fiber* parked = nullptr;  // guarded by mu
  bool go = false;          // guarded by mu
  std::atomic<bool> first_done{false}, second_ran{false};
  carriers.Spawn([&] {
    for (;;) {
      {
        std::lock_guard lock(mu);
        if (go) break;
        parked = Current();
      }
      Park();
    }
    first_done = true;
  });
  carriers.Spawn([&] { second_ran = true; });
  ASSERT_TRUE(WaitUntil([&] { return second_ran.load(); }));
  EXPECT_FALSE(first_done.load());
  {
    std::lock_guard lock(mu);  // the fiber cannot leave its wait while we hold mu: Unpark is safe
    ASSERT_NE(parked, nullptr);
    go = true;
    Unpark(parked);
  }
  ASSERT_TRUE(WaitUntil([&] { return first_done.load(); }));
}

TEST(FiberTest, UnparkBeforeParkIsNotLost) {
  Carriers carriers(1, "cg-test-fiber");
  std::atomic<bool> done{false};
  carriers.Spawn([&] {
    Unpark(Current());  // as a waker that ran before the fiber parked
    Park();             // returns at once
    done = true;
  });
  ASSERT_TRUE(WaitUntil([&] { return done.load(); }));
}

TEST(FiberTest, PinnedUnparkFromAnotherThreadWakesTheFiber) {
  Carriers carriers(1, "cg-test-fiber");
  std::mutex mu;
  Fiber* waiter = nullptr;  // guarded by mu
  bool set = false;         // guarded by mu
  std::atomic<bool> done{false};
  carriers.Spawn([&] {
    for (;;) {
      {
        std::lock_guard lock(mu);
        if (set) break;
        waiter = Current();
      }
      Park();
    }
    done = true;
  });
  ASSERT_TRUE(WaitUntil([&] {
    std::lock_guard lock(mu);
    return waiter != nullptr;
  }));
  Fiber* f = nullptr;
  {
    std::lock_guard lock(mu);
    set = true;
    f = waiter;
    Pin(f);  // under the lock: the fiber is alive
  }
  UnparkPinned(f);  // after the lock, as the SQLite writer wakes its waiters
  ASSERT_TRUE(WaitUntil([&] { return done.load(); }));
}

TEST(FiberTest, WaitFdParksUntilTheDescriptorIsReadyOrTheTimeoutPasses) {
  Carriers carriers(1, "cg-test-fiber");
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  std::atomic<int> timed_out{-2}, ready{-2};
  std::atomic<bool> other_ran{false};
  carriers.Spawn([&] {
    timed_out = WaitFd(fds[0], POLLIN, 20);  // nothing comes
    ready = WaitFd(fds[0], POLLIN, 20000);   // the test writes
  });
  carriers.Spawn([&] { other_ran = true; });  // runs while the first fiber waits
  ASSERT_TRUE(WaitUntil([&] { return timed_out.load() != -2; }));
  EXPECT_EQ(timed_out.load(), 0);
  EXPECT_TRUE(other_ran.load());
  ASSERT_EQ(::write(fds[1], "x", 1), 1);
  ASSERT_TRUE(WaitUntil([&] { return ready.load() != -2; }));
  EXPECT_EQ(ready.load(), 1);
  ::close(fds[0]);
  ::close(fds[1]);
}

// A pooled connection's descriptor: waited on by one fiber after another, on either carrier, with
// the data there before the wait or coming after it, after a timed-out wait, and after the
// connection was replaced by a new descriptor (most likely the same number).
TEST(FiberTest, FdWatchWaitsAgainAndAgainOnAnyCarrierAfterATimeoutAndAfterAReconnect) {
  Carriers carriers(2, "cg-test-fiber");
  FdWatch watch;
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  std::mutex mu;
  std::set<std::thread::id> waiters;  // guarded by mu
  // WaitOnce runs one wait on a fresh fiber (behind a parked holder fiber when |hold|, so that
  // the wait runs on the other carrier) and returns what Wait returned; a ready wait reads a byte.
  const auto wait_once = [&](bool data_first, bool hold, int timeout_ms) {
    std::atomic<Fiber*> holder{nullptr};
    std::atomic<bool> release{false};
    if (hold) {
      carriers.Spawn([&] {
        holder = Current();
        while (!release.load()) Park();
      });
      EXPECT_TRUE(WaitUntil([&] { return holder.load() != nullptr; }));
    }
    if (data_first) {
      EXPECT_EQ(::write(fds[1], "x", 1), 1);
    }
    std::atomic<int> got{-2};
    carriers.Spawn([&] {
      {
        std::lock_guard lock(mu);
        waiters.insert(std::this_thread::get_id());
      }
      const int r = watch.Wait(fds[0], POLLIN, timeout_ms);
      char c;
      if (r == 1) {
        EXPECT_EQ(::read(fds[0], &c, 1), 1);
      }
      got = r;
    });
    if (!data_first && timeout_ms > 1000) {
      EXPECT_EQ(::write(fds[1], "x", 1), 1);
    }
    EXPECT_TRUE(WaitUntil([&] { return got.load() != -2; }));
    if (hold) {
      release = true;
      Unpark(holder.load());
      EXPECT_TRUE(WaitUntil([&] { return carriers.live() == 0; }));
    }
    return got.load();
  };
  for (int round = 0; round < 8; ++round) {
    EXPECT_EQ(wait_once(/*data_first=*/round % 4 < 2, /*hold=*/round % 2 == 1, 20000), 1)
        << "round " << round;
  }
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(waiters.size(), 2u);  // registered with both carriers' epolls
  }
  EXPECT_EQ(wait_once(false, false, 20), 0);  // nothing comes: timed out (and deregistered)
  EXPECT_EQ(wait_once(false, false, 20000), 1);
  EXPECT_EQ(wait_once(true, true, 20000), 1);
  // Reconnect: the old descriptor is closed (its registrations go with it).
  ::close(fds[0]);
  ::close(fds[1]);
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  for (int round = 0; round < 4; ++round) {
    EXPECT_EQ(wait_once(round % 2 == 0, round >= 2, 20000), 1)
        << "after reconnect, round " << round;
  }
  // A plain thread polls.
  EXPECT_EQ(watch.Wait(fds[0], POLLIN, 0), 0);
  ASSERT_EQ(::write(fds[1], "x", 1), 1);
  EXPECT_EQ(watch.Wait(fds[0], POLLIN, 1000), 1);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(FiberTest, SleepForAndRunBlockingParkOnlyTheFiber) {
  Carriers carriers(1, "cg-test-fiber");
  std::atomic<bool> slept{false}, blocked_done{false}, other_ran{false};
  std::atomic<bool> release{false};
  std::thread::id helper;
  carriers.Spawn([&] {
    SleepFor(5ms);
    slept = true;
    RunBlocking([&] {
      helper = std::this_thread::get_id();
      while (!release.load())
        std::this_thread::sleep_for(1ms);  // blocks its helper thread, not the carrier
    });
    blocked_done = true;
  });
  ASSERT_TRUE(WaitUntil([&] { return slept.load(); }));
  carriers.Spawn([&] { other_ran = true; });
  ASSERT_TRUE(WaitUntil([&] { return other_ran.load(); }));
  EXPECT_FALSE(blocked_done.load());
  release = true;
  ASSERT_TRUE(WaitUntil([&] { return blocked_done.load(); }));
}

TEST(FiberTest, RunBlockingRethrowsOnTheFiber) {
  Carriers carriers(1, "cg-test-fiber");
  std::atomic<int> caught{0};
  carriers.Spawn([&] {
    try {
      RunBlocking([] { throw std::runtime_error("boom"); });
    } catch (const std::runtime_error& e) {
      if (std::string(e.what()) == "boom") caught = 1;
    }
  });
  ASSERT_TRUE(WaitUntil([&] { return caught.load() == 1; }));
}

// Sequence records the order in which fibers reach their numbered steps.
class Sequence {
 public:
  void Step(int n) {
    std::lock_guard lock(mu_);
    order_.push_back(n);
  }
  std::vector<int> Order() {
    std::lock_guard lock(mu_);
    return order_;
  }

 private:
  std::mutex mu_;
  std::vector<int> order_;
};

// The other fiber is made runnable (unparked) by the yielding one, so it is runnable when the
// yield happens whatever the timing of the test thread.
TEST(FiberTest, YieldLetsTheOtherRunnableFibersRunFirst) {
  Carriers carriers(1, "cg-test-fiber");
  Sequence seq;
  std::atomic<Fiber*> second{nullptr};
  std::atomic<int> done{0};
  carriers.Spawn([&] {
    second = Current();
    Park();  // until the first fiber unparks it (a spurious return would only run it sooner)
    seq.Step(2);
    ++done;
  });
  // The first fiber starts after the second parked: both are on the one carrier.
  ASSERT_TRUE(WaitUntil([&] { return second.load() != nullptr; }));
  carriers.Spawn([&] {
    Unpark(second.load());
    seq.Step(1);
    Yield();
    seq.Step(3);
    ++done;
  });
  ASSERT_TRUE(WaitUntil([&] { return done.load() == 2; }));
  EXPECT_EQ(seq.Order(), (std::vector<int>{1, 2, 3}));
}

TEST(FiberTest, YieldLetsWorkSpawnedMeanwhileStartFirst) {
  // A writer leader yields to gather a batch: a delivery spawned meanwhile should reach its first
  // write in that batch, so fresh spawns run before the yielded fiber continues.
  Carriers carriers(1, "cg-test-fiber");
  Sequence seq;
  std::atomic<int> done{0};
  carriers.Spawn([&] {
    carriers.Spawn([&] {  // one carrier: spawned onto this fiber's own carrier
      seq.Step(2);
      ++done;
    });
    seq.Step(1);
    Yield();
    seq.Step(3);
    ++done;
  });
  ASSERT_TRUE(WaitUntil([&] { return done.load() == 2; }));
  EXPECT_EQ(seq.Order(), (std::vector<int>{1, 2, 3}));
}

TEST(FiberTest, AStuckCarrierGetsNoNewFibersAndAnotherCarrierIsAdded) {
  Carriers carriers(1, "cg-test-fiber");
  std::atomic<bool> release{false}, stuck_started{false};
  std::mutex mu;
  std::set<std::thread::id> threads;
  carriers.Spawn([&] {
    {
      std::lock_guard lock(mu);
      threads.insert(std::this_thread::get_id());
    }
    stuck_started = true;
    while (!release.load()) std::this_thread::sleep_for(1ms);  // a plugin that blocks its carrier
  });
  ASSERT_TRUE(WaitUntil([&] { return stuck_started.load(); }));
  std::this_thread::sleep_for(Carriers::kStuckAfter + 50ms);
  std::atomic<bool> ran{false};
  carriers.Spawn([&] {
    {
      std::lock_guard lock(mu);
      threads.insert(std::this_thread::get_id());
    }
    ran = true;
  });
  ASSERT_TRUE(WaitUntil([&] { return ran.load(); }));  // not held behind the stuck fiber
  EXPECT_EQ(carriers.carriers(), 2);
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(threads.size(), 2u);
  }
  release = true;
}

TEST(FiberTest, FibersAreReusedAndSpawnSpreadsWorkOverTheCarriers) {
  Carriers carriers(2, "cg-test-fiber");
  std::mutex mu;
  std::set<std::thread::id> threads;
  std::atomic<int> parked_count{0};
  std::vector<Fiber*> parked;  // guarded by mu
  bool go = false;             // guarded by mu
  std::atomic<int> done{0};
  for (int i = 0; i < 8; ++i) {
    carriers.Spawn([&] {
      for (;;) {
        {
          std::lock_guard lock(mu);
          threads.insert(std::this_thread::get_id());
          if (go) break;
          if (std::find(parked.begin(), parked.end(), Current()) == parked.end()) {
            parked.push_back(Current());
            ++parked_count;
          }
        }
        Park();
      }
      ++done;
    });
  }
  ASSERT_TRUE(WaitUntil([&] { return parked_count.load() == 8; }));
  EXPECT_EQ(carriers.live(), 8);
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(threads.size(), 2u);  // 8 live fibers were spread over both carriers
    go = true;
    for (Fiber* f : parked) Unpark(f);
  }
  ASSERT_TRUE(WaitUntil([&] { return done.load() == 8; }));
  ASSERT_TRUE(WaitUntil([&] { return carriers.live() == 0; }));
}

}  // namespace
}  // namespace clawguard::fiber
