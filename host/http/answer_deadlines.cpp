// answer_deadlines.cpp — see answer_deadlines.h.
#include "host/http/answer_deadlines.h"

#include <vector>

#include "runtime/thread_name.h"

namespace clawguard::host {

AnswerDeadlines::AnswerDeadlines(OnExpiry on_expiry)
    : on_expiry_(std::move(on_expiry)), thread_([this] { Loop(); }) {}

AnswerDeadlines::~AnswerDeadlines() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

AnswerDeadlines::Ticket AnswerDeadlines::Arm(std::chrono::steady_clock::time_point at,
                                             Responder respond) {
  Ticket t;
  t.state = std::make_shared<std::atomic<int>>(kPending);
  bool earliest = false;
  {
    MutexLock lock(mu_);
    t.id = next_id_++;
    auto it = queue_.emplace(at, Entry{t.id, std::move(respond), t.state});
    by_id_.emplace(t.id, it);
    earliest = it == queue_.begin();
  }
  if (earliest) cv_.notify_one();
  return t;
}

void AnswerDeadlines::Disarm(const Ticket& ticket) {
  MutexLock lock(mu_);
  auto it = by_id_.find(ticket.id);
  if (it == by_id_.end()) return;
  queue_.erase(it->second);
  by_id_.erase(it);
}

int64_t AnswerDeadlines::armed() const {
  MutexLock lock(mu_);
  return static_cast<int64_t>(queue_.size());
}

int64_t AnswerDeadlines::expired() const {
  MutexLock lock(mu_);
  return expired_;
}

void AnswerDeadlines::Loop() {
  NameThisThread("cg-deadline");
  MutexLock lock(mu_);
  for (;;) {
    if (stop_) return;
    if (queue_.empty()) {
      mu_.Wait(cv_);
      continue;
    }
    const auto at = queue_.begin()->first;
    if (std::chrono::steady_clock::now() < at) {
      mu_.WaitUntil(cv_, at);
      continue;
    }
    std::vector<Entry> due;
    while (!queue_.empty() && queue_.begin()->first <= std::chrono::steady_clock::now()) {
      by_id_.erase(queue_.begin()->second.id);
      due.push_back(std::move(queue_.begin()->second));
      queue_.erase(queue_.begin());
    }
    lock.Unlock();
    for (Entry& e : due) {
      int expected = kPending;
      const bool cancelled = e.state->compare_exchange_strong(expected, kCancelled);
      if (!e.respond.answered()) on_expiry_(e.respond, /*started=*/!cancelled);
    }
    const auto n = static_cast<int64_t>(due.size());
    due.clear();  // our Responder copies go before the lock is taken again
    lock.Lock();
    expired_ += n;  // counted once answered (tests wait for it)
  }
}

}  // namespace clawguard::host
