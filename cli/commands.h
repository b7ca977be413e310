// commands.h — registration of the `clawguard` subcommands (one file per command group) and
// the output helpers they share. Each Register* adds its subcommand to |app|; its callback
// stores the process exit code in ctx.exit_code (0 ok, 1 refused, 2 usage/operational).
#ifndef CLAWGUARD_CLI_COMMANDS_H_
#define CLAWGUARD_CLI_COMMANDS_H_

#include <CLI/CLI.hpp>

#include "clawguard/error.h"

namespace clawguard::cli {

struct CommandContext {
  int exit_code = 0;
};

void RegisterPack(CLI::App& app, CommandContext& ctx);        // cmd_pack.cpp
void RegisterKeys(CLI::App& app, CommandContext& ctx);        // cmd_keys.cpp
void RegisterSign(CLI::App& app, CommandContext& ctx);        // cmd_sign.cpp
void RegisterInspect(CLI::App& app, CommandContext& ctx);     // cmd_inspect.cpp
void RegisterVerify(CLI::App& app, CommandContext& ctx);      // cmd_verify.cpp
void RegisterLedger(CLI::App& app, CommandContext& ctx);      // cmd_ledger.cpp
void RegisterHost(CLI::App& app, CommandContext& ctx);        // cmd_host.cpp
void RegisterIdem(CLI::App& app, CommandContext& ctx);        // cmd_idem.cpp
void RegisterDlq(CLI::App& app, CommandContext& ctx);         // cmd_dlq.cpp
void RegisterCapability(CLI::App& app, CommandContext& ctx);  // cmd_capability.cpp
void RegisterStore(CLI::App& app, CommandContext& ctx);       // cmd_store.cpp
void RegisterAudit(CLI::App& app, CommandContext& ctx);       // cmd_audit.cpp

// ReportError prints "clawguard <command>: <reason>: <message>" to stderr (or, with |json|, the
// error object {"error": reason, "detail": message} to stdout) and returns the exit code.
int ReportError(std::string_view command, const Status& status, bool json = false);

}  // namespace clawguard::cli

#endif  // CLAWGUARD_CLI_COMMANDS_H_
