// host_e2e_test.cpp — the main job end to end: the example plugin (examples/acme-orders) packed
// and signed in a SoftHSM2 token, `clawguard host` started as a child process on port 0 with the
// test ERP, then a retry storm of 17 concurrent deliveries of one order.created event (each
// re-signed with a fresh timestamp): exactly one fulfil and one adjust reach the ERP, and every
// stored answer the platform gets is the first one.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <mutex>
#include <thread>

#include "clawguard/encoding.h"
#include "clawguard/sha256.h"
#include "host/erp_client.h"
#include "host/webhook_auth.h"
#include "support/softhsm.h"
#include "support/temp_dir.h"
#include "support/test_erp_server.h"

extern char** environ;

namespace clawguard::host {
namespace {

using clawguard::testing::ReadFile;
using clawguard::testing::RunClawguard;
using clawguard::testing::WriteFile;

constexpr const char* kAdminToken = "e2e-admin-token-0123456789abcdefghijkl";
constexpr std::string_view kHookKey = "0123456789abcdef0123456789abcdef";  // the route's HMAC key
constexpr int kDeliveries = 17;

// HostProcess runs `clawguard host --config F` with extra environment, reads its first stdout
// line (the listening addresses) and stops it with SIGTERM.
class HostProcess {
 public:
  bool Start(const std::string& config, const std::vector<std::pair<std::string, std::string>>& env) {
    int fds[2];
    if (pipe(fds) != 0) return false;
    std::vector<std::string> envs;
    for (char** e = environ; *e != nullptr; ++e) envs.emplace_back(*e);
    for (const auto& [k, v] : env) envs.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (auto& s : envs) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string bin = CLAWGUARD_CLI_PATH, cmd = "host", flag = "--config", cfg = config;
    char* argv[] = {bin.data(), cmd.data(), flag.data(), cfg.data(), nullptr};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    const int rc = posix_spawn(&pid_, bin.c_str(), &fa, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
      close(fds[0]);
      return false;
    }
    char c;
    while (read(fds[0], &c, 1) == 1 && c != '\n') first_line_.push_back(c);
    out_fd_ = fds[0];
    return !first_line_.empty();
  }
  int Stop() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    if (out_fd_ >= 0) close(out_fd_);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  ~HostProcess() { (void)Stop(); }
  const std::string& first_line() const { return first_line_; }

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string first_line_;
};

TEST(HostEndToEndTest, RetryStormOfSignedPluginHasOneEffectPerCall) {
  clawguard::testing::TempDir dir;
  const std::string stage = std::string(CLAWGUARD_BINARY_DIR) + "/examples/acme-orders/stage/manifest.yaml";
  ASSERT_TRUE(std::filesystem::exists(stage)) << "build the acme_orders_stage target first";

  // Release: an HSM key, a leaf from the test PKI, pack and sign.
  clawguard::testing::SoftHsmToken hsm;
  const auto key = hsm.GenerateKey("acme-release");
  const auto pki = clawguard::testing::MakeTestPki(dir.Sub("pki"));
  const std::string chain = clawguard::testing::IssueLeaf(hsm, key, pki, "acme", "/O=acme/CN=acme release");
  auto packed = RunClawguard({"pack", "--manifest", stage, "--out", dir.Sub("plugins")});
  ASSERT_EQ(packed.exit_code, 0) << packed.err;
  const std::string pkg = dir.Sub("plugins/acme-orders-1.4.2.claw");
  auto signed_ = RunClawguard({"sign", "--module", hsm.module_path(), "--key", key.uri, "--pin-source",
                               hsm.PinSource(), "--chain", chain, "--no-ledger", pkg},
                              hsm.Env());
  ASSERT_EQ(signed_.exit_code, 0) << signed_.err;

  // Policies, the ERP and host.yaml.
  WriteFile(dir.Sub("trust.yaml"),
            "schema: clawguard/trust/v1\nmode: enforce\nroots:\n  - file: " + pki.root_pem + "\n    sha256: " +
                pki.root_sha256 +
                "\nrequire_eku: codeSigning\npublishers:\n  acme: [\"acme-*\"]\nthreshold: 1\n"
                "revoked: { certificates: [], keys: [], crls: [] }\nallowlist_signer: null\nrollback: refuse\n"
                "limits: { max_package: 16MiB, max_unpacked: 64MiB, max_entries: 8, max_ratio: 100 }\n"
                "elf: { allowed_needed: [libc.so.6] }\n");
  WriteFile(dir.Sub("allowlist.yaml"), "schema: clawguard/allowlist/v1\nversion: 1\nexpires: 2099-12-31T00:00:00Z\n"
                                       "plugins:\n  - { name: acme-orders, version: 1.4.2, sha256: " +
                                           Sha256Hex(ReadFile(pkg)) + " }\n");
  auto erp = testing::TestErpServer::Create();
  ASSERT_TRUE(erp.ok());
  WriteFile(dir.Sub("host.yaml"),
            "schema: clawguard/host/v1\n"
            "listen: { address: 127.0.0.1:0, tls: null, max_body: 1MiB, max_headers: 16KiB, workers: 4 }\n"
            "admin: { address: 127.0.0.1:0, token: env:E2E_ADMIN, tls: null }\n"
            "store: sqlite:state/state.db\n"
            "plugins: { dir: plugins, trust: trust.yaml, allowlist: allowlist.yaml, handler_timeout: 5s }\n"
            "webhooks:\n  tolerance: 300s\n  clock_skew: 5m\n  platform_retry: { schedule: [1m] }\n"
            "  routes:\n    acme-orders/order.created: { current: env:E2E_SECRET }\n"
            "  rate_limit: { per_plugin: 200/s, burst: 400 }\n"
            "idempotency: { retention: 1h, lease: 30s, tombstones: 30d, intent_expiry: 24h }\n"
            "erp:\n  base_url: " + (*erp)->base_url() + "\n  timeout: 5s\n  ca: " + pki.root_pem + "\n  auth: env:E2E_ERP\n"
            "  retry: { base: 1s, max: 1m, attempts: 3, jitter: 20%, floor_429: 60s }\n"
            "breaker:\n  key: { failures: 3, window: 5s, cooldown: 30s }\n"
            "  erp: { failures: 10, window: 30s, cooldown: 60s, half_open_probes: 1 }\n"
            "log: { audit: audit.jsonl, redact: [token] }\n");

  HostProcess host;
  ASSERT_TRUE(host.Start(dir.Sub("host.yaml"), {{"E2E_ADMIN", kAdminToken},
                                                {"E2E_SECRET", "whsec_" + Base64Encode(kHookKey)},
                                                {"E2E_ERP", "Bearer e2e-erp-token"}}))
      << ReadFile(dir.Sub("audit.jsonl"));
  const auto listening = nlohmann::json::parse(host.first_line());
  const std::string main = listening["main"].get<std::string>();

  // The storm: one event (one webhook-id, one body), each delivery freshly signed.
  const std::string body = ReadFile(std::string(CLAWGUARD_SOURCE_DIR) + "/examples/acme-orders/sample-event.json");
  const SecretBytes hook_key{kHookKey};
  const auto deliver = [&]() -> Result<ErpReply> {
    ErpClientOptions o;
    o.base_url = "http://" + main;
    o.timeout = std::chrono::milliseconds(15'000);
    CLAWGUARD_ASSIGN_OR_RETURN(std::unique_ptr<ErpClient> client, ErpClient::Create(std::move(o)));
    const int64_t ts = SystemClock::Instance().NowSeconds();
    HttpHeaders h;
    h.Set("webhook-id", "msg_storm_1");
    h.Set("webhook-timestamp", std::to_string(ts));
    h.Set("webhook-signature", WebhookSignature(hook_key, "msg_storm_1", ts, body));
    h.Set("Content-Type", "application/json");
    return client->Send("POST", "/webhooks/acme-orders/order.created", h, body);
  };
  std::mutex mu;
  std::vector<ErpReply> answers;
  std::vector<std::thread> threads;
  for (int i = 0; i < kDeliveries; ++i) {
    threads.emplace_back([&] {
      auto r = deliver();
      std::lock_guard lock(mu);
      if (r.ok()) answers.push_back(std::move(r).value());
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(answers.size(), static_cast<size_t>(kDeliveries));

  // Platform retries of those that met the live lease (409) until each has the stored answer.
  std::string first_body;
  int processed = 0;
  for (const ErpReply& a : answers) {
    ASSERT_TRUE(a.status == 200 || a.status == 409) << a.status << " " << a.body;
    if (a.status == 200 && !a.headers.Has("Idempotent-Replayed")) ++processed;
    if (a.status == 200) {
      if (first_body.empty()) first_body = a.body;
      EXPECT_EQ(a.body, first_body);
    }
  }
  EXPECT_EQ(processed, 1);
  auto replay = deliver();
  ASSERT_TRUE(replay.ok());
  EXPECT_EQ(replay->status, 200);
  EXPECT_EQ(replay->headers.Get("Idempotent-Replayed").value_or(""), "true");
  EXPECT_EQ(replay->body, R"({"status":"fulfilled"})");
  EXPECT_EQ(first_body, R"({"status":"fulfilled"})");

  EXPECT_EQ((*erp)->effects("/orders/ord_10042/fulfil"), 1u);
  EXPECT_EQ((*erp)->effects("/inventory/adjust"), 1u);
  EXPECT_EQ((*erp)->effects_total(), 2u);
  EXPECT_TRUE((*erp)->AtMostOneEffectPerKey());
  EXPECT_EQ(host.Stop(), 0);
}

}  // namespace
}  // namespace clawguard::host
