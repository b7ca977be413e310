// http_server_test.cpp — HttpServer on real loopback sockets (port 0): keep-alive, size limits,
// timeouts, concurrency, graceful stop and TLS. No test asserts a wall-clock duration.
// Over 500 lines on purpose: one server fixture and raw-socket helpers for every behaviour above.
#include "host/http/http_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "host/erp/erp_client.h"
#include "host/http/problem.h"
#include "support/raw_client.h"
#include "support/reason_matchers.h"
#include "support/temp_dir.h"
#include "support/test_pki.h"

using ::clawguard::testing::HasReason;

namespace clawguard::host {
namespace {

namespace ht = clawguard::host::testing;

HttpResponse Echo(const HttpRequest& r) {
  HttpResponse res;
  res.headers.Set("Content-Type", "text/plain");
  res.body = r.method + " " + r.target + " " + r.body;
  return res;
}

std::unique_ptr<HttpServer> Started(ServerOptions options, Handler handler) {
  auto server = HttpServer::Create(std::move(options), std::move(handler));
  if (!server.ok()) {
    ADD_FAILURE() << server.error().ToString();
    return nullptr;
  }
  Status started = (*server)->Start();
  EXPECT_TRUE(started.ok()) << started.ToString();
  return std::move(server).value();
}

TEST(HttpServerTest, BindsPortZeroAndReportsTheRealPort) {
  auto server = Started({}, Echo);
  ASSERT_NE(server, nullptr);
  EXPECT_NE(server->port(), 0);
}

TEST(HttpServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  auto server = Started({}, Echo);
  ASSERT_NE(server, nullptr);
  auto conn = ht::RawConnection::Connect(server->port());
  ASSERT_NE(conn, nullptr);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(conn->Send(
        ht::SimpleRequest("POST", "/r" + std::to_string(i), "body" + std::to_string(i))));
    ht::RawResponse r = conn->ReadResponse();
    ASSERT_TRUE(r.ok) << i;
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "POST /r" + std::to_string(i) + " body" + std::to_string(i));
  }
  // Two pipelined requests in one write are answered in order on the same connection.
  ASSERT_TRUE(conn->Send(ht::SimpleRequest("GET", "/a", "") + ht::SimpleRequest("GET", "/b", "")));
  EXPECT_EQ(conn->ReadResponse().body, "GET /a ");
  EXPECT_EQ(conn->ReadResponse().body, "GET /b ");
}

TEST(HttpServerTest, HandlerSeesHeadersAndItsHeadersAreSent) {
  auto server = Started({}, [](const HttpRequest& r) {
    HttpResponse res;
    res.status = 202;
    res.headers.Set("X-Seen", std::string(r.headers.Get("x-webhook-id").value_or("none")));
    res.headers.Set("Retry-After", "7");
    return res;
  });
  ASSERT_NE(server, nullptr);
  auto conn = ht::RawConnection::Connect(server->port());
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(conn->Send(ht::SimpleRequest("POST", "/", "{}", "X-Webhook-Id: msg_1\r\n")));
  ht::RawResponse r = conn->ReadResponse();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 202);
  EXPECT_EQ(r.headers.Get("X-Seen"), "msg_1");
  EXPECT_EQ(r.headers.Get("Retry-After"), "7");
}

TEST(HttpServerTest, BodyOverTheLimitGets413ProblemAndTheConnectionCloses) {
  ServerOptions options;
  options.max_body = 1024;
  std::atomic<int> calls{0};
  auto server = Started(options, [&](const HttpRequest& r) {
    ++calls;
    return Echo(r);
  });
  ASSERT_NE(server, nullptr);
  auto conn = ht::RawConnection::Connect(server->port());
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(conn->Send(ht::SimpleRequest("POST", "/", std::string(64 * 1024, 'x'))));
  ht::RawResponse r = conn->ReadResponse();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.headers.Get("Content-Type"), "application/problem+json");
  EXPECT_NE(r.body.find("https://clawguard.dev/problems/request_too_large"), std::string::npos)
      << r.body;
  EXPECT_EQ(r.headers.Get("Connection"), "close");
  EXPECT_TRUE(conn->WaitForClose());
  EXPECT_EQ(calls.load(), 0);
}

TEST(HttpServerTest, ChunkedBodyOverTheLimitGets413) {
  ServerOptions options;
  options.max_body = 1024;
  auto server = Started(options, Echo);
  ASSERT_NE(server, nullptr);
  auto conn = ht::RawConnection::Connect(server->port());
  ASSERT_NE(conn, nullptr);
  std::string chunk(2000, 'y');
  ASSERT_TRUE(conn->Send("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n7d0\r\n" +
                         chunk + "\r\n0\r\n\r\n"));
  ht::RawResponse r = conn->ReadResponse();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 413);
  EXPECT_TRUE(conn->WaitForClose());
}

TEST(HttpServerTest, HeadersOverTheLimitGet413AndTheConnectionCloses) {
  ServerOptions options;
  options.max_headers = 1024;
  auto server = Started(options, Echo);
  ASSERT_NE(server, nullptr);
  auto conn = ht::RawConnection::Connect(server->port());
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(
      conn->Send(ht::SimpleRequest("GET", "/", "", "X-Big: " + std::string(4000, 'h') + "\r\n")));
  ht::RawResponse r = conn->ReadResponse();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 413);
  EXPECT_NE(r.body.find("request_too_large"), std::string::npos);
  EXPECT_TRUE(conn->WaitForClose());
}

TEST(HttpServerTest, SlowClientIsDisconnectedAfterTheReadTimeout) {
  ServerOptions options;
  options.read_timeout = std::chrono::milliseconds(200);
  std::atomic<int> calls{0};
  auto server = Started(options, [&](const HttpRequest& r) {
    ++calls;
    return Echo(r);
  });
  ASSERT_NE(server, nullptr);
  auto conn = ht::RawConnection::Connect(server->port());
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(
      conn->Send("POST /webhooks/a/b HTTP/1.1\r\nHost: h\r\nContent-Le"));  // half, then nothing
  EXPECT_TRUE(conn->WaitForClose());
  EXPECT_EQ(calls.load(), 0);
}

TEST(HttpServerTest, IdleKeepAliveConnectionIsClosedAfterTheIdleTimeout) {
  ServerOptions options;
  options.idle_timeout = std::chrono::milliseconds(200);
  auto server = Started(options, Echo);
  ASSERT_NE(server, nullptr);
  auto conn = ht::RawConnection::Connect(server->port());
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(conn->Send(ht::SimpleRequest("GET", "/", "")));
  ASSERT_TRUE(conn->ReadResponse().ok);
  EXPECT_TRUE(conn->WaitForClose());
}

TEST(HttpServerTest, MalformedRequestGets400) {
  auto server = Started({}, Echo);
  ASSERT_NE(server, nullptr);
  auto conn = ht::RawConnection::Connect(server->port());
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(conn->Send("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: banana\r\n\r\n"));
  ht::RawResponse r = conn->ReadResponse();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 400);
  EXPECT_TRUE(conn->WaitForClose());
}

TEST(HttpServerTest, HandlerExceptionBecomes500WithoutItsText) {
  auto server = Started({}, [](const HttpRequest&) -> HttpResponse {
    throw std::runtime_error("secret-ish detail");
  });
  ASSERT_NE(server, nullptr);
  auto conn = ht::RawConnection::Connect(server->port());
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(conn->Send(ht::SimpleRequest("GET", "/", "")));
  ht::RawResponse r = conn->ReadResponse();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body.find("secret-ish"), std::string::npos);
}

TEST(HttpServerTest, HeaderWithLineBreakFromHandlerBecomes500) {
  auto server = Started({}, [](const HttpRequest&) {
    HttpResponse res;
    res.headers.Set("X-Injected", "a\r\nSet-Cookie: x=1");
    return res;
  });
  ASSERT_NE(server, nullptr);
  auto conn = ht::RawConnection::Connect(server->port());
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(conn->Send(ht::SimpleRequest("GET", "/", "")));
  ht::RawResponse r = conn->ReadResponse();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 500);
  EXPECT_FALSE(r.headers.Has("Set-Cookie"));
}

TEST(HttpServerTest, HeaderTooLargeToRenderBecomes500AndTheServerKeepsServing) {
  auto server = Started({}, [](const HttpRequest& r) {
    HttpResponse res;
    if (r.target == "/huge")
      res.headers.Set("X-Huge", std::string(70'000, 'v'));  // over Beast's field limit
    return res;
  });
  ASSERT_NE(server, nullptr);
  auto conn = ht::RawConnection::Connect(server->port());
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(conn->Send(ht::SimpleRequest("GET", "/huge", "")));
  ht::RawResponse r = conn->ReadResponse();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 500);
  auto next = ht::RawConnection::Connect(server->port());
  ASSERT_NE(next, nullptr);
  ASSERT_TRUE(next->Send(ht::SimpleRequest("GET", "/fine", "")));
  EXPECT_EQ(next->ReadResponse().status, 200);
}

TEST(HttpServerTest, AbortStatusClosesWithoutAnAnswer) {
  auto server = Started({}, [](const HttpRequest&) {
    return HttpResponse{kAbortConnection, {}, {}};
  });
  ASSERT_NE(server, nullptr);
  auto conn = ht::RawConnection::Connect(server->port());
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(conn->Send(ht::SimpleRequest("GET", "/", "")));
  EXPECT_FALSE(conn->ReadResponse().ok);
}

TEST(HttpServerTest, EightClientsTimesTwoHundredRequestsAreAllAnswered) {
  ServerOptions options;
  options.workers = 4;
  auto server = Started(options, Echo);
  ASSERT_NE(server, nullptr);
  constexpr int kClients = 8;
  constexpr int kRequests = 200;
  std::atomic<int> answered{0};
  std::vector<std::thread> clients;
  clients.reserve(kClients);
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      auto conn = ht::RawConnection::Connect(server->port());
      if (!conn) return;
      for (int i = 0; i < kRequests; ++i) {
        const std::string body = std::to_string(c) + ":" + std::to_string(i);
        if (!conn->Send(ht::SimpleRequest("POST", "/c", body))) return;
        ht::RawResponse r = conn->ReadResponse();
        if (!r.ok || r.status != 200 || r.body != "POST /c " + body) return;
        ++answered;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(answered.load(), kClients * kRequests);
}

TEST(HttpServerTest, StopFinishesTheRequestInFlightAndRefusesNewConnections) {
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false;
  bool release = false;
  auto server = Started({}, [&](const HttpRequest& r) {
    std::unique_lock<std::mutex> lock(mu);
    entered = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
    return Echo(r);
  });
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();
  auto conn = ht::RawConnection::Connect(port);
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(conn->Send(ht::SimpleRequest("POST", "/slow", "x")));
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return entered; });
  }
  std::thread stopper([&] { server->Stop(); });
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  ht::RawResponse r = conn->ReadResponse();
  stopper.join();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "POST /slow x");
  // Whether the answer was written before or after Stop began, the connection then ends.
  EXPECT_TRUE(conn->WaitForClose());
  EXPECT_EQ(ht::RawConnection::Connect(port), nullptr);
}

TEST(HttpServerTest, CreateRefusesBadOptions) {
  ServerOptions no_workers;
  no_workers.workers = 0;
  EXPECT_THAT(HttpServer::Create(no_workers, Echo), HasReason(Reason::kConfigInvalid));
  ServerOptions bad_address;
  bad_address.address = "localhost";
  EXPECT_THAT(HttpServer::Create(bad_address, Echo), HasReason(Reason::kConfigInvalid));
  ServerOptions bad_timeout;
  bad_timeout.read_timeout = std::chrono::milliseconds(0);
  EXPECT_THAT(HttpServer::Create(bad_timeout, Echo), HasReason(Reason::kConfigInvalid));
  ServerOptions missing_tls;
  missing_tls.tls = ServerTls{"/nonexistent/cert.pem", "/nonexistent/key.pem"};
  EXPECT_THAT(HttpServer::Create(missing_tls, Echo), HasReason(Reason::kConfigInvalid));
  EXPECT_THAT(HttpServer::Create({}, Handler()), HasReason(Reason::kConfigInvalid));
}

TEST(HttpServerTest, CreateRefusesBadHandlerThreadCounts) {
  ServerOptions too_many;
  too_many.handler_threads = static_cast<int>(limits::kMaxHandlerThreads) + 1;
  EXPECT_THAT(HttpServer::Create(too_many, Echo), HasReason(Reason::kConfigInvalid));
  ServerOptions negative;
  negative.handler_threads = -1;
  EXPECT_THAT(HttpServer::Create(negative, Echo), HasReason(Reason::kConfigInvalid));
  EXPECT_THAT(HttpServer::CreateWithFront({}, FrontHandler()), HasReason(Reason::kConfigInvalid));
}

// The front answers on the I/O thread; what it defers runs on a handler thread with what the
// front captured; either way the answers come back in request order on one connection.
TEST(HttpServerTest, FrontAnswersInlineAndDefersTheRestWithItsState) {
  std::mutex mu;
  std::set<std::thread::id> front_threads, deferred_threads;
  auto server = HttpServer::CreateWithFront(
      {}, [&](const HttpRequest& r) -> std::variant<HttpResponse, Deferred> {
        {
          std::lock_guard lock(mu);
          front_threads.insert(std::this_thread::get_id());
        }
        if (r.target == "/inline") return Echo(r);
        const std::string learnt = "front saw " + r.target;
        Deferred later;
        later.run = [&, learnt](const HttpRequest& again) {
          {
            std::lock_guard lock(mu);
            deferred_threads.insert(std::this_thread::get_id());
          }
          HttpResponse res = Echo(again);
          res.body += " / " + learnt;
          return res;
        };
        return later;
      });
  ASSERT_TRUE(server.ok()) << server.error().ToString();
  ASSERT_TRUE((*server)->Start().ok());
  auto conn = ht::RawConnection::Connect((*server)->port());
  ASSERT_NE(conn, nullptr);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(conn->Send(ht::SimpleRequest("POST", "/inline", "a") +
                           ht::SimpleRequest("POST", "/later", "b")));
    ht::RawResponse first = conn->ReadResponse();
    ht::RawResponse second = conn->ReadResponse();
    ASSERT_TRUE(first.ok && second.ok) << i;
    EXPECT_EQ(first.body, "POST /inline a");
    EXPECT_EQ(second.body, "POST /later b / front saw /later");
  }
  (*server)->Stop();
  std::lock_guard lock(mu);
  ASSERT_FALSE(deferred_threads.empty());
  for (const std::thread::id& t : deferred_threads)
    EXPECT_EQ(front_threads.count(t), 0u) << "deferred work ran on an I/O thread";
}

TEST(HttpServerTest, FrontExceptionOrEmptyDeferralBecomes500) {
  auto server = HttpServer::CreateWithFront(
      {}, [](const HttpRequest& r) -> std::variant<HttpResponse, Deferred> {
        if (r.target == "/throw") throw std::runtime_error("secret-ish detail");
        return Deferred{};
      });
  ASSERT_TRUE(server.ok()) << server.error().ToString();
  ASSERT_TRUE((*server)->Start().ok());
  for (const char* target : {"/throw", "/empty"}) {
    // Each on its own connection: an error answer ends a connection that proved nothing.
    auto conn = ht::RawConnection::Connect((*server)->port());
    ASSERT_NE(conn, nullptr);
    ASSERT_TRUE(conn->Send(ht::SimpleRequest("GET", target, "")));
    ht::RawResponse r = conn->ReadResponse();
    ASSERT_TRUE(r.ok) << target;
    EXPECT_EQ(r.status, 500) << target;
    EXPECT_EQ(r.body.find("secret-ish"), std::string::npos);
  }
}

TEST(HttpServerTest, CreateReportsAnAddressInUse) {
  auto first = Started({}, Echo);
  ASSERT_NE(first, nullptr);
  ServerOptions same;
  same.address = "127.0.0.1:" + std::to_string(first->port());
  auto second = HttpServer::Create(same, Echo);
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second, HasReason(Reason::kInternal));
}

TEST(HttpServerTest, TlsRoundTripWithAThrowawayCertificate) {
  clawguard::testing::TempDir dir;
  ht::TestPki pki;
  std::string error;
  ASSERT_TRUE(ht::MakeTestPki(dir.path().string(), "tls", &pki, &error)) << error;
  ServerOptions options;
  options.tls = ServerTls{pki.leaf_cert, pki.leaf_key};
  auto server = Started(options, Echo);
  ASSERT_NE(server, nullptr);

  ErpClientOptions client_options;
  client_options.base_url = "https://localhost:" + std::to_string(server->port());
  client_options.ca_file = pki.ca_cert;
  auto client = ErpClient::Create(std::move(client_options));
  ASSERT_TRUE(client.ok()) << client.error().ToString();
  for (int i = 0; i < 3; ++i) {  // several calls: the TLS connection is kept alive and reused
    auto reply = (*client)->Send("POST", "/tls", {}, "hello");
    ASSERT_TRUE(reply.ok()) << reply.error().ToString();
    EXPECT_EQ(reply->status, 200);
    EXPECT_EQ(reply->body, "POST /tls hello");
  }

  // A plain-text client on the TLS port gets no HTTP answer.
  auto conn = ht::RawConnection::Connect(server->port());
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(conn->Send(ht::SimpleRequest("GET", "/", "")));
  EXPECT_FALSE(conn->ReadResponse().ok);
}

// Started is a Deferred whose start hands the request and its Responder to |sink|.
Deferred Started(std::function<void(HttpRequest, Responder)> sink) {
  Deferred later;
  later.start = std::move(sink);
  return later;
}

// A started request is answered whenever, and from whichever thread, its Responder is answered;
// the connection meanwhile waits (keep-alive intact), and the first answer wins.
TEST(HttpServerTest, StartedRequestIsAnsweredLaterFromAnotherThreadFirstAnswerWins) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<HttpRequest, Responder>> pending;
  auto server = HttpServer::CreateWithFront(
      {}, [&](const HttpRequest& r) -> std::variant<HttpResponse, Deferred> {
        if (r.target == "/inline") return Echo(r);
        return Started([&](HttpRequest req, Responder respond) {
          std::lock_guard lock(mu);
          pending.emplace_back(std::move(req), std::move(respond));
          cv.notify_all();
        });
      });
  ASSERT_TRUE(server.ok()) << server.error().ToString();
  ASSERT_TRUE((*server)->Start().ok());
  auto conn = ht::RawConnection::Connect((*server)->port());
  ASSERT_NE(conn, nullptr);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(conn->Send(ht::SimpleRequest("POST", "/later", "b" + std::to_string(i))));
    std::pair<HttpRequest, Responder> got;
    {
      std::unique_lock lock(mu);
      ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return !pending.empty(); }));
      got = std::move(pending.front());
      pending.clear();
    }
    EXPECT_EQ(got.first.body, "b" + std::to_string(i));
    Responder copy = got.second;
    std::thread([respond = got.second, req = got.first] {
      EXPECT_TRUE(respond.Answer(Echo(req)));
    }).join();
    EXPECT_TRUE(copy.answered());
    EXPECT_FALSE(copy.Answer(BlankProblemResponse(503, "too late")));  // ignored: answered already
    ht::RawResponse r = conn->ReadResponse();
    ASSERT_TRUE(r.ok) << i;
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "POST /later b" + std::to_string(i));
  }
  ASSERT_TRUE(
      conn->Send(ht::SimpleRequest("POST", "/inline", "c")));  // same connection, still alive
  ht::RawResponse r = conn->ReadResponse();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.body, "POST /inline c");
}

// A Responder dropped unanswered answers 500; a start that throws answers 500; neither leaks
// what was thrown.
TEST(HttpServerTest, StartedRequestWhoseResponderIsLostOrWhoseStartThrowsIs500) {
  auto server = HttpServer::CreateWithFront(
      {}, [](const HttpRequest& r) -> std::variant<HttpResponse, Deferred> {
        if (r.target == "/throw") {
          return Started([](const HttpRequest&, const Responder&) {
            throw std::runtime_error("secret-ish detail");
          });
        }
        return Started([](const HttpRequest&, Responder respond) {
          std::thread([dropped = std::move(respond)] {
          }).join();  // the last copy dies on another thread
        });
      });
  ASSERT_TRUE(server.ok()) << server.error().ToString();
  ASSERT_TRUE((*server)->Start().ok());
  auto conn = ht::RawConnection::Connect((*server)->port());
  ASSERT_NE(conn, nullptr);
  for (const char* target : {"/throw", "/lost", "/throw"}) {
    ASSERT_TRUE(conn->Send(ht::SimpleRequest("POST", target, "")));
    ht::RawResponse r = conn->ReadResponse();
    ASSERT_TRUE(r.ok) << target;
    EXPECT_EQ(r.status, 500) << target;
    EXPECT_NE(r.body.find("/problems/internal\""), std::string::npos) << r.body;
    EXPECT_EQ(r.body.find("secret-ish"), std::string::npos);
  }
}

// Stop waits for a started request's answer, not for the thread that gave it: a thread that
// answers and then stays busy (a hung plugin's) neither blocks Stop nor keeps the server alive.
TEST(HttpServerTest, StopWaitsForTheAnswerNotForTheThreadThatKeepsItsResponder) {
  std::atomic<bool> release{false};
  std::atomic<bool> thread_done{false};
  std::thread stuck;
  std::mutex mu;
  std::condition_variable cv;
  bool started = false;
  auto server = HttpServer::CreateWithFront(
      {}, [&](const HttpRequest&) -> std::variant<HttpResponse, Deferred> {
        return Started([&](const HttpRequest&, const Responder& respond) {
          stuck = std::thread([&, respond] {
            respond.Answer(BlankProblemResponse(503, "given up"));
            while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            EXPECT_FALSE(respond.Answer(BlankProblemResponse(200, "late")));
            thread_done.store(true);
          });
          std::lock_guard lock(mu);
          started = true;
          cv.notify_all();
        });
      });
  ASSERT_TRUE(server.ok()) << server.error().ToString();
  ASSERT_TRUE((*server)->Start().ok());
  {
    auto conn = ht::RawConnection::Connect((*server)->port());
    ASSERT_NE(conn, nullptr);
    ASSERT_TRUE(conn->Send(ht::SimpleRequest("POST", "/x", "")));
    ht::RawResponse r = conn->ReadResponse();
    ASSERT_TRUE(r.ok);
    EXPECT_EQ(r.status, 503);
  }
  (*server)->Stop();  // returns although the thread still holds a copy of the Responder
  server->reset();    // and the server is gone
  EXPECT_FALSE(thread_done.load());
  release.store(true);
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(started);
  }
  stuck.join();
  EXPECT_TRUE(thread_done.load());
}

}  // namespace
}  // namespace clawguard::host
