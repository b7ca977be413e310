// host_ops_loop_test.cpp — HostOpsLoop on real SQLite stores with a fixed clock: a new
// operations generation re-reads the capability pauses, and so does the refresh period without
// one; a DLQ replay that cannot run is audited and due again after kReplayRetryMs, then left to an
// operator after kMaxAutoReplays; retention advice is audited at most once an hour; the loop keeps
// ticking and re-reading the pauses while its outbox worker is held inside an ERP call, and a
// worker held past the stop bound is abandoned and reported. (The replays that do run are end to
// end in host_dlq_test.cpp; a real host against an ERP that never answers in
// tests/e2e/host_peer_workers_test.cpp.)
#include "host/app/host_ops_loop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "clawguard/sha256.h"
#include "host/erp/idempotency_key.h"

#include "sqlite/sqlite_dlq.h"
#include "sqlite/sqlite_idempotency_store.h"
#include "sqlite/sqlite_outbox.h"
#include "support/reason_matchers.h"
#include "support/temp_dir.h"

using ::clawguard::testing::HasReason;

namespace clawguard::host {
namespace {

constexpr int64_t kOpsT0 = 1'800'000'000'000;

// GateErp answers nothing: while closed a send waits in it (an ERP that does not answer), once
// open it fails at once (no ERP in this test).
class GateErp final : public ErpSender {
 public:
  Result<ErpReply> Send(std::string_view, std::string_view, const HttpHeaders&,
                        std::string_view) override {
    std::unique_lock lock(mu_);
    ++entered_;
    cv_.notify_all();
    cv_.wait(lock, [this] { return open_; });
    return Status(Reason::kInternal, "no ERP in this test");
  }
  void Close() {
    std::lock_guard lock(mu_);
    open_ = false;
  }
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // WaitEntered waits (a guard against a hung test, never asserted) until |n| sends came in.
  bool WaitEntered(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return entered_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
  int entered_ = 0;
};

constexpr const char* kOpsPlugin = "acme-orders";
constexpr const char* kOpsFulfil = "POST /orders/{id}/fulfil";

class HostOpsLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string db = dir_.Sub("state.db");
    auto idem = sqlite::SqliteIdempotencyStore::Open(db, clock_);
    ASSERT_TRUE(idem.ok()) << idem.error().ToString();
    idem_ = std::move(idem).value();
    auto outbox = sqlite::SqliteOutbox::Open(db, clock_);
    ASSERT_TRUE(outbox.ok());
    outbox_ = std::move(outbox).value();
    auto dlq = sqlite::SqliteDlq::Open(db, clock_);
    ASSERT_TRUE(dlq.ok());
    dlq_ = std::move(dlq).value();

    ErpEnv env;
    env.outbox = outbox_.get();
    env.sender = &sender_;
    env.clock = &clock_;
    auto caps = CapabilitySet::Create({kOpsFulfil});
    ASSERT_TRUE(caps.ok());
    env.plugins = std::make_shared<const std::vector<ErpPluginCaps>>(
        std::vector<ErpPluginCaps>{ErpPluginCaps{kOpsPlugin, std::move(caps).value(), "1.4.2"}});
    auto retry = RetryWorker::Create(env);
    ASSERT_TRUE(retry.ok()) << retry.error().ToString();
    retry_ = std::move(retry).value();
    auto pipeline = WebhookPipeline::Create(
        PipelineOptions{1 << 20, 16 << 10, std::chrono::seconds(30)}, {}, *idem_,
        [](const DispatchContext&) { return PluginOutcome::Failed("none"); });
    ASSERT_TRUE(pipeline.ok()) << pipeline.error().ToString();
    pipeline_ = std::move(pipeline).value();
    auto metrics = HostMetrics::Create(MetricsNames{});
    ASSERT_TRUE(metrics.ok());
    metrics_ = std::move(metrics).value();
    BreakerSpec spec;
    spec.failures = 3;
    spec.window = std::chrono::seconds(5);
    spec.cooldown = std::chrono::seconds(30);
    spec.half_open_probes = 1;
    endpoints_ = std::move(EndpointBreaker::Create(spec, clock_)).value();
    keys_ = std::move(KeyBreaker::Create(spec, clock_)).value();
    observer_ =
        std::move(HostObserver::Create(
                      {metrics_.get(), endpoints_.get(), keys_.get(), dlq_.get(), &clock_}, {}))
            .value();

    OpsLoopDeps deps;
    deps.idempotency = idem_.get();
    deps.dlq = dlq_.get();
    deps.retry = retry_.get();
    deps.pipeline = pipeline_.get();
    deps.pauses = &pauses_;
    deps.advisor = &advisor_;
    deps.observer = observer_.get();
    deps.clock = &clock_;
    deps.audit = [this](const std::string& line) {
      std::lock_guard lock(mu_);
      audit_.push_back(nlohmann::json::parse(line));
    };
    deps.owner = ReplayOwner();
    deps.retention_ms = 3'600'000;
    deps.metrics = metrics_.get();
    deps.plugin_threads = [this] { return plugin_threads_.load(); };
    auto loop = HostOpsLoop::Create(std::move(deps));
    ASSERT_TRUE(loop.ok()) << loop.error().ToString();
    loop_ = std::move(loop).value();
  }

  // AppendDueRow claims an event and appends its call 0 (POST /orders/1/fulfil) pending, due now.
  void AppendDueRow(const std::string& key) {
    auto claim =
        idem_->Claim(key, "fp", ClaimMeta{kOpsPlugin, "order.created", 2, "msg_1", ""}, 30'000);
    ASSERT_TRUE(claim.ok() && claim->kind == ClaimOutcome::Kind::kClaimed);
    OutboxRow row;
    row.event_key = key;
    row.fencing_token = claim->fencing_token;
    row.call_index = 0;
    row.method = "POST";
    row.path = "/orders/1/fulfil";
    row.body_sha256 = Sha256Hex("");
    row.idempotency_key = ErpCallKey(key, kOpsPlugin, 0);
    row.next_attempt_ms = clock_.NowMillis();
    auto appended = outbox_->Append(row);
    ASSERT_TRUE(appended.ok() && appended->kind == OutboxAppend::Kind::kAppended);
  }

  std::vector<nlohmann::json> Events(const std::string& event) {
    std::lock_guard lock(mu_);
    std::vector<nlohmann::json> out;
    for (const auto& j : audit_) {
      if (j["event"] == event) out.push_back(j);
    }
    return out;
  }

  clawguard::testing::TempDir dir_;
  FixedClock clock_{kOpsT0};
  GateErp sender_;
  std::unique_ptr<sqlite::SqliteIdempotencyStore> idem_;
  std::unique_ptr<sqlite::SqliteOutbox> outbox_;
  std::unique_ptr<sqlite::SqliteDlq> dlq_;
  std::unique_ptr<RetryWorker> retry_;
  std::unique_ptr<WebhookPipeline> pipeline_;
  std::unique_ptr<HostMetrics> metrics_;
  std::unique_ptr<EndpointBreaker> endpoints_;
  std::unique_ptr<KeyBreaker> keys_;
  std::unique_ptr<HostObserver> observer_;
  CapabilityPauses pauses_;
  RetentionAdvisor advisor_;
  std::unique_ptr<HostOpsLoop> loop_;
  std::atomic<int64_t> plugin_threads_{0};
  std::mutex mu_;
  std::vector<nlohmann::json> audit_;
};

// The delivery gauges come with the others: deliveries holding a slot and waiting for one (the
// pipeline's DeliveryRunner; none here) and threads inside a plugin (the dispatcher's count).
TEST_F(HostOpsLoopTest, PublishesTheDeliveryGauges) {
  plugin_threads_ = 7;  // e.g. hung plugins a timed-out delivery left behind
  loop_->Tick();
  const std::string text = metrics_->RenderPrometheus();
  EXPECT_NE(text.find("\nclawguard_plugin_threads 7\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nclawguard_deliveries_in_flight 0\n"), std::string::npos);
  EXPECT_NE(text.find("\nclawguard_deliveries_queued 0\n"), std::string::npos);
}

TEST_F(HostOpsLoopTest, NewGenerationReReadsThePauses) {
  loop_->Tick();  // first generation seen: nothing to compare with
  ASSERT_TRUE(dlq_->Pause("acme-orders", "POST /orders/{id}/fulfil", "operator", "cli:test").ok());
  EXPECT_FALSE(pauses_.IsPaused("acme-orders", "POST /orders/{id}/fulfil"));
  ASSERT_TRUE(idem_->BumpGeneration().ok());  // as the operator commands do
  loop_->Tick();
  EXPECT_TRUE(pauses_.IsPaused("acme-orders", "POST /orders/{id}/fulfil"));
  EXPECT_EQ(Events("operations_generation").size(), 1u);
}

TEST_F(HostOpsLoopTest, ReplayWithoutStoredRequestIsRetriedThenLeftToAnOperator) {
  DlqNewEntry e;
  e.klass = DlqClass::kMismatch;  // event-level, no request: the host cannot re-run it
  e.event_key = std::string(64, 'e');
  e.plugin = "acme-orders";
  e.route = "order.created";
  e.detail = "test";
  auto added = dlq_->Add(e);
  ASSERT_TRUE(added.ok());
  // An operator cannot ask for it (no request), but a due next attempt claims it too: force one.
  DlqNewEntry due = e;
  due.next_attempt_ms = kOpsT0;
  ASSERT_TRUE(dlq_->Add(due).ok());

  const HostOpsLoop::ReplayStats first = loop_->ReplayDue();
  EXPECT_EQ(first.claimed, 1);
  EXPECT_EQ(first.not_done, 1);
  auto entry = dlq_->Get(added->id);
  ASSERT_TRUE(entry.ok() && entry->has_value());
  EXPECT_EQ((*entry)->state, DlqState::kOpen);
  EXPECT_EQ((*entry)->next_attempt_ms, kOpsT0 + kReplayRetryMs);
  ASSERT_EQ(Events("dlq_replay").size(), 1u);
  EXPECT_EQ(Events("dlq_replay")[0]["done"], false);
  EXPECT_EQ(loop_->ReplayDue().claimed, 0);  // not due yet

  for (int64_t n = 2; n <= kMaxAutoReplays; ++n) {
    clock_.Advance(kReplayRetryMs);
    EXPECT_EQ(loop_->ReplayDue().claimed, 1) << "claim " << n;
  }
  entry = dlq_->Get(added->id);
  ASSERT_TRUE(entry.ok() && entry->has_value());
  EXPECT_EQ((*entry)->next_attempt_ms, 0)
      << "after kMaxAutoReplays claims it waits for an operator";
  clock_.Advance(kReplayRetryMs);
  EXPECT_EQ(loop_->ReplayDue().claimed, 0);
}

TEST_F(HostOpsLoopTest, RetentionAdviceIsAuditedAtMostOnceAnHour) {
  for (uint64_t i = 0; i < kMinRetentionSamples; ++i)
    advisor_.Observe(2 * 3'600'000);  // 2 h gaps > 1 h
  loop_->Tick();
  ASSERT_EQ(Events("retention_advice").size(), 1u);
  EXPECT_EQ(Events("retention_advice")[0]["configured_ms"], 3'600'000);
  EXPECT_GE(Events("retention_advice")[0]["advised_ms"].get<int64_t>(), 2 * 3'600'000);
  clock_.Advance(kGaugePeriodMs);
  loop_->Tick();
  EXPECT_EQ(Events("retention_advice").size(), 1u);
  clock_.Advance(kAdviceIntervalMs);
  loop_->Tick();
  EXPECT_EQ(Events("retention_advice").size(), 2u);
}

TEST_F(HostOpsLoopTest, PausesAreReReadEveryRefreshPeriodWithoutANewGeneration) {
  loop_->Tick();
  // Another host paused the capability on an ERP 401: a store write that bumps no generation.
  ASSERT_TRUE(dlq_->Pause(kOpsPlugin, kOpsFulfil, "ERP answered 401", "host").ok());
  clock_.Advance(kPauseRefreshMs - 1);
  loop_->Tick();
  EXPECT_FALSE(pauses_.IsPaused(kOpsPlugin, kOpsFulfil));
  clock_.Advance(1);
  loop_->Tick();
  EXPECT_TRUE(pauses_.IsPaused(kOpsPlugin, kOpsFulfil));
  ASSERT_EQ(Events("capability_pauses").size(), 1u);
  EXPECT_EQ(Events("capability_pauses")[0]["paused"][0]["capability"], kOpsFulfil);
  EXPECT_TRUE(Events("operations_generation").empty());
  const nlohmann::json status = loop_->StatusJson();
  EXPECT_EQ(status["ticks"], 3);
  EXPECT_EQ(status["pauses"]["refreshed_ms"], clock_.NowMillis());
  EXPECT_EQ(status["pauses"]["paused"][0]["plugin"], kOpsPlugin);
  EXPECT_EQ(status["workers"], nlohmann::json::object()) << "no worker before StartWorkers";
}

// The loop never waits on the ERP: with its outbox worker held inside a send the ERP does not
// answer, each Tick still returns, counts itself and re-reads a pause an operator set meanwhile.
TEST_F(HostOpsLoopTest, TheLoopKeepsTickingAndReReadingPausesWhileTheOutboxWorkerWaitsOnTheErp) {
  ASSERT_NO_FATAL_FAILURE(AppendDueRow(Sha256Hex("event-hung")));
  sender_.Close();
  ASSERT_TRUE(loop_->StartWorkers().ok());
  EXPECT_THAT(loop_->StartWorkers(), HasReason(Reason::kInternal)) << "started once";
  loop_->Tick();  // posts the outbox worker, which sends the row and waits
  ASSERT_TRUE(sender_.WaitEntered(1));
  nlohmann::json status = loop_->StatusJson();
  EXPECT_EQ(status["workers"]["outbox"]["busy"], true);
  const int64_t busy_since = status["workers"]["outbox"]["busy_since_ms"];

  ASSERT_TRUE(dlq_->Pause(kOpsPlugin, kOpsFulfil, "operator", "cli:test").ok());
  ASSERT_TRUE(idem_->BumpGeneration().ok());  // as `clawguard capability pause` does
  for (int i = 0; i < 4; ++i) {
    clock_.Advance(kOpsLoopPeriodMs);
    loop_->Tick();
  }
  EXPECT_TRUE(pauses_.IsPaused(kOpsPlugin, kOpsFulfil));
  status = loop_->StatusJson();
  EXPECT_EQ(status["ticks"], 5);
  EXPECT_EQ(status["last_tick_ms"], clock_.NowMillis());
  EXPECT_EQ(status["workers"]["outbox"]["busy"], true) << "still in the same send";
  EXPECT_EQ(status["workers"]["outbox"]["busy_since_ms"], busy_since);
  EXPECT_GE(status["workers"]["outbox"]["coalesced"].get<int64_t>(), 1)
      << "one request queued, the rest folded";
  EXPECT_EQ(Events("capability_pauses").size(), 1u);

  sender_.Open();  // the send ends without an answer; the row waits for its backoff
  EXPECT_EQ(loop_->StopWorkers(std::chrono::seconds(30)), 0);
  EXPECT_EQ(loop_->StatusJson()["workers"]["outbox"]["abandoned"], false);
}

TEST_F(HostOpsLoopTest, StopWorkersAbandonsAWorkerStillWaitingOnTheErpPastTheBound) {
  ASSERT_NO_FATAL_FAILURE(AppendDueRow(Sha256Hex("event-abandoned")));
  sender_.Close();
  ASSERT_TRUE(loop_->StartWorkers().ok());
  loop_->Tick();
  ASSERT_TRUE(sender_.WaitEntered(1));
  EXPECT_EQ(loop_->StopWorkers(std::chrono::milliseconds(20)), 1);
  EXPECT_EQ(loop_->StatusJson()["workers"]["outbox"]["abandoned"], true);
  // The row is still owned by the abandoned send's claim: no other send may take it meanwhile.
  auto row = outbox_->Get(Sha256Hex("event-abandoned"), 0);
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->state, OutboxState::kSent);
  EXPECT_FALSE((*row)->claimed_by.empty());
  EXPECT_GT((*row)->next_attempt_ms, clock_.NowMillis());
  // The send ends; the detached thread finishes its pass on its own (the test waits for it before
  // tearing down what the pass uses).
  sender_.Open();
  const auto guard = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (loop_->StatusJson()["workers"]["outbox"]["busy"] == true &&
         std::chrono::steady_clock::now() < guard) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(loop_->StatusJson()["workers"]["outbox"]["busy"], false);
}

}  // namespace
}  // namespace clawguard::host
