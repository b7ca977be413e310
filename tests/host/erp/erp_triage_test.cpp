// erp_triage_test.cpp — ERP answer triage: the pure classification (TriageAnswer, Retry-After,
// jitter) and, with the real test ERP, what ErpGateway and RetryWorker do for each class of
// answer (ARCHITECTURE.md "Dead-letter triage"): outbox row, DLQ entry, breaker, pause, metrics.
// Over 500 lines on purpose: the classification and its consequences are checked side by side,
// one answer class at a time, on one fixture.
#include "host/erp/erp_triage.h"

#include <gtest/gtest.h>

#include "erp_triage_fixture.h"
#include "host/erp/idempotency_key.h"
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard::host {
namespace {

using testing::ErpAnswer;
using testing::ErpTriageFixture;
using testing::kTriagePlugin;

ErpReply Answer(int status, std::optional<std::string> retry_after = std::nullopt) {
  ErpReply r;
  r.status = status;
  if (retry_after) r.headers.Set("Retry-After", *retry_after);
  return r;
}

TEST(ErpTriageTest, ClassifiesEveryKindOfAnswer) {
  struct Case {
    int status;
    ErpVerdict verdict;
    bool final, breaker_failure;
    ErpCallOutcome outcome;
  };
  const Case cases[] = {
      {200, ErpVerdict::kSuccess, true, false, ErpCallOutcome::kSuccess},
      {201, ErpVerdict::kSuccess, true, false, ErpCallOutcome::kSuccess},
      {429, ErpVerdict::kRateLimited, false, false, ErpCallOutcome::kRateLimited},
      {401, ErpVerdict::kAuth, false, false, ErpCallOutcome::kClientError},
      {403, ErpVerdict::kAuth, false, false, ErpCallOutcome::kClientError},
      {404, ErpVerdict::kNotFound, true, false, ErpCallOutcome::kClientError},
      {409, ErpVerdict::kConflict, true, false,
       ErpCallOutcome::kClientError},  // a first send, no sign
      {400, ErpVerdict::kRejected, true, false, ErpCallOutcome::kClientError},
      {422, ErpVerdict::kRejected, true, false, ErpCallOutcome::kClientError},
      {408, ErpVerdict::kTransient, false, true, ErpCallOutcome::kClientError},
      {425, ErpVerdict::kTransient, false, true, ErpCallOutcome::kClientError},
      {500, ErpVerdict::kTransient, false, true, ErpCallOutcome::kServerError},
      {503, ErpVerdict::kTransient, false, true, ErpCallOutcome::kServerError},
      {302, ErpVerdict::kTransient, false, true, ErpCallOutcome::kServerError},
  };
  for (const Case& c : cases) {
    const ErpTriage t = TriageAnswer(Result<ErpReply>(Answer(c.status)), /*attempt=*/1);
    EXPECT_EQ(t.verdict, c.verdict) << c.status;
    EXPECT_EQ(t.final, c.final) << c.status;
    EXPECT_EQ(t.breaker_failure, c.breaker_failure) << c.status;
    EXPECT_EQ(t.outcome, c.outcome) << c.status;
    EXPECT_EQ(t.status, c.status);
  }
}

TEST(ErpTriageTest, NoAnswerIsTransientAndTimeoutIsToldApart) {
  const ErpTriage timeout = TriageAnswer(
      Result<ErpReply>(Status(Reason::kInternal, "erp_timeout: POST /orders/1/fulfil: deadline")),
      1);
  EXPECT_EQ(timeout.verdict, ErpVerdict::kTransient);
  EXPECT_TRUE(timeout.breaker_failure);
  EXPECT_EQ(timeout.outcome, ErpCallOutcome::kTimeout);
  EXPECT_EQ(timeout.status, 0);
  const ErpTriage refused = TriageAnswer(
      Result<ErpReply>(Status(Reason::kInternal, "erp_connect: POST /orders/1/fulfil: refused")),
      1);
  EXPECT_EQ(refused.outcome, ErpCallOutcome::kTransportError);
  EXPECT_TRUE(refused.breaker_failure);
}

TEST(ErpTriageTest, RetryAfterIsDeltaSecondsOnly) {
  EXPECT_EQ(ParseRetryAfterSeconds("120"), 120);
  EXPECT_EQ(ParseRetryAfterSeconds(" 7 "), 7);
  EXPECT_EQ(ParseRetryAfterSeconds("0"), 0);
  EXPECT_EQ(ParseRetryAfterSeconds("99999999999999999999999"), kMaxRetryAfterSeconds);
  EXPECT_EQ(ParseRetryAfterSeconds("200000"), kMaxRetryAfterSeconds);
  for (const char* bad :
       {"", " ", "-1", "1.5", "+3", "abc", "Wed, 21 Oct 2026 07:28:00 GMT", "12s"}) {
    EXPECT_FALSE(ParseRetryAfterSeconds(bad).has_value()) << bad;
  }
  EXPECT_EQ(TriageAnswer(Result<ErpReply>(Answer(429, "30")), 1).retry_after_ms, 30'000);
  EXPECT_EQ(TriageAnswer(Result<ErpReply>(Answer(429, "Wed, 21 Oct 2026 07:28:00 GMT")), 1)
                .retry_after_ms,
            -1);
  EXPECT_EQ(TriageAnswer(Result<ErpReply>(Answer(429)), 1).retry_after_ms, -1);
}

ErpReply Conflict(std::string body, std::optional<std::string> retry_after = std::nullopt) {
  ErpReply r = Answer(409, std::move(retry_after));
  r.body = std::move(body);
  return r;
}

TEST(ErpTriageTest, A409SaysItsKeyIsInProgressByRetryAfterOrAnIdempotencyError) {
  // Signs that the ERP is still processing this Idempotency-Key (erp_triage.h).
  const std::string stripe =
      R"({"error":{"message":"There is currently another in-progress request using this Idempotent Key",)"
      R"("type":"idempotency_error"}})";
  const std::string draft = R"({"type":"https://developer.example.com/idempotency",)"
                            R"("title":"A request is outstanding for this Idempotency-Key"})";
  const std::string sinch =
      R"({"type":"https://developers.sinch.com/docs/errors/registry/idempotency-conflict",)"
      R"("title":"Idempotency Conflict"})";
  for (const std::string& body :
       {stripe, draft, sinch, std::string(R"({"title":"IDEMPOTENCY key busy"})")}) {
    EXPECT_TRUE(SaysKeyInProgress(Conflict(body))) << body;
  }
  EXPECT_TRUE(SaysKeyInProgress(Conflict("", "2")));
  EXPECT_TRUE(
      SaysKeyInProgress(Conflict("not json", "Wed, 21 Oct 2026 07:28:00 GMT")));  // any Retry-After
  // A conflict of the business: none of those signs.
  for (const std::string& body :
       {std::string(R"({"error":"order 8 is already fulfilled"})"),
        std::string(R"({"error":{"type":"conflict"}})"),
        std::string(R"({"type":42,"title":["idempotency"]})"), std::string("idempotency_error"),
        std::string(""), std::string(R"([{"type":"idempotency_error"}])")}) {
    EXPECT_FALSE(SaysKeyInProgress(Conflict(body))) << body;
  }
  // A body over the bound is not read.
  EXPECT_FALSE(SaysKeyInProgress(
      Conflict(R"({"title":"idempotency")" + std::string(kMaxInProgressBody, ' ') + "}")));

  // Triage: marked → in progress at any attempt, with its Retry-After; unmarked → a conflict on a
  // row's first send, "in progress" on a resend (its first request may still be running).
  for (int64_t attempt : {1, 2, 5}) {
    const ErpTriage t = TriageAnswer(Result<ErpReply>(Conflict(stripe, "3")), attempt);
    EXPECT_EQ(t.verdict, ErpVerdict::kInProgress) << attempt;
    EXPECT_FALSE(t.final);
    EXPECT_FALSE(t.breaker_failure);  // the ERP answered
    EXPECT_TRUE(t.key_in_progress_said);
    EXPECT_EQ(t.retry_after_ms, 3'000);
  }
  const ErpTriage first = TriageAnswer(Result<ErpReply>(Conflict(R"({"error":"taken"})")), 1);
  EXPECT_EQ(first.verdict, ErpVerdict::kConflict);
  EXPECT_TRUE(first.final);
  const ErpTriage resend = TriageAnswer(Result<ErpReply>(Conflict(R"({"error":"taken"})")), 2);
  EXPECT_EQ(resend.verdict, ErpVerdict::kInProgress);
  EXPECT_FALSE(resend.final);
  EXPECT_FALSE(resend.key_in_progress_said);
  EXPECT_EQ(resend.retry_after_ms, -1);
  EXPECT_EQ(ErpVerdictName(ErpVerdict::kInProgress), "in_progress");
}

TEST(ErpTriageTest, JitterStaysWithinItsBoundsAnd429NeverComesEarly) {
  ErpRetryPolicy p{std::chrono::milliseconds(1000), std::chrono::milliseconds(60'000), 8, 20,
                   std::chrono::milliseconds(60'000)};
  EXPECT_EQ(p.JitteredMs(10'000, 0.0), 8'000);
  EXPECT_EQ(p.JitteredMs(10'000, 0.5), 10'000);
  EXPECT_EQ(p.JitteredMs(10'000, 1.0), 12'000);
  EXPECT_EQ(p.JitteredMs(10'000, 0.75), 11'000);
  EXPECT_EQ(p.CooldownMs(-1, 0.0), 60'000);        // no Retry-After: the floor
  EXPECT_EQ(p.CooldownMs(5'000, 0.0), 60'000);     // under the floor: the floor
  EXPECT_EQ(p.CooldownMs(120'000, 0.0), 120'000);  // above it: the ERP's wish
  EXPECT_EQ(p.CooldownMs(120'000, 1.0), 144'000);  // jitter only lengthens
  p.jitter_percent = 0;
  EXPECT_EQ(p.JitteredMs(10'000, 1.0), 10'000);
  EXPECT_EQ(p.JitteredMs(0, 0.0), 1);
  p.jitter_percent = 101;
  EXPECT_THAT(p.Check(), HasReason(Reason::kConfigInvalid));
  p.jitter_percent = 100;
  p.attempts = 0;
  EXPECT_THAT(p.Check(), HasReason(Reason::kConfigInvalid));
}

class ErpDeadLetterTest : public ErpTriageFixture {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(Init()); }
  const std::string key_ = Sha256Hex("event-1");
};

TEST_F(ErpDeadLetterTest, TooManyRequestsWaitsTheFloorThenSucceedsAndResolvesTheCooldown) {
  ErpAnswer busy;
  busy.status = 429;
  busy.retry_after = "5";  // under the 60 s floor
  erp_->SetAnswer("/orders/1/fulfil", busy);
  u01_ = 1.0;  // the most jitter: +20 %
  EXPECT_EQ(Call(key_, "POST", "/orders/1/fulfil"), CG_UNAVAILABLE);
  OutboxRow row = Row(key_);
  EXPECT_EQ(row.state, OutboxState::kSent);
  EXPECT_EQ(row.attempts, 1);
  EXPECT_EQ(row.next_attempt_ms, testing::kTriageT0 + 72'000);  // floor 60 s × 1.2
  auto cooldown = Entries(DlqClass::kCooldown);
  ASSERT_EQ(cooldown.size(), 1u);
  EXPECT_EQ(cooldown[0].erp_status, 429);
  EXPECT_EQ(cooldown[0].call_index, 0);
  EXPECT_EQ(cooldown[0].endpoint, testing::kFulfil);
  EXPECT_EQ(cooldown[0].plugin, kTriagePlugin);
  EXPECT_EQ(cooldown[0].next_attempt_ms, 0);  // the outbox row is the queue
  EXPECT_EQ(breaker_->StateOf(testing::kFulfil), EndpointBreaker::State::kClosed);
  EXPECT_EQ(RecentFailures(testing::kFulfil), 0u);  // a 429 is not a failure

  // Not due before the cool-down; a second 429 (Retry-After above the floor) folds into the entry.
  clock_.Advance(71'999);
  EXPECT_EQ(Drain().retry_later, 0);
  clock_.Advance(1);
  busy.retry_after = "120";
  erp_->SetAnswer("/orders/1/fulfil", busy);
  u01_ = 0.0;  // no lengthening: exactly what the ERP asked
  EXPECT_EQ(Drain().retry_later, 1);
  row = Row(key_);
  EXPECT_EQ(row.attempts, 2);
  EXPECT_EQ(row.next_attempt_ms, clock_.NowMillis() + 120'000);
  cooldown = Entries(DlqClass::kCooldown);
  ASSERT_EQ(cooldown.size(), 1u);
  EXPECT_EQ(cooldown[0].occurrences, 2);

  erp_->SetAnswer("/orders/1/fulfil", ErpAnswer{});
  clock_.Advance(120'000);
  EXPECT_EQ(Drain().answered, 1);
  EXPECT_EQ(Row(key_).state, OutboxState::kAnswered);
  cooldown = Entries(DlqClass::kCooldown);
  ASSERT_EQ(cooldown.size(), 1u);
  EXPECT_EQ(cooldown[0].state, DlqState::kReplayed);  // "retry succeeded"
  EXPECT_NE(cooldown[0].resolution.find("retry succeeded"), std::string::npos);
  EXPECT_EQ(erp_->requests_total(), 3u);
  EXPECT_EQ(MetricCount(testing::kFulfil, "rate_limited"), 2);
}

TEST_F(ErpDeadLetterTest, ServerErrorsUntilTheAttemptsAreSpentMakeTheRowDead) {
  ErpAnswer down;
  down.status = 503;
  erp_->SetAnswer("/orders/2/fulfil", down);
  EXPECT_EQ(Call(key_, "POST", "/orders/2/fulfil"), CG_UNAVAILABLE);
  for (int i = 2; i <= 4; ++i) {
    clock_.Advance(60'000);
    const auto s = Drain();
    EXPECT_EQ(s.retry_later + s.dead, 1) << "send " << i;
  }
  EXPECT_EQ(Row(key_).state, OutboxState::kDead);
  EXPECT_EQ(Row(key_).attempts, 4);
  const auto exhausted = Entries(DlqClass::kTransientExhausted);
  ASSERT_EQ(exhausted.size(), 1u);
  EXPECT_EQ(exhausted[0].erp_status, 503);
  EXPECT_NE(exhausted[0].detail.find("4 attempts"), std::string::npos);
  EXPECT_EQ(AuditCount("\"erp_call_dead\""), 1u);
  clock_.Advance(600'000);
  const auto later = Drain();
  EXPECT_EQ(later.answered + later.retry_later + later.dead, 0);  // dead rows are never sent again
  EXPECT_EQ(erp_->requests_total(), 4u);
}

TEST_F(ErpDeadLetterTest, TimeoutCountsAsAnAttemptAndABreakerFailure) {
  ErpAnswer slow;
  slow.delay = std::chrono::milliseconds(2000);  // the client gives up after 250 ms
  erp_->SetAnswer("/orders/3/fulfil", slow);
  EXPECT_EQ(Call(key_, "POST", "/orders/3/fulfil"), CG_UNAVAILABLE);
  const OutboxRow row = Row(key_);
  EXPECT_EQ(row.state, OutboxState::kSent);
  EXPECT_EQ(row.attempts, 1);
  // A timed-out send waits max(backoff, erp.timeout): here the first backoff (u = 0.5) is longer.
  EXPECT_EQ(row.next_attempt_ms, testing::kTriageT0 + 1'000);
  EXPECT_EQ(RecentFailures(testing::kFulfil), 1u);
  EXPECT_EQ(MetricCount(testing::kFulfil, "timeout"), 1);
  EXPECT_EQ(AuditCount("\"erp_call_retry\""), 1u);
}

TEST_F(ErpDeadLetterTest, UnauthorizedPausesTheCapabilityUntilResumed) {
  ErpAnswer denied;
  denied.status = 401;
  erp_->SetAnswer("/orders/4/fulfil", denied);
  EXPECT_EQ(Call(key_, "POST", "/orders/4/fulfil"), CG_UNAVAILABLE);
  EXPECT_TRUE(*dlq_->IsPaused(kTriagePlugin, testing::kFulfil));
  EXPECT_TRUE(pauses_.IsPaused(kTriagePlugin, testing::kFulfil));
  const auto auth = Entries(DlqClass::kAuth);
  ASSERT_EQ(auth.size(), 1u);
  EXPECT_EQ(auth[0].erp_status, 401);
  EXPECT_NE(auth[0].detail.find("capability resume"), std::string::npos);
  EXPECT_EQ(AuditCount("\"erp_auth_failed\""), 1u);
  EXPECT_EQ(AuditCount("\"alert\":true"), 1u);
  for (const auto& line : AuditLines()) EXPECT_EQ(line.find("erp-secret"), std::string::npos);
  EXPECT_EQ(RecentFailures(testing::kFulfil), 0u);  // not the endpoint's fault
  EXPECT_EQ(Row(key_).state, OutboxState::kSent);

  // While paused: due rows are deferred, nothing reaches the ERP, no attempt is counted — also a
  // new call of the same capability.
  erp_->SetAnswer("/orders/4/fulfil", ErpAnswer{});
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(5'000);
    EXPECT_EQ(Drain().not_sent, 1);
  }
  const std::string other = Sha256Hex("event-2");
  EXPECT_EQ(Call(other, "POST", "/orders/5/fulfil"), CG_UNAVAILABLE);
  EXPECT_EQ(Row(other).attempts, 0);
  EXPECT_EQ(erp_->requests_total(), 1u);
  EXPECT_EQ(Row(key_).attempts, 1);
  EXPECT_EQ(MetricCount(testing::kFulfil, "paused"), 4);
  // Another capability of the plugin is not paused.
  std::string reply;
  EXPECT_EQ(Call(Sha256Hex("event-3"), "GET", "/orders/9", &reply), 200);

  // An operator resumes; the host refreshes its mirror; both rows are sent.
  ASSERT_TRUE(*dlq_->Resume(kTriagePlugin, testing::kFulfil, "cli:test"));
  ASSERT_TRUE(pauses_.Refresh(*dlq_).ok());
  EXPECT_FALSE(pauses_.IsPaused(kTriagePlugin, testing::kFulfil));
  clock_.Advance(kPausedRecheckMs);
  EXPECT_EQ(Drain().answered, 2);
  EXPECT_EQ(Row(key_).state, OutboxState::kAnswered);
  EXPECT_EQ(Entries(DlqClass::kAuth).at(0).state, DlqState::kReplayed);
  EXPECT_EQ(erp_->effects_for_key(ErpCallKey(key_, kTriagePlugin, 0)), 1u);
}

TEST_F(ErpDeadLetterTest, ForbiddenIsTreatedAsUnauthorized) {
  ErpAnswer forbidden;
  forbidden.status = 403;
  erp_->SetAnswer("/orders/6/fulfil", forbidden);
  EXPECT_EQ(Call(key_, "POST", "/orders/6/fulfil"), CG_UNAVAILABLE);
  EXPECT_TRUE(*dlq_->IsPaused(kTriagePlugin, testing::kFulfil));
  ASSERT_EQ(Entries(DlqClass::kAuth).size(), 1u);
  EXPECT_EQ(Entries(DlqClass::kAuth)[0].erp_status, 403);
}

TEST_F(ErpDeadLetterTest, NotFoundIsFinalWithARepairTicket) {
  ErpAnswer missing;
  missing.status = 404;
  missing.body = R"({"error":"no such order"})";
  erp_->SetAnswer("/orders/7", missing);
  std::string reply;
  EXPECT_EQ(Call(key_, "GET", "/orders/7", &reply), 404);
  EXPECT_EQ(reply, R"({"error":"no such order"})");
  EXPECT_EQ(Row(key_).state, OutboxState::kAnswered);
  const auto nf = Entries(DlqClass::kNotFound);
  ASSERT_EQ(nf.size(), 1u);
  EXPECT_EQ(nf[0].erp_status, 404);
  EXPECT_EQ(nf[0].endpoint, "GET /orders/{id}");
  EXPECT_EQ(nf[0].detail.rfind("repair ticket: ", 0), 0u);
  EXPECT_EQ(nf[0].detail.find("no such order"), std::string::npos);  // bodies stay out of the DLQ
  clock_.Advance(3'600'000);
  EXPECT_EQ(Drain().answered, 0);
  EXPECT_EQ(erp_->requests_total(), 1u);
}

TEST_F(ErpDeadLetterTest, ConflictIsFinalAndAsksForReconciliation) {
  ErpAnswer conflict;
  conflict.status = 409;
  erp_->SetAnswer("/orders/8/fulfil", conflict);
  EXPECT_EQ(Call(key_, "POST", "/orders/8/fulfil"), 409);
  const auto c = Entries(DlqClass::kConflict);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].erp_status, 409);
  EXPECT_EQ(c[0].detail.rfind("reconcile before any retry", 0), 0u);
  EXPECT_EQ(Row(key_).state, OutboxState::kAnswered);
}

TEST_F(ErpDeadLetterTest, A409ForItsOwnKeyInProgressIsAskedAgainAndTheRealAnswerIsStored) {
  // Stripe's answer to a request whose key has another request still running.
  ErpAnswer busy;
  busy.status = 409;
  busy.retry_after = "3";
  busy.body =
      R"({"error":{"message":"another in-progress request uses this key","type":"idempotency_error"}})";
  erp_->SetAnswer("/orders/8/fulfil", busy);
  EXPECT_EQ(Call(key_, "POST", "/orders/8/fulfil"), CG_UNAVAILABLE);  // not the plugin's 409
  OutboxRow row = Row(key_);
  EXPECT_EQ(row.state, OutboxState::kSent);
  EXPECT_EQ(row.claimed_by, "");
  EXPECT_EQ(row.next_attempt_ms,
            testing::kTriageT0 + 3'000);  // max(Retry-After, first backoff 1 s)
  EXPECT_TRUE(Entries(DlqClass::kConflict).empty());
  EXPECT_EQ(RecentFailures(testing::kFulfil), 0u);
  EXPECT_EQ(AuditCount("\"erp_call_in_progress\""), 1u);

  // The ERP has finished the first request: asked again, it answers (replays) 200.
  erp_->SetAnswer("/orders/8/fulfil", ErpAnswer{});
  clock_.Advance(2'999);
  EXPECT_EQ(Drain().answered, 0);
  clock_.Advance(1);
  EXPECT_EQ(Drain().answered, 1);
  row = Row(key_);
  EXPECT_EQ(row.state, OutboxState::kAnswered);
  EXPECT_EQ(row.reply_status, 200);
  EXPECT_EQ(row.attempts, 2);
  // The platform's retry (after the first delivery's lease) re-runs the plugin: the stored answer.
  clock_.Advance(30'000);
  std::string reply;
  EXPECT_EQ(Call(key_, "POST", "/orders/8/fulfil", &reply), 200);
  EXPECT_EQ(reply, R"({"ok":true})");
  EXPECT_TRUE(Entries(DlqClass::kConflict).empty());
  EXPECT_EQ(erp_->requests_total(), 2u);
}

TEST_F(ErpDeadLetterTest, A409ThatSaysInProgressOnEveryAskEndsDeadNeverAsAConflict) {
  ErpAnswer busy;
  busy.status = 409;
  busy.body =
      R"({"type":"https://erp.example/problems/idempotency-key-in-use","title":"Conflict"})";
  erp_->SetAnswer("/orders/8/fulfil", busy);
  EXPECT_EQ(Call(key_, "POST", "/orders/8/fulfil"), CG_UNAVAILABLE);
  for (int i = 2; i <= 4; ++i) {
    clock_.Advance(60'000);
    const auto s = Drain();
    EXPECT_EQ(s.retry_later + s.dead, 1) << "send " << i;
  }
  const OutboxRow row = Row(key_);
  EXPECT_EQ(row.state, OutboxState::kDead);
  EXPECT_EQ(row.attempts, 4);
  EXPECT_EQ(row.reply_status, 0);  // no answer was stored
  EXPECT_TRUE(Entries(DlqClass::kConflict).empty());
  const auto exhausted = Entries(DlqClass::kTransientExhausted);
  ASSERT_EQ(exhausted.size(), 1u);
  EXPECT_EQ(exhausted[0].erp_status, 409);
  EXPECT_NE(exhausted[0].detail.find("in progress"), std::string::npos) << exhausted[0].detail;
}

TEST_F(ErpDeadLetterTest,
       AnUnmarked409ToAResendIsAskedAgainThenTakenAsAConflictWhenAttemptsAreSpent) {
  // The first send got no answer (503); every resend gets a bare 409: it may be the first request
  // still running, so it is asked again; when every ask got it, it is a real conflict.
  ErpAnswer down;
  down.status = 503;
  erp_->SetAnswer("/orders/8/fulfil", down);
  EXPECT_EQ(Call(key_, "POST", "/orders/8/fulfil"), CG_UNAVAILABLE);
  ErpAnswer conflict;
  conflict.status = 409;
  conflict.body = R"({"error":"order 8 was fulfilled by another system"})";
  erp_->SetAnswer("/orders/8/fulfil", conflict);
  for (int i = 2; i <= 3; ++i) {
    clock_.Advance(60'000);
    EXPECT_EQ(Drain().retry_later, 1) << "send " << i;
    EXPECT_EQ(Row(key_).state, OutboxState::kSent);
    EXPECT_TRUE(Entries(DlqClass::kConflict).empty());
  }
  clock_.Advance(60'000);
  EXPECT_EQ(Drain().answered, 1);  // attempt 4 of 4
  const OutboxRow row = Row(key_);
  EXPECT_EQ(row.state, OutboxState::kAnswered);
  EXPECT_EQ(row.reply_status, 409);
  EXPECT_EQ(row.reply_body, R"({"error":"order 8 was fulfilled by another system"})");
  ASSERT_EQ(Entries(DlqClass::kConflict).size(), 1u);
  EXPECT_EQ(AuditCount("\"erp_call_in_progress\""), 2u);
}

TEST_F(ErpDeadLetterTest, ReplayCallRevivesADeadRowAndTheWorkerSendsItWithTheSameKey) {
  ErpAnswer down;
  down.status = 500;
  erp_->SetAnswer("/orders/9/fulfil", down);
  EXPECT_EQ(Call(key_, "POST", "/orders/9/fulfil"), CG_UNAVAILABLE);
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(60'000);
    (void)Drain();
  }
  ASSERT_EQ(Row(key_).state, OutboxState::kDead);
  const auto exhausted = Entries(DlqClass::kTransientExhausted);
  ASSERT_EQ(exhausted.size(), 1u);

  erp_->SetAnswer("/orders/9/fulfil", ErpAnswer{});
  auto revived = worker_->ReplayCall(exhausted[0]);
  ASSERT_TRUE(revived.ok()) << revived.error().ToString();
  EXPECT_EQ(*revived, CallReplay::kQueued);
  EXPECT_EQ(Row(key_).state, OutboxState::kPending);
  EXPECT_EQ(Row(key_).attempts, 0);
  EXPECT_EQ(*worker_->ReplayCall(exhausted[0]),
            CallReplay::kQueued);  // already pending: nothing changed
  EXPECT_EQ(Drain().answered, 1);
  const auto reqs = erp_->requests();
  ASSERT_EQ(reqs.size(), 5u);
  for (const auto& r : reqs) {
    EXPECT_EQ(r.headers.Get("Idempotency-Key").value_or(""), ErpCallKey(key_, kTriagePlugin, 0));
  }
  EXPECT_EQ(erp_->effects_for_key(ErpCallKey(key_, kTriagePlugin, 0)), 1u);

  DlqEntry event_level = exhausted[0];
  event_level.call_index = kDlqEventLevel;
  EXPECT_THAT(worker_->ReplayCall(event_level), HasReason(Reason::kUsage));
  DlqEntry unknown = exhausted[0];
  unknown.call_index = 7;
  EXPECT_THAT(worker_->ReplayCall(unknown), HasReason(Reason::kNotFound));
}

TEST_F(ErpDeadLetterTest, InjectedJitterSpreadsTheBackoff) {
  ErpAnswer down;
  down.status = 502;
  erp_->SetAnswer("/orders/10/fulfil", down);
  u01_ = 0.0;  // −20 %
  EXPECT_EQ(Call(key_, "POST", "/orders/10/fulfil"), CG_UNAVAILABLE);
  EXPECT_EQ(Row(key_).next_attempt_ms, testing::kTriageT0 + 800);
  clock_.Advance(800);
  u01_ = 1.0;  // +20 % of the second backoff (2 s)
  EXPECT_EQ(Drain().retry_later, 1);
  EXPECT_EQ(Row(key_).next_attempt_ms, clock_.NowMillis() + 2'400);
}

class ErpBreakerTest : public ErpTriageFixture {
 protected:
  void SetUp() override {
    testing::TriageOptions o;
    o.attempts = 8;
    o.breaker =
        BreakerSpec{3, std::chrono::milliseconds(5'000), std::chrono::milliseconds(30'000), 1};
    ASSERT_NO_FATAL_FAILURE(Init(o));
  }
};

TEST_F(ErpBreakerTest, OpensAfterThreeFailuresAndTheNextCallIsNotSent) {
  ErpAnswer down;
  down.status = 503;
  for (int i = 0; i < 3; ++i) {
    erp_->SetAnswer("/orders/" + std::to_string(i) + "/fulfil", down);
    EXPECT_EQ(Call(Sha256Hex("event-" + std::to_string(i)), "POST",
                   ("/orders/" + std::to_string(i) + "/fulfil").c_str()),
              CG_UNAVAILABLE);
  }
  EXPECT_EQ(breaker_->StateOf(testing::kFulfil), EndpointBreaker::State::kOpen);
  EXPECT_EQ(AuditCount("\"erp_breaker_opened\""), 1u);
  EXPECT_EQ(erp_->requests_total(), 3u);

  const std::string next = Sha256Hex("event-next");
  EXPECT_EQ(Call(next, "POST", "/orders/77/fulfil"), CG_UNAVAILABLE);
  EXPECT_EQ(erp_->requests_total(), 3u);  // not sent
  const OutboxRow row = Row(next);
  EXPECT_EQ(row.state, OutboxState::kPending);
  EXPECT_EQ(row.attempts, 0);
  EXPECT_EQ(row.next_attempt_ms, testing::kTriageT0 + 30'000);  // when the breaker half-opens
  EXPECT_EQ(MetricCount(testing::kFulfil, "breaker_open"), 1);
  // Another endpoint is not affected.
  EXPECT_EQ(Call(Sha256Hex("event-get"), "GET", "/orders/1"), 200);

  // The worker's resends are held back too until the cool-down ends; then one probe closes it.
  clock_.Advance(2'000);
  const auto held = Drain();
  EXPECT_EQ(held.not_sent, 3);
  EXPECT_EQ(erp_->requests_total(), 4u);
  for (int i = 0; i < 3; ++i)
    erp_->SetAnswer("/orders/" + std::to_string(i) + "/fulfil", ErpAnswer{});
  clock_.Advance(28'000);
  const auto probe = Drain();
  EXPECT_GE(probe.answered, 1);
  EXPECT_EQ(breaker_->StateOf(testing::kFulfil), EndpointBreaker::State::kClosed);
  clock_.Advance(30'000);
  (void)Drain();
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(Row(Sha256Hex("event-" + std::to_string(i))).state, OutboxState::kAnswered);
  EXPECT_EQ(Row(next).state, OutboxState::kAnswered);
}

}  // namespace
}  // namespace clawguard::host
