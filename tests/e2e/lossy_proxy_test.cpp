// lossy_proxy_test.cpp — the ERP behind a lossy network. First the LossyProxy itself (forwards at
// 0 %, loses everything at 100 %, its decisions follow its seed), then a real `clawguard host`
// whose erp.base_url is the proxy: events are delivered while 80 % of the ERP exchanges are
// dropped, stalled or lose their answer (the ERP acted, the host never hears it), then the link
// recovers (0 %). Every event must end answered 200 and the ERP must have seen exactly one
// fulfil and one adjust effect per event — resends carry the same Idempotency-Key, so a lost
// answer becomes a duplicate at the ERP, never a second effect.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "e2e/support/lossy_proxy.h"
#include "e2e/support/resilience_util.h"
#include "support/host_fixture.h"
#include "support/raw_client.h"
#include "support/test_erp_server.h"

namespace clawguard::host {
namespace {

using testing::HostFixture;
using testing::HostFixtureOptions;
using testing::LossyProxy;
using testing::LossyProxyCounts;
using testing::LossyProxyOptions;
using testing::RawConnection;
using testing::RecordedRequest;
using testing::Reply;
using testing::TestErpServer;
using testing::WaitFor;

constexpr const char* kFulfilled = R"({"status":"fulfilled"})";

std::unique_ptr<TestErpServer> MakeErp() {
  auto erp = TestErpServer::Create();
  EXPECT_TRUE(erp.ok()) << erp.error().ToString();
  return erp.ok() ? std::move(erp).value() : nullptr;
}

std::unique_ptr<LossyProxy> MakeProxy(uint16_t upstream, int loss, uint64_t seed = 7) {
  LossyProxyOptions o;
  o.upstream_port = upstream;
  o.loss_percent = loss;
  o.seed = seed;
  auto proxy = LossyProxy::Create(o);
  EXPECT_TRUE(proxy.ok()) << proxy.error().ToString();
  return proxy.ok() ? std::move(proxy).value() : nullptr;
}

std::string ErpRequest(int i) {
  return testing::SimpleRequest("POST", "/orders/o" + std::to_string(i) + "/fulfil", "{}",
                                "Idempotency-Key: k" + std::to_string(i) + "\r\n");
}

TEST(LossyProxyTest, ForwardsEveryExchangeAtZeroLoss) {
  auto erp = MakeErp();
  ASSERT_NE(erp, nullptr);
  auto proxy = MakeProxy(erp->port(), 0);
  ASSERT_NE(proxy, nullptr);
  auto conn = RawConnection::Connect(proxy->port());
  ASSERT_NE(conn, nullptr);
  for (int i = 0; i < 5; ++i) {  // one kept-alive connection: five exchanges, five draws
    ASSERT_TRUE(conn->Send(ErpRequest(i)));
    const auto r = conn->ReadResponse();
    ASSERT_TRUE(r.ok) << i;
    EXPECT_EQ(r.status, 200) << i;
  }
  EXPECT_EQ(erp->effects_total(), 5u);
  const LossyProxyCounts c = proxy->counts();
  EXPECT_EQ(c.forwarded, 5u);
  EXPECT_EQ(c.lost(), 0u);
  proxy->Stop();
  EXPECT_TRUE(conn->WaitForClose()) << "Stop must close the proxied connections";
}

TEST(LossyProxyTest, LosesEveryConnectionAtFullLossAndOnlyLostAnswersReachTheErp) {
  auto erp = MakeErp();
  ASSERT_NE(erp, nullptr);
  auto proxy = MakeProxy(erp->port(), 100);
  ASSERT_NE(proxy, nullptr);
  constexpr int kConns = 30;
  std::vector<std::unique_ptr<RawConnection>> conns;
  for (int i = 0; i < kConns; ++i) {
    conns.push_back(RawConnection::Connect(proxy->port()));
    ASSERT_NE(conns.back(), nullptr);
    (void)conns.back()->Send(ErpRequest(i));  // a dropped connection may refuse it
  }
  ASSERT_TRUE(WaitFor([&] { return proxy->counts().lost() == static_cast<uint64_t>(kConns); }));
  const LossyProxyCounts c = proxy->counts();
  EXPECT_EQ(c.forwarded, 0u);
  EXPECT_GT(c.dropped, 0u);
  EXPECT_GT(c.stalled, 0u);
  EXPECT_GT(c.answers_lost, 0u);
  // The ERP acts on exactly the requests whose answer is lost, and nobody hears back.
  ASSERT_TRUE(WaitFor([&] { return erp->effects_total() == c.answers_lost; }))
      << erp->effects_total() << " effects for " << c.answers_lost << " lost answers";
  proxy->SetLossPercent(0);  // a later connection passes
  auto ok = RawConnection::Connect(proxy->port());
  ASSERT_NE(ok, nullptr);
  ASSERT_TRUE(ok->Send(ErpRequest(1000)));
  EXPECT_EQ(ok->ReadResponse().status, 200);
  proxy->Stop();  // closes the stalled ones too
  for (auto& conn : conns) EXPECT_TRUE(conn->WaitForClose());
}

// Decisions, one connection at a time, as the counter that moved.
std::vector<char> DecisionSequence(uint16_t upstream, uint64_t seed) {
  auto proxy = MakeProxy(upstream, 50, seed);
  std::vector<char> seq;
  if (proxy == nullptr) return seq;
  for (int i = 0; i < 40; ++i) {
    const LossyProxyCounts before = proxy->counts();
    auto conn = RawConnection::Connect(proxy->port());
    if (conn == nullptr) return {};
    if (!WaitFor([&] {
          return proxy->counts().lost() + proxy->counts().forwarded == static_cast<uint64_t>(i) + 1;
        })) {
      return {};
    }
    const LossyProxyCounts after = proxy->counts();
    seq.push_back(after.forwarded > before.forwarded ? 'f'
                  : after.dropped > before.dropped   ? 'd'
                  : after.stalled > before.stalled   ? 's'
                                                     : 'l');
  }
  return seq;
}

TEST(LossyProxyTest, DecisionsFollowTheSeed) {
  auto erp = MakeErp();
  ASSERT_NE(erp, nullptr);
  const std::vector<char> a = DecisionSequence(erp->port(), 42);
  const std::vector<char> b = DecisionSequence(erp->port(), 42);
  const std::vector<char> other = DecisionSequence(erp->port(), 43);
  ASSERT_EQ(a.size(), 40u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, other);
}

// ---- The host behind the lossy link ----------------------------------------------------------

constexpr int kLossyEvents = 60;
constexpr int kLossyClients = 4;
constexpr int kLossyDeliveries = 2;  // per event while 80 % is lost
constexpr int kLossPercent = 80;

std::string EventId(int e) { return "msg_lossy_" + std::to_string(e); }
std::string OrderId(int e) { return "ord_lossy_" + std::to_string(e); }

// ForEachEvent runs |fn(e)| for every event, kLossyClients threads, each its own share of events.
template <typename Fn>
void ForEachEvent(Fn fn) {
  std::vector<std::thread> clients;
  clients.reserve(kLossyClients);
  for (int c = 0; c < kLossyClients; ++c) {
    clients.emplace_back([&, c] {
      for (int e = c; e < kLossyEvents; e += kLossyClients) fn(e);
    });
  }
  for (auto& t : clients) t.join();
}

TEST(ErpBehindLossyProxyTest, EveryEventGetsExactlyOneEffectPerCallAfterTheLinkRecovers) {
  HostFixture f;
  HostFixtureOptions o;
  o.erp_timeout = "250ms";  // a stalled or lost answer costs one timeout
  o.erp_retry = "{ base: 50ms, max: 400ms, attempts: 100, jitter: 20%, floor_429: 60s }";
  ASSERT_NO_FATAL_FAILURE(f.Prepare(o));
  auto proxy = MakeProxy(f.erp().port(), kLossPercent, /*seed=*/20261202);
  ASSERT_NE(proxy, nullptr);
  ASSERT_TRUE(testing::ReplaceInHostYaml(f, "base_url: " + f.erp().base_url(),
                                         "base_url: " + proxy->base_url()))
      << "the fixture's host.yaml has no erp.base_url line to point at the proxy";
  testing::RaiseBreakerThresholds(f);
  ASSERT_TRUE(f.StartHost());

  // Phase 1: the lossy link. Deliveries may get 200 (both calls went through) or 500/503 (a
  // call got no answer; its outbox row waits for the retry worker): never a wrong answer.
  std::atomic<int> lossy_ok{0}, lossy_other{0};
  std::vector<std::string> bad(kLossyEvents);
  ForEachEvent([&](int e) {
    for (int d = 0; d < kLossyDeliveries; ++d) {
      const Reply r = f.Deliver(EventId(e), HostFixture::OrderBody(OrderId(e)));
      if (!r.ok || (r.status != 200 && r.status != 500 && r.status != 503 && r.status != 409)) {
        bad[e] = std::to_string(r.status) + " " + r.body;
      }
      if (r.ok && r.status == 200) {
        ++lossy_ok;
        if (r.body != kFulfilled) bad[e] = r.body;
      } else {
        ++lossy_other;
      }
    }
  });
  for (int e = 0; e < kLossyEvents; ++e)
    EXPECT_EQ(bad[e], "") << "event " << e << " during the loss";
  const LossyProxyCounts during = proxy->counts();
  EXPECT_GT(during.lost(), during.forwarded)
      << "the link was meant to lose about " << kLossPercent << " %";

  // Phase 2: the link recovers; the platform keeps retrying until each event is answered.
  proxy->SetLossPercent(0);
  std::vector<Reply> final_reply(kLossyEvents);
  ForEachEvent([&](int e) {
    final_reply[e] =
        f.DeliverUntilStored(EventId(e), HostFixture::OrderBody(OrderId(e)), /*max_attempts=*/300,
                             /*pause_ms=*/50);
  });
  for (int e = 0; e < kLossyEvents; ++e) {
    ASSERT_TRUE(final_reply[e].ok) << "event " << e << " got no answer after the link recovered";
    ASSERT_EQ(final_reply[e].status, 200) << "event " << e << ": " << final_reply[e].body;
    EXPECT_EQ(final_reply[e].body, kFulfilled) << e;
    const Reply again = f.Deliver(EventId(e), HostFixture::OrderBody(OrderId(e)));
    EXPECT_TRUE(again.replayed) << e;
    EXPECT_EQ(again.body, kFulfilled) << e;
  }

  // The ERP: every 200 means both calls were answered 2xx, so the effects are all there now.
  ASSERT_TRUE(
      WaitFor([&] { return f.erp().effects_total() >= static_cast<size_t>(2 * kLossyEvents); }));
  EXPECT_EQ(f.StopHost(), 0);
  for (int e = 0; e < kLossyEvents; ++e) {
    EXPECT_EQ(f.erp().effects("/orders/" + OrderId(e) + "/fulfil"), 1u) << "event " << e;
  }
  EXPECT_EQ(f.erp().effects("/inventory/adjust"), static_cast<size_t>(kLossyEvents));
  EXPECT_EQ(f.erp().effects_total(), static_cast<size_t>(2 * kLossyEvents));
  EXPECT_TRUE(f.erp().AtMostOneEffectPerKey());
  const LossyProxyCounts total = proxy->counts();
  // Every lost answer is a call the ERP acted on that the host later resent with the same key.
  if (total.answers_lost > 0) {
    EXPECT_GT(f.erp().duplicates(), 0u);
  }
  size_t keyless = 0;
  for (const RecordedRequest& r : f.erp().requests()) {
    if (r.headers.Get("Idempotency-Key").value_or("").size() != 64) ++keyless;
  }
  EXPECT_EQ(keyless, 0u) << "every ERP call carries its 64-hex Idempotency-Key";
  std::cout << "[ lossy ] phase 1: " << lossy_ok.load() << " answered 200, " << lossy_other.load()
            << " not; proxy: forwarded " << total.forwarded << ", dropped " << total.dropped
            << ", stalled " << total.stalled << ", answers lost " << total.answers_lost
            << "; ERP requests " << f.erp().requests_total() << ", duplicates "
            << f.erp().duplicates() << "\n";
  proxy->Stop();
}

}  // namespace
}  // namespace clawguard::host
