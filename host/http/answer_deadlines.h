// answer_deadlines.h — AnswerDeadlines: a safety net that answers a delivery which its runner
// has not answered by a deadline (host.yaml listen.execution: fibers).
//
// Why: with fibers, a plugin that blocks its carrier holds every other delivery of that carrier
// — also one still queued to start there, or parked in its claim, which no plugin watchdog covers
// yet (the watchdog starts with the plugin). The pipeline arms a deadline per delivery
// (handler_timeout + 1 s after it was admitted); if the delivery has not started by then it is
// cancelled and answered 503 (nothing was claimed: the sender's retry runs it on another carrier);
// if it started, it is answered 503 and keeps running (the first answer wins; the retry meets its
// lease, or its stored answer). Disarm, when the delivery answered, drops the entry. One thread,
// asleep until the earliest deadline. Thread-safe.
#ifndef CLAWGUARD_HOST_HTTP_ANSWER_DEADLINES_H_
#define CLAWGUARD_HOST_HTTP_ANSWER_DEADLINES_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>

#include "core/mutex.h"
#include "host/http/responder.h"

namespace clawguard::host {

class AnswerDeadlines {
 public:
  // A delivery's state: kPending until its task starts (Start), or kCancelled by the deadline.
  enum State : int { kPending = 0, kStarted = 1, kCancelled = 2 };
  struct Ticket {
    uint64_t id = 0;
    std::shared_ptr<std::atomic<int>> state;
    // Start: the task begins; false if the deadline cancelled it first (it must not run).
    bool Start() const {
      int expected = kPending;
      return state->compare_exchange_strong(expected, kStarted);
    }
  };
  // OnExpiry answers an expired delivery: |started| tells whether its task had begun.
  using OnExpiry = std::function<void(const Responder& respond, bool started)>;

  explicit AnswerDeadlines(OnExpiry on_expiry);
  ~AnswerDeadlines();  // pending entries are dropped unanswered (their tasks still hold a
                       // Responder)
  AnswerDeadlines(const AnswerDeadlines&) = delete;
  AnswerDeadlines& operator=(const AnswerDeadlines&) = delete;

  Ticket Arm(std::chrono::steady_clock::time_point at, Responder respond);
  void Disarm(const Ticket& ticket);
  int64_t armed() const;  // for tests
  int64_t expired()
      const;  // entries whose deadline passed and were handled (answered or not needed)

 private:
  struct Entry {
    uint64_t id;
    Responder respond;
    std::shared_ptr<std::atomic<int>> state;
  };
  using Queue = std::multimap<std::chrono::steady_clock::time_point, Entry>;
  void Loop();

  const OnExpiry on_expiry_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  Queue queue_ CLAWGUARD_GUARDED_BY(mu_);
  std::unordered_map<uint64_t, Queue::iterator> by_id_ CLAWGUARD_GUARDED_BY(mu_);
  uint64_t next_id_ CLAWGUARD_GUARDED_BY(mu_) = 1;
  int64_t expired_ CLAWGUARD_GUARDED_BY(mu_) = 0;
  bool stop_ CLAWGUARD_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts after the members above
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_HTTP_ANSWER_DEADLINES_H_
