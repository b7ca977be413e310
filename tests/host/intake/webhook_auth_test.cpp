// webhook_auth_test.cpp — Standard Webhooks v1 over every published vector, header aliases and
// conflicts, timestamp tolerance and secret rotation, all at fixed time.
#include "host/intake/webhook_auth.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "clawguard/clock.h"
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard::host {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr milliseconds kTolerance{300'000};

json Vectors() {
  std::ifstream in(std::string(CLAWGUARD_VECTORS_DIR) + "/standard-webhooks.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

WebhookVerifier Verifier(const std::string& secret, const Clock& clock) {
  auto key = DecodeWebhookSecret(secret);
  EXPECT_TRUE(key.ok());
  auto v = WebhookVerifier::Create(std::move(key).value(), std::nullopt, std::nullopt, kTolerance,
                                   clock);
  EXPECT_TRUE(v.ok());
  return std::move(v).value();
}

HttpHeaders Headers(const std::string& id, int64_t ts, const std::string& sig) {
  return HttpHeaders{
      {"webhook-id", id}, {"webhook-timestamp", std::to_string(ts)}, {"webhook-signature", sig}};
}

TEST(WebhookAuthVectorsTest, EverySignVectorSignsAndVerifies) {
  const json v = Vectors();
  ASSERT_EQ(v["sign"].size(), 2u);
  for (const json& c : v["sign"]) {
    SCOPED_TRACE(c["secret"].get<std::string>());
    const std::string secret = c["secret"], id = c["msg_id"], body = c["body"],
                      sig = c["signature"];
    const int64_t ts = c["timestamp"];
    auto key = DecodeWebhookSecret(secret);
    ASSERT_TRUE(key.ok());
    EXPECT_EQ(WebhookSignature(*key, id, ts, body), sig);
    FixedClock clock(ts * 1000);
    auto ok = Verifier(secret, clock).Verify(Headers(id, ts, sig), body);
    ASSERT_TRUE(ok.ok()) << ok.error().ToString();
    EXPECT_EQ(ok->id, id);
    EXPECT_EQ(ok->timestamp, ts);
    EXPECT_FALSE(ok->used_previous);
  }
}

TEST(WebhookAuthVectorsTest, EveryMustFailVectorIsSignatureInvalid) {
  const json v = Vectors();
  const json& base = v["sign"][0];
  const int64_t ts = base["timestamp"];
  FixedClock clock(ts * 1000);
  const WebhookVerifier verifier = Verifier(base["secret"], clock);
  ASSERT_EQ(v["verify_must_fail"].size(), 5u);
  for (const json& c : v["verify_must_fail"]) {
    SCOPED_TRACE(c["why"].get<std::string>());
    auto r = verifier.Verify(Headers(base["msg_id"], ts, c["signature"]),
                             base["body"].get<std::string>());
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r, HasReason(Reason::kSignatureInvalid));
  }
}

TEST(WebhookAuthVectorsTest, EveryMustPassVectorVerifies) {
  const json v = Vectors();
  const json& base = v["sign"][0];
  const int64_t ts = base["timestamp"];
  FixedClock clock(ts * 1000);
  const WebhookVerifier verifier = Verifier(base["secret"], clock);
  ASSERT_EQ(v["verify_must_pass"].size(), 1u);
  for (const json& c : v["verify_must_pass"]) {
    SCOPED_TRACE(c["why"].get<std::string>());
    auto r = verifier.Verify(Headers(base["msg_id"], ts, c["signature"]),
                             base["body"].get<std::string>());
    EXPECT_TRUE(r.ok()) << r.error().ToString();
  }
}

class WebhookAuthTest : public ::testing::Test {
 protected:
  const json base_ = Vectors()["sign"][0];
  const std::string id_ = base_["msg_id"];
  const std::string body_ = base_["body"];
  const int64_t ts_ = base_["timestamp"];
  const std::string sig_ = base_["signature"];
  FixedClock clock_{ts_ * 1000};
};

TEST_F(WebhookAuthTest, TimestampOutsideToleranceEitherWayIsRefused) {
  const WebhookVerifier v = Verifier(base_["secret"], clock_);
  for (int64_t delta : {-301, 301, -100000, 100000}) {
    clock_.Set((ts_ + delta) * 1000);
    auto r = v.Verify(Headers(id_, ts_, sig_), body_);
    ASSERT_FALSE(r.ok()) << delta;
    EXPECT_THAT(r, HasReason(Reason::kTimestampOutOfTolerance)) << delta;
  }
  for (int64_t delta : {-300, 300, 0}) {
    clock_.Set((ts_ + delta) * 1000);
    EXPECT_TRUE(v.Verify(Headers(id_, ts_, sig_), body_).ok()) << delta;
  }
}

// Leading zeros make a timestamp of any length a valid number: the refusal quotes a short prefix
// and the length, never the whole header (a peer must not choose how large its refusals are).
TEST_F(WebhookAuthTest, AnOverlongTimestampIsQuotedOnlyAsAPrefix) {
  const WebhookVerifier v = Verifier(base_["secret"], clock_);
  const std::string ts = std::string(15000, '0') + "1";
  auto r = v.Verify(
      HttpHeaders{{"webhook-id", id_}, {"webhook-timestamp", ts}, {"webhook-signature", sig_}},
      body_);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r, HasReason(Reason::kTimestampOutOfTolerance));
  const std::string detail = r.error().message();
  EXPECT_EQ(detail.find("webhook-timestamp " + std::string(64, '0') +
                        "... (15001 digits) is outside ±300 s"),
            0u)
      << detail.substr(0, 200);
  EXPECT_LT(detail.size(), 160u) << detail.substr(0, 200);
  // A timestamp of ordinary length is quoted whole.
  clock_.Set((ts_ + 1000) * 1000);
  r = v.Verify(Headers(id_, ts_, sig_), body_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message().find("webhook-timestamp " + std::to_string(ts_) + " is outside"),
            0u)
      << r.error().message();
}

TEST_F(WebhookAuthTest, MissingOrMalformedHeadersAreSignatureInvalid) {
  const WebhookVerifier v = Verifier(base_["secret"], clock_);
  const std::vector<HttpHeaders> cases = {
      HttpHeaders{{"webhook-timestamp", std::to_string(ts_)}, {"webhook-signature", sig_}},
      HttpHeaders{{"webhook-id", id_}, {"webhook-signature", sig_}},
      HttpHeaders{{"webhook-id", id_}, {"webhook-timestamp", std::to_string(ts_)}},
      Headers(id_, ts_, ""),
      HttpHeaders{{"webhook-id", id_},
                  {"webhook-timestamp", "+" + std::to_string(ts_)},
                  {"webhook-signature", sig_}},
      HttpHeaders{{"webhook-id", id_}, {"webhook-timestamp", "16e8"}, {"webhook-signature", sig_}},
      Headers("", ts_, sig_),
      Headers("msg with space", ts_, sig_),
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    auto r = v.Verify(cases[i], body_);
    ASSERT_FALSE(r.ok()) << i;
    EXPECT_THAT(r, HasReason(Reason::kSignatureInvalid)) << i;
  }
}

TEST_F(WebhookAuthTest, ChangedBodyIdOrTimestampIsSignatureInvalid) {
  const WebhookVerifier v = Verifier(base_["secret"], clock_);
  EXPECT_THAT(v.Verify(Headers(id_, ts_, sig_), body_ + " "), HasReason(Reason::kSignatureInvalid));
  EXPECT_THAT(v.Verify(Headers(id_ + "x", ts_, sig_), body_), HasReason(Reason::kSignatureInvalid));
  EXPECT_THAT(v.Verify(Headers(id_, ts_ + 1, sig_), body_), HasReason(Reason::kSignatureInvalid));
}

TEST_F(WebhookAuthTest, SvixAliasesAreAcceptedAndCaseIsIgnored) {
  const WebhookVerifier v = Verifier(base_["secret"], clock_);
  HttpHeaders svix{
      {"Svix-Id", id_}, {"SVIX-TIMESTAMP", std::to_string(ts_)}, {"svix-signature", sig_}};
  EXPECT_TRUE(v.Verify(svix, body_).ok());
  HttpHeaders both = Headers(id_, ts_, sig_);
  both.Add("svix-id", id_);
  both.Add("svix-timestamp", std::to_string(ts_));
  both.Add("svix-signature", sig_);
  EXPECT_TRUE(v.Verify(both, body_).ok());
}

TEST_F(WebhookAuthTest, ConflictingAliasesOrRepeatsAreHeaderConflict) {
  const WebhookVerifier v = Verifier(base_["secret"], clock_);
  HttpHeaders a = Headers(id_, ts_, sig_);
  a.Add("svix-id", "msg_other");
  EXPECT_THAT(v.Verify(a, body_), HasReason(Reason::kHeaderConflict));
  HttpHeaders b = Headers(id_, ts_, sig_);
  b.Add("svix-signature", sig_ + " ");
  EXPECT_THAT(v.Verify(b, body_), HasReason(Reason::kHeaderConflict));
  HttpHeaders c = Headers(id_, ts_, sig_);
  c.Add("webhook-timestamp", std::to_string(ts_ + 1));
  EXPECT_THAT(v.Verify(c, body_), HasReason(Reason::kHeaderConflict));
  // A conflict wins over a missing header (400 before 401).
  HttpHeaders d{{"webhook-id", id_}, {"svix-id", "msg_other"}};
  EXPECT_THAT(v.Verify(d, body_), HasReason(Reason::kHeaderConflict));
}

TEST_F(WebhookAuthTest, PreviousSecretIsAcceptedOnlyUntilPreviousUntil) {
  auto current = DecodeWebhookSecret("whsec_bmV3LWtleS1mb3ItdGhpcy1xdWFydGVy");
  auto previous = DecodeWebhookSecret(base_["secret"].get<std::string>());
  ASSERT_TRUE(current.ok() && previous.ok());
  const int64_t until = ts_ + 60;
  auto v = WebhookVerifier::Create(std::move(current).value(), std::move(previous).value(), until,
                                   kTolerance, clock_);
  ASSERT_TRUE(v.ok());
  auto before = v->Verify(Headers(id_, ts_, sig_), body_);
  ASSERT_TRUE(before.ok()) << before.error().ToString();
  EXPECT_TRUE(before->used_previous);
  // At previous_until the old secret stops (now < previous_until is required).
  clock_.Set(until * 1000);
  auto at = v->Verify(Headers(id_, ts_, sig_), body_);
  ASSERT_FALSE(at.ok());
  EXPECT_THAT(at, HasReason(Reason::kSignatureInvalid));
}

TEST_F(WebhookAuthTest, CurrentSecretWorksDuringRotation) {
  auto cur_key = DecodeWebhookSecret("whsec_bmV3LWtleS1mb3ItdGhpcy1xdWFydGVy");
  ASSERT_TRUE(cur_key.ok());
  const std::string new_sig = WebhookSignature(*cur_key, id_, ts_, body_);
  auto previous = DecodeWebhookSecret(base_["secret"].get<std::string>());
  auto v = WebhookVerifier::Create(std::move(cur_key).value(), std::move(previous).value(),
                                   ts_ + 60, kTolerance, clock_);
  ASSERT_TRUE(v.ok());
  auto r = v->Verify(Headers(id_, ts_, sig_ + " " + new_sig), body_);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->used_previous);
}

TEST_F(WebhookAuthTest, OnlyTheFirstSixteenEntriesAreExamined) {
  const WebhookVerifier v = Verifier(base_["secret"], clock_);
  std::string many;
  for (int i = 0; i < 16; ++i) many += "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= ";
  EXPECT_THAT(v.Verify(Headers(id_, ts_, many + sig_), body_),
              HasReason(Reason::kSignatureInvalid));
  EXPECT_TRUE(v.Verify(Headers(id_, ts_, "  v2,xx  " + sig_ + "  "), body_).ok());
}

TEST(WebhookSecretTest, DecodesWithOrWithoutPrefixAndRefusesEmpty) {
  auto a = DecodeWebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
  auto b = DecodeWebhookSecret("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(a->Equals(*b));
  EXPECT_EQ(a->size(), 24u);
  for (const char* bad : {"", "whsec_", "whsec_***", "whsec_abc"}) {
    auto r = DecodeWebhookSecret(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r, HasReason(Reason::kConfigInvalid)) << bad;
  }
}

TEST(WebhookSecretTest, CreateRefusesPreviousWithoutUntil) {
  FixedClock clock(0);
  auto r =
      WebhookVerifier::Create(SecretBytes("k"), SecretBytes("p"), std::nullopt, kTolerance, clock);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r, HasReason(Reason::kConfigInvalid));
}

}  // namespace
}  // namespace clawguard::host
