// json_log_test.cpp — JsonLogger: line shape, and redaction: every kind of secret through every
// logging entry point, proving that none appears in any line.
#include "host/observe/json_log.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "clawguard/encoding.h"
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard::host {
namespace {

constexpr int64_t kNow = 1'796'000'000'123;  // 2026-11-30T…, fixed

struct Captured {
  std::vector<std::string> lines;
  LogSink Sink() {
    return [this](std::string_view line) { lines.emplace_back(line); };
  }
};

std::unique_ptr<JsonLogger> MakeLogger(Captured& out, const FixedClock& clock,
                                       std::vector<SecretBytes> secrets = {}) {
  JsonLogger::Options options;
  options.redact = {"password", "token", "card"};
  options.known_secrets = std::move(secrets);
  options.min_level = LogLevel::kDebug;
  auto logger = JsonLogger::Create(std::move(options), out.Sink(), clock);
  EXPECT_TRUE(logger.ok()) << logger.error().ToString();
  return std::move(logger).value();
}

nlohmann::json ParseLine(const std::string& line) {
  EXPECT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << line;
  return nlohmann::json::parse(line);  // throws (fails the test) on invalid JSON
}

TEST(JsonLogTest, WritesOneObjectPerLine) {
  FixedClock clock(kNow);
  Captured out;
  auto log = MakeLogger(out, clock);
  log->Warn("erp_call_failed", {{"plugin", "acme-orders"},
                                {"attempt", 3},
                                {"bytes", uint64_t{18'000'000'000'000'000'000u}},
                                {"ratio", 0.5},
                                {"final", false},
                                {"next", nullptr},
                                {"text", "line1\nline2 \"q\" \x01 \xff"}});
  ASSERT_EQ(out.lines.size(), 1u);
  const auto j = ParseLine(out.lines[0]);
  EXPECT_EQ(j["time"], FormatRfc3339Utc(kNow / 1000).insert(19, ".123"));
  EXPECT_EQ(j["level"], "warn");
  EXPECT_EQ(j["event"], "erp_call_failed");
  EXPECT_EQ(j["fields"]["plugin"], "acme-orders");
  EXPECT_EQ(j["fields"]["attempt"], 3);
  EXPECT_EQ(j["fields"]["bytes"], uint64_t{18'000'000'000'000'000'000u});
  EXPECT_EQ(j["fields"]["ratio"], 0.5);
  EXPECT_EQ(j["fields"]["final"], false);
  EXPECT_TRUE(j["fields"]["next"].is_null());
  EXPECT_EQ(j["fields"]["text"], "line1\nline2 \"q\" \x01 \xEF\xBF\xBD");
  EXPECT_EQ(j.size(), 4u);  // time, level, event, fields
}

TEST(JsonLogTest, HonoursMinimumLevel) {
  FixedClock clock(kNow);
  Captured out;
  JsonLogger::Options options;
  options.min_level = LogLevel::kWarn;
  auto log = JsonLogger::Create(std::move(options), out.Sink(), clock);
  ASSERT_TRUE(log.ok());
  (*log)->Info("quiet");
  (*log)->Log(LogLevel::kDebug, "quiet");
  (*log)->Error("loud");
  ASSERT_EQ(out.lines.size(), 1u);
  EXPECT_EQ(ParseLine(out.lines[0])["event"], "loud");
}

TEST(JsonLogTest, RefusesBadOptions) {
  FixedClock clock(kNow);
  Captured out;
  JsonLogger::Options empty_entry;
  empty_entry.redact = {""};
  EXPECT_THAT(JsonLogger::Create(std::move(empty_entry), out.Sink(), clock),
              HasReason(Reason::kConfigInvalid));
  EXPECT_THAT(JsonLogger::Create({}, LogSink(), clock), HasReason(Reason::kConfigInvalid));
}

// A registered secret is scrubbed whatever its length: a 3-byte and a 5-byte one (shorter than
// any host.yaml accepts, so only a deployment mistake could register them) are still replaced,
// raw and base64, in free text, Status messages and re-rendered audit lines. An empty one is
// skipped (it would match everywhere).
TEST(JsonLogTest, ScrubsKnownSecretsOfAnyLength) {
  FixedClock clock(kNow);
  Captured out;
  JsonLogger::Options options;
  options.known_secrets.emplace_back(SecretBytes("q7Z"));
  options.known_secrets.emplace_back(SecretBytes("k9#Lp"));
  options.known_secrets.emplace_back(SecretBytes(""));
  auto log = JsonLogger::Create(std::move(options), out.Sink(), clock);
  ASSERT_TRUE(log.ok()) << log.error().ToString();
  const std::string b64 = "azkjTHA=";  // base64 of k9#Lp
  EXPECT_EQ((*log)->RedactText("token q7Z and k9#Lp and " + b64 + " end"),
            "token [REDACTED] and [REDACTED] and [REDACTED] end");
  const std::string line =
      (*log)->RedactJsonLine(R"({"event":"x","detail":"sent q7Z then k9#Lp"})");
  EXPECT_EQ(line.find("q7Z"), std::string::npos) << line;
  EXPECT_EQ(line.find("k9#Lp"), std::string::npos) << line;
  const Status s(Reason::kInternal, "the ERP refused k9#Lp");
  (*log)->LogStatus(LogLevel::kWarn, "erp", s);
  ASSERT_EQ(out.lines.size(), 1u);
  EXPECT_EQ(out.lines[0].find("k9#Lp"), std::string::npos) << out.lines[0];
  EXPECT_NE(out.lines[0].find("the ERP refused [REDACTED]"), std::string::npos) << out.lines[0];
}

// The secrets of a host: what each looks like where it could leak.
struct SecretCase {
  std::string label;
  std::string secret;       // must never appear
  std::string text;         // free text that carries it
  bool registered = false;  // given to the logger as a known secret (Options::known_secrets)
};

std::vector<SecretCase> Secrets() {
  const std::string hmac_key =
      "\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\xcc\xdd\xee\xff\x10route-key";
  return {
      {"route secret (whsec_)", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
       "secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw set"},
      {"route secret (raw key)", hmac_key, "key=" + hmac_key + " end", true},
      {"route secret (base64 key)", Base64Encode(hmac_key),
       "decoded from " + Base64Encode(hmac_key), true},
      {"signature header", "K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=",
       "got v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4= v1,Zm9vYmFyYmF6cXV4"},
      {"admin bearer token", "adm-7f3c9a1e5b2d4c6e8f0a1b3c5d7e9f11",
       "Authorization: Bearer adm-7f3c9a1e5b2d4c6e8f0a1b3c5d7e9f11"},
      {"erp credential (bearer)", "erp-tok-5d41402abc4b2a76b9719d911017c592",
       "sent bearer erp-tok-5d41402abc4b2a76b9719d911017c592"},
      {"erp credential (basic)",
       "ZXJwdXNlcjplcnBwYXNzd29yZA==", "Basic ZXJwdXNlcjplcnBwYXNzd29yZA=="},
      {"erp credential (registered)", "plain-erp-api-key-0042",
       "upstream said plain-erp-api-key-0042 is invalid", true},
      {"store url password", "hunter2pw",
       "cannot open postgresql://clawguard:hunter2pw@db.internal:5432/cg"},
      {"libpq password parameter", "s3cr3t-pq", "dsn host=db password=s3cr3t-pq dbname=cg"},
      {"pkcs11 pin-value", "87654321", "uri pkcs11:token=t;object=k?pin-value=87654321"},
      {"jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlLWJ5dGVz",
       "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlLWJ5dGVz"},
  };
}

TEST(JsonLogTest, NoSecretReachesAnyLine) {
  FixedClock clock(kNow);
  Captured out;
  std::vector<SecretBytes> known;
  known.emplace_back("\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\xcc\xdd\xee\xff\x10route-key");
  known.emplace_back("plain-erp-api-key-0042");
  auto log = MakeLogger(out, clock, std::move(known));
  for (const SecretCase& c : Secrets()) {
    SCOPED_TRACE(c.label);
    out.lines.clear();
    const SecretBytes as_secret(c.secret);
    HttpHeaders headers{{"Content-Type", "application/json"}, {"X-Note", c.text}};
    for (const char* name : {"Authorization", "webhook-signature", "svix-signature", "Cookie",
                             "X-Api-Key", "Proxy-Authorization", "X-Card-Number"}) {
      headers.Add(name, c.secret);
    }
    const Status status(Reason::kStoreUnavailable, "store failed: " + c.text);
    // Every entry point, the secret in free text, under secret field names, as SecretBytes, in
    // headers, in a Status, in the event and field names.
    log->Info("event", {{"detail", c.text}});
    // A bare secret has no shape: only a registered one can be caught under a neutral name.
    log->Warn("event", {{"detail", c.registered ? c.secret : c.text},
                        {"password", c.secret},
                        {"token", c.secret},
                        {"pin", c.secret},
                        {"user_pin", c.secret},
                        {"so-pin", c.secret},
                        {"hmac_key", c.secret},
                        {"erp_auth", c.secret},
                        {"ERP-Credentials", c.secret},
                        {"card_number", c.secret},
                        {"admin_token", c.secret},
                        {"secret", c.secret}});
    log->Error("event", {{"key", as_secret}});
    log->Log(LogLevel::kDebug, "event", {{"headers", headers}});
    log->LogStatus(LogLevel::kError, "event", status, {{"note", c.text}});
    log->Info(c.text, {{c.text, 1}});
    const std::string rendered = log->Render(LogLevel::kInfo, "event", {{"detail", c.text}});
    out.lines.push_back(rendered);
    ASSERT_EQ(out.lines.size(), 7u);
    for (const std::string& line : out.lines) {
      EXPECT_EQ(line.find(c.secret), std::string::npos) << line;
      ParseLine(line);
    }
  }
}

TEST(JsonLogTest, RedactionKeepsWhatOperatorsNeed) {
  FixedClock clock(kNow);
  Captured out;
  auto log = MakeLogger(out, clock);
  const auto j = ParseLine(log->Render(
      LogLevel::kInfo, "claimed",
      {{"plugin", "acme-orders"},
       {"idempotency_key", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
       {"fencing_token", 7},
       {"store", "postgresql://clawguard:pw@db:5432/cg"},
       {"authorization", nullptr},
       {"detail", "Bearer"}}));
  EXPECT_EQ(j["fields"]["plugin"], "acme-orders");
  EXPECT_EQ(j["fields"]["idempotency_key"],
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
  EXPECT_EQ(j["fields"]["fencing_token"], 7);
  EXPECT_EQ(j["fields"]["store"], "postgresql://clawguard:***@db:5432/cg");
  EXPECT_TRUE(j["fields"]["authorization"].is_null());
  EXPECT_EQ(j["fields"]["detail"], "Bearer");
  EXPECT_TRUE(log->IsSecretName("Webhook-Signature"));
  EXPECT_TRUE(log->IsSecretName("SVIX_SIGNATURE"));
  EXPECT_FALSE(log->IsSecretName("route"));
  EXPECT_FALSE(log->IsSecretName("shipping_method"));
}

TEST(JsonLogTest, LongValuesAreCutAfterRedaction) {
  FixedClock clock(kNow);
  Captured out;
  auto log = MakeLogger(out, clock);
  const std::string big =
      std::string(kMaxLogValueBytes - 10, 'a') + " whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=";
  const auto j = ParseLine(log->Render(LogLevel::kInfo, "big", {{"body", big}}));
  const std::string body = j["fields"]["body"];
  EXPECT_EQ(body.find("QUJDREVG"), std::string::npos);
  EXPECT_LE(body.size(), kMaxLogValueBytes + 20);
}

TEST(JsonLogTest, ConcurrentLinesNeverInterleave) {
  FixedClock clock(kNow);
  std::string all;
  JsonLogger::Options options;
  auto log = JsonLogger::Create(
      std::move(options), [&all](std::string_view line) { all.append(line); }, clock);
  ASSERT_TRUE(log.ok());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) (*log)->Info("tick", {{"thread", t}, {"i", i}});
    });
  }
  for (auto& t : threads) t.join();
  std::size_t lines = 0;
  for (std::size_t start = 0; start < all.size();) {
    const std::size_t nl = all.find('\n', start);
    ASSERT_NE(nl, std::string::npos);
    const auto parsed =
        nlohmann::json::parse(all.substr(start, nl - start), nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(parsed.is_discarded());
    start = nl + 1;
    ++lines;
  }
  EXPECT_EQ(lines, 2000u);
}

}  // namespace
}  // namespace clawguard::host
