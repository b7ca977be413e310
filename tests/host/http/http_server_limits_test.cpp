// http_server_limits_test.cpp — HttpServer's connection bounds over real loopback sockets: idle
// and slow-loris connections are shed to let new ones in (per peer, then per listener),
// unproven before proven, never one whose request is being handled; with nothing idle a new
// connection is refused. Peers are distinct 127.0.0.x source addresses (FloodClient). No test
// asserts a wall-clock duration.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>

#include "host/http/http_server.h"
#include "support/flood_client.h"
#include "support/gate.h"
#include "support/raw_client.h"
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard::host {
namespace {

namespace ht = clawguard::host::testing;
using clawguard::testing::Gate;
using clawguard::testing::WaitFor;

// Blocking serves "/block" only when its gate opens (a request being handled), anything else 200.
struct Blocking {
  Gate gate;
  std::atomic<int> entered{0};
  HttpResponse operator()(const HttpRequest& r) {
    if (r.target == "/block") {
      ++entered;
      gate.Wait();
    }
    HttpResponse res;
    res.headers.Set("Content-Type", "text/plain");
    res.body = "ok " + r.target;
    return res;
  }
};

class HttpServerLimitsTest : public ::testing::Test {
 protected:
  void Start(uint64_t max, uint64_t per_peer) {
    ServerOptions o;
    o.workers = 2;
    o.handler_threads = 4;
    o.max_connections = max;
    o.max_connections_per_peer = per_peer;
    auto server =
        HttpServer::Create(std::move(o), [this](const HttpRequest& r) { return (*blocking_)(r); });
    ASSERT_TRUE(server.ok()) << server.error().ToString();
    server_ = std::move(server).value();
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    blocking_->gate.Open();
    if (server_) server_->Stop();
  }
  bool OpenIs(uint64_t n) {
    return WaitFor([&] { return server_->connection_stats().open == n; });
  }
  // Proven opens a keep-alive connection from 127.0.0.1 that was answered 200 (now idle).
  std::unique_ptr<ht::RawConnection> Proven() {
    auto c = ht::RawConnection::Connect(server_->port());
    if (c == nullptr || !c->Send(ht::SimpleRequest("GET", "/ok", ""))) return nullptr;
    const ht::RawResponse r = c->ReadResponse();
    return r.ok && r.status == 200 ? std::move(c) : nullptr;
  }
  // Busy opens a connection whose request is being handled (blocked until the gate opens).
  std::unique_ptr<ht::RawConnection> Busy() {
    const int before = blocking_->entered.load();
    auto c = ht::RawConnection::Connect(server_->port());
    if (c == nullptr || !c->Send(ht::SimpleRequest("POST", "/block", "x"))) return nullptr;
    if (!WaitFor([&] { return blocking_->entered.load() > before; })) return nullptr;
    return c;
  }
  std::unique_ptr<ht::FloodClient> Flood(int n, std::vector<std::string> sources,
                                         bool slow_loris = false) {
    ht::FloodOptions o;
    o.port = server_->port();
    o.connections = n;
    o.sources = std::move(sources);
    o.slow_loris = slow_loris;
    return ht::FloodClient::Open(o);
  }

  std::shared_ptr<Blocking> blocking_ = std::make_shared<Blocking>();
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerLimitsTest, OptionsOutOfRangeAreRefused) {
  for (auto [max, per_peer] : {std::pair<uint64_t, uint64_t>{0, 1}, {4, 0}, {4, 5}}) {
    ServerOptions o;
    o.max_connections = max;
    o.max_connections_per_peer = per_peer;
    auto server =
        HttpServer::Create(std::move(o), [](const HttpRequest&) { return HttpResponse{}; });
    ASSERT_FALSE(server.ok()) << max << " " << per_peer;
    EXPECT_THAT(server, HasReason(Reason::kConfigInvalid));
  }
}

// One peer cannot hold more than its share: its fifth idle connection takes the place of its
// first; other peers' connections are untouched.
TEST_F(HttpServerLimitsTest, APeerOverItsBoundLosesItsOldestIdleConnection) {
  ASSERT_NO_FATAL_FAILURE(Start(/*max=*/16, /*per_peer=*/4));
  auto other = Flood(2, {"127.0.0.3"});
  auto first = Flood(4, {"127.0.0.2"});
  ASSERT_NE(other, nullptr);
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(OpenIs(6));
  auto second = Flood(1, {"127.0.0.2"});
  ASSERT_NE(second, nullptr);
  ASSERT_TRUE(WaitFor([&] { return first->Count().closed == 1; }));
  EXPECT_TRUE(first->closed(0));  // the oldest
  EXPECT_EQ(second->Count().open, 1);
  EXPECT_EQ(other->Count().open, 2);
  const ConnectionStats s = server_->connection_stats();
  EXPECT_EQ(s.open, 6u);
  EXPECT_EQ(s.peers, 2u);
  EXPECT_EQ(s.shed_total, 1u);
  EXPECT_EQ(s.refused_total, 0u);
  EXPECT_TRUE(s.shedding);
}

// A flood of idle connections from many peers fills the listener; a proven keep-alive connection
// and a request being handled survive it, and a new client still gets its answer.
TEST_F(HttpServerLimitsTest, AFloodShedsIdleStrangersButNeitherProvenNorBusyConnections) {
  ASSERT_NO_FATAL_FAILURE(Start(/*max=*/8, /*per_peer=*/8));
  auto proven = Proven();
  ASSERT_NE(proven, nullptr);
  auto busy = Busy();
  ASSERT_NE(busy, nullptr);
  auto flood = Flood(40, {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"});
  ASSERT_NE(flood, nullptr);
  EXPECT_EQ(flood->connected(), 40);
  ASSERT_TRUE(WaitFor([&] { return server_->connection_stats().shed_total >= 34; }));
  // A new client gets in (taking an idle stranger's place) and is answered.
  auto fresh = ht::RawConnection::Connect(server_->port());
  ASSERT_NE(fresh, nullptr);
  ASSERT_TRUE(fresh->Send(ht::SimpleRequest("GET", "/fresh", "")));
  const ht::RawResponse fr = fresh->ReadResponse();
  ASSERT_TRUE(fr.ok);
  EXPECT_EQ(fr.status, 200);
  // The proven connection is still served on the same connection; the busy one is answered.
  ASSERT_TRUE(proven->Send(ht::SimpleRequest("GET", "/again", "")));
  const ht::RawResponse pr = proven->ReadResponse();
  ASSERT_TRUE(pr.ok);
  EXPECT_EQ(pr.body, "ok /again");
  blocking_->gate.Open();
  const ht::RawResponse br = busy->ReadResponse();
  ASSERT_TRUE(br.ok);
  EXPECT_EQ(br.body, "ok /block");
  const ConnectionStats s = server_->connection_stats();
  EXPECT_LE(s.open, 8u);
  EXPECT_EQ(s.refused_total, 0u);
  EXPECT_GE(flood->Count().closed, 34);
}

// When the only idle connection is a proven one, it goes; when nothing is idle, the newcomer is
// refused (closed at once) and the requests being handled are answered.
TEST_F(HttpServerLimitsTest, WithNothingIdleANewConnectionIsRefusedAndBusyOnesAreAnswered) {
  ASSERT_NO_FATAL_FAILURE(Start(/*max=*/3, /*per_peer=*/3));
  auto proven = Proven();
  ASSERT_NE(proven, nullptr);
  auto busy1 = Busy();
  auto busy2 = Busy();
  ASSERT_NE(busy1, nullptr);
  ASSERT_NE(busy2, nullptr);
  auto newcomer = Busy();  // takes the proven (only idle) connection's place and is handled
  ASSERT_NE(newcomer, nullptr);
  EXPECT_TRUE(proven->WaitForClose());
  auto refused = ht::RawConnection::Connect(server_->port());
  ASSERT_NE(refused, nullptr);  // the kernel completed the connect; the server closes it at once
  EXPECT_TRUE(refused->WaitForClose());
  ASSERT_TRUE(WaitFor([&] { return server_->connection_stats().refused_total == 1; }));
  blocking_->gate.Open();
  for (auto* c : {busy1.get(), busy2.get(), newcomer.get()}) {
    const ht::RawResponse r = c->ReadResponse();
    ASSERT_TRUE(r.ok);
    EXPECT_EQ(r.status, 200);
  }
  const ConnectionStats s = server_->connection_stats();
  EXPECT_EQ(s.shed_total, 1u);
  EXPECT_EQ(s.refused_total, 1u);
}

// Slow-loris clients (a request started and kept alive byte by byte) are as sheddable as idle
// ones: they never finished a request.
TEST_F(HttpServerLimitsTest, SlowLorisConnectionsAreShedForANewClient) {
  ASSERT_NO_FATAL_FAILURE(Start(/*max=*/4, /*per_peer=*/4));
  auto loris = Flood(4, {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}, /*slow_loris=*/true);
  ASSERT_NE(loris, nullptr);
  ASSERT_TRUE(OpenIs(4));
  loris->Trickle();
  auto client = ht::RawConnection::Connect(server_->port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Send(ht::SimpleRequest("GET", "/legit", "")));
  const ht::RawResponse r = client->ReadResponse();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.body, "ok /legit");
  ASSERT_TRUE(WaitFor([&] { return loris->Count().closed == 1; }));
  EXPECT_TRUE(loris->closed(0));
  EXPECT_EQ(server_->connection_stats().shed_total, 1u);
}

}  // namespace
}  // namespace clawguard::host
