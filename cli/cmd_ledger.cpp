// cmd_ledger.cpp — `clawguard ledger` (placeholder until its issue lands: exits 2 with a message).
#include <iostream>

#include "commands.h"

namespace clawguard::cli {

void RegisterLedger(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("ledger", "not available in this build");
  cmd->allow_extras();
  cmd->callback([&ctx] { ctx.exit_code = ReportError("ledger", Status(Reason::kUsage, "not available in this build")); });
}

}  // namespace clawguard::cli
