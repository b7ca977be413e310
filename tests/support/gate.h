// gate.h — small synchronisation helpers for tests of threads, pools and runners: Gate (a one-shot
// latch) and WaitFor (bounded polling: a broken pool or runner fails the test instead of hanging
// it). Neither measures time; no test asserts a duration.
#ifndef CLAWGUARD_TESTS_SUPPORT_GATE_H_
#define CLAWGUARD_TESTS_SUPPORT_GATE_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace clawguard::testing {

// Gate is a one-shot latch: Wait blocks until Open was called.
class Gate {
 public:
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// WaitFor polls |pred| every millisecond, at most ~20 s; returns its last value.
template <class Pred>
bool WaitFor(Pred pred) {
  for (int i = 0; i < 20'000; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return pred();
}

}  // namespace clawguard::testing

#endif  // CLAWGUARD_TESTS_SUPPORT_GATE_H_
