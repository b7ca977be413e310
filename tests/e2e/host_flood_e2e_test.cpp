// host_flood_e2e_test.cpp — a real `clawguard host` under RLIMIT_NOFILE 1024 (prlimit, soft and
// hard) against 1,100 idle and then 1,100 slow-loris connections (FloodClient, from 127.0.0.2–9):
// the host raises the soft limit to the hard one and reports it (audit line fd_limit, admin
// /readyz), bounds its listener below the descriptors it has, sheds idle strangers to let new
// clients in, and keeps answering signed webhooks from 127.0.0.1 throughout; the main /readyz
// says it sheds. Then one peer alone cannot hold more than listen.max_connections_per_peer.
// HostBusyFloodE2eTest: strangers from 127.0.0.2–7 that pipeline forged deliveries (each with a
// 15 KB webhook-timestamp) or health checks and never read the answers (PipelineFlood), more of
// them than the listener holds, reconnecting at once when closed; signed webhooks from 127.0.0.1
// are answered throughout, and a refusal quotes only a prefix of the timestamp.
// What was measured is printed (connections held, descriptors, answers). No wall-clock asserts.
#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <filesystem>
#include <iostream>
#include <thread>

#include "support/flood_client.h"
#include "support/gate.h"
#include "support/host_fixture.h"
#include "support/pipeline_flood.h"
#include "support/raw_client.h"

namespace clawguard::host {
namespace {

namespace ht = clawguard::host::testing;
using ht::HostFixture;
using ht::HostFixtureOptions;

constexpr uint64_t kNoFile = 1024;
constexpr int kFlood = 1100;
constexpr int kFloodDeliveries = 20;

// AdminReady is the admin listener's detailed /readyz (null when it cannot be had).
nlohmann::json AdminReady(const HostFixture& fixture) {
  auto c = ht::RawConnection::Connect(fixture.admin_port());
  if (c == nullptr || !c->Send(ht::SimpleRequest("GET", "/readyz", "",
                                                 std::string("Authorization: Bearer ") +
                                                     HostFixture::kAdminToken + "\r\n"))) {
    return nullptr;
  }
  const ht::RawResponse r = c->ReadResponse();
  return r.ok ? nlohmann::json::parse(r.body, nullptr, false) : nlohmann::json();
}

class HostFloodE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HostFixtureOptions o;
    o.nofile = kNoFile;
    o.workers = 2;
    ASSERT_NO_FATAL_FAILURE(fixture_.Prepare(o));
    ASSERT_TRUE(fixture_.StartHost());
  }
  nlohmann::json AdminReady() { return host::AdminReady(fixture_); }
  ht::RawResponse MainReady() {
    auto c = ht::RawConnection::Connect(fixture_.main_port());
    if (c == nullptr || !c->Send(ht::SimpleRequest("GET", "/readyz", ""))) return {};
    return c->ReadResponse();
  }
  size_t HostFds() const {
    size_t n = 0;
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator(
             "/proc/" + std::to_string(fixture_.host_pid()) + "/fd", ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
      ++n;
    }
    return n;
  }
  std::unique_ptr<ht::FloodClient> Flood(int n, std::vector<std::string> sources, bool slow_loris) {
    ht::FloodOptions o;
    o.port = fixture_.main_port();
    o.connections = n;
    o.sources = std::move(sources);
    o.slow_loris = slow_loris;
    return ht::FloodClient::Open(o);
  }
  // DeliverAll sends |kFloodDeliveries| fresh signed webhooks, each on a new connection; returns
  // how many were answered 2xx.
  int DeliverAll(const std::string& prefix) {
    int answered = 0;
    for (int i = 0; i < kFloodDeliveries; ++i) {
      const ht::Reply r = fixture_.Deliver(prefix + std::to_string(i),
                                           HostFixture::OrderBody(prefix + std::to_string(i)));
      if (r.ok && r.status >= 200 && r.status < 300) ++answered;
    }
    return answered;
  }

  HostFixture fixture_;
};

TEST_F(HostFloodE2eTest, SignedWebhooksAreAnsweredWhileIdleAndSlowConnectionsFloodTheHost) {
  // The limit the host found and its listener's bound within it.
  const nlohmann::json ready = AdminReady();
  ASSERT_TRUE(ready.is_object()) << ready;
  EXPECT_EQ(ready["fd_limit"]["soft"], kNoFile);
  EXPECT_EQ(ready["fd_limit"]["hard"], kNoFile);
  const uint64_t bound = ready["connections"]["max"].get<uint64_t>();
  EXPECT_LT(bound, kNoFile);
  EXPECT_GE(bound, 16u);
  const std::string audit = clawguard::testing::ReadFile(fixture_.audit_log());
  EXPECT_NE(audit.find("\"event\":\"fd_limit\""), std::string::npos) << audit;
  EXPECT_NE(audit.find("\"max_connections\":" + std::to_string(bound)), std::string::npos) << audit;

  const std::vector<std::string> sources = {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5",
                                            "127.0.0.6", "127.0.0.7", "127.0.0.8", "127.0.0.9"};
  for (const bool slow_loris : {false, true}) {
    const std::string kind = slow_loris ? "slow-loris" : "idle";
    // Each round starts from an empty listener (the last round's flood closed its sockets).
    ASSERT_TRUE(clawguard::testing::WaitFor([&] {
      return AdminReady()["connections"]["open"] == 0;
    })) << AdminReady();
    const uint64_t shed_before = AdminReady()["connections"]["shed_total"].get<uint64_t>();
    auto flood = Flood(kFlood, sources, slow_loris);
    ASSERT_NE(flood, nullptr);
    // Every flood connection past the bound took an older one's place (none is refused: idle
    // strangers can always go).
    ASSERT_TRUE(clawguard::testing::WaitFor([&] {
      const nlohmann::json j = AdminReady();
      return j.is_object() &&
             j["connections"]["shed_total"].get<uint64_t>() >= shed_before + kFlood - bound &&
             j["connections"]["open"].get<uint64_t>() == bound;
    })) << AdminReady();
    ASSERT_TRUE(clawguard::testing::WaitFor(
        [&] { return flood->Count().closed >= kFlood - static_cast<int>(bound); }));
    flood->Trickle();
    const size_t fds_full = HostFds();
    const int answered = DeliverAll("msg_flood_" + kind + "_");
    const ht::RawResponse main_ready = MainReady();
    const nlohmann::json after = AdminReady();
    const ht::FloodCount held = flood->Count();
    std::cout << "[ measured ] " << kind << " flood: " << flood->connected()
              << " connected, host holds " << after["connections"]["open"] << " of bound " << bound
              << " (fd limit " << kNoFile << "), host fds " << fds_full << ", shed "
              << after["connections"]["shed_total"] << ", refused "
              << after["connections"]["refused_total"] << ", flood sockets closed by the host "
              << held.closed << ", signed webhooks answered " << answered << "/" << kFloodDeliveries
              << "\n";
    EXPECT_EQ(flood->connected(), kFlood);
    EXPECT_EQ(answered, kFloodDeliveries) << kind;
    EXPECT_LE(fds_full, kNoFile);
    ASSERT_TRUE(main_ready.ok);
    EXPECT_EQ(main_ready.status, 200);
    EXPECT_EQ(main_ready.body, R"({"ready":true,"shedding":true})");
    EXPECT_EQ(after["shedding"], true);
    EXPECT_EQ(after["connections"]["refused_total"], 0);  // nothing was busy for long: always room
  }
}

TEST_F(HostFloodE2eTest, OnePeerCannotHoldMoreThanItsShare) {
  const nlohmann::json ready = AdminReady();
  ASSERT_TRUE(ready.is_object());
  const int per_peer = ready["connections"]["max_per_peer"].get<int>();
  ASSERT_EQ(per_peer, 256);  // the default
  auto flood = Flood(kFlood, {"127.0.0.2"}, /*slow_loris=*/false);
  ASSERT_NE(flood, nullptr);
  ASSERT_TRUE(clawguard::testing::WaitFor([&] {
    const nlohmann::json j = AdminReady();
    return j.is_object() && j["connections"]["shed_total"].get<int>() >= kFlood - per_peer;
  })) << AdminReady();
  const nlohmann::json after = AdminReady();
  EXPECT_LE(after["connections"]["open"].get<int>(),
            per_peer);  // the admin listener's own is not counted
  EXPECT_EQ(after["connections"]["peers"], 1);
  EXPECT_EQ(after["connections"]["refused_total"], 0);
  EXPECT_EQ(DeliverAll("msg_one_peer_"),
            kFloodDeliveries);  // 127.0.0.1 is another peer: never held back
  ASSERT_TRUE(
      clawguard::testing::WaitFor([&] { return flood->Count().closed >= kFlood - per_peer; }));
  const ht::FloodCount held = flood->Count();
  EXPECT_LE(held.open, per_peer);
  std::cout << "[ measured ] one peer: " << flood->connected() << " connected, host holds "
            << after["connections"]["open"] << " (max_connections_per_peer " << per_peer
            << "), closed by the host " << held.closed << "\n";
}

// A forged delivery whose webhook-timestamp is 15,001 digits (a valid number, far out of
// tolerance): its 401 would quote it whole if echoed values were not capped.
std::string ForgedDelivery() {
  return ht::SimpleRequest(
      "POST", HostFixture::kRoutePath, "{}",
      "webhook-id: msg_forged\r\nwebhook-timestamp: " + std::string(15000, '0') +
          "1\r\nwebhook-signature: v1,AAAA\r\nContent-Type: application/json\r\n");
}

// What the strangers pipeline: forged deliveries (each answered 401, which ends the connection)
// or health checks (each answered 200, which proves nothing: thousands of small answers).
enum class Junk { kForgedDeliveries, kHealthChecks };

std::string Name(Junk j) {
  return j == Junk::kForgedDeliveries ? "ForgedDeliveries" : "HealthChecks";
}
std::string JunkName(const ::testing::TestParamInfo<Junk>& info) { return Name(info.param); }
void PrintTo(Junk j, std::ostream* os) { *os << Name(j); }

class HostBusyFloodE2eTest : public ::testing::Test {
 protected:
  static constexpr int kPerPeer = 4;
  static constexpr int kMax = 16;  // listen.max_connections: the smallest allowed, filled at once
  static constexpr int kFloodDeliveries = 20;
  void SetUp() override {
    HostFixtureOptions o;
    o.workers = 2;
    o.listen_extra = ", max_connections: " + std::to_string(kMax) +
                     ", max_connections_per_peer: " + std::to_string(kPerPeer);
    ASSERT_NO_FATAL_FAILURE(fixture_.Prepare(o));
    ASSERT_TRUE(fixture_.StartHost());
  }
  // Payload: more answers than a connection's socket buffers hold (with PipelineFlood's small
  // window and segments), were each request answered.
  static std::string Payload(Junk junk) {
    std::string payload;
    if (junk == Junk::kForgedDeliveries) {
      for (int i = 0; i < 16; ++i)
        payload += ForgedDelivery();  // 16 answers of 15 KB unless capped
    } else {
      for (int i = 0; i < 4000; ++i)
        payload += ht::SimpleRequest("GET", "/healthz", "");  // ~85 B each
    }
    return payload;
  }
  HostFixture fixture_;
};

// One forged delivery, read: a short refusal that quotes a prefix of the timestamp, and the end of
// the connection (what was pipelined behind it is not answered).
TEST_F(HostBusyFloodE2eTest, AForgedDeliveryGetsAShortRefusalThatEndsItsConnection) {
  auto c = ht::RawConnection::Connect(fixture_.main_port());
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Send(ForgedDelivery() + ForgedDelivery()));
  const ht::RawResponse r = c->ReadResponse();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 401);
  EXPECT_LT(r.body.size(), 512u) << r.body.substr(0, 512);
  EXPECT_NE(
      r.body.find("webhook-timestamp " + std::string(64, '0') + "... (15001 digits) is outside"),
      std::string::npos)
      << r.body.substr(0, 512);
  EXPECT_EQ(r.headers.Get("Connection"), "close");
  EXPECT_TRUE(c->WaitForClose());
}

class HostBusyFloodJunkE2eTest : public HostBusyFloodE2eTest,
                                 public ::testing::WithParamInterface<Junk> {};

// More strangers than the listener holds (6 peers × 4), each pipelining requests and never
// reading an answer; a connection the host closes is opened again at once. No connection is
// refused (there is always a stranger to shed), signed webhooks on fresh connections are all
// answered, and the host goes on serving after the flood.
TEST_P(HostBusyFloodJunkE2eTest,
       SignedWebhooksAreAnsweredWhileStrangersPipelineRequestsAndNeverRead) {
  ht::PipelineFloodOptions fo;
  fo.port = fixture_.main_port();
  fo.connections = 6 * kPerPeer;
  fo.sources = {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6", "127.0.0.7"};
  fo.payload = Payload(GetParam());
  auto flood = ht::PipelineFlood::Open(fo);
  ASSERT_NE(flood, nullptr);
  std::atomic<bool> stop{false};
  std::thread pump([&] {
    while (!stop.load()) {
      flood->Refill(fo.connections);
      flood->Pump(/*wait_ms=*/5);
    }
  });
  // The listener is full: connections are shed or refused.
  const bool full = clawguard::testing::WaitFor([&] {
    const nlohmann::json j = AdminReady(fixture_);
    return j.is_object() && j["shedding"] == true;
  });
  int answered = 0;
  int attempts = 0;
  for (int i = 0; full && i < kFloodDeliveries; ++i) {
    const std::string id = "msg_busy_flood_" + std::to_string(i);
    // Retried as a platform retries a delivery that got no answer (at most 10 times here).
    ht::Reply r;
    for (int a = 0; a < 10 && !(r.ok && r.status == 200); ++a) {
      ++attempts;
      r = fixture_.Deliver(id, HostFixture::OrderBody("busy_" + std::to_string(i)));
    }
    answered += r.ok && r.status == 200 ? 1 : 0;
  }
  const nlohmann::json during = AdminReady(fixture_);
  stop = true;
  pump.join();
  std::cout << "[ measured ] " << Name(GetParam()) << " flood: " << flood->opened_total()
            << " connections opened, " << flood->closed_total()
            << " closed by the host; host holds " << during["connections"]["open"] << " of " << kMax
            << ", shed " << during["connections"]["shed_total"] << ", refused "
            << during["connections"]["refused_total"] << "; signed webhooks answered " << answered
            << "/" << kFloodDeliveries << " in " << attempts << " attempts\n";
  ASSERT_TRUE(full) << AdminReady(fixture_);
  EXPECT_EQ(answered, kFloodDeliveries);
  EXPECT_EQ(during["connections"]["refused_total"], 0);
  EXPECT_GT(flood->opened_total(), static_cast<uint64_t>(fo.connections));  // the host closed some
  flood.reset();
  EXPECT_TRUE(
      fixture_.DeliverUntilStored("msg_busy_flood_after", HostFixture::OrderBody("busy_after")).ok);
  EXPECT_EQ(::kill(fixture_.host_pid(), 0), 0);
}

INSTANTIATE_TEST_SUITE_P(Junk, HostBusyFloodJunkE2eTest,
                         ::testing::Values(Junk::kForgedDeliveries, Junk::kHealthChecks), JunkName);

}  // namespace
}  // namespace clawguard::host
