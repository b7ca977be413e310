// erp_gateway_test.cpp — ErpGateway and RetryWorker against the real test ERP over loopback.
// Over 500 lines on purpose: one fixture (the test ERP, an outbox and a gateway) for the gateway
// and the retry worker, which share the outbox rows they are checked against.
#include "host/erp/erp_gateway.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "clawguard/limits.h"
#include "host/erp/idempotency_key.h"
#include "host/guard/breaker.h"
#include "host/guard/capability_pauses.h"
#include "host/observe/host_metrics.h"
#include "plugins/erp_harness.h"
#include "support/erp_metric_line.h"
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard::host {
namespace {

using testing::ErpHarness;

using testing::kPlugin;
constexpr const char* kFulfilCap = "POST /orders/{id}/fulfil";

// CountingOutbox forwards to another outbox and counts the writes of the send path, so a test can
// say how many store writes one erp_call cost.
class CountingOutbox final : public Outbox {
 public:
  explicit CountingOutbox(Outbox& inner) : inner_(inner) {}

  Result<OutboxAppend> Append(const OutboxRow& row) override {
    ++appends;
    last_appended_state = row.state;
    last_appended_next_attempt_ms = row.next_attempt_ms;
    return inner_.Append(row);
  }
  Result<std::optional<OutboxRow>> Get(const std::string& event_key, int64_t call_index) override {
    return inner_.Get(event_key, call_index);
  }
  Result<std::optional<OutboxRow>> Claim(const std::string& event_key, int64_t call_index,
                                         int64_t now_ms, const std::string& owner,
                                         int64_t until_ms) override {
    ++claimed;
    return inner_.Claim(event_key, call_index, now_ms, owner, until_ms);
  }
  Status MarkAnswered(const std::string& event_key, int64_t call_index, const std::string& owner,
                      int reply_status, const std::string& reply_body) override {
    ++marked_answered;
    return inner_.MarkAnswered(event_key, call_index, owner, reply_status, reply_body);
  }
  Status Release(const std::string& event_key, int64_t call_index, const std::string& owner,
                 int64_t next_attempt_ms) override {
    ++released;
    return inner_.Release(event_key, call_index, owner, next_attempt_ms);
  }
  Status MarkDead(const std::string& event_key, int64_t call_index,
                  const std::string& owner) override {
    ++marked_dead;
    return inner_.MarkDead(event_key, call_index, owner);
  }
  Status Defer(const std::string& event_key, int64_t call_index, int64_t now_ms,
               int64_t next_attempt_ms) override {
    ++deferred;
    return inner_.Defer(event_key, call_index, now_ms, next_attempt_ms);
  }
  Result<bool> Revive(const std::string& event_key, int64_t call_index, int64_t now_ms) override {
    return inner_.Revive(event_key, call_index, now_ms);
  }
  Result<int64_t> ConfirmHeld(const std::string& event_key, int64_t now_ms) override {
    return inner_.ConfirmHeld(event_key, now_ms);
  }
  Result<std::vector<OutboxRow>> ListEvent(const std::string& event_key) override {
    return inner_.ListEvent(event_key);
  }
  Result<std::vector<OutboxRow>> DuePending(int64_t now_ms, int64_t limit) override {
    return inner_.DuePending(now_ms, limit);
  }

  std::atomic<int> appends{0}, claimed{0}, marked_answered{0}, released{0}, marked_dead{0},
      deferred{0};
  std::atomic<OutboxState> last_appended_state{OutboxState::kPending};
  std::atomic<int64_t> last_appended_next_attempt_ms{0};

 private:
  Outbox& inner_;
};

class ErpGatewayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(h_.Init(attempts_));
    auto caps = CapabilitySet::Create({"POST /orders/{id}/fulfil", "GET /orders/{id}"});
    ASSERT_TRUE(caps.ok());
    caps_ = std::make_unique<CapabilitySet>(std::move(caps).value());
  }
  std::unique_ptr<ErpGateway> Gateway(int64_t token, int level = 2) {
    auto g = ErpGateway::Create(h_.env, *caps_, ErpDelivery{kPlugin, key_, token, level});
    CLAWGUARD_CHECK(g.ok());
    return std::move(g).value();
  }
  int Call(ErpGateway& g, const char* method, const char* path, std::string_view body,
           std::string* reply_out) {
    cg_bytes reply{nullptr, 0};
    const int r = g.Call(method, path, body, &reply);
    if (reply_out != nullptr) reply_out->assign(reply.data == nullptr ? "" : reply.data, reply.len);
    return r;
  }

  int attempts_ = 8;
  ErpHarness h_;
  std::unique_ptr<CapabilitySet> caps_;
  const std::string key_ = Sha256Hex("event-1");
};

TEST_F(ErpGatewayTest, DeniesUndeclaredCallsAndPathTricksWithoutSending) {
  auto g = Gateway(h_.Claim(key_));
  const std::vector<std::pair<const char*, const char*>> calls = {
      {"POST", "/inventory/adjust"},
      {"POST", "/orders/1/../../inventory/adjust"},
      {"POST", "/orders/..%2Finventory%2Fadjust"},
      {"POST", "/orders/1/fulfil?then=/inventory/adjust"},
      {"POST", "/orders/1/fulfil#x"},
      {"POST", "//orders/1/fulfil"},
      {"POST", "/orders/1/fulfil/"},
      {"POST", "/orders/./fulfil"},
      {"post", "/orders/1/fulfil"},
      {"DELETE", "/orders/1"},
  };
  for (const auto& [method, path] : calls) {
    EXPECT_EQ(Call(*g, method, path, R"({"sku":"ALL","qty":-1000})", nullptr), CG_DENIED)
        << method << " " << path;
  }
  EXPECT_EQ(h_.erp().requests_total(), 0u);
  EXPECT_EQ(g->outcome().denied, static_cast<int64_t>(calls.size()));
  EXPECT_EQ(g->outcome().calls, 0);
  EXPECT_EQ(h_.AuditCount("\"erp_call_denied\""), calls.size());
  auto row = h_.outbox().Get(key_, 0);
  ASSERT_TRUE(row.ok());
  EXPECT_FALSE(row->has_value());  // never written
}

TEST_F(ErpGatewayTest, SendsDeclaredCallOnceWithDerivedKeyAndCredentials) {
  auto g = Gateway(h_.Claim(key_));
  std::string reply;
  EXPECT_EQ(Call(*g, "POST", "/orders/42/fulfil", R"({"order":42})", &reply), 200);
  EXPECT_EQ(reply, R"({"ok":true})");
  const auto reqs = h_.erp().requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].path, "/orders/42/fulfil");
  EXPECT_EQ(reqs[0].headers.Get("Idempotency-Key").value_or(""), ErpCallKey(key_, kPlugin, 0));
  EXPECT_EQ(reqs[0].headers.Get("Authorization").value_or(""), testing::kErpAuth);
  auto row = h_.outbox().Get(key_, 0);
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->state, OutboxState::kAnswered);
  EXPECT_EQ((*row)->reply_status, 200);
  // No audit line carries the ERP credentials.
  for (const auto& line : h_.audit_lines()) EXPECT_EQ(line.find("erp-secret"), std::string::npos);
}

TEST_F(ErpGatewayTest, RerunWithSameSequenceIsAnsweredFromOutbox) {
  testing::ErpAnswer missing;
  missing.status = 404;
  missing.body = R"({"error":"no such order"})";
  h_.erp().SetAnswer("/orders/7", missing);
  const int64_t t1 = h_.Claim(key_);
  auto first = Gateway(t1);
  std::string a, b;
  EXPECT_EQ(Call(*first, "POST", "/orders/7/fulfil", "{}", &a), 200);
  EXPECT_EQ(Call(*first, "GET", "/orders/7", "", &b), 404);
  ASSERT_EQ(h_.erp().requests_total(), 2u);

  auto again = Gateway(h_.Retry(key_, t1));
  std::string a2, b2;
  EXPECT_EQ(Call(*again, "POST", "/orders/7/fulfil", "{}", &a2), 200);
  EXPECT_EQ(Call(*again, "GET", "/orders/7", "", &b2), 404);
  EXPECT_EQ(a2, a);
  EXPECT_EQ(b2, R"({"error":"no such order"})");
  EXPECT_EQ(h_.erp().requests_total(), 2u);  // nothing sent the second time
}

TEST_F(ErpGatewayTest, RerunWithOtherCallOrderIsMismatchAndDeadLettered) {
  const int64_t t1 = h_.Claim(key_);
  auto first = Gateway(t1);
  EXPECT_EQ(Call(*first, "POST", "/orders/7/fulfil", "{}", nullptr), 200);
  EXPECT_EQ(Call(*first, "GET", "/orders/7", "", nullptr), 200);

  auto again = Gateway(h_.Retry(key_, t1));
  EXPECT_EQ(Call(*again, "GET", "/orders/7", "", nullptr), CG_MISMATCH);
  EXPECT_EQ(Call(*again, "POST", "/orders/7/fulfil", "{}", nullptr), CG_MISMATCH);  // latched
  EXPECT_TRUE(again->outcome().dead_lettered);
  EXPECT_EQ(again->outcome().dead_letter_reason, "mismatch");
  auto row = h_.outbox().Get(key_, 0);
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->state, OutboxState::kDead);
  EXPECT_EQ(h_.erp().requests_total(), 2u);
  EXPECT_EQ(h_.AuditCount("\"erp_call_mismatch\""), 1u);
}

TEST_F(ErpGatewayTest, SameCallWithOtherBodyIsMismatch) {
  const int64_t t1 = h_.Claim(key_);
  auto first = Gateway(t1);
  EXPECT_EQ(Call(*first, "POST", "/orders/7/fulfil", R"({"qty":1})", nullptr), 200);
  auto again = Gateway(h_.Retry(key_, t1));
  EXPECT_EQ(Call(*again, "POST", "/orders/7/fulfil", R"({"qty":2})", nullptr), CG_MISMATCH);
  EXPECT_EQ(h_.erp().requests_total(), 1u);
}

// A plugin looping on a refused call writes at most kMaxDeniedAuditsPerDelivery audit lines per
// delivery and then one dropped line; a path or method longer than any capability is shown cut.
// Every refusal is still counted and answered CG_DENIED.
TEST_F(ErpGatewayTest, RefusalsAreAuditedUpToABoundPerDeliveryAndCutToTheLimits) {
  auto g = Gateway(h_.Claim(key_));
  const std::string long_path = "/" + std::string(64 * 1024, 'p');
  const std::string long_method(4096, 'M');
  const int attempts = kMaxDeniedAuditsPerDelivery + 50;
  for (int i = 0; i < attempts; ++i) {
    EXPECT_EQ(Call(*g, long_method.c_str(), long_path.c_str(), "{}", nullptr), CG_DENIED);
  }
  EXPECT_EQ(g->outcome().denied, attempts);
  EXPECT_EQ(h_.erp().requests_total(), 0u);
  EXPECT_EQ(h_.AuditCount("\"event\":\"erp_call_denied\""),
            static_cast<size_t>(kMaxDeniedAuditsPerDelivery));
  EXPECT_EQ(h_.AuditCount("\"event\":\"erp_call_denied_dropped\""), 1u);
  EXPECT_EQ(h_.AuditCount(std::string(limits::kMaxErpPathLength, 'p')), 0u);  // "/" + 2047 'p'
  EXPECT_EQ(h_.AuditCount(std::string(limits::kMaxErpMethodLength + 1, 'M')), 0u);
  EXPECT_EQ(h_.AuditCount("a path of 65537 bytes"),
            static_cast<size_t>(kMaxDeniedAuditsPerDelivery));
}

// A delivery's calls are bounded (each is an outbox row): past kMaxErpCallsPerDelivery they are
// refused without a row or a send.
TEST_F(ErpGatewayTest, CallsPastThePerDeliveryBoundAreRefused) {
  auto g = Gateway(h_.Claim(key_));
  for (int64_t i = 0; i < kMaxErpCallsPerDelivery; ++i) {
    ASSERT_EQ(Call(*g, "GET", "/orders/1", "", nullptr), 200) << i;
  }
  EXPECT_EQ(Call(*g, "GET", "/orders/1", "", nullptr), CG_DENIED);
  EXPECT_EQ(g->outcome().calls, kMaxErpCallsPerDelivery);
  EXPECT_EQ(h_.erp().requests_total(), static_cast<size_t>(kMaxErpCallsPerDelivery));
  EXPECT_EQ(h_.AuditCount("ERP calls in one delivery"), 1u);
}

// One delivery's request bodies together are bounded: each is stored before it is sent, so 1,000
// calls reusing one 1 MiB buffer would store a GiB per event.
TEST_F(ErpGatewayTest, BodiesPastThePerDeliveryBudgetAreRefused) {
  auto g = Gateway(h_.Claim(key_));
  const std::string full(limits::kMaxErpRequestBody, 'x');
  for (uint64_t i = 0; i < kMaxErpBodyBytesPerDelivery / limits::kMaxErpRequestBody; ++i) {
    ASSERT_NE(Call(*g, "POST", "/orders/7/fulfil", full, nullptr), CG_DENIED) << i;
  }
  EXPECT_EQ(Call(*g, "POST", "/orders/7/fulfil", "x", nullptr), CG_DENIED);
  EXPECT_EQ(h_.AuditCount("bytes of ERP request bodies in one delivery"), 1u);
  EXPECT_EQ(h_.erp().requests_total(), 8u);
  EXPECT_EQ(Call(*g, "GET", "/orders/1", "", nullptr), 200);  // a call without a body still goes
}

// A body over limits::kMaxErpRequestBody is refused by its length: nothing written or sent, the
// call index not used, audited.
TEST_F(ErpGatewayTest, ABodyOverTheLimitIsDeniedByItsLength) {
  auto g = Gateway(h_.Claim(key_));
  const std::string big(limits::kMaxErpRequestBody + 1, 'x');
  EXPECT_EQ(Call(*g, "POST", "/orders/7/fulfil", big, nullptr), CG_DENIED);
  EXPECT_EQ(g->outcome().calls, 0);
  EXPECT_EQ(g->outcome().pending_in_ms, 0);
  EXPECT_EQ(h_.erp().requests_total(), 0u);
  EXPECT_EQ(h_.AuditCount("erp_call_denied"), 1u);
  const std::string fits(limits::kMaxErpRequestBody, 'x');
  EXPECT_NE(Call(*g, "POST", "/orders/7/fulfil", fits, nullptr),
            CG_DENIED);  // sent, whatever the ERP says
  EXPECT_EQ(h_.erp().requests_total(), 1u);
}

TEST_F(ErpGatewayTest, FencedWriterIsRefusedAndSendsNothing) {
  const int64_t stale = h_.Claim(key_);
  const int64_t fresh = h_.Retry(key_, stale);
  ASSERT_GT(fresh, stale);
  auto g = Gateway(stale);
  EXPECT_EQ(Call(*g, "POST", "/orders/7/fulfil", "{}", nullptr), CG_FENCED);
  EXPECT_EQ(Call(*g, "GET", "/orders/7", "", nullptr), CG_FENCED);
  EXPECT_TRUE(g->outcome().fenced);
  EXPECT_EQ(h_.erp().requests_total(), 0u);
}

TEST_F(ErpGatewayTest, ErpDownIsUnavailableThenWorkerSendsOnceWithSameKey) {
  h_.sender().down = true;
  const int64_t t1 = h_.Claim(key_);
  auto g = Gateway(t1);
  EXPECT_EQ(Call(*g, "POST", "/orders/9/fulfil", "{}", nullptr), CG_UNAVAILABLE);
  EXPECT_GT(g->outcome().pending_in_ms, 0);  // the worker owns the row now
  EXPECT_EQ(h_.erp().requests_total(), 0u);
  auto row = h_.outbox().Get(key_, 0);
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->state, OutboxState::kSent);
  EXPECT_EQ((*row)->attempts, 1);

  // A platform retry meanwhile: the call is pending, the plugin is told to stop.
  auto again = Gateway(h_.Retry(key_, t1));
  EXPECT_EQ(Call(*again, "POST", "/orders/9/fulfil", "{}", nullptr), CG_DEFERRED);
  EXPECT_EQ(again->outcome().pending_in_ms, (*row)->next_attempt_ms - testing::kT0);

  auto worker = RetryWorker::Create(h_.env);
  ASSERT_TRUE(worker.ok());
  auto early = (*worker)->DrainPending(testing::kT0);  // not due yet (backoff)
  ASSERT_TRUE(early.ok());
  EXPECT_EQ(early->answered + early->retry_later + early->dead, 0);

  h_.sender().down = false;  // the ERP is back
  auto drained = (*worker)->DrainPending(testing::kT0 + 3'600'000);
  ASSERT_TRUE(drained.ok());
  EXPECT_EQ(drained->answered, 1);
  const auto reqs = h_.erp().requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].headers.Get("Idempotency-Key").value_or(""), ErpCallKey(key_, kPlugin, 0));
  auto after = (*worker)->DrainPending(testing::kT0 + 7'200'000);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->answered, 0);
  EXPECT_EQ(h_.erp().requests_total(), 1u);

  // The next retry of the delivery gets the stored answer.
  auto third = Gateway(h_.Retry(key_, 2));
  std::string reply;
  EXPECT_EQ(Call(*third, "POST", "/orders/9/fulfil", "{}", &reply), 200);
  EXPECT_EQ(reply, R"({"ok":true})");
  EXPECT_EQ(h_.erp().requests_total(), 1u);
}

TEST_F(ErpGatewayTest, RetriesSpentMarkTheRowDead) {
  ErpHarness h;
  ASSERT_NO_FATAL_FAILURE(h.Init(/*attempts=*/2));
  h.sender().down = true;
  auto g = ErpGateway::Create(h.env, *caps_, ErpDelivery{kPlugin, key_, h.Claim(key_), 2});
  ASSERT_TRUE(g.ok());
  cg_bytes reply;
  EXPECT_EQ((*g)->Call("POST", "/orders/9/fulfil", "{}", &reply), CG_UNAVAILABLE);
  auto worker = RetryWorker::Create(h.env);
  ASSERT_TRUE(worker.ok());
  auto drained = (*worker)->DrainPending(testing::kT0 + 3'600'000);
  ASSERT_TRUE(drained.ok());
  EXPECT_EQ(drained->dead, 1);
  auto row = h.outbox().Get(key_, 0);
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->state, OutboxState::kDead);
  EXPECT_EQ(h.AuditCount("\"erp_call_dead\""), 1u);
}

TEST_F(ErpGatewayTest, Level3HoldsIntentsUntilConfirmed) {
  auto g = Gateway(h_.Claim(key_, 3), /*level=*/3);
  EXPECT_EQ(Call(*g, "POST", "/orders/5/fulfil", "{}", nullptr), CG_HELD);
  EXPECT_EQ(Call(*g, "GET", "/orders/5", "", nullptr), CG_HELD);
  EXPECT_EQ(Call(*g, "POST", "/inventory/adjust", "{}", nullptr), CG_DENIED);  // still checked
  EXPECT_EQ(g->outcome().held, 2);
  auto worker = RetryWorker::Create(h_.env);
  ASSERT_TRUE(worker.ok());
  auto idle = (*worker)->DrainPending(testing::kT0 + 86'400'000);
  ASSERT_TRUE(idle.ok());
  EXPECT_EQ(idle->answered, 0);
  EXPECT_EQ(h_.erp().requests_total(), 0u);

  auto confirmed = (*worker)->Confirm(key_);
  ASSERT_TRUE(confirmed.ok());
  EXPECT_EQ(*confirmed, 2);
  auto sent = (*worker)->DrainPending(testing::kT0);
  ASSERT_TRUE(sent.ok());
  EXPECT_EQ(sent->answered, 2);
  EXPECT_EQ(h_.erp().requests_total(), 2u);
  EXPECT_EQ(h_.erp().effects_for_key(ErpCallKey(key_, kPlugin, 1)), 1u);
}

TEST_F(ErpGatewayTest, WithoutDlqAnUnauthorizedCallIsRetriedOnTheBackoffThenDead) {
  // The failure-handling parts of ErpEnv (dlq, breaker, pauses, metrics) are optional: without
  // them a 401 cannot pause anything, so the row follows the transient path (but still alerts).
  ErpHarness h;
  ASSERT_NO_FATAL_FAILURE(h.Init(/*attempts=*/2));
  testing::ErpAnswer denied;
  denied.status = 401;
  h.erp().SetAnswer("/orders/4/fulfil", denied);
  auto g = ErpGateway::Create(h.env, *caps_, ErpDelivery{kPlugin, key_, h.Claim(key_), 2});
  ASSERT_TRUE(g.ok());
  cg_bytes reply;
  EXPECT_EQ((*g)->Call("POST", "/orders/4/fulfil", "{}", &reply), CG_UNAVAILABLE);
  auto row = h.outbox().Get(key_, 0);
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->state, OutboxState::kSent);
  EXPECT_EQ((*row)->next_attempt_ms, testing::kT0 + 1'000);  // the first backoff, no jitter
  auto worker = RetryWorker::Create(h.env);
  ASSERT_TRUE(worker.ok());
  auto drained = (*worker)->DrainPending(testing::kT0 + 1'000);
  ASSERT_TRUE(drained.ok());
  EXPECT_EQ(drained->dead, 1);
  EXPECT_EQ((*h.outbox().Get(key_, 0))->state, OutboxState::kDead);
  EXPECT_EQ(h.AuditCount("\"erp_auth_failed\""), 2u);
  EXPECT_EQ(h.erp().requests_total(), 2u);
}

// ErpGatewayWritesTest counts the outbox writes of the gateway's first send and the worker's
// resends, with the optional pause mirror, endpoint breaker and metrics wired in.
class ErpGatewayWritesTest : public ErpGatewayTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(ErpGatewayTest::SetUp());
    counting_ = std::make_unique<CountingOutbox>(h_.outbox());
    auto breaker = EndpointBreaker::Create(
        BreakerSpec{1, std::chrono::milliseconds(5'000), std::chrono::milliseconds(30'000), 1},
        h_.clock);
    ASSERT_TRUE(breaker.ok()) << breaker.error().ToString();
    breaker_ = std::move(breaker).value();
    auto metrics =
        HostMetrics::Create(MetricsNames{{}, {kPlugin}, {kFulfilCap, "GET /orders/{id}"}});
    ASSERT_TRUE(metrics.ok()) << metrics.error().ToString();
    metrics_ = std::move(metrics).value();
    h_.env.outbox = counting_.get();
    h_.env.pauses = &pauses_;
    h_.env.endpoint_breaker = breaker_.get();
    h_.env.metrics = metrics_.get();
    // The worker finds a row's plugin and endpoint through the loaded plugins.
    h_.env.plugins = std::make_shared<const std::vector<ErpPluginCaps>>(
        std::vector<ErpPluginCaps>{ErpPluginCaps{kPlugin, *caps_, "1.4.2"}});
  }
  // MetricCount is erp_calls_total{endpoint=|endpoint|,outcome=|outcome|}, −1 when not found.
  double MetricCount(std::string_view endpoint, std::string_view outcome) const {
    const std::string line =
        clawguard::testing::ErpCallsLine(metrics_->RenderPrometheus(), endpoint, outcome);
    return line.empty() ? -1 : std::stod(line.substr(line.rfind(' ') + 1));
  }
  OutboxRow Row(int64_t i = 0) {
    auto r = h_.outbox().Get(key_, i);
    CLAWGUARD_CHECK(r.ok() && r->has_value());
    return **r;
  }
  // OpenBreaker makes the fulfil endpoint's breaker open (one failure opens it) for 30 s.
  void OpenBreaker() {
    const EndpointBreaker::Permit p = breaker_->Acquire(kFulfilCap);
    ASSERT_TRUE(p.allowed);
    ASSERT_TRUE(breaker_->RecordFailure(kFulfilCap, p.probe));
    ASSERT_EQ(breaker_->StateOf(kFulfilCap), EndpointBreaker::State::kOpen);
  }

  std::unique_ptr<CountingOutbox> counting_;
  CapabilityPauses pauses_;
  std::unique_ptr<EndpointBreaker> breaker_;
  std::unique_ptr<HostMetrics> metrics_;
};

TEST_F(ErpGatewayWritesTest, FirstSendIsOneAppendAlreadySentAndClaimedAndNoClaimWrite) {
  auto g = Gateway(h_.Claim(key_));
  std::string reply;
  EXPECT_EQ(Call(*g, "POST", "/orders/42/fulfil", R"({"order":42})", &reply), 200);
  EXPECT_EQ(reply, R"({"ok":true})");
  EXPECT_EQ(counting_->appends.load(), 1);
  EXPECT_EQ(counting_->last_appended_state.load(), OutboxState::kSent);
  // Owned by the send until erp.timeout + the margin: no worker sends it meanwhile.
  EXPECT_EQ(counting_->last_appended_next_attempt_ms.load(), testing::kT0 + SendClaimMs(h_.env));
  EXPECT_EQ(counting_->claimed.load(), 0);
  EXPECT_EQ(counting_->marked_answered.load(), 1);
  EXPECT_EQ(counting_->deferred.load(), 0);
  EXPECT_EQ(counting_->marked_dead.load(), 0);
  const OutboxRow row = Row(0);
  EXPECT_EQ(row.state, OutboxState::kAnswered);
  EXPECT_EQ(row.attempts, 1);
  EXPECT_EQ(row.reply_status, 200);
  EXPECT_EQ(h_.erp().requests_total(), 1u);
  EXPECT_EQ(h_.erp().effects_for_key(ErpCallKey(key_, kPlugin, 0)), 1u);
  EXPECT_EQ(MetricCount(kFulfilCap, "success"), 1);
  EXPECT_EQ(breaker_->StateOf(kFulfilCap), EndpointBreaker::State::kClosed);

  // The second call of the delivery costs the same: one append, one answer.
  EXPECT_EQ(Call(*g, "GET", "/orders/42", "", nullptr), 200);
  EXPECT_EQ(counting_->appends.load(), 2);
  EXPECT_EQ(counting_->claimed.load(), 0);
  EXPECT_EQ(counting_->marked_answered.load(), 2);
  EXPECT_EQ(Row(1).attempts, 1);
  EXPECT_EQ(Row(1).state, OutboxState::kAnswered);
}

TEST_F(ErpGatewayWritesTest, PausedCapabilityAppendsThePendingRowDeferredAndSendsNothing) {
  pauses_.MarkPaused(kPlugin, kFulfilCap);
  auto g = Gateway(h_.Claim(key_));
  EXPECT_EQ(Call(*g, "POST", "/orders/42/fulfil", "{}", nullptr), CG_UNAVAILABLE);
  EXPECT_EQ(h_.erp().requests_total(), 0u);
  EXPECT_EQ(counting_->appends.load(), 1);
  EXPECT_EQ(counting_->claimed.load(), 0);
  EXPECT_EQ(counting_->deferred.load(), 0);  // appended with the deferral: no second write
  const OutboxRow row = Row(0);
  EXPECT_EQ(row.state, OutboxState::kPending);
  EXPECT_EQ(row.attempts, 0);
  EXPECT_EQ(row.next_attempt_ms, testing::kT0 + kPausedRecheckMs);
  EXPECT_EQ(MetricCount(kFulfilCap, "paused"), 1);
  EXPECT_EQ(MetricCount(kFulfilCap, "success"), 0);

  // The worker does not see it before the recheck time, and while the pause lasts it defers it.
  auto worker = RetryWorker::Create(h_.env);
  ASSERT_TRUE(worker.ok());
  EXPECT_TRUE(h_.outbox().DuePending(testing::kT0 + kPausedRecheckMs - 1, 10)->empty());
  auto held = (*worker)->DrainPending(testing::kT0 + kPausedRecheckMs);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(held->not_sent, 1);
  EXPECT_EQ(h_.erp().requests_total(), 0u);
  EXPECT_EQ(Row(0).attempts, 0);
  EXPECT_EQ(MetricCount(kFulfilCap, "paused"), 2);
}

TEST_F(ErpGatewayWritesTest, OpenBreakerAppendsThePendingRowAtTheCooldownThenTheWorkerSendsIt) {
  ASSERT_NO_FATAL_FAILURE(OpenBreaker());
  auto g = Gateway(h_.Claim(key_));
  EXPECT_EQ(Call(*g, "POST", "/orders/42/fulfil", "{}", nullptr), CG_UNAVAILABLE);
  EXPECT_EQ(h_.erp().requests_total(), 0u);
  EXPECT_EQ(counting_->appends.load(), 1);
  EXPECT_EQ(counting_->last_appended_state.load(), OutboxState::kPending);
  EXPECT_EQ(counting_->claimed.load(), 0);
  EXPECT_EQ(counting_->deferred.load(), 0);
  OutboxRow row = Row(0);
  EXPECT_EQ(row.state, OutboxState::kPending);
  EXPECT_EQ(row.attempts, 0);
  EXPECT_EQ(row.next_attempt_ms, testing::kT0 + 30'000);  // when the breaker half-opens
  EXPECT_EQ(MetricCount(kFulfilCap, "breaker_open"), 1);

  // After the cool-down the worker's probe claims it (attempts 1), sends it and closes the breaker.
  auto worker = RetryWorker::Create(h_.env);
  ASSERT_TRUE(worker.ok());
  auto early = (*worker)->DrainPending(testing::kT0 + 29'999);
  ASSERT_TRUE(early.ok());
  EXPECT_EQ(early->answered + early->not_sent, 0);
  h_.clock.Advance(30'000);
  auto drained = (*worker)->DrainPending(h_.clock.NowMillis());
  ASSERT_TRUE(drained.ok());
  EXPECT_EQ(drained->answered, 1);
  EXPECT_EQ(counting_->claimed.load(), 1);
  row = Row(0);
  EXPECT_EQ(row.state, OutboxState::kAnswered);
  EXPECT_EQ(row.attempts, 1);
  EXPECT_EQ(breaker_->StateOf(kFulfilCap), EndpointBreaker::State::kClosed);
  EXPECT_EQ(h_.erp().effects_for_key(ErpCallKey(key_, kPlugin, 0)), 1u);
}

TEST_F(ErpGatewayWritesTest, ExistingRowIsAnsweredFromTheOutboxEvenWhenPausedAndNothingIsCounted) {
  const int64_t t1 = h_.Claim(key_);
  auto first = Gateway(t1);
  EXPECT_EQ(Call(*first, "POST", "/orders/42/fulfil", "{}", nullptr), 200);
  pauses_.MarkPaused(kPlugin, kFulfilCap);
  auto again = Gateway(h_.Retry(key_, t1));
  std::string reply;
  EXPECT_EQ(Call(*again, "POST", "/orders/42/fulfil", "{}", &reply), 200);  // kExisting: as before
  EXPECT_EQ(reply, R"({"ok":true})");
  EXPECT_EQ(h_.erp().requests_total(), 1u);
  EXPECT_EQ(MetricCount(kFulfilCap, "paused"), 0);
  EXPECT_EQ(counting_->claimed.load(), 0);
  EXPECT_EQ(counting_->deferred.load(), 0);
  EXPECT_EQ(Row(0).attempts, 1);
}

TEST_F(ErpGatewayWritesTest, TheRetryWorkerClaimsTheRowBeforeEachResend) {
  h_.sender().down = true;
  auto g = Gateway(h_.Claim(key_));
  EXPECT_EQ(Call(*g, "POST", "/orders/9/fulfil", "{}", nullptr), CG_UNAVAILABLE);
  EXPECT_EQ(counting_->appends.load(), 1);
  EXPECT_EQ(counting_->claimed.load(), 0);
  EXPECT_EQ(counting_->released.load(), 1);  // no answer: released to wait its backoff
  OutboxRow row = Row(0);
  EXPECT_EQ(row.state, OutboxState::kSent);
  EXPECT_EQ(row.attempts, 1);
  EXPECT_EQ(row.claimed_by, "");
  EXPECT_EQ(row.next_attempt_ms, testing::kT0 + 1'000);
  EXPECT_EQ(MetricCount(kFulfilCap, "transport_error"), 1);

  // That failure opened the breaker (one failure opens this one): the resend is its probe, after
  // the cool-down.
  EXPECT_EQ(breaker_->StateOf(kFulfilCap), EndpointBreaker::State::kOpen);
  h_.sender().down = false;
  auto worker = RetryWorker::Create(h_.env);
  ASSERT_TRUE(worker.ok());
  h_.clock.Advance(30'000);
  auto drained = (*worker)->DrainPending(h_.clock.NowMillis());
  ASSERT_TRUE(drained.ok());
  EXPECT_EQ(drained->answered, 1);
  EXPECT_EQ(counting_->claimed.load(), 1);
  EXPECT_EQ(counting_->marked_answered.load(), 1);
  row = Row(0);
  EXPECT_EQ(row.state, OutboxState::kAnswered);
  EXPECT_EQ(row.attempts, 2);
  EXPECT_EQ(breaker_->StateOf(kFulfilCap), EndpointBreaker::State::kClosed);
  const auto reqs = h_.erp().requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].headers.Get("Idempotency-Key").value_or(""), ErpCallKey(key_, kPlugin, 0));
}

TEST_F(ErpGatewayWritesTest, ASendInFlightOwnsItsRowSoNoWorkerSendsItAgain) {
  // The ERP answers later than the retry base (1 s here) but within erp.timeout (3 s): while the
  // first send waits, the worker runs past the time its first backoff would have made the row
  // due, and a second worker (another host) tries the row directly.
  testing::ErpAnswer slow;
  slow.delay = std::chrono::milliseconds(1'500);
  h_.erp().SetAnswer("/orders/8/fulfil", slow);
  auto g = Gateway(h_.Claim(key_));
  std::atomic<int> status{0};
  std::thread delivery([&] { status = Call(*g, "POST", "/orders/8/fulfil", "{}", nullptr); });
  while (h_.erp().requests_total() == 0) std::this_thread::yield();  // the first send is at the ERP
  auto worker = RetryWorker::Create(h_.env);
  ASSERT_TRUE(worker.ok());
  for (int64_t t : {int64_t{1'000}, int64_t{2'000}, SendClaimMs(h_.env) - 1}) {
    auto drained = (*worker)->DrainPending(testing::kT0 + t);
    ASSERT_TRUE(drained.ok());
    EXPECT_EQ(drained->answered + drained->retry_later + drained->dead + drained->busy, 0) << t;
  }
  auto taken =
      h_.outbox().Claim(key_, 0, testing::kT0 + 2'000, "another-host", testing::kT0 + 20'000);
  ASSERT_TRUE(taken.ok());
  EXPECT_FALSE(taken->has_value());
  delivery.join();
  EXPECT_EQ(status.load(), 200);
  EXPECT_EQ(h_.erp().requests_total(), 1u);
  EXPECT_EQ(h_.erp().effects_for_key(ErpCallKey(key_, kPlugin, 0)), 1u);
  const OutboxRow row = Row(0);
  EXPECT_EQ(row.state, OutboxState::kAnswered);
  EXPECT_EQ(row.attempts, 1);
  EXPECT_EQ(row.claimed_by, "");
}

TEST(RetryWorkerTest, RefusesAnIncompleteEnvOrABadPolicy) {
  ErpEnv env;
  EXPECT_THAT(RetryWorker::Create(env), HasReason(Reason::kInternal));
  testing::ErpHarness h;
  ASSERT_NO_FATAL_FAILURE(h.Init());
  ErpEnv bad = h.env;
  bad.retry.jitter_percent = 150;
  EXPECT_THAT(RetryWorker::Create(bad), HasReason(Reason::kConfigInvalid));
  bad = h.env;
  bad.retry.attempts = 0;
  EXPECT_THAT(RetryWorker::Create(bad), HasReason(Reason::kConfigInvalid));
  bad = h.env;
  bad.send_timeout = std::chrono::milliseconds(0);
  EXPECT_THAT(RetryWorker::Create(bad), HasReason(Reason::kConfigInvalid));
  bad = h.env;
  bad.plugins = nullptr;  // no way to match a resend against a capability: refused, fail closed
  EXPECT_THAT(RetryWorker::Create(bad), HasReason(Reason::kInternal));
  EXPECT_TRUE(RetryWorker::Create(h.env).ok());
}

TEST(ErpRetryPolicyTest, BackoffDoublesAndIsCapped) {
  const ErpRetryPolicy p{std::chrono::milliseconds(1000), std::chrono::milliseconds(5000), 8};
  EXPECT_EQ(p.BackoffMs(1), 1000);
  EXPECT_EQ(p.BackoffMs(2), 2000);
  EXPECT_EQ(p.BackoffMs(3), 4000);
  EXPECT_EQ(p.BackoffMs(4), 5000);
  EXPECT_EQ(p.BackoffMs(60), 5000);
}

}  // namespace
}  // namespace clawguard::host
