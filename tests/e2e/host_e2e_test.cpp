// host_e2e_test.cpp — the main job end to end: the example plugin (examples/acme-orders) packed
// and signed in a SoftHSM2 token, `clawguard host` started as a child process on port 0 with the
// test ERP (HostFixture), then a retry storm of 17 concurrent deliveries of one order.created
// event (each re-signed with a fresh timestamp): exactly one fulfil and one adjust per order line
// reach the ERP, and every stored answer the platform gets is the first one.
#include <gtest/gtest.h>

#include <string>

#include <mutex>
#include <thread>

#include "support/host_fixture.h"

namespace clawguard::host {
namespace {

// Each test runs with deliveries on threads and as fibers (host.yaml listen.execution).
class HostEndToEndTest : public testing::ExecutionTest {};
INSTANTIATE_TEST_SUITE_P(Execution, HostEndToEndTest, testing::ExecutionsAndInProcess(),
                         testing::ExecutionName);

using clawguard::testing::ReadFile;
using testing::HostFixture;
using testing::Reply;

constexpr int kDeliveries = 17;

TEST_P(HostEndToEndTest, RetryStormOfSignedPluginHasOneEffectPerCall) {
  HostFixture f;
  ASSERT_NO_FATAL_FAILURE(f.Prepare(Options()));
  ASSERT_TRUE(f.StartHost());

  // The storm: one event (one webhook-id, one body), each delivery freshly signed.
  const std::string body =
      ReadFile(std::string(CLAWGUARD_SOURCE_DIR) + "/examples/acme-orders/sample-event.json");
  std::mutex mu;
  std::vector<Reply> answers;
  std::vector<std::thread> threads;
  threads.reserve(kDeliveries);
  for (int i = 0; i < kDeliveries; ++i) {
    threads.emplace_back([&] {
      Reply r = f.Deliver("msg_storm_1", body);
      std::lock_guard lock(mu);
      if (r.ok) answers.push_back(std::move(r));
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(answers.size(), static_cast<size_t>(kDeliveries));

  // Those that met the live lease got 409; every 200 carries the first answer.
  std::string first_body;
  int processed = 0;
  for (const Reply& a : answers) {
    ASSERT_TRUE(a.status == 200 || a.status == 409) << a.status << " " << a.body;
    if (a.status == 200 && !a.replayed) ++processed;
    if (a.status == 200) {
      if (first_body.empty()) first_body = a.body;
      EXPECT_EQ(a.body, first_body);
    }
  }
  EXPECT_EQ(processed, 1);
  const Reply replay = f.Deliver("msg_storm_1", body);
  ASSERT_TRUE(replay.ok);
  EXPECT_EQ(replay.status, 200);
  EXPECT_TRUE(replay.replayed);
  EXPECT_EQ(replay.body, R"({"status":"fulfilled"})");
  EXPECT_EQ(first_body, R"({"status":"fulfilled"})");

  // sample-event.json has two lines: one adjust each, in the event's order, with its own key.
  EXPECT_EQ(f.erp().effects("/orders/ord_10042/fulfil"), 1u);
  EXPECT_EQ(f.erp().effects("/inventory/adjust"), 2u);
  EXPECT_EQ(f.erp().effects_total(), 3u);
  EXPECT_TRUE(f.erp().AtMostOneEffectPerKey());
  std::vector<std::string> adjust_bodies;
  for (const auto& r : f.erp().requests()) {
    if (r.path == "/inventory/adjust" && !r.duplicate) adjust_bodies.push_back(r.body);
  }
  EXPECT_EQ(adjust_bodies,
            (std::vector<std::string>{R"({"order_id":"ord_10042","sku":"WIDGET-1","delta":-2})",
                                      R"({"order_id":"ord_10042","sku":"GADGET-7","delta":-1})"}));
  EXPECT_EQ(f.StopHost(), 0);
}

TEST_P(HostEndToEndTest, OrderLinesAreCheckedBeforeAnyEffect) {
  HostFixture f;
  ASSERT_NO_FATAL_FAILURE(f.Prepare(Options()));
  ASSERT_TRUE(f.StartHost());
  // A line without a SKU: the plugin answers 422 (stored: a 4xx is the plugin's decision) and
  // calls nothing, so the ERP sees no effect at all.
  const Reply r = f.Deliver("msg_bad_lines",
                            R"({"type":"order.created","order_id":"ord_1","lines":[{"qty":1}]})");
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(r.body, R"({"status":"lines_invalid"})");
  // Three lines: three adjusts, one per line.
  const Reply ok =
      f.Deliver("msg_three_lines",
                R"({"type":"order.created","order_id":"ord_3","lines":[{"sku":"A","qty":1},)"
                R"({"sku":"B","quantity":2},{"sku":"C","qty":-3}]})");
  ASSERT_TRUE(ok.ok);
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(f.erp().effects("/orders/ord_3/fulfil"), 1u);
  EXPECT_EQ(f.erp().effects("/inventory/adjust"), 3u);
  EXPECT_EQ(f.erp().effects_total(), 4u);
  EXPECT_EQ(f.StopHost(), 0);
}

// A plugin stuck in a slow ERP call past handler_timeout: the delivery is answered 503
// plugin_timeout by the watchdog while the plugin's thread still waits for the ERP (the effect
// happened); the host shuts down cleanly meanwhile (it waits for that thread, bounded), and after a
// restart the platform's retry — once the lease expired — completes the event with no second
// effect: the re-run's calls carry the same Idempotency-Keys.
TEST_P(HostEndToEndTest, PluginPastHandlerTimeoutIsAnswered503AndItsRetryAddsNoEffect) {
  HostFixture f;
  testing::HostFixtureOptions o = Options();
  o.handler_timeout = "1s";
  o.lease = "3s";
  o.erp_timeout = "5s";
  ASSERT_NO_FATAL_FAILURE(f.Prepare(o));
  testing::ErpAnswer slow;
  slow.delay = std::chrono::milliseconds(2500);
  f.erp().SetAnswer("/orders/ord_10042/fulfil", slow);
  ASSERT_TRUE(f.StartHost());
  const std::string body =
      ReadFile(std::string(CLAWGUARD_SOURCE_DIR) + "/examples/acme-orders/sample-event.json");

  const Reply timed_out = f.Deliver("msg_slow_1", body);
  ASSERT_TRUE(timed_out.ok);
  EXPECT_EQ(timed_out.status, 503) << timed_out.body;
  EXPECT_NE(timed_out.body.find("plugin_timeout"), std::string::npos) << timed_out.body;
  EXPECT_EQ(f.StopHost(), 0);  // while the plugin may still wait for the ERP
  EXPECT_EQ(f.erp().effects("/orders/ord_10042/fulfil"), 1u);
  EXPECT_EQ(f.erp().effects("/inventory/adjust"), 0u);  // abandoned: its later calls are fenced

  f.erp().SetAnswer("/orders/ord_10042/fulfil", testing::ErpAnswer{});
  ASSERT_TRUE(f.StartHost());
  const Reply done = f.DeliverUntilStored("msg_slow_1", body);
  ASSERT_TRUE(done.ok);
  EXPECT_EQ(done.status, 200) << done.body;
  EXPECT_EQ(done.body, R"({"status":"fulfilled"})");
  EXPECT_EQ(f.erp().effects("/orders/ord_10042/fulfil"), 1u);
  EXPECT_EQ(f.erp().effects("/inventory/adjust"), 2u);
  EXPECT_TRUE(f.erp().AtMostOneEffectPerKey());
  EXPECT_NE(ReadFile(f.audit_log()).find(R"("event":"plugin_timeout")"), std::string::npos);
  EXPECT_EQ(f.StopHost(), 0);
}

}  // namespace
}  // namespace clawguard::host
