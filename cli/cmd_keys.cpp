// cmd_keys.cpp — `clawguard keys` (placeholder until its issue lands: exits 2 with a message).
#include <iostream>

#include "commands.h"

namespace clawguard::cli {

void RegisterKeys(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("keys", "not available in this build");
  cmd->allow_extras();
  cmd->callback([&ctx] { ctx.exit_code = ReportError("keys", Status(Reason::kUsage, "not available in this build")); });
}

}  // namespace clawguard::cli
