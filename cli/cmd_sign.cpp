// cmd_sign.cpp — `clawguard sign` (placeholder until its issue lands: exits 2 with a message).
#include <iostream>

#include "commands.h"

namespace clawguard::cli {

void RegisterSign(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("sign", "not available in this build");
  cmd->allow_extras();
  cmd->callback([&ctx] { ctx.exit_code = ReportError("sign", Status(Reason::kUsage, "not available in this build")); });
}

}  // namespace clawguard::cli
