// erp_client_test.cpp — ErpClient option checks, failure kinds and request shaping (against
// the test ERP on loopback), and its reading of answers by RFC 9110/9112 against raw socket
// peers that shape every byte: interim answers, 101, a second answer, an answer cut short,
// garbage, a timed-out connection, a kept-alive connection the ERP closed, and a name
// resolution that never finishes.
// Over 500 lines on purpose: the raw peers share one socket fixture, and the answer-reading cases
// read best beside each other (each RFC rule next to its neighbours).
#include "host/erp/erp_client.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "clawguard/limits.h"
#include "host/http/http_server.h"
#include "support/reason_matchers.h"
#include "support/temp_dir.h"
#include "support/test_erp_server.h"

using ::clawguard::testing::HasReason;

namespace clawguard::host {
namespace {

namespace ht = clawguard::host::testing;

Result<std::unique_ptr<ErpClient>> Make(const std::string& base_url,
                                        const std::string& ca_file = "",
                                        std::string_view auth = "token") {
  ErpClientOptions options;
  options.base_url = base_url;
  options.ca_file = ca_file;
  options.auth = SecretBytes(auth);
  return ErpClient::Create(std::move(options));
}

// RawPeer is a one-connection TCP peer on loopback that runs |serve| on the accepted socket: the
// tests below shape the bytes and their timing exactly (split answers, stalls, no reading).
class RawPeer {
 public:
  explicit RawPeer(std::function<void(int fd)> serve) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_fd_, 4) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "cannot listen on loopback";
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this, serve = std::move(serve)] {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      serve(fd);
      ::close(fd);
    });
  }
  ~RawPeer() {
    ::shutdown(listen_fd_, SHUT_RDWR);  // ends an accept that never got a connection
    if (thread_.joinable()) thread_.join();
    ::close(listen_fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // ReadRequest reads until the end of a request's header (the tests send no body).
  static std::string ReadRequest(int fd) {
    std::string got;
    char buf[4096];
    while (got.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
    return got;
  }
  static void SendAll(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
  }

 private:
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

Result<std::unique_ptr<ErpClient>> MakeWithTimeout(const std::string& base_url,
                                                   std::chrono::milliseconds timeout) {
  ErpClientOptions options;
  options.base_url = base_url;
  options.timeout = timeout;
  return ErpClient::Create(std::move(options));
}

TEST(ErpClientTest, CreateRefusesBadOptions) {
  for (const char* url :
       {"", "ftp://erp:1", "http://", "http://erp:0", "http://erp:99999", "http://erp:x",
        "http://user@erp:80", "http://erp:80/p?q=1", "http://[::1"}) {
    auto c = Make(url);
    ASSERT_FALSE(c.ok()) << url;
    EXPECT_THAT(c, HasReason(Reason::kConfigInvalid)) << url;
  }
  EXPECT_THAT(Make("https://erp:8443"), HasReason(Reason::kConfigInvalid));  // https needs erp.ca
  EXPECT_THAT(Make("https://erp:8443", "/nonexistent/ca.pem"), HasReason(Reason::kConfigInvalid));
  auto bad_auth = Make("http://erp:80", "", "Bearer a\r\nX-Evil: 1");
  ASSERT_FALSE(bad_auth.ok());
  EXPECT_THAT(bad_auth, HasReason(Reason::kConfigInvalid));
  EXPECT_EQ(bad_auth.error().message().find("Evil"), std::string::npos);
  ErpClientOptions zero;
  zero.base_url = "http://erp:80";
  zero.timeout = std::chrono::milliseconds(0);
  EXPECT_THAT(ErpClient::Create(std::move(zero)), HasReason(Reason::kConfigInvalid));
  EXPECT_TRUE(Make("http://127.0.0.1:8080/erp/v1/").ok());
  EXPECT_TRUE(Make("http://[::1]:8080").ok());
}

TEST(ErpClientTest, ErpFailureOfReadsOnlyErpFailures) {
  EXPECT_EQ(ErpFailureOf(Status::Ok()), std::nullopt);
  EXPECT_EQ(ErpFailureOf(Status(Reason::kInternal, "disk full")), std::nullopt);
  EXPECT_EQ(ErpFailureOf(Status(Reason::kStoreUnavailable, "erp_timeout: x")), std::nullopt);
  EXPECT_EQ(ErpFailureName(ErpFailure::kTimeout), "timeout");
  EXPECT_EQ(ErpFailureName(ErpFailure::kConnect), "connect");
  EXPECT_EQ(ErpFailureName(ErpFailure::kTls), "tls");
  EXPECT_EQ(ErpFailureName(ErpFailure::kProtocol), "protocol");
}

TEST(ErpClientTest, RefusedConnectionIsAConnectFailure) {
  uint16_t port = 0;
  {
    auto erp = ht::TestErpServer::Create();
    ASSERT_TRUE(erp.ok()) << erp.error().ToString();
    port = (*erp)->port();
  }  // stopped: nothing listens on |port| now
  auto client = Make("http://127.0.0.1:" + std::to_string(port));
  ASSERT_TRUE(client.ok());
  auto reply = (*client)->Send("POST", "/x", {}, "{}");
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(ErpFailureOf(reply.error()), ErpFailure::kConnect) << reply.error().ToString();
}

TEST(ErpClientTest, MalformedCallsAreRefusedBeforeSending) {
  auto erp = ht::TestErpServer::Create();
  ASSERT_TRUE(erp.ok());
  auto client = Make((*erp)->base_url());
  ASSERT_TRUE(client.ok());
  EXPECT_EQ(ErpFailureOf((*client)->Send("POST", "no-slash", {}, "").error()),
            ErpFailure::kProtocol);
  EXPECT_EQ(ErpFailureOf((*client)->Send("POST", "/a b", {}, "").error()), ErpFailure::kProtocol);
  EXPECT_EQ(ErpFailureOf((*client)->Send("PO ST", "/a", {}, "").error()), ErpFailure::kProtocol);
  HttpHeaders split{{"X-A", "1\r\nX-B: 2"}};
  EXPECT_EQ(ErpFailureOf((*client)->Send("POST", "/a", split, "").error()), ErpFailure::kProtocol);
  EXPECT_EQ((*erp)->requests_total(), 0u);
}

TEST(ErpClientTest, PrefixOfTheBaseUrlIsPrependedOnEveryCall) {
  auto erp = ht::TestErpServer::Create();
  ASSERT_TRUE(erp.ok());
  auto client = Make((*erp)->base_url() + "/erp/v1/");
  ASSERT_TRUE(client.ok());
  for (int i = 0; i < 3; ++i) {
    auto reply = (*client)->Send("GET", "/stock/" + std::to_string(i), {}, "");
    ASSERT_TRUE(reply.ok()) << reply.error().ToString();
  }
  auto requests = (*erp)->requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[2].path, "/erp/v1/stock/2");
  EXPECT_EQ(requests[2].method, "GET");
  EXPECT_EQ(requests[2].headers.Get("Authorization"), "token");
}

TEST(ErpClientTest, AnswerOverTheSizeLimitIsAProtocolFailure) {
  auto erp = ht::TestErpServer::Create();
  ASSERT_TRUE(erp.ok());
  ht::ErpAnswer huge;
  huge.body = std::string(limits::kMaxErpResponseBody + 1, 'x');
  (*erp)->SetAnswer("/huge", huge);
  auto client = Make((*erp)->base_url());
  ASSERT_TRUE(client.ok());
  auto reply = (*client)->Send("GET", "/huge", {}, "");
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(ErpFailureOf(reply.error()), ErpFailure::kProtocol) << reply.error().ToString();
}

TEST(ErpClientTest, ReusedConnectionDroppedByTheErpIsRetriedOnceOnlyWhenRepeatable) {
  std::atomic<int> seen{0};
  // The 2nd and 4th requests are dropped unanswered, as an ERP closing a kept-alive connection.
  auto server = HttpServer::Create({}, [&](const HttpRequest&) {
    const int n = ++seen;
    if (n == 2 || n == 4) return HttpResponse{kAbortConnection, {}, {}};
    return HttpResponse{200, {}, "ok"};
  });
  ASSERT_TRUE(server.ok()) << server.error().ToString();
  ASSERT_TRUE((*server)->Start().ok());
  auto client = Make("http://127.0.0.1:" + std::to_string((*server)->port()));
  ASSERT_TRUE(client.ok());
  const HttpHeaders keyed{{"Idempotency-Key", "k"}};
  ASSERT_TRUE((*client)->Send("POST", "/a", keyed, "{}").ok());
  auto retried = (*client)->Send("POST", "/a", keyed, "{}");  // dropped on the reused connection
  ASSERT_TRUE(retried.ok()) << retried.error().ToString();
  EXPECT_EQ(retried->body, "ok");
  EXPECT_EQ(seen.load(), 3);
  // Without a key, a POST is never sent twice by the client: the failure is reported.
  auto unkeyed = (*client)->Send("POST", "/a", {}, "{}");
  ASSERT_FALSE(unkeyed.ok());
  EXPECT_EQ(ErpFailureOf(unkeyed.error()), ErpFailure::kProtocol);
  EXPECT_EQ(seen.load(), 4);
}

// Plain HTTP is read with poll() and non-blocking receives (erp_polling_stream.h): an
// answer that arrives in pieces, its header split mid-line and its body later, is read whole.
TEST(ErpClientTest, AnswerArrivingInPiecesIsReadWhole) {
  RawPeer peer([](int fd) {
    RawPeer::ReadRequest(fd);
    for (std::string_view piece :
         {"HTTP/1.1 200 OK\r\nContent-Le", "ngth: 11\r\nX-Erp: yes\r\n\r\n", "hello", " world"}) {
      RawPeer::SendAll(fd, piece);
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
    }
  });
  auto client = MakeWithTimeout(peer.url(), std::chrono::seconds(30));
  ASSERT_TRUE(client.ok());
  auto reply = (*client)->Send("POST", "/orders/1/fulfil", {{"Idempotency-Key", "k"}}, "{}");
  ASSERT_TRUE(reply.ok()) << reply.error().ToString();
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->body, "hello world");
  EXPECT_EQ(reply->headers.Get("X-Erp").value_or(""), "yes");
}

// The deadline bounds the whole exchange: an ERP that stalls after part of its header is a
// timeout (the call may have acted: the gateway retries with the same key), not a hang, and the
// call is not sent again on another connection (bytes of the answer came).
TEST(ErpClientTest, AnswerStallingMidHeaderIsATimeout) {
  std::atomic<int> requests{0};
  RawPeer peer([&](int fd) {
    RawPeer::ReadRequest(fd);
    ++requests;
    RawPeer::SendAll(fd, "HTTP/1.1 200 OK\r\nContent-");
    char c;
    (void)::recv(fd, &c, 1, 0);  // until the client closes
  });
  auto client = MakeWithTimeout(peer.url(), std::chrono::milliseconds(300));
  ASSERT_TRUE(client.ok());
  auto reply = (*client)->Send("POST", "/orders/1/fulfil", {{"Idempotency-Key", "k"}}, "{}");
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(ErpFailureOf(reply.error()), ErpFailure::kTimeout) << reply.error().ToString();
  EXPECT_NE(reply.error().message().find("no answer before the deadline"), std::string::npos);
  client->reset();  // closes the connection: the peer's recv returns
  EXPECT_EQ(requests.load(), 1);
}

// An ERP that does not read: the request cannot be sent within the deadline (sending waits in
// poll() for the socket to drain) and the call is a timeout, with nothing of an answer.
TEST(ErpClientTest, RequestTheErpNeverReadsTimesOutWhileSending) {
  std::atomic<bool> release{false};
  RawPeer peer([&](int) {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  auto client = MakeWithTimeout(peer.url(), std::chrono::milliseconds(300));
  ASSERT_TRUE(client.ok());
  const std::string body(32 << 20, 'x');  // far more than loopback's socket buffers hold
  auto reply = (*client)->Send("POST", "/orders/1/fulfil", {{"Idempotency-Key", "k"}}, body);
  release = true;
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(ErpFailureOf(reply.error()), ErpFailure::kTimeout) << reply.error().ToString();
  EXPECT_NE(reply.error().message().find("sending timed out"), std::string::npos)
      << reply.error().ToString();
}

// ScriptPeer is a loopback TCP peer that accepts any number of connections and runs |serve| on
// each (with its number, from 0), on a thread of its own: the framing tests see whether the
// client reused a connection or opened another.
class ScriptPeer {
 public:
  explicit ScriptPeer(std::function<void(int fd, int connection)> serve)
      : serve_(std::move(serve)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_fd_, 16) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "cannot listen on loopback";
      return;
    }
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] {
      for (int n = 0;; ++n) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) return;
        std::lock_guard lock(mu_);
        fds_.push_back(fd);
        ++connections_;
        threads_.emplace_back([this, fd, n] {
          serve_(fd, n);
          ::shutdown(fd, SHUT_RDWR);  // a script that returns has closed the connection
        });
      }
    });
  }
  ~ScriptPeer() {
    ::shutdown(listen_fd_, SHUT_RDWR);
    if (acceptor_.joinable()) acceptor_.join();
    {
      std::lock_guard lock(mu_);
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);  // ends reads still waiting
    }
    for (auto& t : threads_) t.join();
    for (int fd : fds_) ::close(fd);
    ::close(listen_fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int connections() const {
    std::lock_guard lock(mu_);
    return connections_;
  }

  // ReadRequest reads one request's header (the calls below have no body) through |buffer|, which
  // keeps what came after it; false when the client closed the connection first.
  static bool ReadRequest(int fd, std::string& buffer) {
    char chunk[4096];
    size_t end;
    while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
      const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) return false;
      buffer.append(chunk, static_cast<size_t>(n));
    }
    buffer.erase(0, end + 4);
    return true;
  }
  static std::string Ok(std::string_view body) {
    return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
           std::string(body);
  }

 private:
  std::function<void(int, int)> serve_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread acceptor_;
  mutable std::mutex mu_;
  std::vector<int> fds_;
  std::vector<std::thread> threads_;
  int connections_ = 0;
};

// Call sends one keyed GET (as the gateway's calls carry an Idempotency-Key).
Result<ErpReply> Call(ErpClient& client, const std::string& path) {
  return client.Send("GET", path, {{"Idempotency-Key", "key" + path}}, "");
}

// Interim answers (RFC 9110 §15.2) are read and skipped, whether they come in their own reads or
// in one with the final answer; the connection then carries the next call's own answer.
TEST(ErpClientFramingTest, InterimAnswersAreSkippedAndTheConnectionCarriesTheNextCallsOwnAnswer) {
  ScriptPeer peer([](int fd, int) {
    std::string buffer;
    if (!ScriptPeer::ReadRequest(fd, buffer)) return;
    RawPeer::SendAll(fd, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    RawPeer::SendAll(fd, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    RawPeer::SendAll(fd, ScriptPeer::Ok("first"));
    if (!ScriptPeer::ReadRequest(fd, buffer)) return;
    RawPeer::SendAll(fd,
                     "HTTP/1.1 102 Processing\r\n\r\n" + ScriptPeer::Ok("second"));  // in one read
    if (!ScriptPeer::ReadRequest(fd, buffer)) return;
    RawPeer::SendAll(fd, ScriptPeer::Ok("third"));
  });
  auto client = MakeWithTimeout(peer.url(), std::chrono::seconds(30));
  ASSERT_TRUE(client.ok());
  for (const char* want : {"first", "second", "third"}) {
    auto reply = Call(**client, "/" + std::string(want));
    ASSERT_TRUE(reply.ok()) << reply.error().ToString();
    EXPECT_EQ(reply->status, 200);
    EXPECT_EQ(reply->body, want);
  }
  EXPECT_EQ(peer.connections(), 1);  // well framed: kept alive throughout
}

TEST(ErpClientFramingTest,
     SwitchingProtocolsAndEndlessInterimAnswersAreRefusedAndTheConnectionClosed) {
  ScriptPeer peer([](int fd, int connection) {
    std::string buffer;
    if (!ScriptPeer::ReadRequest(fd, buffer)) return;
    if (connection == 0) {
      RawPeer::SendAll(
          fd, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n" +
                  ScriptPeer::Ok("not for you"));
    } else if (connection == 1) {
      std::string many;
      for (int i = 0; i <= kMaxErpInterimAnswers; ++i) many += "HTTP/1.1 102 Processing\r\n\r\n";
      RawPeer::SendAll(fd, many + ScriptPeer::Ok("late"));
    } else {
      RawPeer::SendAll(fd, ScriptPeer::Ok("own"));
    }
    (void)ScriptPeer::ReadRequest(fd, buffer);  // until the client closes
  });
  auto client = MakeWithTimeout(peer.url(), std::chrono::seconds(30));
  ASSERT_TRUE(client.ok());
  auto switched = Call(**client, "/a");
  ASSERT_FALSE(switched.ok());
  EXPECT_EQ(ErpFailureOf(switched.error()), ErpFailure::kProtocol);
  EXPECT_NE(switched.error().message().find("101"), std::string::npos)
      << switched.error().ToString();
  auto endless = Call(**client, "/b");
  ASSERT_FALSE(endless.ok());
  EXPECT_EQ(ErpFailureOf(endless.error()), ErpFailure::kProtocol);
  EXPECT_NE(endless.error().message().find("interim"), std::string::npos)
      << endless.error().ToString();
  auto own = Call(**client, "/c");
  ASSERT_TRUE(own.ok()) << own.error().ToString();
  EXPECT_EQ(own->body, "own");
  EXPECT_EQ(peer.connections(), 3);  // neither refused connection was used again
}

// Two answers to one request, in one read: the second is no answer to anything of ours. The
// connection is closed, and the next call gets its own answer on a new one.
TEST(ErpClientFramingTest, ASecondAnswerReadWithTheFirstClosesTheConnection) {
  ScriptPeer peer([](int fd, int connection) {
    std::string buffer;
    while (ScriptPeer::ReadRequest(fd, buffer)) {
      const std::string answer = ScriptPeer::Ok(connection == 0 ? "first" : "own");
      RawPeer::SendAll(fd, connection == 0 ? answer + answer : answer);
    }
  });
  auto client = MakeWithTimeout(peer.url(), std::chrono::seconds(30));
  ASSERT_TRUE(client.ok());
  auto first = Call(**client, "/1");
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  EXPECT_EQ(first->body, "first");
  auto second = Call(**client, "/2");
  ASSERT_TRUE(second.ok()) << second.error().ToString();
  EXPECT_EQ(second->body, "own");
  EXPECT_EQ(peer.connections(), 2);
}

// A second answer that arrives after the first was read whole and the connection pooled is found
// before the connection is reused: never read as the next call's answer. It also suspends
// keep-alive (no connection is pooled for a while), so a late one cannot slip in either.
TEST(ErpClientFramingTest,
     AnAnswerArrivingOnAnIdleConnectionIsFoundBeforeReuseAndSuspendsKeepAlive) {
  std::atomic<bool> stray_sent{false};
  ScriptPeer peer([&](int fd, int connection) {
    std::string buffer;
    while (ScriptPeer::ReadRequest(fd, buffer)) {
      RawPeer::SendAll(
          fd, ScriptPeer::Ok(connection == 0 ? "first" : "own-" + std::to_string(connection)));
      if (connection == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        RawPeer::SendAll(fd, ScriptPeer::Ok("stray"));
        stray_sent = true;
      }
    }
  });
  auto client = MakeWithTimeout(peer.url(), std::chrono::seconds(30));
  ASSERT_TRUE(client.ok());
  auto first = Call(**client, "/1");
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  EXPECT_EQ(first->body, "first");
  while (!stray_sent.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(
      std::chrono::milliseconds(50));  // the stray answer reaches the socket
  for (int i = 2; i <= 3; ++i) {
    auto reply = Call(**client, "/" + std::to_string(i));
    ASSERT_TRUE(reply.ok()) << reply.error().ToString();
    EXPECT_EQ(reply->body, "own-" + std::to_string(i - 1));
  }
  EXPECT_EQ(peer.connections(), 3);  // the stray connection dropped; keep-alive suspended after it
}

// An answer cut short (fewer body bytes than its Content-Length, then the connection closed) and
// bytes that are not HTTP are protocol failures; nothing is sent again (bytes of an answer came),
// and the next call gets its own answer on a new connection.
TEST(ErpClientFramingTest, AnAnswerCutMidBodyOrGarbageIsAProtocolFailureAndTheConnectionIsClosed) {
  std::atomic<int> requests{0};
  ScriptPeer peer([&](int fd, int connection) {
    std::string buffer;
    while (ScriptPeer::ReadRequest(fd, buffer)) {
      ++requests;
      if (connection == 0) {
        RawPeer::SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n{\"ok\":tr");
        return;  // closed mid-body
      }
      if (connection == 1) {
        static constexpr char kGarbage[] = "HTTP/1.1 2OO OKAY\r\n\x01\x02\xff\r\n\r\n";
        RawPeer::SendAll(fd, std::string_view(kGarbage, sizeof kGarbage - 1));
        (void)ScriptPeer::ReadRequest(fd, buffer);
        return;
      }
      RawPeer::SendAll(fd, ScriptPeer::Ok("own"));
    }
  });
  auto client = MakeWithTimeout(peer.url(), std::chrono::seconds(30));
  ASSERT_TRUE(client.ok());
  auto cut = Call(**client, "/cut");
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(ErpFailureOf(cut.error()), ErpFailure::kProtocol) << cut.error().ToString();
  auto garbage = Call(**client, "/garbage");
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(ErpFailureOf(garbage.error()), ErpFailure::kProtocol) << garbage.error().ToString();
  EXPECT_EQ(requests.load(), 2);  // neither was sent again
  auto own = Call(**client, "/own");
  ASSERT_TRUE(own.ok()) << own.error().ToString();
  EXPECT_EQ(own->body, "own");
  EXPECT_EQ(peer.connections(), 3);
}

// A call that timed out leaves its answer on the way: the connection is closed, so that late
// answer can never be read as the next call's.
TEST(ErpClientFramingTest, ATimedOutConnectionIsNeverReused) {
  ScriptPeer peer([](int fd, int connection) {
    std::string buffer;
    while (ScriptPeer::ReadRequest(fd, buffer)) {
      if (connection == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(400));
        RawPeer::SendAll(fd, ScriptPeer::Ok("late"));
      } else {
        RawPeer::SendAll(fd, ScriptPeer::Ok("own"));
      }
    }
  });
  auto client = MakeWithTimeout(peer.url(), std::chrono::milliseconds(150));
  ASSERT_TRUE(client.ok());
  auto slow = Call(**client, "/slow");
  ASSERT_FALSE(slow.ok());
  EXPECT_EQ(ErpFailureOf(slow.error()), ErpFailure::kTimeout);
  auto own = Call(**client, "/own");
  ASSERT_TRUE(own.ok()) << own.error().ToString();
  EXPECT_EQ(own->body, "own");
  EXPECT_EQ(peer.connections(), 2);
}

// A kept-alive connection the ERP closed after its answer is found closed before reuse: even a
// call that may not be repeated (a POST without a key) goes out once, on a new connection.
TEST(ErpClientFramingTest, AKeptAliveConnectionTheErpClosedIsNotReused) {
  ScriptPeer peer([](int fd, int) {
    std::string buffer;
    if (!ScriptPeer::ReadRequest(fd, buffer)) return;
    RawPeer::SendAll(fd, ScriptPeer::Ok("own"));
    ::shutdown(fd, SHUT_WR);  // the ERP's idle close, right after the answer
  });
  auto client = MakeWithTimeout(peer.url(), std::chrono::seconds(30));
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Send("POST", "/a", {}, "").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the FIN reaches the client
  auto again = (*client)->Send("POST", "/a", {}, "");
  ASSERT_TRUE(again.ok()) << again.error().ToString();
  EXPECT_EQ(again->body, "own");
  EXPECT_EQ(peer.connections(), 2);
}

// Name resolution is bounded by the call's deadline. In a child process with its own user, mount
// and network namespaces, /etc/resolv.conf names a resolver on 127.0.0.1:53 that reads queries
// and never answers (glibc would wait timeout × attempts = 20 s): the call is a timeout at its
// deadline, not a connect failure after the resolver gave up.
TEST(ErpClientTest, NameResolutionCountsAgainstTheCallsDeadline) {
  clawguard::testing::TempDir dir;
  const std::string resolv = dir.Sub("resolv.conf");
  {
    const int fd = ::open(resolv.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    const std::string conf = "nameserver 127.0.0.1\noptions timeout:10 attempts:2\n";
    ASSERT_EQ(::write(fd, conf.data(), conf.size()), static_cast<ssize_t>(conf.size()));
    ::close(fd);
  }
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const auto write_file = [](const char* path, const std::string& text) {
      const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
      const bool ok =
          fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
      if (fd >= 0) ::close(fd);
      return ok;
    };
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET) != 0) ::_exit(10);
    if (!write_file("/proc/self/setgroups", "deny") ||
        !write_file("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") ||
        !write_file("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1")) {
      ::_exit(11);
    }
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount(resolv.c_str(), "/etc/resolv.conf", nullptr, MS_BIND, nullptr) != 0) {
      ::_exit(12);
    }
    const int ctl = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ifreq lo{};
    std::strncpy(lo.ifr_name, "lo", IFNAMSIZ - 1);
    if (ctl < 0 || ::ioctl(ctl, SIOCGIFFLAGS, &lo) != 0) ::_exit(13);
    lo.ifr_flags = static_cast<short>(lo.ifr_flags | IFF_UP);
    if (::ioctl(ctl, SIOCSIFFLAGS, &lo) != 0) ::_exit(13);
    const int dns = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(53);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (dns < 0 || ::bind(dns, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) ::_exit(14);
    auto client = MakeWithTimeout("http://erp.resolver-never-answers.test:8080",
                                  std::chrono::milliseconds(300));
    if (!client.ok()) ::_exit(15);
    auto reply = (*client)->Send("GET", "/orders/1", {{"Idempotency-Key", "k"}}, "");
    if (reply.ok()) ::_exit(16);
    if (ErpFailureOf(reply.error()) != ErpFailure::kTimeout) ::_exit(17);
    if (reply.error().message().find("name resolution") == std::string::npos) ::_exit(18);
    ::_exit(0);  // the resolver thread, still waiting, ends with the process
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child was killed by signal " << WTERMSIG(status);
  // 10–14: the namespaces could not be set up; 16: answered; 17: not a timeout (a connect
  // failure: the lookup was not bounded); 18: another timeout than the lookup's.
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace clawguard::host
