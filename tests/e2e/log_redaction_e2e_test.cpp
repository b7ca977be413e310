// log_redaction_e2e_test.cpp — no secret reaches a log line.
//
// RedactJsonLine (the audit sink's filter) on lines holding every secret shape, and then a real
// `clawguard host` child process (the signed example plugin, SQLite, the test ERP) with known
// secret values, driven through the error paths: forged signature, stale timestamp, a signature
// made with the previous route secret, wrong admin tokens, the ERP answering 401 / 500 / too late,
// a package refused at load. Every line of the audit log and of
// the host's stdout and stderr is then read: each is one valid JSON object and none holds a
// secret, raw, base64 or in its whsec_ form. Last, a store URL with a password is refused at
// start-up without echoing it.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "clawguard/clock.h"
#include "clawguard/encoding.h"
#include "clawguard/secret_bytes.h"
#include "host/erp/erp_client.h"
#include "host/intake/webhook_auth.h"
#include "host/observe/json_log.h"
#include "support/host_fixture.h"
#include "support/raw_client.h"

extern char** environ;

namespace clawguard::host {
namespace {

using clawguard::testing::ReadFile;
using clawguard::testing::WriteFile;
using testing::HostFixture;

// ---------------------------------------------------------------------------------------------
// RedactJsonLine

constexpr std::string_view kKnown = "known-secret-value-123456";

std::unique_ptr<JsonLogger> Redactor(const FixedClock& clock) {
  JsonLogger::Options options;
  options.redact = {"card"};
  options.known_secrets.emplace_back(kKnown);
  auto logger = JsonLogger::Create(
      std::move(options), [](std::string_view) {}, clock);
  EXPECT_TRUE(logger.ok()) << logger.error().ToString();
  return std::move(logger).value();
}

TEST(RedactJsonLineTest, KeepsAPlainLineAsItWas) {
  FixedClock clock(0);
  const auto log = Redactor(clock);
  const std::string line =
      R"({"event":"erp_call_retry","plugin":"acme-orders","attempt":2,"ratio":0.5,"final":false,"next":null,)"
      R"("fencing_token":7,"endpoints":["POST /orders/{id}/fulfil"],"detail":{"status":503}})";
  EXPECT_EQ(log->RedactJsonLine(line), line);  // member order, types and spacing kept
}

TEST(RedactJsonLineTest, RedactsEverySecretShape) {
  FixedClock clock(0);
  const auto log = Redactor(clock);
  const std::string b64 = Base64Encode(kKnown);
  const struct {
    std::string line;
    std::string secret;
  } cases[] = {
      {R"({"event":"x","detail":"key whsec_MDEyMzQ1Njc4OWFiY2RlZg== rejected"})",
       "MDEyMzQ1Njc4OWFiY2RlZg"},
      {R"({"event":"x","detail":"sent Bearer tok-abcdef123 to the ERP"})", "tok-abcdef123"},
      {R"({"event":"x","detail":"Basic dXNlcjpwYXNzd29yZA=="})", "dXNlcjpwYXNzd29yZA"},
      {R"({"event":"x","got":"v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4="})",
       "K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN"},
      {R"({"event":"x","detail":"cannot reach postgresql://cg:St0rePassw0rd@db:5432/cg"})",
       "St0rePassw0rd"},
      {R"({"event":"x","detail":"jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"})",
       "eyJzdWIiOiIxIn0"},
      {R"({"event":"x","detail":"the value )" + std::string(kKnown) + R"( leaked"})",
       std::string(kKnown)},
      {R"({"event":"x","detail":"base64 )" + b64 + R"("})", b64},
      {R"({"event":"x","request":{"headers":{"Authorization":"opaque-credential-42"}}})",
       "opaque-credential-42"},
      {R"({"event":"x","list":[{"api_key":"opaque-apikey-77"}]})", "opaque-apikey-77"},
      {R"({"event":"x","card_number":"4111111111111111"})",
       "4111111111111111"},  // log.redact: card
      {R"({"event":"x","secrets":["opaque-one-1234","opaque-two-5678"]})", "opaque-two-5678"},
      {R"({"event":"x","detail":{"nested":["pin-value=918273"]}})", "918273"},
      {R"({"event":"x",")" + std::string(kKnown) + R"(":"as a member name"})", std::string(kKnown)},
  };
  for (const auto& c : cases) {
    const std::string out = log->RedactJsonLine(c.line);
    EXPECT_EQ(out.find(c.secret), std::string::npos) << c.line << "\n→ " << out;
    EXPECT_NE(out, c.line);
    const auto j = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(j.is_object()) << out;
    EXPECT_EQ(j["event"], "x");
    EXPECT_EQ(out.find('\n'), std::string::npos);
  }
}

// The audit sink renders flat lines without a DOM (log_flat_scanner.h, RedactFlatLine); every line
// must come out as the DOM path renders it, whichever path takes it.
TEST(RedactJsonLineTest, TheFlatPathRendersEveryLineAsTheDomPathDoes) {
  FixedClock clock(0);
  const auto log = Redactor(clock);
  const std::string known(kKnown);
  const std::vector<std::string> fixed = {
      R"({})",
      R"({"event":"plugin_log","level":1,"message":"order fulfilled","plugin":"acme-orders"})",
      R"({"":"empty name","token":"t","fencing_token":3,"card_no":"4111","a":null,"token2":null})",
      R"({"q":"\"quoted\" \\ \/ \b\f\n\r\t \u0001\u001f\u007f\u0041"})",
      R"({"n":0,"m":-12,"big":123456789012345678,"bigger":1234567890123456789,"neg":-123456789012345678})",
      R"({"lead":01})",
      R"({"negzero":-0})",
      R"({"f":1.5})",
      R"({"e":1e3})",
      R"({"t":true,"f":false})",
      R"({"tru":tru})",
      R"({"nul":nullx})",
      R"({"a":1,"a":2})",
      R"({"a":1,})",
      R"({,"a":1})",
      R"({"a" :1})",
      R"({ "a":1})",
      R"({"a":1} )",
      R"({"a":1}{})",
      R"({"a":{"b":1}})",
      R"({"a":[1]})",
      R"({"u":"\u00e9"})",
      R"({"u":"\uD83D\uDE00"})",
      R"({"x":"caf\u00e9 \u20ac"})",
      "{\"raw\":\"caf\xc3\xa9\"}",
      "{\"ctl\":\"a\x01b\"}",
      "{\"del\":\"a\x7f\"}",
      R"({"bad":"\x"})",
      R"({"bad":"\u12"})",
      R"({"bad":"\u12G4"})",
      R"({"cut":"abc)",
      R"({"cut":)",
      R"({"cut")",
      R"({)",
      R"(})",
      "",
      R"({"k":"Bearer tok-abcdef123 and whsec_MDEyMzQ1Njc4OWFiY2RlZg== and v1,abc="})",
      R"({"k":"postgresql://u:pw@h/db password=hunter2 eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln"})",
      "{\"" + known + "\":\"" + known + "\",\"b64\":\"" + Base64Encode(known) + "\"}",
      "{\"long\":\"" + std::string(9000, 'a') + "\",\"secret-long\":\"" + known +
          std::string(9000, 'b') + "\"}"};
  for (const std::string& line : fixed) {
    EXPECT_EQ(log->RedactJsonLine(line), log->RedactJsonLineByDom(line)) << line;
  }
  // Many objects built from those pieces, then cut or with a byte changed.
  const std::vector<std::string> names = {"event",    "plugin", "token",     "card_no",
                                          "",         known,    "a\\\"b",    "fencing_token",
                                          "x\\u0001", "pin",    "auth-mode", "level"};
  const std::vector<std::string> values = {R"("plain")",
                                           R"("Bearer tok-abcdef123")",
                                           R"("whsec_MDEyMzQ1Njc4OWFiY2RlZg==")",
                                           R"("a\"b\\c\n")",
                                           R"("\u0000\u007e")",
                                           "\"" + known + "\"",
                                           "0",
                                           "-7",
                                           "42",
                                           "123456789012345678",
                                           "1234567890123456789",
                                           "true",
                                           "false",
                                           "null",
                                           "01",
                                           "1.0",
                                           "{}",
                                           "[]",
                                           R"("\u00ff")"};
  std::mt19937 rng(20261205);
  const auto pick = [&rng](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
  for (int i = 0; i < 20000; ++i) {
    std::string line = "{";
    const int members = static_cast<int>(rng() % 6);
    for (int m = 0; m < members; ++m) {
      if (m > 0) line += ",";
      line += "\"" + pick(names) + "\":" + pick(values);
    }
    line += "}";
    switch (rng() % 4) {
      case 0: line.resize(rng() % (line.size() + 1)); break;
      case 1: line[rng() % line.size()] = static_cast<char>(rng() % 256); break;
      default: break;
    }
    ASSERT_EQ(log->RedactJsonLine(line), log->RedactJsonLineByDom(line)) << line;
  }
}

TEST(RedactJsonLineTest, NullUnderASecretNameStaysNull) {
  FixedClock clock(0);
  const auto log = Redactor(clock);
  EXPECT_EQ(log->RedactJsonLine(R"({"token":null,"signature":1})"),
            R"({"token":null,"signature":"[REDACTED]"})");
}

TEST(RedactJsonLineTest, ANonObjectLineBecomesAnUnparseableEvent) {
  FixedClock clock(0);
  const auto log = Redactor(clock);
  for (const std::string& line :
       {std::string("plain text with Bearer tok-abcdef123"),
        std::string(R"({"event":"cut short", "detail":"Bearer tok-abcdef123")"),
        std::string(R"(["Bearer tok-abcdef123"])"), std::string(""),
        std::string("{\"event\":\"bad utf8 \xff Bearer tok-abcdef123\"}"),
        std::string(R"({"event":"x"} trailing Bearer tok-abcdef123)")}) {
    const std::string out = log->RedactJsonLine(line);
    EXPECT_EQ(out.find("tok-abcdef123"), std::string::npos) << out;
    const auto j = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(j.is_object()) << out;
    EXPECT_EQ(j["event"], "unparseable_log_line") << out;
    EXPECT_TRUE(j["redacted"].is_string()) << out;
  }
}

TEST(RedactJsonLineTest, CutsLongValuesAndDeepNesting) {
  FixedClock clock(0);
  const auto log = Redactor(clock);
  const std::string long_line =
      R"({"detail":")" + std::string(3 * kMaxLogValueBytes, 'a') + R"("})";
  const std::string out = log->RedactJsonLine(long_line);
  EXPECT_LT(out.size(), kMaxLogValueBytes + 64);
  EXPECT_NE(out.find("[truncated]"), std::string::npos);

  std::string deep;
  for (int i = 0; i < 100; ++i) deep += R"({"a":)";
  deep += R"("Bearer tok-abcdef123")";
  for (int i = 0; i < 100; ++i) deep += "}";
  const std::string cut = log->RedactJsonLine(deep);
  EXPECT_TRUE(nlohmann::json::parse(cut, nullptr, false).is_object());
  EXPECT_EQ(cut.find("tok-abcdef123"), std::string::npos);
  EXPECT_NE(cut.find(kRedacted), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// A real host process

constexpr const char* kRedactionAdminToken = "redaction-admin-token-0123456789abcdefgh";
constexpr const char* kErpToken = "redaction-erp-token-5551234";
constexpr std::string_view kPreviousHookKey = "previous-hook-key-ABCDEFGHIJKLMNOP";

// ChildHost runs `clawguard host --config F` with stdout and stderr in files.
class ChildHost {
 public:
  ChildHost(std::string out_path, std::string err_path)
      : out_(std::move(out_path)), err_(std::move(err_path)) {}
  ~ChildHost() { (void)Stop(); }
  ChildHost(const ChildHost&) = delete;
  ChildHost& operator=(const ChildHost&) = delete;

  bool Start(const std::string& config,
             const std::vector<std::pair<std::string, std::string>>& env) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int rc = clawguard::host::testing::SpawnHost(config, env, &fa, &pid_);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) pid_ = -1;
    return rc == 0;
  }
  // FirstLine waits (polling, at most ~30 s) for the first stdout line; "" if the host exited.
  std::string FirstLine() {
    for (int i = 0; i < 1500 && pid_ > 0; ++i) {
      const std::string out = ReadFile(out_);
      if (const size_t nl = out.find('\n'); nl != std::string::npos) return out.substr(0, nl);
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return "";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling, not a timing assert
    }
    return "";
  }
  // Stop sends SIGTERM and waits; the exit code.
  int Stop() {
    if (pid_ <= 0) return exit_code_;
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return exit_code_;
  }

 private:
  const std::string out_, err_;
  pid_t pid_ = -1;
  int exit_code_ = -1;
};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Secrets lists every form of every secret the host was given.
std::vector<std::string> Secrets() {
  std::vector<std::string> raw = {kRedactionAdminToken, std::string("Bearer ") + kErpToken,
                                  kErpToken, std::string(HostFixture::kHookKey),
                                  std::string(kPreviousHookKey)};
  std::vector<std::string> all;
  for (const auto& s : raw) {
    all.push_back(s);
    std::string b64 = Base64Encode(s);
    while (!b64.empty() && b64.back() == '=') b64.pop_back();  // the padding-free stem also counts
    all.push_back(b64);
  }
  all.push_back("whsec_" + Base64Encode(HostFixture::kHookKey));
  all.push_back("whsec_" + Base64Encode(kPreviousHookKey));
  return all;
}

void ExpectCleanJsonLines(const std::string& what, const std::string& text) {
  for (const std::string& line : Lines(text)) {
    EXPECT_TRUE(nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false).is_object())
        << what << ": not one JSON object: " << line;
    for (const std::string& secret : Secrets()) {
      EXPECT_EQ(line.find(secret), std::string::npos) << what << " holds a secret form: " << line;
    }
  }
}

int SendRaw(uint16_t port, const std::string& raw) {
  auto conn = testing::RawConnection::Connect(port);
  if (conn == nullptr || !conn->Send(raw)) return 0;
  return conn->ReadResponse().status;
}

std::string SignedWith(std::string_view key, const std::string& id, int64_t ts,
                       const std::string& body) {
  const SecretBytes k{key};
  return testing::SimpleRequest("POST", HostFixture::kRoutePath, body,
                                "Content-Type: application/json\r\nwebhook-id: " + id +
                                    "\r\nwebhook-timestamp: " + std::to_string(ts) +
                                    "\r\nwebhook-signature: " + WebhookSignature(k, id, ts, body) +
                                    "\r\n");
}

int GetAdmin(uint16_t port, const std::string& path, const std::string& token) {
  ErpClientOptions o;
  o.base_url = "http://127.0.0.1:" + std::to_string(port);
  o.timeout = std::chrono::milliseconds(5000);
  o.auth = SecretBytes("Bearer " + token);
  auto c = ErpClient::Create(std::move(o));
  if (!c.ok()) return 0;
  auto r = (*c)->Send("GET", path, HttpHeaders{}, "");
  return r.ok() ? r->status : 0;
}

uint16_t PortOf(const nlohmann::json& listening, const char* which) {
  const std::string a = listening[which].get<std::string>();
  return static_cast<uint16_t>(std::stoi(a.substr(a.rfind(':') + 1)));
}

TEST(LogRedactionE2eTest, NoSecretReachesAnyHostLogLine) {
  HostFixture fixture;
  testing::HostFixtureOptions options;
  options.erp_timeout = "1s";
  options.erp_retry = "{ base: 1s, max: 2s, attempts: 2, jitter: 0%, floor_429: 1s }";
  ASSERT_NO_FATAL_FAILURE(fixture.Prepare(options));
  // A package refused at load, and a previous route secret still in its grace period.
  WriteFile(fixture.dir().Sub("plugins/bogus-1.0.0.claw"), "not a package");
  const std::string yaml_path = fixture.dir().Sub("host.yaml");
  std::string yaml = ReadFile(yaml_path);
  const std::string route = "{ current: env:E2E_SECRET }";
  ASSERT_NE(yaml.find(route), std::string::npos);
  yaml.replace(yaml.find(route), route.size(),
               "{ current: env:E2E_SECRET, previous: env:E2E_PREVIOUS, previous_until: "
               "2099-01-01T00:00:00Z }");
  WriteFile(yaml_path, yaml);

  auto& erp = fixture.erp();
  testing::ErpAnswer unauthorized;
  unauthorized.status = 401;
  unauthorized.body = R"({"error":"bad credentials"})";
  // The refused order's id carries the ERP token: the erp_auth_failed line names the path.
  const std::string e401 = std::string("E401-") + kErpToken;
  erp.SetAnswer("/orders/" + e401 + "/fulfil", unauthorized);
  testing::ErpAnswer failing;
  failing.status = 500;
  failing.body = R"({"error":"boom"})";
  erp.SetAnswer("/orders/E500/fulfil", failing);
  testing::ErpAnswer late;
  late.delay = std::chrono::milliseconds(3000);  // erp.timeout is 1s
  erp.SetAnswer("/orders/ELATE/fulfil", late);

  const std::vector<std::pair<std::string, std::string>> env = {
      {"E2E_ADMIN", kRedactionAdminToken},
      {"E2E_SECRET", "whsec_" + Base64Encode(HostFixture::kHookKey)},
      {"E2E_PREVIOUS", "whsec_" + Base64Encode(kPreviousHookKey)},
      {"E2E_ERP", std::string("Bearer ") + kErpToken}};
  const std::string out_path = fixture.dir().Sub("host.out"),
                    err_path = fixture.dir().Sub("host.err");
  {
    ChildHost host(out_path, err_path);
    ASSERT_TRUE(host.Start(yaml_path, env));
    const std::string first = host.FirstLine();
    ASSERT_FALSE(first.empty()) << ReadFile(err_path) << ReadFile(fixture.audit_log());
    const auto listening = nlohmann::json::parse(first, nullptr, false);
    ASSERT_TRUE(listening.is_object() && listening.contains("main")) << first;
    const uint16_t main = PortOf(listening, "main"), admin = PortOf(listening, "admin");
    const int64_t now = SystemClock::Instance().NowSeconds();

    // Forged signature, stale timestamp, then a good delivery signed with the previous secret.
    std::string forged = HostFixture::SignedRequest("msg_forged", HostFixture::OrderBody("F1"));
    forged.replace(forged.find("\"F1\""), 4, "\"F2\"");
    EXPECT_EQ(SendRaw(main, forged), 401);
    EXPECT_EQ(SendRaw(main, SignedWith(HostFixture::kHookKey, "msg_stale", now - 3600,
                                       HostFixture::OrderBody("S1"))),
              401);
    EXPECT_EQ(
        SendRaw(main, SignedWith(kPreviousHookKey, "msg_prev", now, HostFixture::OrderBody("P1"))),
        200);
    // Wrong admin tokens (one holds the real token as a prefix).
    EXPECT_EQ(GetAdmin(admin, "/metrics", std::string(kRedactionAdminToken) + "x"), 401);
    EXPECT_EQ(GetAdmin(admin, "/metrics", "wrong-admin-token-zzzzzzzzzzzzzzzzzzzzzzz"), 401);
    EXPECT_EQ(GetAdmin(admin, "/metrics", kRedactionAdminToken), 200);
    // The ERP fails, answers too late, refuses the credentials (last: a 401 pauses the capability).
    for (const std::string& order : {std::string("E500"), std::string("ELATE"), e401}) {
      const int status =
          SendRaw(main, HostFixture::SignedRequest("msg_" + order, HostFixture::OrderBody(order)));
      EXPECT_NE(status, 0) << order;
    }
    // The ERP saw every call, with the credential (so it was there to leak) …
    std::set<std::string> paths;
    for (const auto& r : erp.requests()) {
      EXPECT_EQ(r.headers.Get("Authorization").value_or(""), std::string("Bearer ") + kErpToken)
          << r.path;
      paths.insert(r.path);
    }
    for (const std::string& order : {std::string("E500"), std::string("ELATE"), e401}) {
      EXPECT_EQ(paths.count("/orders/" + order + "/fulfil"), 1u) << order;
    }
    EXPECT_EQ(host.Stop(), 0);
  }

  // … and no line of any log holds any form of any secret.
  const std::string audit = ReadFile(fixture.audit_log());
  EXPECT_NE(audit.find("\"plugin_refused\""), std::string::npos) << audit;
  EXPECT_NE(audit.find("\"erp_auth_failed\""), std::string::npos) << audit;
  EXPECT_NE(audit.find("\"path\":\"/orders/E401-[REDACTED]/fulfil\""), std::string::npos) << audit;
  ExpectCleanJsonLines("audit log", audit);
  ExpectCleanJsonLines("host stdout", ReadFile(out_path));
  ExpectCleanJsonLines("host stderr", ReadFile(err_path));

  // A store URL carrying a password is refused at start-up (exit 2); the refusal (plain text on
  // stderr, from the CLI's ReportError) must not repeat the password, nor may the audit log.
  constexpr const char* kStorePassword = "St0reUrlPassw0rd-9182";
  const std::string sqlite_store = "store: sqlite:state/state.db";
  ASSERT_NE(yaml.find(sqlite_store), std::string::npos);
  yaml.replace(yaml.find(sqlite_store), sqlite_store.size(),
               std::string("store: postgresql://cg:") + kStorePassword + "@127.0.0.1:1/cg");
  WriteFile(yaml_path, yaml);
  ChildHost refused(out_path, err_path);
  ASSERT_TRUE(refused.Start(yaml_path, env));
  EXPECT_EQ(refused.FirstLine(), "");
  EXPECT_EQ(refused.Stop(), 2);
  const std::string err = ReadFile(err_path);
  EXPECT_NE(err.find("store"), std::string::npos) << err;
  for (const std::string& text : {err, ReadFile(out_path), ReadFile(fixture.audit_log())}) {
    EXPECT_EQ(text.find(kStorePassword), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace clawguard::host
