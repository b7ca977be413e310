// cmd_pack.cpp — `clawguard pack` (placeholder until its issue lands: exits 2 with a message).
#include <iostream>

#include "commands.h"

namespace clawguard::cli {

void RegisterPack(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("pack", "not available in this build");
  cmd->allow_extras();
  cmd->callback([&ctx] { ctx.exit_code = ReportError("pack", Status(Reason::kUsage, "not available in this build")); });
}

}  // namespace clawguard::cli
