// admin_auth_test.cpp — the admin bearer-token gate, as a plain Handler and behind a real
// loopback listener.
#include "host/http/admin_auth.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "support/raw_client.h"
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard::host {
namespace {

namespace ht = clawguard::host::testing;

const std::string kToken = "0123456789abcdef0123456789abcdef-admin";  // ≥ 32 characters

struct GuardedRoute {
  std::atomic<int> calls{0};
  Handler handler;
};

std::unique_ptr<GuardedRoute> MakeGuardedRoute() {
  auto gate = std::make_unique<GuardedRoute>();
  GuardedRoute* raw = gate.get();
  auto handler = RequireBearerToken(SecretBytes(kToken), [raw](const HttpRequest&) {
    ++raw->calls;
    HttpResponse r;
    r.body = "ops";
    return r;
  });
  EXPECT_TRUE(handler.ok()) << handler.error().ToString();
  if (handler.ok()) gate->handler = std::move(handler).value();
  return gate;
}

HttpRequest WithAuth(std::initializer_list<std::string> values) {
  HttpRequest r{"GET", "/ops", {}, {}};
  for (const auto& v : values) r.headers.Add("Authorization", v);
  return r;
}

TEST(AdminAuthTest, RefusesATokenShorterThanTheMinimum) {
  auto h =
      RequireBearerToken(SecretBytes("short"), [](const HttpRequest&) { return HttpResponse{}; });
  ASSERT_FALSE(h.ok());
  EXPECT_THAT(h, HasReason(Reason::kConfigInvalid));
  EXPECT_EQ(h.error().message().find("short"), std::string::npos);  // the token is never echoed
}

TEST(AdminAuthTest, RefusesAnEmptyInnerHandler) {
  EXPECT_THAT(RequireBearerToken(SecretBytes(kToken), Handler()),
              HasReason(Reason::kConfigInvalid));
}

TEST(AdminAuthTest, MissingHeaderGets401WithBearerChallenge) {
  auto gate = MakeGuardedRoute();
  HttpResponse r = gate->handler(WithAuth({}));
  EXPECT_EQ(r.status, 401);
  ASSERT_TRUE(r.headers.Get("WWW-Authenticate").has_value());
  EXPECT_TRUE(r.headers.Get("WWW-Authenticate")->starts_with("Bearer"));
  EXPECT_EQ(r.headers.Get("Content-Type"), "application/problem+json");
  EXPECT_EQ(gate->calls.load(), 0);
}

TEST(AdminAuthTest, WrongOrMalformedTokensGet401InvalidToken) {
  auto gate = MakeGuardedRoute();
  const std::vector<std::string> values = {"Bearer wrong",
                                           "Bearer " + kToken + "x",
                                           "Bearer " + kToken.substr(1),
                                           "Basic " + kToken,
                                           "Bearer",
                                           "Bearer ",
                                           "Bearer" + kToken,
                                           "Bearer " + kToken + " extra",
                                           kToken};
  for (const std::string& value : values) {
    HttpResponse r = gate->handler(WithAuth({value}));
    EXPECT_EQ(r.status, 401) << value;
    EXPECT_NE(r.headers.Get("WWW-Authenticate")->find("invalid_token"), std::string::npos);
    EXPECT_EQ(r.body.find(kToken), std::string::npos);
  }
  EXPECT_EQ(gate->calls.load(), 0);
}

TEST(AdminAuthTest, TwoAuthorizationHeadersAreRefusedEvenIfOneIsRight) {
  auto gate = MakeGuardedRoute();
  EXPECT_EQ(gate->handler(WithAuth({"Bearer " + kToken, "Bearer wrong"})).status, 401);
  EXPECT_EQ(gate->calls.load(), 0);
}

TEST(AdminAuthTest, RightTokenReachesTheInnerHandler) {
  auto gate = MakeGuardedRoute();
  HttpResponse r = gate->handler(WithAuth({"Bearer " + kToken}));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ops");
  // The scheme is case-insensitive (RFC 9110 §11.1).
  EXPECT_EQ(gate->handler(WithAuth({"bearer " + kToken})).status, 200);
  EXPECT_EQ(gate->calls.load(), 2);
}

TEST(AdminAuthTest, GuardsARealListener) {
  auto gate = MakeGuardedRoute();
  auto server = HttpServer::Create({}, gate->handler);
  ASSERT_TRUE(server.ok()) << server.error().ToString();
  ASSERT_TRUE((*server)->Start().ok());
  auto conn = ht::RawConnection::Connect((*server)->port());
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(conn->Send(ht::SimpleRequest("GET", "/metrics", "")));
  ht::RawResponse denied = conn->ReadResponse();
  ASSERT_TRUE(denied.ok);
  EXPECT_EQ(denied.status, 401);
  EXPECT_TRUE(denied.headers.Has("WWW-Authenticate"));
  // A refusal ends a connection that has not proven itself (http_server.h); the client comes back
  // on a new one.
  EXPECT_EQ(denied.headers.Get("Connection"), "close");
  EXPECT_TRUE(conn->WaitForClose());
  conn = ht::RawConnection::Connect((*server)->port());
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(conn->Send(
      ht::SimpleRequest("GET", "/metrics", "", "Authorization: Bearer " + kToken + "\r\n")));
  ht::RawResponse allowed = conn->ReadResponse();
  ASSERT_TRUE(allowed.ok);
  EXPECT_EQ(allowed.status, 200);
  EXPECT_EQ(allowed.body, "ops");
}

}  // namespace
}  // namespace clawguard::host
