// host_crash_test.cpp — SIGKILL a real `clawguard host` while the plugin is inside an ERP call
// (the test ERP has acted and stalls its answer), restart it on the same SQLite file: every
// answer given 2xx before the kill is replayed identically, the platform's retries finish the
// event, its retry worker resends the pending outbox row with the same Idempotency-Key, and the
// ERP still sees exactly one effect per call (two requests with one key around the crash).
#include <gtest/gtest.h>

#include <string>

#include <chrono>
#include <map>
#include <thread>

#include "support/host_fixture.h"

namespace clawguard::host {
namespace {

// Each test runs with deliveries on threads and as fibers (host.yaml listen.execution).
class HostCrashTest : public testing::ExecutionTest {};
INSTANTIATE_TEST_SUITE_P(Execution, HostCrashTest, testing::Executions(), testing::ExecutionName);

using testing::ErpAnswer;
using testing::HostFixture;
using testing::RecordedRequest;
using testing::Reply;

constexpr int kBefore = 5;  // events answered 2xx before the kill
const std::string kCrashOrder = "ord_crash";
const std::string kCrashPath = "/orders/" + kCrashOrder + "/fulfil";

// CrashWaitFor polls |done| (bounded: a guard against hangs, never a measured time).
template <typename Fn>
bool CrashWaitFor(Fn done, std::chrono::seconds guard = std::chrono::seconds(60)) {
  const auto until = std::chrono::steady_clock::now() + guard;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

std::map<std::string, std::vector<RecordedRequest>> ByKey(
    const std::vector<RecordedRequest>& requests) {
  std::map<std::string, std::vector<RecordedRequest>> out;
  for (const auto& r : requests)
    out[std::string(r.headers.Get("Idempotency-Key").value_or(""))].push_back(r);
  return out;
}

TEST_P(HostCrashTest, KilledInsideAnErpCallRestartsWithOneEffectPerCall) {
  HostFixture f;
  testing::HostFixtureOptions o = Options();
  o.lease = "4s";  // the crashed delivery's lease must expire before its retries can run
  o.handler_timeout = "3s";
  ASSERT_NO_FATAL_FAILURE(f.Prepare(o));
  ASSERT_TRUE(f.StartHost());

  // Answers given 2xx before the kill.
  std::vector<Reply> before;
  for (int i = 0; i < kBefore; ++i) {
    before.push_back(f.Deliver("msg_before_" + std::to_string(i),
                               HostFixture::OrderBody("ord_b" + std::to_string(i))));
    ASSERT_TRUE(before.back().ok);
    ASSERT_EQ(before.back().status, 200) << before.back().body;
    ASSERT_FALSE(before.back().replayed);
  }

  // The crash: the ERP acts on the fulfil call and stalls its answer; the host dies meanwhile.
  ErpAnswer stall;
  stall.delay = std::chrono::milliseconds(120'000);
  f.erp().SetAnswer(kCrashPath, stall);
  const std::string crash_body = HostFixture::OrderBody(kCrashOrder);
  std::thread platform([&] { (void)f.Deliver("msg_crash", crash_body); });  // gets no answer
  ASSERT_TRUE(CrashWaitFor([&] { return f.erp().effects(kCrashPath) == 1; }))
      << "the fulfil call never reached the ERP";
  EXPECT_EQ(f.KillHost(), 128 + 9);
  platform.join();
  EXPECT_EQ(f.erp().effects("/inventory/adjust"),
            static_cast<size_t>(kBefore));  // call 1 never ran

  // Restart on the same store.
  ASSERT_TRUE(f.StartHost());
  for (int i = 0; i < kBefore; ++i) {
    const Reply r = f.Deliver("msg_before_" + std::to_string(i),
                              HostFixture::OrderBody("ord_b" + std::to_string(i)));
    ASSERT_TRUE(r.ok);
    EXPECT_EQ(r.status, before[i].status) << i;
    EXPECT_EQ(r.body, before[i].body) << i;
    EXPECT_TRUE(r.replayed) << i;
  }

  // The platform retries the crashed event (409 while the dead worker's lease lives, 500 while
  // its ERP call is pending) until it gets a stored answer.
  const Reply done = f.DeliverUntilStored("msg_crash", crash_body);
  ASSERT_TRUE(done.ok);
  EXPECT_EQ(done.status, 200) << done.body;
  EXPECT_EQ(done.body, R"({"status":"fulfilled"})");
  const Reply replay = f.Deliver("msg_crash", crash_body);
  EXPECT_EQ(replay.status, 200);
  EXPECT_TRUE(replay.replayed);
  EXPECT_EQ(replay.body, done.body);

  // The ERP: one effect per call, and the crashed call was resent once with its own key.
  EXPECT_EQ(f.erp().effects(kCrashPath), 1u);
  EXPECT_EQ(f.erp().effects("/inventory/adjust"), static_cast<size_t>(kBefore + 1));
  EXPECT_EQ(f.erp().effects_total(), static_cast<size_t>(2 * (kBefore + 1)));
  EXPECT_TRUE(f.erp().AtMostOneEffectPerKey());
  const auto by_key = ByKey(f.erp().requests());
  size_t resent = 0;
  for (const auto& [key, requests] : by_key) {
    ASSERT_EQ(key.size(), 64u);
    EXPECT_LE(requests.size(), 2u) << key;
    if (requests.size() == 2) {
      ++resent;
      EXPECT_EQ(requests[0].path, kCrashPath);
      EXPECT_EQ(requests[1].path, kCrashPath);
      EXPECT_TRUE(requests[1].duplicate);
      EXPECT_EQ(requests[1].body, requests[0].body);
    }
  }
  EXPECT_EQ(resent, 1u) << "the restarted host's retry worker must resend the pending row once";
  EXPECT_EQ(f.StopHost(), 0);
  f.erp().Stop();  // ends the stalled answer
}

}  // namespace
}  // namespace clawguard::host
