// cmd_inspect.cpp — `clawguard inspect` (placeholder until its issue lands: exits 2 with a message).
#include <iostream>

#include "commands.h"

namespace clawguard::cli {

void RegisterInspect(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("inspect", "not available in this build");
  cmd->allow_extras();
  cmd->callback([&ctx] { ctx.exit_code = ReportError("inspect", Status(Reason::kUsage, "not available in this build")); });
}

}  // namespace clawguard::cli
