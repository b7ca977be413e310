// answer_deadlines_test.cpp — AnswerDeadlines: a disarmed delivery is never answered by it; an
// expired one not yet started is cancelled (Start fails) and answered; a started one is answered
// and keeps running; an answer given already is left alone.
#include "host/http/answer_deadlines.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

#include "support/gate.h"

namespace clawguard::host {
namespace {

using clawguard::testing::WaitFor;
using Clock = std::chrono::steady_clock;

TEST(AnswerDeadlinesTest, CancelsUnstartedAnswersStartedAndLeavesDisarmedAndAnsweredAlone) {
  std::mutex mu;
  std::vector<bool> late;  // |started| of each expiry answer; guarded by mu
  AnswerDeadlines deadlines([&](const Responder& respond, bool started) {
    {
      std::lock_guard lock(mu);
      late.push_back(started);
    }
    HttpResponse r;
    r.status = 503;
    respond.Answer(std::move(r));
  });
  std::atomic<int> answered_status[4] = {0, 0, 0, 0};
  const auto responder = [&](int i) {
    return Responder([&, i](const HttpResponse& r) { answered_status[i] = r.status; });
  };
  const auto soon = Clock::now() + std::chrono::milliseconds(50);
  AnswerDeadlines::Ticket unstarted = deadlines.Arm(soon, responder(0));
  AnswerDeadlines::Ticket started = deadlines.Arm(soon, responder(1));
  ASSERT_TRUE(started.Start());
  Responder kept = responder(2);  // the delivery's own copy (losing the last copy answers 500)
  AnswerDeadlines::Ticket disarmed = deadlines.Arm(soon, kept);
  deadlines.Disarm(disarmed);
  Responder already = responder(3);
  AnswerDeadlines::Ticket done = deadlines.Arm(soon, already);
  HttpResponse ok;
  ok.status = 200;
  already.Answer(std::move(ok));
  EXPECT_EQ(deadlines.armed(), 3);

  ASSERT_TRUE(WaitFor([&] { return deadlines.expired() == 3; }));
  EXPECT_FALSE(unstarted.Start());  // cancelled: its task must not run
  EXPECT_EQ(answered_status[0].load(), 503);
  EXPECT_EQ(answered_status[1].load(), 503);
  EXPECT_EQ(answered_status[2].load(), 0);    // disarmed
  EXPECT_EQ(answered_status[3].load(), 200);  // its own answer stands
  std::lock_guard lock(mu);
  EXPECT_EQ(late.size(), 2u);
  (void)done;
}

}  // namespace
}  // namespace clawguard::host
