// cmd_host.cpp — `clawguard host` (placeholder until the host assembly lands: exits 2).
#include <iostream>

#include "commands.h"

namespace clawguard::cli {

void RegisterHost(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("host", "not available in this build");
  cmd->allow_extras();
  cmd->callback([&ctx] { ctx.exit_code = ReportError("host", Status(Reason::kUsage, "not available in this build")); });
}

}  // namespace clawguard::cli
