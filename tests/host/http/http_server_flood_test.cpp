// http_server_flood_test.cpp — HttpServer against peers that have proven nothing, pipeline
// requests and never read an answer (PipelineFlood, from 127.0.0.2–5), filling the listener.
// Every answer they get is larger than the kernel lets a socket buffer (tcp_wmem's maximum) plus
// their receive window, so the server's write of it cannot finish while they do not read — the
// server is "answering" them for as long as they like. Such a connection is still sheddable,
// whatever the answer — a FrontHandler's refusal, a FrontHandler's 200 that proves nothing (GET
// /healthz), a plain Handler's refusal —, and every signed delivery on a fresh connection is
// answered (retried as a platform retries a delivery that got no answer). A refusal ends an
// unproven connection, so its pipelined requests are not answered; a proven connection is kept
// alive after a refusal. No test asserts a wall-clock duration.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "clawguard/limits.h"
#include "host/http/http_server.h"
#include "support/gate.h"
#include "support/pipeline_flood.h"
#include "support/raw_client.h"

namespace clawguard::host {
namespace {

namespace ht = clawguard::host::testing;
using clawguard::testing::WaitFor;

// The test's stand-in for authentication: a request carrying it is handed on (proves the
// connection); any other is answered at once, as the webhook front answers a forged delivery.
constexpr std::string_view kProof = "X-Test-Proof: signed\r\n";
const std::vector<std::string> kSources = {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"};
constexpr int kPerPeer = 3;
constexpr int kFlood = 12;  // kSources × kPerPeer: the whole listener
constexpr int kPipelined = 4;
constexpr int kDeliveries = 6;
constexpr int kAttempts = 5;  // per delivery, as a platform retries one that got no answer

// BigAnswerBytes is more than one socket may buffer (autotuning stops at tcp_wmem's maximum)
// plus a peer's receive window: the write of such an answer to a peer that never reads blocks.
size_t BigAnswerBytes() {
  uint64_t lo = 0;
  uint64_t initial = 0;
  uint64_t max = 0;
  std::ifstream in("/proc/sys/net/ipv4/tcp_wmem");
  in >> lo >> initial >> max;
  return static_cast<size_t>(std::max<uint64_t>(max, 4 * limits::kMiB) + limits::kMiB);
}

HttpResponse Text(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.headers.Set("Content-Type", "text/plain");
  r.body = std::move(body);
  return r;
}

// How the flood's requests are answered (the server under test).
enum class FloodAnswer {
  kFrontRefusal,     // a FrontHandler answers 401 inline
  kFrontUnprovenOk,  // a FrontHandler answers 200 inline without the request proving anything
  kHandlerRefusal,   // a plain Handler answers 401 (as the admin listener without its token)
};

std::string Name(FloodAnswer a) {
  switch (a) {
    case FloodAnswer::kFrontRefusal: return "FrontRefusal";
    case FloodAnswer::kFrontUnprovenOk: return "FrontOkThatProvesNothing";
    case FloodAnswer::kHandlerRefusal: return "HandlerRefusal";
  }
  return "unknown";
}
std::string AnswerName(const ::testing::TestParamInfo<FloodAnswer>& info) {
  return Name(info.param);
}
void PrintTo(FloodAnswer a, std::ostream* os) { *os << Name(a); }

class HttpServerFloodTest : public ::testing::Test {
 protected:
  void Start(FloodAnswer answer, size_t answer_bytes) {
    ServerOptions o;
    o.workers = 2;
    o.handler_threads = 2;
    o.max_connections = kFlood;
    o.max_connections_per_peer = kPerPeer;
    // Nothing ends by itself while the test runs: only shedding can make room.
    o.write_timeout = std::chrono::milliseconds(120'000);
    o.read_timeout = std::chrono::milliseconds(120'000);
    o.idle_timeout = std::chrono::milliseconds(120'000);
    const auto body = std::make_shared<const std::string>(answer_bytes, 'x');
    auto unproven = [this, answer, body](const HttpRequest&) {
      ++answered_;
      return answer == FloodAnswer::kFrontUnprovenOk ? Text(200, *body) : Text(401, *body);
    };
    Result<std::unique_ptr<HttpServer>> server = Status(Reason::kInternal, "not made");
    if (answer == FloodAnswer::kHandlerRefusal) {
      server = HttpServer::Create(std::move(o), [unproven](const HttpRequest& r) {
        return r.headers.Has("X-Test-Proof") ? Text(200, "delivered " + r.target) : unproven(r);
      });
    } else {
      server = HttpServer::CreateWithFront(
          std::move(o), [unproven](const HttpRequest& r) -> std::variant<HttpResponse, Deferred> {
            if (r.headers.Has("X-Test-Proof")) {
              Deferred later;
              later.run = [](const HttpRequest& req) {
                return Text(200, "delivered " + req.target);
              };
              return later;
            }
            return unproven(r);
          });
    }
    ASSERT_TRUE(server.ok()) << server.error().ToString();
    server_ = std::move(server).value();
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    flood_.reset();  // the peers go first: the server's blocked writes then fail at once
    if (server_) server_->Stop();
  }
  std::unique_ptr<ht::PipelineFlood> Flood(const std::string& request) {
    ht::PipelineFloodOptions o;
    o.port = server_->port();
    o.connections = kFlood;
    o.sources = kSources;
    for (int i = 0; i < kPipelined; ++i) o.payload += request;
    return ht::PipelineFlood::Open(o);
  }
  // Deliver sends a signed delivery on a fresh connection, again on a new one while it gets no
  // answer (refused, or shed before its request was read), at most kAttempts times.
  ht::RawResponse Deliver(const std::string& target, int* attempts) {
    ht::RawResponse r;
    for (*attempts = 1; *attempts <= kAttempts; ++*attempts) {
      auto c = ht::RawConnection::Connect(server_->port());
      if (c != nullptr && c->Send(ht::SimpleRequest("POST", target, "{}", kProof)))
        r = c->ReadResponse();
      if (r.ok) return r;
    }
    return r;
  }

  std::atomic<int> answered_{0};  // requests answered without proof
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<ht::PipelineFlood> flood_;
};

class HttpServerFloodAnswersTest : public HttpServerFloodTest,
                                   public ::testing::WithParamInterface<FloodAnswer> {};

TEST_P(HttpServerFloodAnswersTest,
       SignedDeliveriesTakeThePlaceOfUnprovenPeersThatNeverReadTheirAnswers) {
  ASSERT_NO_FATAL_FAILURE(Start(GetParam(), BigAnswerBytes()));
  const std::string target =
      GetParam() == FloodAnswer::kFrontUnprovenOk ? "/healthz" : "/webhooks/p/r";
  flood_ = Flood(ht::SimpleRequest("POST", target, "{}"));
  ASSERT_NE(flood_, nullptr);
  int total_attempts = 0;
  for (int d = 0; d < kDeliveries; ++d) {
    // The flood holds the whole listener, and every connection of it is being answered: each
    // delivery so far took one flood connection's place, and the flood opened another.
    ASSERT_TRUE(WaitFor([&] {
      flood_->Refill(kFlood);
      flood_->Pump(0);
      return flood_->delivered() == kFlood &&
             server_->connection_stats().open == static_cast<uint64_t>(kFlood) &&
             answered_.load() >= kFlood + d;
    })) << "open "
        << server_->connection_stats().open << ", flood delivered " << flood_->delivered()
        << ", answered " << answered_.load();
    int attempts = 0;
    const ht::RawResponse r = Deliver("/deliveries/" + std::to_string(d), &attempts);
    total_attempts += attempts;
    ASSERT_TRUE(r.ok) << "delivery " << d << " got no answer in " << kAttempts << " attempts; "
                      << server_->connection_stats().refused_total << " connections refused";
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "delivered /deliveries/" + std::to_string(d));
  }
  const ConnectionStats s = server_->connection_stats();
  std::cout << "[ measured ] " << kDeliveries << " of " << kDeliveries << " deliveries answered in "
            << total_attempts << " attempts; shed " << s.shed_total << ", refused "
            << s.refused_total << ", flood connections opened " << flood_->opened_total()
            << ", closed by the server " << flood_->closed_total() << "\n";
  EXPECT_GE(s.shed_total, static_cast<uint64_t>(kDeliveries));
  // No flood connection got a second answer: its first one is still being written.
  EXPECT_LE(static_cast<uint64_t>(answered_.load()), flood_->opened_total());
}

INSTANTIATE_TEST_SUITE_P(Answers, HttpServerFloodAnswersTest,
                         ::testing::Values(FloodAnswer::kFrontRefusal,
                                           FloodAnswer::kFrontUnprovenOk,
                                           FloodAnswer::kHandlerRefusal),
                         AnswerName);

// A refusal ends a connection that has proven nothing: of requests pipelined behind a forged one,
// none is answered, and the answer says Connection: close.
TEST_F(HttpServerFloodTest, ARefusalEndsAnUnprovenConnectionWithoutAnsweringItsPipelinedRequests) {
  ASSERT_NO_FATAL_FAILURE(Start(FloodAnswer::kFrontRefusal, /*answer_bytes=*/64));
  auto c = ht::RawConnection::Connect(server_->port());
  ASSERT_NE(c, nullptr);
  std::string pipelined;
  for (int i = 0; i < kPipelined; ++i)
    pipelined += ht::SimpleRequest("POST", "/webhooks/p/r", "{}");
  ASSERT_TRUE(c->Send(pipelined));
  const ht::RawResponse r = c->ReadResponse();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.headers.Get("Connection"), "close");
  EXPECT_TRUE(c->WaitForClose());
  EXPECT_EQ(answered_.load(), 1);
}

// A connection that has proven itself (a delivery handed on) keeps its keep-alive after a
// refusal: a platform's connection is not cut for one bad request.
TEST_F(HttpServerFloodTest, AProvenConnectionIsKeptAliveAfterARefusal) {
  ASSERT_NO_FATAL_FAILURE(Start(FloodAnswer::kFrontRefusal, /*answer_bytes=*/64));
  auto c = ht::RawConnection::Connect(server_->port());
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Send(ht::SimpleRequest("POST", "/one", "{}", kProof)));
  ht::RawResponse r = c->ReadResponse();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.body, "delivered /one");
  ASSERT_TRUE(c->Send(ht::SimpleRequest("POST", "/forged", "{}")));
  r = c->ReadResponse();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 401);
  EXPECT_FALSE(r.headers.Has("Connection"));
  ASSERT_TRUE(c->Send(ht::SimpleRequest("POST", "/two", "{}", kProof)));
  r = c->ReadResponse();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.body, "delivered /two");
}

}  // namespace
}  // namespace clawguard::host
