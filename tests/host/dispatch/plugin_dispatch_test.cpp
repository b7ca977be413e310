// plugin_dispatch_test.cpp — PluginDispatcher with small C plugins compiled at test time
// (tests/host/plugins/*.c) and opened directly with dlopen (the Loader is tested on its own; the
// dispatcher takes a const cg_plugin*). The ERP is the real test ERP over loopback.
// Over 500 lines on purpose: every case runs on the one ERP harness fixture (a SQLite outbox, the
// test ERP) and its plugins; split, each part would repeat it.
#include "host/dispatch/plugin_dispatch.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <condition_variable>
#include <filesystem>
#include <future>
#include <initializer_list>
#include <map>
#include <mutex>
#include <thread>

#include "host/erp/idempotency_key.h"
#include "host/intake/webhook_auth.h"
#include "host/intake/webhook_pipeline.h"
#include "plugins/erp_harness.h"
#include "runtime/fiber.h"
#include "support/gate.h"
#include "support/reason_matchers.h"
#include "support/test_plugins.h"

using ::clawguard::testing::HasReason;

namespace clawguard::host {
namespace {

using clawguard::testing::WaitFor;
using testing::ErpHarness;
using testing::TestPlugins;
namespace fs = std::filesystem;

using testing::kPlugin;
using testing::kRoute;
const std::vector<std::string> kDispatchCaps = {"POST /orders/{id}/fulfil",
                                                "POST /inventory/adjust"};
constexpr char kDispatchHookSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

class PluginDispatchTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(h_.Init()); }

  std::shared_ptr<PluginDispatcher> Dispatcher(
      const std::string& plugin_file, std::vector<std::string> caps = kDispatchCaps,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(5000),
      std::chrono::milliseconds lease = std::chrono::milliseconds(30'000)) {
    const cg_plugin* p = TestPlugins::Get().Open(plugin_file);
    CLAWGUARD_CHECK(p != nullptr);
    DispatchOptions o;
    o.handler_timeout = timeout;
    o.lease = lease;
    o.erp = h_.env;
    auto d = PluginDispatcher::Create(std::move(o), {DispatchTarget{kPlugin, p, std::move(caps)}});
    CLAWGUARD_CHECK(d.ok());
    return std::move(d).value();
  }
  DispatchContext Context(int64_t token, int level = 2) {
    DispatchContext ctx;
    ctx.plugin = kPlugin;
    ctx.route = kRoute;
    ctx.level = level;
    ctx.event_key = key_;
    ctx.fencing_token = token;
    ctx.webhook_id = "msg_1";
    ctx.request = &request_;
    ctx.renew_lease = [this] { return lease_held_.load(); };
    return ctx;
  }
  // WaitForHangResult waits (bounded) until the hung plugin was released and made its late call.
  int WaitForHangResult() {
    volatile int* result = TestPlugins::Get().Symbol<volatile int>("hang", "hang_erp_result");
    for (int i = 0; i < 2000 && __atomic_load_n(result, __ATOMIC_SEQ_CST) == 1; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return __atomic_load_n(result, __ATOMIC_SEQ_CST);
  }
  // Pipeline is the whole gate in front of |d| (one level-2 route signed with kDispatchHookSecret).
  std::unique_ptr<WebhookPipeline> Pipeline(
      const std::shared_ptr<PluginDispatcher>& d, int64_t max_in_flight = 0,
      fiber::Carriers* carriers = nullptr,
      std::chrono::milliseconds answer_deadline = std::chrono::milliseconds(0)) {
    auto verifier =
        WebhookVerifier::Create(DecodeWebhookSecret(kDispatchHookSecret).value(), std::nullopt,
                                std::nullopt, std::chrono::milliseconds(300'000), h_.clock);
    CLAWGUARD_CHECK(verifier.ok());
    std::vector<PipelineRoute> routes;
    routes.push_back(PipelineRoute{kPlugin, kRoute, 2, std::nullopt, std::move(verifier).value()});
    auto pipeline =
        WebhookPipeline::Create(PipelineOptions{4096, 4096, std::chrono::milliseconds(30'000),
                                                max_in_flight, carriers, answer_deadline},
                                std::move(routes), h_.idem(), d->AsDispatcher());
    CLAWGUARD_CHECK(pipeline.ok());
    return std::move(pipeline).value();
  }
  // AsyncAnswers collects the answers FinishAsync gives, by webhook-id.
  struct AsyncAnswers {
    std::mutex mu;
    std::condition_variable cv;
    std::map<std::string, HttpResponse> by_id;  // guarded by mu
  };
  // StartAll admits and starts a delivery of {"order_id":9} per id through |pipeline|.
  void StartAll(WebhookPipeline& pipeline, std::initializer_list<std::string> ids,
                AsyncAnswers& answers) {
    for (const std::string& id : ids) {
      const HttpRequest r = Signed(id, R"({"order_id":9})");
      auto front = pipeline.Front(r);
      ASSERT_TRUE(std::holds_alternative<WebhookPipeline::Admitted>(front));
      pipeline.FinishAsync(r, std::get<WebhookPipeline::Admitted>(std::move(front)),
                           Responder([&answers, id](HttpResponse a) {
                             std::lock_guard lock(answers.mu);
                             answers.by_id.emplace(id, std::move(a));
                             answers.cv.notify_all();
                           }));
    }
  }
  // Signed is a delivery of |body| as |id|, signed now for Pipeline's route.
  HttpRequest Signed(const std::string& id, const std::string& body) {
    const int64_t ts = h_.clock.NowSeconds();
    HttpRequest r{"POST", "/webhooks/acme-orders/order.created", {}, body};
    r.headers.Add("webhook-id", id);
    r.headers.Add("webhook-timestamp", std::to_string(ts));
    r.headers.Add("webhook-signature",
                  WebhookSignature(DecodeWebhookSecret(kDispatchHookSecret).value(), id, ts, body));
    return r;
  }
  void ResetHang(int release) {
    TestPlugins::Get().Open("hang");
    __atomic_store_n(TestPlugins::Get().Symbol<volatile int>("hang", "hang_erp_result"), 1,
                     __ATOMIC_SEQ_CST);
    __atomic_store_n(TestPlugins::Get().Symbol<volatile int>("hang", "hang_release"), release,
                     __ATOMIC_SEQ_CST);
  }

  ErpHarness h_;
  const std::string key_ = Sha256Hex("delivery-1");
  HttpRequest request_{"POST",
                       "/webhooks/acme-orders/order.created",
                       {{"webhook-id", "msg_1"}},
                       R"({"order_id":42})"};
  std::atomic<bool> lease_held_{true};
};

// A plugin's log line is rendered without a DOM for ASCII text; it must be the line nlohmann's
// dump gave before (sorted members, its escapes, invalid UTF-8 replaced).
TEST(PluginLogLineTest, IsTheLineNlohmannRenders) {
  std::vector<std::string> messages = {"order fulfilled",
                                       "",
                                       "quote \" backslash \\ slash /",
                                       "tabs\tand\nnew\rlines\b\f",
                                       "caf\xc3\xa9 \xe2\x82\xac",
                                       "bad \xff utf8 \xe2\x82 cut",
                                       "\x7f del"};
  std::string every_ascii;
  for (int c = 1; c < 128; ++c) every_ascii.push_back(static_cast<char>(c));
  messages.push_back(every_ascii);
  for (const std::string& plugin :
       {std::string(kPlugin), std::string("pl\"ug\x01in"), std::string("pl\xc3\xa9")}) {
    for (const std::string& message : messages) {
      for (const int level : {0, 1, -3, 2147483647}) {
        const nlohmann::json j = {
            {"event", "plugin_log"}, {"plugin", plugin}, {"level", level}, {"message", message}};
        EXPECT_EQ(PluginLogLine(plugin, level, message),
                  j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
            << message;
      }
    }
  }
}

TEST_F(PluginDispatchTest, WellBehavedPluginAnswersWithItsErpResults) {
  auto d = Dispatcher("good");
  const DispatchReport r = d->DispatchDetailed(Context(h_.Claim(key_)));
  ASSERT_EQ(r.outcome.kind, PluginOutcome::Kind::kAnswered) << r.outcome.detail;
  EXPECT_EQ(r.outcome.status, 200);
  EXPECT_EQ(r.outcome.content_type, "application/json");
  EXPECT_EQ(r.outcome.body,
            R"({"fulfil":200,"adjust":200,"key":")" + key_ + R"(","route":"order.created"})");
  EXPECT_EQ(r.erp.calls, 2);
  EXPECT_EQ(h_.erp().effects_total(), 2u);
  EXPECT_EQ(h_.AuditCount("\"plugin_log\""), 1u);
}

TEST_F(PluginDispatchTest, Level3CallsAreHeldAndNothingIsSent) {
  auto d = Dispatcher("good");
  const DispatchReport r = d->DispatchDetailed(Context(h_.Claim(key_, 3), /*level=*/3));
  ASSERT_EQ(r.outcome.kind, PluginOutcome::Kind::kAnswered) << r.outcome.detail;
  EXPECT_EQ(r.outcome.body,
            R"({"fulfil":-1,"adjust":-1,"key":")" + key_ + R"(","route":"order.created"})");
  EXPECT_EQ(r.erp.held, 2);
  EXPECT_EQ(h_.erp().requests_total(), 0u);
}

TEST_F(PluginDispatchTest, NoRespondIsPluginFailed) {
  const DispatchReport r = Dispatcher("no_respond")->DispatchDetailed(Context(h_.Claim(key_)));
  EXPECT_EQ(r.outcome.kind, PluginOutcome::Kind::kFailed);
  EXPECT_EQ(r.outcome.detail, "respond() was called 0 times; exactly once is required");
  EXPECT_EQ(h_.AuditCount("\"plugin_failed\""), 1u);
}

TEST_F(PluginDispatchTest, TwoRespondsArePluginFailed) {
  const DispatchReport r = Dispatcher("respond_twice")->DispatchDetailed(Context(h_.Claim(key_)));
  EXPECT_EQ(r.outcome.kind, PluginOutcome::Kind::kFailed);
  EXPECT_EQ(r.outcome.detail, "respond() was called 2 times; exactly once is required");
}

TEST_F(PluginDispatchTest, NonZeroReturnIsPluginFailedEvenAfterRespond) {
  const DispatchReport r = Dispatcher("fail")->DispatchDetailed(Context(h_.Claim(key_)));
  EXPECT_EQ(r.outcome.kind, PluginOutcome::Kind::kFailed);
  EXPECT_EQ(r.outcome.detail, "handle_webhook returned 7");
}

TEST_F(PluginDispatchTest, HungPluginTimesOutAndItsLateCallsAreFenced) {
  ResetHang(/*release=*/0);
  auto d = Dispatcher("hang", kDispatchCaps, std::chrono::milliseconds(100));
  const DispatchReport r = d->DispatchDetailed(Context(h_.Claim(key_)));
  EXPECT_EQ(r.outcome.kind, PluginOutcome::Kind::kTimedOut);
  EXPECT_EQ(h_.AuditCount("\"plugin_timeout\""), 1u);
  ResetHang(/*release=*/1);
  EXPECT_EQ(WaitForHangResult(), CG_FENCED);
  EXPECT_EQ(h_.erp().requests_total(), 0u);
}

// The host's shutdown relies on this: an abandoned plugin thread is counted until it returns,
// WaitIdle is bounded, and the thread keeps the dispatcher alive on its own.
TEST_F(PluginDispatchTest, AbandonedThreadIsCountedUntilItReturnsAndOwnsTheDispatcher) {
  ResetHang(/*release=*/0);
  auto d = Dispatcher("hang", kDispatchCaps, std::chrono::milliseconds(100));
  EXPECT_EQ(d->DispatchDetailed(Context(h_.Claim(key_))).outcome.kind,
            PluginOutcome::Kind::kTimedOut);
  EXPECT_EQ(d->running_threads(), 1);
  EXPECT_FALSE(d->WaitIdle(std::chrono::milliseconds(50)));
  std::weak_ptr<PluginDispatcher> weak = d;
  d.reset();
  EXPECT_FALSE(weak.expired());  // the plugin thread holds it
  ResetHang(/*release=*/1);
  EXPECT_EQ(WaitForHangResult(), CG_FENCED);
  for (int i = 0; i < 2000 && !weak.expired(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(weak.expired());
  EXPECT_EQ(h_.erp().requests_total(), 0u);
}

TEST_F(PluginDispatchTest, WaitIdleIsTrueWhenEveryThreadReturned) {
  auto d = Dispatcher("good");
  EXPECT_EQ(d->Dispatch(Context(h_.Claim(key_))).kind, PluginOutcome::Kind::kAnswered);
  EXPECT_TRUE(d->WaitIdle(std::chrono::milliseconds(10'000)));
  EXPECT_EQ(d->running_threads(), 0);
}

TEST_F(PluginDispatchTest, LostLeaseStopsTheDispatch) {
  ResetHang(/*release=*/0);
  lease_held_ = false;  // the first renewal finds the lease taken over
  auto d = Dispatcher("hang", kDispatchCaps, std::chrono::milliseconds(60'000),
                      std::chrono::milliseconds(30));
  const DispatchReport r = d->DispatchDetailed(Context(h_.Claim(key_)));
  EXPECT_EQ(r.outcome.kind, PluginOutcome::Kind::kFailed);
  EXPECT_EQ(r.outcome.detail, "the lease was taken over while the plugin ran");
  ResetHang(/*release=*/1);
  EXPECT_EQ(WaitForHangResult(), CG_FENCED);
  EXPECT_EQ(h_.erp().requests_total(), 0u);
}

TEST_F(PluginDispatchTest, MaliciousUndeclaredAdjustIsRefusedAndNeverSent) {
  auto d = Dispatcher("malicious", {"POST /orders/{id}/fulfil"});
  const DispatchReport r = d->DispatchDetailed(Context(h_.Claim(key_)));
  ASSERT_EQ(r.outcome.kind, PluginOutcome::Kind::kAnswered) << r.outcome.detail;
  EXPECT_EQ(r.outcome.body, R"({"results":[-2,-2,-2,-2]})");
  EXPECT_EQ(r.erp.denied, 4);
  EXPECT_EQ(h_.erp().requests_total(), 0u);
  EXPECT_EQ(h_.AuditCount("\"erp_call_denied\""), 4u);
}

TEST_F(PluginDispatchTest, PluginChangingCallOrderOnRetryIsDeadLettered) {
  auto d = Dispatcher("reorder");
  const int64_t t1 = h_.Claim(key_);
  const DispatchReport first = d->DispatchDetailed(Context(t1));
  ASSERT_EQ(first.outcome.kind, PluginOutcome::Kind::kAnswered) << first.outcome.detail;
  EXPECT_EQ(h_.erp().requests_total(), 2u);

  const DispatchReport retry = d->DispatchDetailed(Context(h_.Retry(key_, t1)));
  EXPECT_EQ(retry.outcome.kind, PluginOutcome::Kind::kDeadLettered);
  EXPECT_EQ(retry.outcome.dead_letter_class, "mismatch");
  EXPECT_EQ(retry.outcome.detail, "event dead-lettered: mismatch");
  EXPECT_TRUE(retry.erp.dead_lettered);
  EXPECT_EQ(retry.erp.dead_letter_reason, "mismatch");
  EXPECT_EQ(h_.erp().requests_total(), 2u);
}

// Through the whole gate: a first run fails after writing call 0 (the ERP is down), the platform
// retries, the re-run changes its call order → CG_MISMATCH (never the other call's reply), the
// event is dead-lettered and answered 202 (stored), so every later delivery is a replay and the
// plugin never runs again.
TEST_F(PluginDispatchTest, DeadLetteredEventIsAnswered202OnceAndReplayedWithoutRerun) {
  auto d = Dispatcher("reorder");
  std::unique_ptr<WebhookPipeline> pipeline = Pipeline(d);
  const auto deliver = [&] {
    return pipeline->HandleDetailed(Signed("msg_reorder", R"({"order_id":7})"));
  };

  h_.sender().down = true;
  const auto failed = deliver();
  EXPECT_EQ(failed.outcome, WebhookOutcome::kErpPending);  // stopped on a call the outbox owns
  EXPECT_EQ(failed.response.status, 503);
  h_.sender().down = false;

  const auto dead = deliver();
  EXPECT_EQ(dead.outcome, WebhookOutcome::kDeadLettered);
  EXPECT_EQ(dead.response.status, 202);
  EXPECT_EQ(dead.response.body, DeadLetteredBody("mismatch"));
  EXPECT_EQ(h_.AuditCount("\"erp_call_mismatch\""), 1u);
  EXPECT_EQ(h_.AuditCount("\"event_dead_lettered\""), 1u);

  for (int i = 0; i < 3; ++i) {
    h_.clock.Advance(60'000);
    const auto replay = deliver();
    EXPECT_EQ(replay.outcome, WebhookOutcome::kReplayed);
    EXPECT_EQ(replay.response.status, 202);
    EXPECT_EQ(replay.response.body, dead.response.body);
  }
  EXPECT_EQ(h_.AuditCount("\"erp_call_mismatch\""), 1u);  // the plugin never ran again
  // The recorded call 0 is dead: the retry worker never sends it, nothing reached the ERP.
  auto rows = h_.outbox().ListEvent(
      DeriveEventKey(2, kPlugin, kRoute, "msg_reorder", "", R"({"order_id":7})").key);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].state, OutboxState::kDead);
  auto worker = RetryWorker::Create(h_.env);
  ASSERT_TRUE(worker.ok());
  ASSERT_TRUE((*worker)->DrainPending(h_.clock.NowMillis() + 3'600'000).ok());
  EXPECT_EQ(h_.erp().requests_total(), 0u);
}

TEST_F(PluginDispatchTest, UnknownPluginIsFailed) {
  auto d = Dispatcher("good");
  DispatchContext ctx = Context(h_.Claim(key_));
  ctx.plugin = "other";
  EXPECT_EQ(d->Dispatch(ctx).kind, PluginOutcome::Kind::kFailed);
}

TEST_F(PluginDispatchTest, CreateRefusesBadTargets) {
  DispatchOptions o;
  o.erp = h_.env;
  EXPECT_THAT(PluginDispatcher::Create(o, {DispatchTarget{kPlugin, nullptr, kDispatchCaps}}),
              HasReason(Reason::kConfigInvalid));
  const cg_plugin* p = TestPlugins::Get().Open("good");
  ASSERT_NE(p, nullptr);
  EXPECT_THAT(PluginDispatcher::Create(o, {DispatchTarget{kPlugin, p, {"POST orders"}}}),
              HasReason(Reason::kManifestInvalid));
  o.handler_timeout = std::chrono::milliseconds(0);
  EXPECT_THAT(PluginDispatcher::Create(o, {DispatchTarget{kPlugin, p, kDispatchCaps}}),
              HasReason(Reason::kConfigInvalid));
}

// Inline mode (DispatchContext::on_abandon, what the host's FinishAsync uses): the plugin runs
// on the calling thread; the watchdog gives up on a hung one at handler_timeout, calls on_abandon
// from another thread (audited once) while the plugin still runs, and the call returns the same
// outcome, marked abandoned, only when the plugin does; its late calls are fenced.
TEST_F(PluginDispatchTest, InlineHungPluginIsGivenUpByTheWatchdogWhileItsThreadStaysInThePlugin) {
  ResetHang(/*release=*/0);
  auto d = Dispatcher("hang", kDispatchCaps, std::chrono::milliseconds(100));
  DispatchContext ctx = Context(h_.Claim(key_));
  std::mutex mu;
  std::condition_variable cv;
  std::vector<PluginOutcome> abandoned;
  std::thread::id abandon_thread;
  ctx.on_abandon = [&](const PluginOutcome& out) {
    std::lock_guard lock(mu);
    abandoned.push_back(out);
    abandon_thread = std::this_thread::get_id();
    cv.notify_all();
  };
  DispatchReport late;
  std::thread::id caller;
  std::thread delivery([&] {
    caller = std::this_thread::get_id();
    late = d->DispatchDetailed(ctx);
  });
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return !abandoned.empty(); }));
    EXPECT_EQ(abandoned[0].kind, PluginOutcome::Kind::kTimedOut);
    EXPECT_TRUE(abandoned[0].abandoned);
    EXPECT_EQ(abandoned[0].detail, "the plugin did not return within handler_timeout");
  }
  EXPECT_EQ(h_.AuditCount("\"plugin_timeout\""), 1u);
  EXPECT_EQ(d->running_threads(), 1);  // the caller's thread, still in the plugin
  ResetHang(/*release=*/1);
  delivery.join();
  EXPECT_NE(abandon_thread, caller);
  EXPECT_TRUE(late.outcome.abandoned);
  EXPECT_EQ(late.outcome.kind, PluginOutcome::Kind::kTimedOut);
  EXPECT_EQ(WaitForHangResult(), CG_FENCED);
  EXPECT_EQ(abandoned.size(), 1u);
  EXPECT_EQ(h_.AuditCount("\"plugin_timeout\""), 1u);  // not audited again on the late return
  EXPECT_EQ(h_.erp().requests_total(), 0u);
  EXPECT_EQ(d->running_threads(), 0);
}

// The watchdog renews the lease of an inline delivery every lease/3 while the plugin runs; a
// plugin that returns in time is answered normally and on_abandon is never called.
TEST_F(PluginDispatchTest, InlineDeliveryHasItsLeaseRenewedWhileItRunsAndAnswersNormally) {
  ResetHang(/*release=*/0);
  auto d = Dispatcher("hang", kDispatchCaps, std::chrono::milliseconds(60'000),
                      std::chrono::milliseconds(30));
  DispatchContext ctx = Context(h_.Claim(key_));
  std::atomic<int> renewals{0};
  std::atomic<int> abandons{0};
  ctx.renew_lease = [&] {
    ++renewals;
    return true;
  };
  ctx.on_abandon = [&](const PluginOutcome&) { ++abandons; };
  DispatchReport r;
  std::thread delivery([&] { r = d->DispatchDetailed(ctx); });
  for (int i = 0; i < 20'000 && renewals.load() < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_GE(renewals.load(), 3);
  ResetHang(/*release=*/1);
  delivery.join();
  ASSERT_EQ(r.outcome.kind, PluginOutcome::Kind::kAnswered) << r.outcome.detail;
  EXPECT_FALSE(r.outcome.abandoned);
  EXPECT_EQ(r.outcome.body, R"({"late":true})");
  EXPECT_EQ(abandons.load(), 0);
  const int after = renewals.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // no renewal after the return
  EXPECT_EQ(renewals.load(), after);
}

TEST_F(PluginDispatchTest, InlineLostLeaseIsGivenUpWithPluginFailed) {
  ResetHang(/*release=*/0);
  lease_held_ = false;  // the first renewal finds the lease taken over
  auto d = Dispatcher("hang", kDispatchCaps, std::chrono::milliseconds(60'000),
                      std::chrono::milliseconds(30));
  DispatchContext ctx = Context(h_.Claim(key_));
  std::promise<PluginOutcome> gave_up;
  ctx.on_abandon = [&](const PluginOutcome& out) { gave_up.set_value(out); };
  std::thread delivery([&] { (void)d->DispatchDetailed(ctx); });
  auto f = gave_up.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  const PluginOutcome out = f.get();
  EXPECT_EQ(out.kind, PluginOutcome::Kind::kFailed);
  EXPECT_EQ(out.detail, "the lease was taken over while the plugin ran");
  ResetHang(/*release=*/1);
  delivery.join();
  EXPECT_EQ(WaitForHangResult(), CG_FENCED);
  EXPECT_EQ(h_.erp().requests_total(), 0u);
}

// Through the whole gate: FinishAsync answers a hung plugin's delivery 503 plugin_timeout from
// the watchdog and frees its slot, so with max_in_flight 1 the next delivery still runs (and is
// answered the same way); nothing is answered twice when the plugins return late.
TEST_F(PluginDispatchTest, FinishAsyncAnswersAHungDeliveryAtTheTimeoutAndTheNextOneStillRuns) {
  ResetHang(/*release=*/0);
  auto d = Dispatcher("hang", kDispatchCaps, std::chrono::milliseconds(100));
  std::unique_ptr<WebhookPipeline> pipeline = Pipeline(d, /*max_in_flight=*/1);
  AsyncAnswers answers;
  ASSERT_NO_FATAL_FAILURE(StartAll(*pipeline, {"msg_a", "msg_b"}, answers));
  {
    std::unique_lock lock(answers.mu);
    ASSERT_TRUE(answers.cv.wait_for(lock, std::chrono::seconds(60),
                                    [&] { return answers.by_id.size() == 2; }));
    for (const auto& [id, a] : answers.by_id) {
      EXPECT_EQ(a.status, 503) << id;
      EXPECT_NE(a.body.find("plugin_timeout"), std::string::npos) << a.body;
      EXPECT_EQ(a.headers.Get("Retry-After").value_or(""), "30") << id;
    }
  }
  EXPECT_EQ(d->running_threads(), 2);  // both threads are still in the plugin
  ResetHang(/*release=*/1);
  EXPECT_TRUE(d->WaitIdle(std::chrono::milliseconds(60'000)));
  std::lock_guard lock(answers.mu);
  EXPECT_EQ(answers.by_id.size(), 2u);
  EXPECT_EQ(h_.AuditCount("\"plugin_timeout\""), 2u);
  EXPECT_EQ(h_.erp().requests_total(), 0u);
}

// listen.execution: fibers, one carrier, one delivery at a time. The hung plugin holds the
// carrier; the watchdog answers the first delivery and frees its slot, so the second starts — on
// the held carrier, where no plugin watchdog covers it yet: the answer deadline answers it 503
// (nothing claimed) and it never runs. (A delivery that had started, e.g. parked in its claim, is
// answered the same way, "still running"; the e2e tests cover the restart after such answers.)
TEST_F(PluginDispatchTest,
       WithFibersADeliveryHeldBehindAHungPluginIsAnsweredByTheDeadlineAndNeverRuns) {
  ResetHang(/*release=*/0);
  auto d = Dispatcher("hang", kDispatchCaps, std::chrono::milliseconds(100));
  fiber::Carriers carriers(1, "cg-test-carrier");
  AsyncAnswers answers;
  {
    std::unique_ptr<WebhookPipeline> pipeline =
        Pipeline(d, /*max_in_flight=*/1, &carriers, std::chrono::milliseconds(300));
    ASSERT_NO_FATAL_FAILURE(StartAll(*pipeline, {"msg_a", "msg_b"}, answers));
    {
      std::unique_lock lock(answers.mu);
      ASSERT_TRUE(answers.cv.wait_for(lock, std::chrono::seconds(60),
                                      [&] { return answers.by_id.size() == 2; }));
      const HttpResponse& a = answers.by_id.at("msg_a");
      EXPECT_EQ(a.status, 503);
      EXPECT_EQ(a.headers.Get("Retry-After").value_or(""), "30");  // the watchdog's answer
      const HttpResponse& b = answers.by_id.at("msg_b");
      EXPECT_EQ(b.status, 503);
      EXPECT_NE(b.body.find("/plugin_timeout\""), std::string::npos) << b.body;  // the problem type
      EXPECT_NE(b.body.find("could not start"), std::string::npos) << b.body;
      EXPECT_EQ(b.headers.Get("Retry-After").value_or(""), "1");
    }
    ResetHang(/*release=*/1);
    EXPECT_TRUE(d->WaitIdle(std::chrono::milliseconds(60'000)));
    EXPECT_TRUE(WaitFor([&] { return pipeline->deliveries_in_flight() == 0; }));
  }
  EXPECT_EQ(h_.AuditCount("\"plugin_timeout\""), 1u);  // only msg_a's plugin ran
  EXPECT_EQ(h_.erp().requests_total(), 0u);
}

}  // namespace
}  // namespace clawguard::host
