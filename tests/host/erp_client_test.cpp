// erp_client_test.cpp — ErpClient option checks, failure kinds and request shaping (against
// the test ERP on loopback).
#include "host/erp_client.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "clawguard/limits.h"
#include "host/http_server.h"
#include "support/test_erp_server.h"

namespace clawguard::host {
namespace {

namespace ht = clawguard::host::testing;

Result<std::unique_ptr<ErpClient>> Make(const std::string& base_url, const std::string& ca_file = "",
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
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 4) != 0 ||
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

Result<std::unique_ptr<ErpClient>> MakeWithTimeout(const std::string& base_url, std::chrono::milliseconds timeout) {
  ErpClientOptions options;
  options.base_url = base_url;
  options.timeout = timeout;
  return ErpClient::Create(std::move(options));
}

TEST(ErpClientTest, CreateRefusesBadOptions) {
  for (const char* url : {"", "ftp://erp:1", "http://", "http://erp:0", "http://erp:99999", "http://erp:x",
                                 "http://user@erp:80", "http://erp:80/p?q=1", "http://[::1"}) {
    auto c = Make(url);
    ASSERT_FALSE(c.ok()) << url;
    EXPECT_EQ(c.error().reason(), Reason::kConfigInvalid) << url;
  }
  EXPECT_EQ(Make("https://erp:8443").error().reason(), Reason::kConfigInvalid);  // https needs erp.ca
  EXPECT_EQ(Make("https://erp:8443", "/nonexistent/ca.pem").error().reason(), Reason::kConfigInvalid);
  auto bad_auth = Make("http://erp:80", "", "Bearer a\r\nX-Evil: 1");
  ASSERT_FALSE(bad_auth.ok());
  EXPECT_EQ(bad_auth.error().reason(), Reason::kConfigInvalid);
  EXPECT_EQ(bad_auth.error().message().find("Evil"), std::string::npos);
  ErpClientOptions zero;
  zero.base_url = "http://erp:80";
  zero.timeout = std::chrono::milliseconds(0);
  EXPECT_EQ(ErpClient::Create(std::move(zero)).error().reason(), Reason::kConfigInvalid);
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
  EXPECT_EQ(ErpFailureOf((*client)->Send("POST", "no-slash", {}, "").error()), ErpFailure::kProtocol);
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

// Plain HTTP is read with poll() and non-blocking receives (erp_client.cpp, PollingStream): an
// answer that arrives in pieces, its header split mid-line and its body later, is read whole.
TEST(ErpClientTest, AnswerArrivingInPiecesIsReadWhole) {
  RawPeer peer([](int fd) {
    RawPeer::ReadRequest(fd);
    for (std::string_view piece : {"HTTP/1.1 200 OK\r\nContent-Le", "ngth: 11\r\nX-Erp: yes\r\n\r\n", "hello", " world"}) {
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
  EXPECT_NE(reply.error().message().find("sending timed out"), std::string::npos) << reply.error().ToString();
}

}  // namespace
}  // namespace clawguard::host
