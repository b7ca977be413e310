// cmd_host.cpp — `clawguard host --config host.yaml`: runs the host until SIGTERM or SIGINT.
//
// At start it prints one JSON line on stdout:
//   {"event":"listening","main":"127.0.0.1:PORT","admin":"127.0.0.1:PORT"}
// (the real ports, so a config may ask for port 0). A configuration, store or listener error
// exits 2 with its message; refused plugins are reported and do not stop the host.
#include <csignal>
#include <filesystem>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

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
  // Block the stop signals before any thread starts, so every thread inherits the mask and
  // sigwait below is the only receiver.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto config = host::HostConfig::Load(config_path);
  if (!config.ok()) return ReportError("host", config.error());
  auto app = host::HostApp::Create(*config, SystemClock::Instance(), &OpenHostStores);
  if (!app.ok()) return ReportError("host", app.error());
  if (Status s = (*app)->Start(); !s.ok()) return ReportError("host", s);

  const nlohmann::json listening = {
      {"event", "listening"},
      {"main", HostOf((*config)->listen.address) + ":" + std::to_string((*app)->main_port())},
      {"admin", HostOf((*config)->admin.address) + ":" + std::to_string((*app)->admin_port())}};
  std::cout << listening.dump() << std::endl;

  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::cerr << nlohmann::json({{"event", "stopping"}, {"signal", sig}}).dump() << std::endl;
  (*app)->Stop();
  return 0;
}

}  // namespace

void RegisterHost(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand(
      "host", "run the plugin host (webhooks, ERP gateway, admin) until SIGTERM");
  static std::string config_path;
  cmd->add_option("--config", config_path, "host.yaml")->required();
  cmd->callback([&ctx] { ctx.exit_code = RunHost(config_path); });
}

}  // namespace clawguard::cli
