// erp_gateway_test.cpp — ErpGateway and RetryWorker against the real test ERP over loopback.
#include "host/erp_gateway.h"

#include <gtest/gtest.h>

#include "host/idempotency_key.h"
#include "plugins/erp_harness.h"

namespace clawguard::host {
namespace {

using testing::ErpHarness;

constexpr const char* kPlugin = "acme-orders";

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
  int Call(ErpGateway& g, const char* method, const char* path, std::string_view body, std::string* reply_out) {
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
    EXPECT_EQ(Call(*g, method, path, R"({"sku":"ALL","qty":-1000})", nullptr), CG_DENIED) << method << " " << path;
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
  EXPECT_EQ(h_.erp().requests_total(), 0u);
  auto row = h_.outbox().Get(key_, 0);
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->state, OutboxState::kSent);
  EXPECT_EQ((*row)->attempts, 1);

  // A platform retry meanwhile: the call is pending, the plugin is told to stop.
  auto again = Gateway(h_.Retry(key_, t1));
  EXPECT_EQ(Call(*again, "POST", "/orders/9/fulfil", "{}", nullptr), CG_DEFERRED);

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

TEST(RetryWorkerTest, RefusesAnIncompleteEnvOrABadPolicy) {
  ErpEnv env;
  EXPECT_EQ(RetryWorker::Create(env).error().reason(), Reason::kInternal);
  testing::ErpHarness h;
  ASSERT_NO_FATAL_FAILURE(h.Init());
  ErpEnv bad = h.env;
  bad.retry.jitter_percent = 150;
  EXPECT_EQ(RetryWorker::Create(bad).error().reason(), Reason::kConfigInvalid);
  bad = h.env;
  bad.retry.attempts = 0;
  EXPECT_EQ(RetryWorker::Create(bad).error().reason(), Reason::kConfigInvalid);
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
