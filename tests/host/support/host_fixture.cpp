// host_fixture.cpp — the `clawguard host` child process and the signed example plugin set-up.
#include "support/host_fixture.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <thread>

#include "clawguard/clock.h"
#include "clawguard/encoding.h"
#include "clawguard/secret_bytes.h"
#include "clawguard/sha256.h"
#include "host/intake/webhook_auth.h"
#include "sqlite/sqlite_dlq.h"
#include "sqlite/sqlite_idempotency_store.h"
#include "sqlite/sqlite_ledger.h"
#include "sqlite/sqlite_outbox.h"
#include "support/softhsm.h"
#include "support/test_plugins.h"

extern char** environ;

namespace clawguard::host::testing {

Result<HostStores> OpenSqliteStores(const std::string& url, const Clock& clock) {
  if (url.rfind("sqlite:", 0) != 0)
    return Status(Reason::kStoreUnavailable, "only sqlite: in this test");
  const std::string path = url.substr(7);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  HostStores s;
  CLAWGUARD_ASSIGN_OR_RETURN(s.idempotency, sqlite::SqliteIdempotencyStore::Open(path, clock));
  CLAWGUARD_ASSIGN_OR_RETURN(s.outbox, sqlite::SqliteOutbox::Open(path, clock));
  CLAWGUARD_ASSIGN_OR_RETURN(s.ledger, SqliteLedger::Open(path, clock));
  CLAWGUARD_ASSIGN_OR_RETURN(s.dlq, sqlite::SqliteDlq::Open(path, clock));
  return s;
}

std::string WorkerPath() {
  return (std::filesystem::path(CLAWGUARD_CLI_PATH).parent_path() / "clawguard-worker").string();
}
int KillWorkersOf(pid_t host) {
  int killed = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    // /proc/PID/stat: "PID (COMM) STATE PPID ..."; COMM is at most 15 bytes.
    const std::string stat = clawguard::testing::ReadFile(it->path().string() + "/stat");
    const size_t close = stat.rfind(')');
    if (close == std::string::npos || stat.find("(clawguard-worke)") == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    long ppid = 0;
    rest >> state >> ppid;
    if (ppid == host && ::kill(static_cast<pid_t>(std::stol(name)), SIGKILL) == 0) ++killed;
  }
  return killed;
}

namespace {

using clawguard::testing::ReadFile;
using clawguard::testing::RunClawguard;
using clawguard::testing::WriteFile;

}  // namespace

int SpawnHost(const std::string& config,
              const std::vector<std::pair<std::string, std::string>>& env,
              const posix_spawn_file_actions_t* fa, pid_t* pid, uint64_t nofile) {
  std::vector<std::string> envs;
  for (char** e = environ; *e != nullptr; ++e) envs.emplace_back(*e);
  for (const auto& [k, v] : env) envs.push_back(k + "=" + v);
  std::vector<char*> envp;
  envp.reserve(envs.size() + 1);
  for (auto& s : envs) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string bin = CLAWGUARD_CLI_PATH, cmd = "host", flag = "--config", cfg = config;
  if (nofile > 0) {
    std::string prlimit = "/usr/bin/prlimit",
                limit = "--nofile=" + std::to_string(nofile) + ":" + std::to_string(nofile),
                dashes = "--";
    char* argv[] = {prlimit.data(), limit.data(), dashes.data(), bin.data(),
                    cmd.data(),     flag.data(),  cfg.data(),    nullptr};
    return posix_spawn(pid, prlimit.c_str(), fa, nullptr, argv, envp.data());
  }
  char* argv[] = {bin.data(), cmd.data(), flag.data(), cfg.data(), nullptr};
  return posix_spawn(pid, bin.c_str(), fa, nullptr, argv, envp.data());
}

bool HostProcess::Start(const std::string& config,
                        const std::vector<std::pair<std::string, std::string>>& env,
                        uint64_t nofile) {
  if (pid_ > 0) return false;
  first_line_.clear();
  int fds[2];
  if (pipe(fds) != 0) return false;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  const int rc = SpawnHost(config, env, &fa, &pid_, nofile);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    pid_ = -1;
    close(fds[0]);
    return false;
  }
  char c;
  while (read(fds[0], &c, 1) == 1 && c != '\n') first_line_.push_back(c);
  out_fd_ = fds[0];
  return !first_line_.empty();
}

int HostProcess::Signal(int sig) {
  if (pid_ <= 0) return -1;
  kill(pid_, sig);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  if (out_fd_ >= 0) close(out_fd_);
  out_fd_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void HostFixture::Prepare(const HostFixtureOptions& options) {
  namespace fs = std::filesystem;
  const fs::path stage = fs::path(CLAWGUARD_BINARY_DIR) / "examples/acme-orders/stage";
  ASSERT_TRUE(fs::exists(stage / "manifest.yaml")) << "build the acme_orders_stage target first";
  // A copy of the staged plugin, its route level set as asked (the manifest is signed after).
  const fs::path root = dir_.path() / "stage";
  fs::copy(stage, root, fs::copy_options::recursive);
  std::string manifest = ReadFile((root / "manifest.yaml").string());
  const size_t at = manifest.find("level: 2");
  ASSERT_NE(at, std::string::npos) << "the example manifest has no 'level: 2'";
  manifest.replace(at, 8, "level: " + std::to_string(options.level));
  WriteFile((root / "manifest.yaml").string(), manifest);
  if (!options.plugin_source.empty()) {
    const std::string failed =
        CompilePackagedPlugin(options.plugin_source, (root / "lib/libacme_orders.so").string());
    ASSERT_EQ(failed, "");
  }
  nofile_ = options.nofile;

  // Release: an HSM key, a leaf from the test PKI, pack and sign.
  clawguard::testing::SoftHsmToken hsm;
  const auto key = hsm.GenerateKey("acme-release");
  const auto pki = clawguard::testing::MakeTestPki(dir_.Sub("pki"));
  const std::string chain =
      clawguard::testing::IssueLeaf(hsm, key, pki, "acme", "/O=acme/CN=acme release");
  auto packed = RunClawguard(
      {"pack", "--manifest", (root / "manifest.yaml").string(), "--out", dir_.Sub("plugins")});
  ASSERT_EQ(packed.exit_code, 0) << packed.err;
  const std::string pkg = dir_.Sub("plugins/acme-orders-1.4.2.claw");
  auto signed_ =
      RunClawguard({"sign", "--module", hsm.module_path(), "--key", key.uri, "--pin-source",
                    hsm.PinSource(), "--chain", chain, "--no-ledger", pkg},
                   hsm.Env());
  ASSERT_EQ(signed_.exit_code, 0) << signed_.err;
  std::string more_allowed;
  for (const HostFixtureOptions::Version& v : options.more_versions) {
    // The same staged plugin under another version, its manifest without the dropped capabilities.
    const fs::path vroot = dir_.path() / ("stage-" + v.version);
    fs::copy(root, vroot, fs::copy_options::recursive);
    std::string vmanifest = ReadFile((vroot / "manifest.yaml").string());
    const size_t ver = vmanifest.find("version: 1.4.2");
    ASSERT_NE(ver, std::string::npos) << "the example manifest has no 'version: 1.4.2'";
    vmanifest.replace(ver, 14, "version: " + v.version);
    for (const std::string& cap : v.drop_capabilities) {
      const std::string line = "    - " + cap + "\n";
      const size_t cat = vmanifest.find(line);
      ASSERT_NE(cat, std::string::npos)
          << "the example manifest has no capability line '" << cap << "'";
      vmanifest.erase(cat, line.size());
    }
    WriteFile((vroot / "manifest.yaml").string(), vmanifest);
    auto vpacked = RunClawguard(
        {"pack", "--manifest", (vroot / "manifest.yaml").string(), "--out", dir_.Sub("versions")});
    ASSERT_EQ(vpacked.exit_code, 0) << vpacked.err;
    const std::string vpkg = VersionPackage(v.version);
    auto vsigned =
        RunClawguard({"sign", "--module", hsm.module_path(), "--key", key.uri, "--pin-source",
                      hsm.PinSource(), "--chain", chain, "--no-ledger", vpkg},
                     hsm.Env());
    ASSERT_EQ(vsigned.exit_code, 0) << vsigned.err;
    more_allowed += "  - { name: acme-orders, version: " + v.version +
                    ", sha256: " + Sha256Hex(ReadFile(vpkg)) + " }\n";
  }

  WriteFile(
      dir_.Sub("trust.yaml"),
      "schema: clawguard/trust/v1\nmode: enforce\nroots:\n  - file: " + pki.root_pem +
          "\n    sha256: " + pki.root_sha256 +
          "\nrequire_eku: codeSigning\npublishers:\n  acme: [\"acme-*\"]\nthreshold: 1\n"
          "revoked: { certificates: [], keys: [], crls: [] }\nallowlist_signer: null\nrollback: "
          "refuse\n"
          "limits: { max_package: 16MiB, max_unpacked: 64MiB, max_entries: 8, max_ratio: 100 }\n"
          "elf: { allowed_needed: [libc.so.6] }\n");
  WriteFile(dir_.Sub("allowlist.yaml"),
            "schema: clawguard/allowlist/v1\nversion: 1\nexpires: 2099-12-31T00:00:00Z\n"
            "plugins:\n  - { name: acme-orders, version: 1.4.2, sha256: " +
                Sha256Hex(ReadFile(pkg)) + " }\n" + more_allowed);
  auto erp = TestErpServer::Create();
  ASSERT_TRUE(erp.ok()) << erp.error().ToString();
  erp_ = std::move(erp).value();
  WriteFile(
      dir_.Sub("host.yaml"),
      "schema: clawguard/host/v1\n"
      "listen: { address: 127.0.0.1:0, tls: null, max_body: 1MiB, max_headers: 16KiB, workers: " +
          std::to_string(options.workers) +
          (options.execution == "fibers" ? ", execution: fibers, carriers: 2" : "") +
          options.listen_extra +
          " }\n"
          "admin: { address: 127.0.0.1:0, token: env:E2E_ADMIN, tls: null }\n"
          "store: sqlite:state/state.db\n"
          "plugins: { dir: plugins, trust: trust.yaml, allowlist: allowlist.yaml, "
          "handler_timeout: " +
          options.handler_timeout + ", isolation: " + options.isolation +
          ", worker: " + WorkerPath() + options.plugins_extra +
          " }\n"
          "webhooks:\n  tolerance: 300s\n  clock_skew: 5m\n  platform_retry: { schedule: [1m] }\n"
          "  routes:\n    acme-orders/order.created: { current: env:E2E_SECRET }\n"
          "  rate_limit: { per_plugin: 100000/s, burst: 100000 }\n"  // storms are not rate-limited
                                                                     // here
          "idempotency: { retention: 1h, lease: " +
          options.lease +
          ", tombstones: 30d, intent_expiry: 24h }\n"
          "erp:\n  base_url: " +
          erp_->base_url() + "\n  timeout: " + options.erp_timeout + "\n  ca: " + pki.root_pem +
          "\n  auth: env:E2E_ERP\n  retry: " + options.erp_retry +
          "\n"
          "breaker:\n  key: { failures: 3, window: 5s, cooldown: 30s }\n"
          "  erp: { failures: 10, window: 30s, cooldown: 60s, half_open_probes: 1 }\n"
          "log: { audit: audit.jsonl, redact: [token] }\n");
  env_ = {{"E2E_ADMIN", kAdminToken},
          {"E2E_SECRET", "whsec_" + Base64Encode(kHookKey)},
          {"E2E_ERP", kErpAuth}};
  env_.insert(env_.end(), options.extra_env.begin(), options.extra_env.end());
}

bool HostFixture::StartHost() {
  if (!host_->Start(dir_.Sub("host.yaml"), env_, nofile_)) {
    ADD_FAILURE() << "the host did not start; audit log:\n" << ReadFile(audit_log());
    return false;
  }
  const auto listening =
      nlohmann::json::parse(host_->first_line(), nullptr, /*allow_exceptions=*/false);
  if (!listening.is_object() || !listening.contains("main")) {
    ADD_FAILURE() << "unexpected first line: " << host_->first_line();
    return false;
  }
  const std::string main = listening["main"].get<std::string>();
  main_port_ = static_cast<uint16_t>(std::stoi(main.substr(main.rfind(':') + 1)));
  const std::string admin = listening["admin"].get<std::string>();
  admin_port_ = static_cast<uint16_t>(std::stoi(admin.substr(admin.rfind(':') + 1)));
  return true;
}

std::string HostFixture::OrderBody(const std::string& order_id) {
  return R"({"type":"order.created","order_id":")" + order_id +
         R"(","lines":[{"sku":"SKU-1","qty":2}]})";  // one line: one adjust
}

std::string HostFixture::SignedRequest(const std::string& webhook_id, const std::string& body) {
  const SecretBytes hook_key{kHookKey};
  const int64_t ts = SystemClock::Instance().NowSeconds();
  return SimpleRequest(
      "POST", kRoutePath, body,
      "Content-Type: application/json\r\nwebhook-id: " + webhook_id +
          "\r\nwebhook-timestamp: " + std::to_string(ts) +
          "\r\nwebhook-signature: " + WebhookSignature(hook_key, webhook_id, ts, body) + "\r\n");
}

Reply HostFixture::DeliverOn(RawConnection& conn, const std::string& webhook_id,
                             const std::string& body) {
  Reply out;
  if (!conn.Send(SignedRequest(webhook_id, body))) return out;
  RawResponse r = conn.ReadResponse();
  out.ok = r.ok;
  out.status = r.status;
  out.body = std::move(r.body);
  out.replayed = r.headers.Get("Idempotent-Replayed").value_or("") == "true";
  return out;
}

Reply HostFixture::Deliver(const std::string& webhook_id, const std::string& body) const {
  auto conn = RawConnection::Connect(main_port_);
  if (conn == nullptr) return Reply{};
  return DeliverOn(*conn, webhook_id, body);
}

Reply HostFixture::DeliverUntilStored(const std::string& webhook_id, const std::string& body,
                                      int max_attempts, int pause_ms) const {
  Reply r;
  for (int i = 0; i < max_attempts; ++i) {
    r = Deliver(webhook_id, body);
    const bool stored = r.ok && ((r.status >= 200 && r.status < 300) ||
                                 (r.status >= 400 && r.status < 500 && r.status != 409));
    if (stored) return r;
    std::this_thread::sleep_for(
        std::chrono::milliseconds(pause_ms));  // the platform's pacing, not a timing assert
  }
  return r;
}

uint16_t MainPort(const HostProcess& p) {
  const auto j = nlohmann::json::parse(p.first_line(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("main")) return 0;
  const std::string main = j["main"].get<std::string>();
  return static_cast<uint16_t>(std::stoi(main.substr(main.rfind(':') + 1)));
}

Reply DeliverTo(uint16_t port, const std::string& webhook_id, const std::string& body) {
  auto conn = RawConnection::Connect(port);
  if (conn == nullptr) return Reply{};
  return HostFixture::DeliverOn(*conn, webhook_id, body);
}

}  // namespace clawguard::host::testing
