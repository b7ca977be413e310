// sigterm_load_test.cpp — SIGTERM a real `clawguard host` in the middle of a storm of deliveries
// from several keep-alive clients, while one delivery is inside a slow ERP call. The host must
// stop accepting at once, finish the requests it already read (the slow one included), and exit
// 0. Then:
//   - no event is half-applied: the ERP saw, per event, as many fulfil effects as adjust effects
//     (0 or 1 each) — a graceful stop never cuts a plugin run between its two calls;
//   - every delivery answered 2xx is durable: a host restarted on the same store replays it with
//     the identical status and body (`Idempotent-Replayed: true`);
//   - the deliveries that got no answer are retried by the platform until answered, and in the
//     end the ERP has exactly one fulfil and one adjust effect per event.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "e2e/support/resilience_util.h"
#include "support/host_fixture.h"
#include "support/raw_client.h"
#include "support/test_erp_server.h"

namespace clawguard::host {
namespace {

using testing::ErpAnswer;
using testing::HostFixture;
using testing::HostFixtureOptions;
using testing::RawConnection;
using testing::RecordedRequest;
using testing::Reply;
using testing::WaitFor;

constexpr int kSigtermClients = 6;
constexpr int kMaxEvents = 3000;  // the storm runs until the host stops; this only bounds it
constexpr int kAnsweredBeforeStop = 120;  // events answered before the slow call and the SIGTERM
constexpr const char* kSigtermFulfilled = R"({"status":"fulfilled"})";
const std::string kSlowOrder = "ord_sig_slow";
const std::string kSlowPath = "/orders/" + kSlowOrder + "/fulfil";
// The slow ERP call's answer comes this long after its effect. Long enough that the SIGTERM and
// the listener's close happen meanwhile; the test waits for the answer, it never measures time.
constexpr std::chrono::milliseconds kSlowAnswer{3000};

std::string SigtermEventId(int e) { return "msg_sig_" + std::to_string(e); }
std::string SigtermOrderId(int e) { return "ord_sig_" + std::to_string(e); }

struct EventRecord {
  bool attempted = false;
  Reply reply;  // reply.ok false: no answer
};

// Effects per order id, from the ERP's record: fulfil by path, adjust by the order id in its body.
struct Effects {
  std::map<std::string, int> fulfil, adjust;
};

Effects EffectsByOrder(const std::vector<RecordedRequest>& requests) {
  Effects out;
  for (const RecordedRequest& r : requests) {
    if (r.duplicate)
      continue;  // the test ERP answers 2xx: a request that is not a duplicate is an effect
    if (r.path == "/inventory/adjust") {
      const std::string tag = R"("order_id":")";
      const size_t at = r.body.find(tag);
      if (at == std::string::npos) continue;
      const size_t from = at + tag.size();
      ++out.adjust[r.body.substr(from, r.body.find('"', from) - from)];
    } else if (r.path.starts_with("/orders/") && r.path.ends_with("/fulfil")) {
      ++out.fulfil[r.path.substr(8, r.path.size() - 8 - 7)];
    }
  }
  return out;
}

int CountOf(const std::map<std::string, int>& m, const std::string& k) {
  const auto it = m.find(k);
  return it == m.end() ? 0 : it->second;
}

TEST(SigtermLoadTest, DrainsInFlightRequestsExitsZeroAndLosesNothingAnswered) {
  HostFixture f;
  HostFixtureOptions o;
  o.workers = 4;
  ASSERT_NO_FATAL_FAILURE(f.Prepare(o));
  testing::RaiseBreakerThresholds(f);
  ErpAnswer adjust;
  adjust.delay = std::chrono::milliseconds(20);  // keeps several deliveries in flight at any time
  f.erp().SetAnswer("/inventory/adjust", adjust);
  ErpAnswer slow;
  slow.delay = kSlowAnswer;
  f.erp().SetAnswer(kSlowPath, slow);
  ASSERT_TRUE(f.StartHost());
  const uint16_t port = f.main_port();

  // The storm: each client takes the next event and delivers it on its keep-alive connection
  // until the host no longer accepts connections.
  std::vector<EventRecord> events(kMaxEvents);
  std::mutex mu;  // guards events
  std::atomic<int> next{0}, answered{0};
  std::vector<std::thread> clients;
  clients.reserve(kSigtermClients);
  for (int c = 0; c < kSigtermClients; ++c) {
    clients.emplace_back([&] {
      std::unique_ptr<RawConnection> conn;
      for (int e = next++; e < kMaxEvents; e = next++) {
        if (conn == nullptr) conn = RawConnection::Connect(port);
        if (conn == nullptr) return;  // the host stopped accepting: the storm ends for this client
        {
          std::lock_guard lock(mu);
          events[e].attempted = true;
        }
        const Reply r = HostFixture::DeliverOn(*conn, SigtermEventId(e),
                                               HostFixture::OrderBody(SigtermOrderId(e)));
        if (!r.ok) conn.reset();  // closed while stopping (or after a `Connection: close`)
        if (r.ok) ++answered;
        std::lock_guard lock(mu);
        events[e].reply = r;
      }
    });
  }
  ASSERT_TRUE(WaitFor([&] { return answered.load() >= kAnsweredBeforeStop; }))
      << "the storm did not get going";

  // One delivery inside a slow ERP call (its effect done, its answer pending) when SIGTERM comes.
  Reply slow_reply;
  std::atomic<bool> slow_done{false};
  std::thread slow_client([&] {
    slow_reply = f.Deliver("msg_sig_slow", HostFixture::OrderBody(kSlowOrder));
    slow_done = true;
  });
  ASSERT_TRUE(WaitFor([&] { return f.erp().effects(kSlowPath) == 1; }))
      << "the slow call never reached the ERP";
  const int answered_at_sigterm = answered.load();
  int exit_code = -1;
  std::thread stopper([&] { exit_code = f.StopHost(); });  // SIGTERM, then waits for the exit

  // Stop accepting: new connections are refused while the slow request is still in flight.
  bool refused =
      WaitFor([&] { return RawConnection::Connect(port) == nullptr; }, std::chrono::seconds(20));
  const bool slow_answered_when_refused = slow_done.load();
  stopper.join();
  slow_client.join();
  for (auto& t : clients) t.join();
  EXPECT_TRUE(refused) << "the host still accepted connections after SIGTERM";
  EXPECT_FALSE(slow_answered_when_refused)
      << "the listener closed only after the in-flight request finished";
  EXPECT_EQ(exit_code, 0) << "the host must exit 0 on SIGTERM";
  ASSERT_TRUE(slow_reply.ok) << "the request in flight at SIGTERM got no answer";
  EXPECT_EQ(slow_reply.status, 200) << slow_reply.body;
  EXPECT_EQ(slow_reply.body, kSigtermFulfilled);

  // After the exit, per event: every 2xx answer is the plugin's, and no event is half-applied.
  int ok_2xx = 0, no_answer = 0, attempted = 0;
  const Effects after_stop = EffectsByOrder(f.erp().requests());
  for (int e = 0; e < kMaxEvents; ++e) {
    const EventRecord& ev = events[e];
    if (!ev.attempted) continue;
    ++attempted;
    const std::string order = SigtermOrderId(e);
    EXPECT_EQ(CountOf(after_stop.fulfil, order), CountOf(after_stop.adjust, order))
        << "event " << e << " is half-applied after a graceful stop";
    EXPECT_LE(CountOf(after_stop.fulfil, order), 1) << e;
    if (!ev.reply.ok) {
      ++no_answer;
      continue;
    }
    ASSERT_EQ(ev.reply.status, 200) << "event " << e << ": " << ev.reply.body;
    EXPECT_EQ(ev.reply.body, kSigtermFulfilled) << e;
    EXPECT_EQ(CountOf(after_stop.fulfil, order), 1)
        << "event " << e << " was answered 200 without its effects";
    ++ok_2xx;
  }
  EXPECT_EQ(CountOf(after_stop.fulfil, kSlowOrder), 1);
  EXPECT_EQ(CountOf(after_stop.adjust, kSlowOrder), 1);
  EXPECT_TRUE(f.erp().AtMostOneEffectPerKey());

  // Restart on the same store: every 2xx is replayed identically; the rest finish now.
  ASSERT_TRUE(f.StartHost());
  for (int e = 0; e < kMaxEvents; ++e) {
    const EventRecord& ev = events[e];
    if (!ev.attempted || !ev.reply.ok) continue;
    const Reply r = f.Deliver(SigtermEventId(e), HostFixture::OrderBody(SigtermOrderId(e)));
    ASSERT_TRUE(r.ok) << e;
    EXPECT_TRUE(r.replayed) << "event " << e
                            << " was answered 200 before the stop but is not stored";
    EXPECT_EQ(r.status, ev.reply.status) << e;
    EXPECT_EQ(r.body, ev.reply.body) << e;
  }
  const Reply slow_again = f.Deliver("msg_sig_slow", HostFixture::OrderBody(kSlowOrder));
  EXPECT_TRUE(slow_again.replayed);
  EXPECT_EQ(slow_again.body, slow_reply.body);
  for (int e = 0; e < kMaxEvents; ++e) {
    const EventRecord& ev = events[e];
    if (!ev.attempted || ev.reply.ok) continue;
    const Reply r = f.DeliverUntilStored(
        SigtermEventId(e), HostFixture::OrderBody(SigtermOrderId(e)), /*max_attempts=*/100,
        /*pause_ms=*/50);
    ASSERT_TRUE(r.ok) << e;
    EXPECT_EQ(r.status, 200) << "event " << e << ": " << r.body;
  }
  // The retry worker has nothing pending (a graceful stop left no unanswered row); the count
  // must be exact now and stay exact.
  const Effects final_effects = EffectsByOrder(f.erp().requests());
  for (int e = 0; e < kMaxEvents; ++e) {
    if (!events[e].attempted) continue;
    EXPECT_EQ(CountOf(final_effects.fulfil, SigtermOrderId(e)), 1) << e;
    EXPECT_EQ(CountOf(final_effects.adjust, SigtermOrderId(e)), 1) << e;
  }
  EXPECT_EQ(f.erp().effects_total(), static_cast<size_t>(2 * (attempted + 1)));
  EXPECT_TRUE(f.erp().AtMostOneEffectPerKey());
  EXPECT_EQ(f.StopHost(), 0);
  EXPECT_EQ(f.erp().effects_total(), static_cast<size_t>(2 * (attempted + 1)));
  std::cout << "[ sigterm ] " << attempted << " events sent, " << ok_2xx << " answered 200 ("
            << answered_at_sigterm << " before SIGTERM), " << no_answer << " without an answer\n";
}

}  // namespace
}  // namespace clawguard::host
