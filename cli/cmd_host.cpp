// cmd_host.cpp — `clawguard host --config host.yaml`: runs the host until SIGTERM or SIGINT.
// SIGHUP reopens the audit log by its path (log.audit), for logrotate: the host goes on serving.
//
// At start it prints one JSON line on stdout:
//   {"event":"listening","main":"127.0.0.1:PORT","admin":"127.0.0.1:PORT"}
// (the real ports, so a config may ask for port 0). A configuration, store or listener error
// exits 2 with its message; refused plugins are reported and do not stop the host.
//
// Under systemd (Type=notify, $NOTIFY_SOCKET set) the host tells its service manager READY=1 with
// a STATUS= line once its plugins are loaded and its listeners bound, WATCHDOG=1 from its
// background loop when the unit sets WatchdogSec= (a stuck loop stops the pings and systemd
// restarts the host), and STOPPING=1 when a stop signal arrives. Without $NOTIFY_SOCKET (a
// terminal, a container) each of these does nothing.
//
// `clawguard host --check --config host.yaml [--json]` starts nothing: it reads host.yaml (with
// its secrets), the store URL, runs the start's checks that open nothing (HostApp::CheckStartable:
// the kernel's isolation and the worker executable with a sandbox, the ERP client's settings),
// reads the trust policy and the allowlist, and verifies every package of
// plugins.dir as the host's start would (the same loader, the highest version of each name) —
// without the ledger (its rollback and overwrite rules are applied at start), without opening
// the store, without writing the audit log. Exit 0: the host would start with every package;
// 1: it would start but refuse at least one (each listed with its reason); 2: it would not start.
#include <malloc.h>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <systemd/sd-daemon.h>
#include <nlohmann/json.hpp>

#include "clawguard/loader.h"
#include "clawguard/semver.h"
#include "commands.h"
#include "host/app/host_app.h"
#include "host/app/host_config.h"
#include "sqlite/sqlite_dlq.h"
#include "sqlite/sqlite_idempotency_store.h"
#include "sqlite/sqlite_ledger.h"
#include "sqlite/sqlite_outbox.h"
#include "store_url.h"
#ifdef CLAWGUARD_HAVE_POSTGRESQL
#include "postgresql/pg_dlq.h"
#include "postgresql/pg_idempotency_store.h"
#include "postgresql/pg_ledger.h"
#include "postgresql/pg_outbox.h"
#endif

namespace clawguard::cli {
namespace {

// OpenHostStores opens the engines of host.yaml `store:` (idempotency, outbox, ledger, DLQ) — on
// one SQLite file, or on one PostgreSQL database through one shared connection pool. With
// PostgreSQL the production SystemClock is replaced by the database's clock (so every host agrees
// on leases); any other (test) clock is injected as given.
Result<host::HostStores> OpenHostStores(const std::string& url, const Clock& clock) {
  CLAWGUARD_ASSIGN_OR_RETURN(StoreUrl parsed, ParseStoreUrl(url));
  host::HostStores stores;
  if (parsed.engine == StoreUrl::Engine::kPostgres) {
    const Clock* injected = &clock == &SystemClock::Instance() ? nullptr : &clock;
    CLAWGUARD_ASSIGN_OR_RETURN(std::shared_ptr<pg::PgPool> pool, OpenPgPool(parsed, injected));
#ifdef CLAWGUARD_HAVE_POSTGRESQL
    CLAWGUARD_ASSIGN_OR_RETURN(stores.idempotency, pg::PgIdempotencyStore::Open(pool));
    CLAWGUARD_ASSIGN_OR_RETURN(stores.outbox, pg::PgOutbox::Open(pool));
    CLAWGUARD_ASSIGN_OR_RETURN(stores.ledger, pg::PgLedger::Open(pool));
    CLAWGUARD_ASSIGN_OR_RETURN(stores.dlq, pg::PgDlq::Open(pool));
#endif
    return stores;
  }
  std::error_code ec;  // a missing parent directory is created; a failure shows up at Open
  std::filesystem::create_directories(std::filesystem::path(parsed.path).parent_path(), ec);
  CLAWGUARD_ASSIGN_OR_RETURN(stores.idempotency,
                             sqlite::SqliteIdempotencyStore::Open(parsed.path, clock));
  CLAWGUARD_ASSIGN_OR_RETURN(stores.outbox, sqlite::SqliteOutbox::Open(parsed.path, clock));
  CLAWGUARD_ASSIGN_OR_RETURN(stores.ledger, SqliteLedger::Open(parsed.path, clock));
  CLAWGUARD_ASSIGN_OR_RETURN(stores.dlq, sqlite::SqliteDlq::Open(parsed.path, clock));
  return stores;
}

// HostOf returns the host part of "host:port" or "[v6]:port".
std::string HostOf(const std::string& address) {
  const size_t colon = address.rfind(':');
  return colon == std::string::npos ? address : address.substr(0, colon);
}

int RunHost(const std::string& config_path) {
  // Buffers of 1 MiB and more (a worker's 16 MiB answer, an ERP body) come from mmap and go back
  // to the kernel when freed. glibc's default raises this threshold to the largest block freed so
  // far, after which such buffers come from the arenas and stay in the host's memory: a plugin
  // sending large frames would leave the host holding them after its worker is gone.
  (void)::mallopt(M_MMAP_THRESHOLD, 1 << 20);
  // Block the stop signals and SIGHUP before any thread starts, so every thread inherits the mask
  // and sigwait below is the only receiver.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto config = host::HostConfig::Load(config_path);
  if (!config.ok()) return ReportError("host", config.error());
  auto app = host::HostApp::Create(*config, SystemClock::Instance(), &OpenHostStores);
  if (!app.ok()) return ReportError("host", app.error());
  uint64_t watchdog_usec = 0;
  if (sd_watchdog_enabled(/*unset_environment=*/0, &watchdog_usec) > 0 && watchdog_usec > 0) {
    // Four pings a period: one late tick (a slow store read) does not cost a restart.
    const auto every = std::chrono::microseconds(watchdog_usec / 4);
    auto last = std::make_shared<std::chrono::steady_clock::time_point>();
    (*app)->OnTick([every, last] {
      const auto now = std::chrono::steady_clock::now();
      if (now - *last < every) return;
      *last = now;
      (void)sd_notify(0, "WATCHDOG=1");
    });
  }
  if (Status s = (*app)->Start(); !s.ok()) return ReportError("host", s);

  const nlohmann::json listening = {
      {"event", "listening"},
      {"main", HostOf((*config)->listen.address) + ":" + std::to_string((*app)->main_port())},
      {"admin", HostOf((*config)->admin.address) + ":" + std::to_string((*app)->admin_port())}};
  std::cout << listening.dump() << std::endl;
  const size_t loaded = nlohmann::json::parse((*app)->ReadyJson(), nullptr, false)
                            .value("plugins", nlohmann::json::array())
                            .size();
  const std::string ready = "READY=1\nSTATUS=serving " + std::to_string(loaded) + " plugin(s), " +
                            std::to_string((*app)->refused().size()) + " refused; listening on " +
                            listening["main"].get<std::string>();
  (void)sd_notify(0, ready.c_str());

  // SIGHUP reopens the log file (logrotate's postrotate); SIGTERM or SIGINT stops.
  int sig = 0;
  for (;;) {
    sigwait(&signals, &sig);
    if (sig != SIGHUP) break;
    const Status reopened = (*app)->ReopenLogs();
    std::cerr << nlohmann::json({{"event", reopened.ok() ? "log_reopened" : "log_reopen_failed"},
                                 {"detail", reopened.ok() ? "" : reopened.message()}})
                     .dump()
              << std::endl;
  }
  (void)sd_notify(0, "STOPPING=1\nSTATUS=stopping: draining deliveries");
  std::cerr << nlohmann::json({{"event", "stopping"}, {"signal", sig}}).dump() << std::endl;
  (*app)->Stop();
  return 0;
}

// CheckHost is `host --check` (see the file comment).
int CheckHost(const std::string& config_path, bool json) {
  auto config = host::HostConfig::Load(config_path);
  if (!config.ok()) return ReportError("host --check", config.error(), json);
  const host::HostConfig& c = **config;
  if (auto url = ParseStoreUrl(c.store); !url.ok()) {
    return ReportError("host --check", url.error(), json);
  }
  // What a start checks before it opens anything: the kernel's isolation and the worker
  // (sandbox), the ERP client's settings.
  if (Status s = host::HostApp::CheckStartable(c); !s.ok()) {
    return ReportError("host --check", s, json);
  }
  LoaderOptions lo;
  lo.trust_policy_path = c.plugins.trust;
  lo.allowlist_path = c.plugins.allowlist;
  auto loader = Loader::Create(std::move(lo));
  if (!loader.ok()) return ReportError("host --check", loader.error(), json);

  std::vector<std::string> packages;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(c.plugins.dir, ec)) {
    if (e.path().extension() == ".claw" && e.is_regular_file(ec)) {
      packages.push_back(e.path().string());
    }
  }
  if (ec) {
    return ReportError("host --check",
                       Status(Reason::kConfigInvalid, c.source + ": plugins.dir: cannot read " +
                                                          c.plugins.dir + ": " + ec.message()),
                       json);
  }
  std::sort(packages.begin(), packages.end());
  nlohmann::json rows = nlohmann::json::array();
  std::map<std::string, std::pair<SemVer, size_t>> best;  // signed name → highest version, row
  int refused = 0;
  for (const std::string& path : packages) {
    Result<Verdict> v = (*loader)->Verify(path);
    nlohmann::json row = {{"package", path}};
    if (!v.ok() || v->verdict == VerdictKind::kRefused) {
      ++refused;
      row["verdict"] = "refused";
      row["reason"] = std::string(ReasonName(v.ok() ? v->reason : v.error().reason()));
      row["detail"] = v.ok() ? v->detail : v.error().message();
      rows.push_back(std::move(row));
      continue;
    }
    row["name"] = v->name;
    row["version"] = v->version;
    row["verdict"] = "loads";
    const std::optional<SemVer> version = ParseSemVer(v->version);
    if (!version) {
      ++refused;
      row["verdict"] = "refused";
      row["reason"] = "manifest_invalid";
      row["detail"] = "version '" + v->version + "' is not SemVer";
      rows.push_back(std::move(row));
      continue;
    }
    rows.push_back(std::move(row));
    auto [it, inserted] = best.try_emplace(v->name, *version, rows.size() - 1);
    if (inserted) continue;
    const bool higher = CompareSemVer(*version, it->second.first) > 0;
    const size_t loser = higher ? it->second.second : rows.size() - 1;
    rows[loser]["verdict"] = "superseded";
    if (higher) it->second = {*version, rows.size() - 1};
  }
  const int exit_code = refused > 0 ? 1 : 0;
  if (json) {
    std::cout << nlohmann::json({{"config", config_path},
                                 {"ok", exit_code == 0},
                                 {"isolation", c.plugins.sandbox ? "sandbox" : "none"},
                                 {"ledger", "not consulted (applied at start)"},
                                 {"packages", rows}})
                     .dump()
              << "\n";
  } else {
    for (const auto& r : rows) {
      std::cout << r["verdict"].get<std::string>() << "  " << r["package"].get<std::string>();
      if (r.contains("name")) {
        std::cout << "  " << r["name"].get<std::string>() << " " << r["version"].get<std::string>();
      }
      if (r.contains("reason")) {
        std::cout << "  " << r["reason"].get<std::string>() << ": "
                  << r["detail"].get<std::string>();
      }
      std::cout << "\n";
    }
    std::cout << config_path << ": "
              << (exit_code == 0 ? "ok" : std::to_string(refused) + " package(s) refused")
              << " (the ledger's rollback and overwrite rules are applied at start)\n";
  }
  return exit_code;
}

}  // namespace

void RegisterHost(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand(
      "host", "run the plugin host (webhooks, ERP gateway, admin) until SIGTERM");
  static std::string config_path;
  static bool check = false;
  static bool json = false;
  cmd->add_option("--config", config_path, "host.yaml")->required();
  cmd->add_flag("--check", check,
                "start nothing: check host.yaml, its policies and every package, and exit "
                "(0 all load, 1 a package is refused, 2 the host would not start)");
  cmd->add_flag("--json", json, "with --check: one JSON object on stdout");
  cmd->callback([&ctx] {
    if (json && !check) {
      ctx.exit_code = ReportError("host", Status(Reason::kUsage, "--json goes with --check"));
      return;
    }
    ctx.exit_code = check ? CheckHost(config_path, json) : RunHost(config_path);
  });
}

}  // namespace clawguard::cli
