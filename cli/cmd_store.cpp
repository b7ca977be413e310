// cmd_store.cpp — `clawguard store migrate --store URL [--json]`: creates or upgrades the store's
// schema and says which versions it applied. PostgreSQL: the versioned migrations of
// store/postgresql (clawguard_schema_version); SQLite: each store's own migrations (its
// *_schema_version tables). Exit 0 on success; 2 for a bad URL (usage) or an unreachable store or
// a schema newer than this build (store_unavailable).
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "sqlite/sqlite_idempotency_store.h"
#include "sqlite/sqlite_ledger.h"
#include "store_url.h"
#ifdef CLAWGUARD_HAVE_POSTGRESQL
#include "postgresql/pg_conn.h"
#include "postgresql/pg_schema.h"
#endif

namespace clawguard::cli {
namespace {

struct StoreOptions {
  std::string store;
  bool json = false;
};

int RunMigrate(const StoreOptions& o) {
  auto parsed = ParseStoreUrl(o.store);
  if (!parsed.ok()) return ReportError("store migrate", parsed.error(), o.json);
  nlohmann::json j = {{"store", parsed->shown}};
  if (parsed->engine == StoreUrl::Engine::kPostgres) {
    auto pool = OpenPgPool(*parsed, nullptr);
    if (!pool.ok()) return ReportError("store migrate", pool.error(), o.json);
#ifdef CLAWGUARD_HAVE_POSTGRESQL
    auto report = pg::MigrateSchema(**pool);
    if (!report.ok()) return ReportError("store migrate", report.error(), o.json);
    j["engine"] = "postgresql";
    j["from"] = report->from;
    j["to"] = report->to;
    j["applied"] = report->applied;
#endif
  } else {
    // SQLite: opening each store runs its migrations (they are idempotent).
    auto idem = sqlite::SqliteIdempotencyStore::Open(parsed->path, SystemClock::Instance());
    if (!idem.ok()) return ReportError("store migrate", idem.error(), o.json);
    auto ledger = SqliteLedger::Open(parsed->path);
    if (!ledger.ok()) return ReportError("store migrate", ledger.error(), o.json);
    j["engine"] = "sqlite";
    j["ledger_schema"] = SqliteLedger::kLedgerSchemaVersion;
  }
  if (o.json) {
    std::cout << j.dump() << "\n";
    return 0;
  }
  if (j["engine"] == "sqlite") {
    std::cout << "ok: SQLite store " << parsed->shown << " is at the current schema\n";
  } else if (j["applied"].empty()) {
    std::cout << "ok: " << parsed->shown << " already at schema version " << j["to"].get<int64_t>()
              << "\n";
  } else {
    std::cout << "ok: " << parsed->shown << " migrated from schema version "
              << j["from"].get<int64_t>() << " to " << j["to"].get<int64_t>() << " (applied";
    for (const auto& v : j["applied"]) std::cout << " " << v.get<int64_t>();
    std::cout << ")\n";
  }
  return 0;
}

}  // namespace

void RegisterStore(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<StoreOptions>();
  auto* cmd = app.add_subcommand("store", "store maintenance");
  cmd->require_subcommand(1);
  auto* migrate =
      cmd->add_subcommand("migrate", "create or upgrade the store's schema (applied at start too)");
  migrate->add_option("--store", opts->store, "sqlite:PATH or postgresql://user@host:port/db")
      ->required();
  migrate->add_flag("--json", opts->json, "print one JSON object");
  migrate->callback([&ctx, opts] { ctx.exit_code = RunMigrate(*opts); });
}

}  // namespace clawguard::cli
