// test_erp_server_test.cpp — the test ERP together with ErpClient over real loopback sockets:
// happy path, credentials, idempotency keys, programmed answers, TLS trust, timeouts.
#include "support/test_erp_server.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "host/erp/erp_client.h"
#include "support/reason_matchers.h"
#include "support/temp_dir.h"
#include "support/test_pki.h"

using ::clawguard::testing::HasReason;

namespace clawguard::host {
namespace {

namespace ht = clawguard::host::testing;

constexpr std::string_view kAuth = "Bearer erp-credential-do-not-leak";

std::unique_ptr<ht::TestErpServer> StartErp(ht::TestErpOptions options = {}) {
  auto erp = ht::TestErpServer::Create(std::move(options));
  if (!erp.ok()) {
    ADD_FAILURE() << erp.error().ToString();
    return nullptr;
  }
  return std::move(erp).value();
}

std::unique_ptr<ErpClient> ClientFor(const std::string& base_url,
                                     std::chrono::milliseconds timeout = std::chrono::seconds(5),
                                     const std::string& ca_file = "") {
  ErpClientOptions options;
  options.base_url = base_url;
  options.timeout = timeout;
  options.ca_file = ca_file;
  options.auth = SecretBytes(kAuth);
  auto client = ErpClient::Create(std::move(options));
  if (!client.ok()) {
    ADD_FAILURE() << client.error().ToString();
    return nullptr;
  }
  return std::move(client).value();
}

// SetSlow makes |path| answer only after 30 s: past every client timeout here (the wait is cut
// short by Stop at the end of the test).
void SetSlow(ht::TestErpServer& erp, const std::string& path) {
  ht::ErpAnswer slow;
  slow.delay = std::chrono::seconds(30);
  erp.SetAnswer(path, slow);
}

HttpHeaders KeyHeaders(const std::string& key) {
  return HttpHeaders{{"Idempotency-Key", key}, {"Content-Type", "application/json"}};
}

TEST(TestErpServerTest, HappyPathIsRecordedAndCountedAsOneEffect) {
  auto erp = StartErp();
  ASSERT_NE(erp, nullptr);
  auto client = ClientFor(erp->base_url());
  ASSERT_NE(client, nullptr);
  auto reply = client->Send("POST", "/orders/42/fulfil", KeyHeaders("k1"), R"({"qty":1})");
  ASSERT_TRUE(reply.ok()) << reply.error().ToString();
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->body, "{\"ok\":true}");
  EXPECT_EQ(reply->headers.Get("Content-Type"), "application/json");
  auto requests = erp->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].path, "/orders/42/fulfil");
  EXPECT_EQ(requests[0].body, R"({"qty":1})");
  EXPECT_EQ(requests[0].headers.Get("Content-Type"), "application/json");
  EXPECT_EQ(erp->effects("/orders/42/fulfil"), 1u);
  EXPECT_EQ(erp->requests_total(), 1u);
}

TEST(TestErpServerTest, AuthorizationHeaderArrives) {
  auto erp = StartErp();
  ASSERT_NE(erp, nullptr);
  auto client = ClientFor(erp->base_url());
  ASSERT_NE(client, nullptr);
  // A caller cannot set its own Authorization: the gateway's credential is the only one sent.
  HttpHeaders headers{{"Authorization", "Bearer forged"}};
  ASSERT_TRUE(client->Send("POST", "/inventory/adjust", headers, "{}").ok());
  auto requests = erp->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].headers.Count("Authorization"), 1u);
  EXPECT_EQ(requests[0].headers.Get("Authorization"), kAuth);
}

TEST(TestErpServerTest, IdempotencyKeyPassesAndARepeatIsADuplicateNotAnEffect) {
  auto erp = StartErp();
  ASSERT_NE(erp, nullptr);
  ht::ErpAnswer created;
  created.status = 201;
  created.body = R"({"shipment":"s-1"})";
  erp->SetAnswer("/orders/7/fulfil", created);
  auto client = ClientFor(erp->base_url());
  ASSERT_NE(client, nullptr);
  auto first = client->Send("POST", "/orders/7/fulfil", KeyHeaders("key-7"), "{}");
  auto second = client->Send("POST", "/orders/7/fulfil", KeyHeaders("key-7"), "{}");
  auto other = client->Send("POST", "/orders/7/fulfil", KeyHeaders("key-8"), "{}");
  ASSERT_TRUE(first.ok() && second.ok() && other.ok());
  EXPECT_EQ(first->status, 201);
  EXPECT_EQ(second->status, 201);
  EXPECT_EQ(second->body, first->body);
  EXPECT_EQ(erp->requests()[0].headers.Get("Idempotency-Key"), "key-7");
  EXPECT_EQ(erp->requests_total(), 3u);
  EXPECT_EQ(erp->duplicates(), 1u);
  EXPECT_EQ(erp->effects("/orders/7/fulfil"), 2u);
  EXPECT_EQ(erp->effects_for_key("key-7"), 1u);
  EXPECT_TRUE(erp->requests()[1].duplicate);
  EXPECT_TRUE(erp->AtMostOneEffectPerKey());
}

TEST(TestErpServerTest, ProgrammedAnswerCarriesStatusAndRetryAfterAndIsNoEffect) {
  auto erp = StartErp();
  ASSERT_NE(erp, nullptr);
  ht::ErpAnswer busy;
  busy.status = 429;
  busy.body = "{}";
  busy.retry_after = "60";
  erp->SetAnswer("/inventory/adjust", busy);
  auto client = ClientFor(erp->base_url());
  ASSERT_NE(client, nullptr);
  auto reply = client->Send("POST", "/inventory/adjust", KeyHeaders("k-429"), "{}");
  ASSERT_TRUE(reply.ok()) << reply.error().ToString();
  EXPECT_EQ(reply->status, 429);
  EXPECT_EQ(reply->headers.Get("Retry-After"), "60");
  EXPECT_EQ(erp->effects("/inventory/adjust"), 0u);
  // The key was not used up: once the ERP accepts, the same key has its one effect.
  erp->SetAnswer("/inventory/adjust", ht::ErpAnswer{});
  ASSERT_TRUE(client->Send("POST", "/inventory/adjust", KeyHeaders("k-429"), "{}").ok());
  EXPECT_EQ(erp->effects_for_key("k-429"), 1u);
  EXPECT_EQ(erp->duplicates(), 0u);
}

TEST(TestErpServerTest, SlowAnswerIsReportedAsTimeoutAndTheRetryIsADuplicate) {
  auto erp = StartErp();
  ASSERT_NE(erp, nullptr);
  SetSlow(*erp, "/orders/9/fulfil");
  auto client = ClientFor(erp->base_url(), std::chrono::milliseconds(200));
  ASSERT_NE(client, nullptr);
  auto reply = client->Send("POST", "/orders/9/fulfil", KeyHeaders("k-9"), "{}");
  ASSERT_FALSE(reply.ok());
  EXPECT_THAT(reply, HasReason(Reason::kInternal));
  EXPECT_EQ(ErpFailureOf(reply.error()), ErpFailure::kTimeout) << reply.error().ToString();
  EXPECT_EQ(reply.error().message().find("do-not-leak"), std::string::npos);
  // The ERP did act; a retry with the same key gets the stored answer and is no second effect.
  auto retry = client->Send("POST", "/orders/9/fulfil", KeyHeaders("k-9"), "{}");
  ASSERT_TRUE(retry.ok()) << retry.error().ToString();
  EXPECT_EQ(retry->status, 200);
  EXPECT_EQ(erp->effects_for_key("k-9"), 1u);
  EXPECT_EQ(erp->duplicates(), 1u);
}

// One deadline timer per exchange (erp_connection.cpp): an exchange's leftover timer wait must not
// cut a later exchange on the same kept-alive connection short, and a timed-out connection is
// never reused. Each call below has 300 ms; the fast ones answer at once.
TEST(TestErpServerTest, CallsAfterATimeoutAndManyKeptAliveCallsAreNeverCutShort) {
  auto erp = StartErp();
  ASSERT_NE(erp, nullptr);
  SetSlow(*erp, "/slow");
  auto client = ClientFor(erp->base_url(), std::chrono::milliseconds(300));
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Send("POST", "/fast", KeyHeaders("warm"), "{}").ok());
  auto timed_out = client->Send("POST", "/slow", KeyHeaders("slow-1"), "{}");
  ASSERT_FALSE(timed_out.ok());
  EXPECT_EQ(ErpFailureOf(timed_out.error()), ErpFailure::kTimeout) << timed_out.error().ToString();
  int ok = 0;
  for (int i = 0; i < 200; ++i) {
    auto r = client->Send("POST", "/fast", KeyHeaders("fast-" + std::to_string(i)), "{}");
    if (r.ok() && r->status == 200) ++ok;
  }
  EXPECT_EQ(ok, 200);
  EXPECT_EQ(erp->effects("/fast"), 201u);
  EXPECT_TRUE(erp->AtMostOneEffectPerKey());
}

TEST(TestErpServerTest, DroppedConnectionIsAProtocolFailure) {
  auto erp = StartErp();
  ASSERT_NE(erp, nullptr);
  ht::ErpAnswer drop;
  drop.close_connection = true;
  erp->SetAnswer("/drop", drop);
  auto client = ClientFor(erp->base_url());
  ASSERT_NE(client, nullptr);
  auto reply = client->Send("POST", "/drop", {}, "{}");
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(ErpFailureOf(reply.error()), ErpFailure::kProtocol) << reply.error().ToString();
  EXPECT_EQ(erp->effects("/drop"), 0u);
}

TEST(TestErpServerTest, TlsVerifiesAgainstTheTestCaAndAWrongCaFails) {
  clawguard::testing::TempDir dir;
  ht::TestPki pki;
  ht::TestPki other;
  std::string error;
  ASSERT_TRUE(ht::MakeTestPki(dir.path().string(), "erp", &pki, &error)) << error;
  ASSERT_TRUE(ht::MakeTestPki(dir.path().string(), "other", &other, &error)) << error;
  ht::TestErpOptions options;
  options.tls = ServerTls{pki.leaf_cert, pki.leaf_key};
  auto erp = StartErp(std::move(options));
  ASSERT_NE(erp, nullptr);

  auto trusted = ClientFor(erp->base_url(), std::chrono::seconds(5), pki.ca_cert);
  ASSERT_NE(trusted, nullptr);
  auto reply = trusted->Send("POST", "/orders/1/fulfil", KeyHeaders("tls-1"), "{}");
  ASSERT_TRUE(reply.ok()) << reply.error().ToString();
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(erp->requests()[0].headers.Get("Authorization"), kAuth);

  auto untrusted = ClientFor(erp->base_url(), std::chrono::seconds(5), other.ca_cert);
  ASSERT_NE(untrusted, nullptr);
  auto refused = untrusted->Send("POST", "/orders/1/fulfil", KeyHeaders("tls-2"), "{}");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(ErpFailureOf(refused.error()), ErpFailure::kTls) << refused.error().ToString();
  EXPECT_EQ(refused.error().message().find("do-not-leak"), std::string::npos);
  EXPECT_EQ(erp->requests_total(), 1u);  // nothing reached the ERP over the untrusted channel
}

TEST(TestErpServerTest, TlsSlowAnswerIsATimeoutAndTheConnectionIsNotReused) {
  clawguard::testing::TempDir dir;
  ht::TestPki pki;
  std::string error;
  ASSERT_TRUE(ht::MakeTestPki(dir.path().string(), "erp", &pki, &error)) << error;
  ht::TestErpOptions options;
  options.tls = ServerTls{pki.leaf_cert, pki.leaf_key};
  auto erp = StartErp(std::move(options));
  ASSERT_NE(erp, nullptr);
  SetSlow(*erp, "/slow");
  auto client = ClientFor(erp->base_url(), std::chrono::milliseconds(500), pki.ca_cert);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Send("POST", "/fast", KeyHeaders("tls-fast-1"), "{}").ok());
  auto reply = client->Send("POST", "/slow", KeyHeaders("tls-slow"), "{}");
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(ErpFailureOf(reply.error()), ErpFailure::kTimeout) << reply.error().ToString();
  for (int i = 2; i <= 20; ++i) {
    auto r = client->Send("POST", "/fast", KeyHeaders("tls-fast-" + std::to_string(i)), "{}");
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    EXPECT_EQ(r->status, 200);
  }
  EXPECT_EQ(erp->effects("/fast"), 20u);
}

TEST(TestErpServerTest, TlsRefusesACertificateForAnotherName) {
  clawguard::testing::TempDir dir;
  ht::TestPki pki;
  std::string error;
  // Trusted CA, but the leaf names only erp.example (its subject CN is still "localhost").
  ASSERT_TRUE(ht::MakeTestPki(dir.path().string(), "named", &pki, &error, "DNS:erp.example"))
      << error;
  ht::TestErpOptions options;
  options.tls = ServerTls{pki.leaf_cert, pki.leaf_key};
  auto erp = StartErp(std::move(options));
  ASSERT_NE(erp, nullptr);
  for (const std::string& host : {std::string("localhost"), std::string("127.0.0.1")}) {
    auto client = ClientFor("https://" + host + ":" + std::to_string(erp->port()),
                            std::chrono::seconds(5), pki.ca_cert);
    ASSERT_NE(client, nullptr);
    auto reply = client->Send("POST", "/orders/1/fulfil", KeyHeaders("name-" + host), "{}");
    ASSERT_FALSE(reply.ok()) << host;
    EXPECT_EQ(ErpFailureOf(reply.error()), ErpFailure::kTls) << reply.error().ToString();
  }
  EXPECT_EQ(erp->requests_total(), 0u);
}

TEST(TestErpServerTest, ConcurrentCallsFromSeveralThreads) {
  auto erp = StartErp();
  ASSERT_NE(erp, nullptr);
  auto client = ClientFor(erp->base_url());
  ASSERT_NE(client, nullptr);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        auto r = client->Send("POST", "/c", KeyHeaders(std::to_string(t) + "-" + std::to_string(i)),
                              "{}");
        if (r.ok() && r->status == 200) ++ok;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 100);
  EXPECT_EQ(erp->effects("/c"), 100u);
  EXPECT_TRUE(erp->AtMostOneEffectPerKey());
}

}  // namespace
}  // namespace clawguard::host
