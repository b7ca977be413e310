// cmd_capability.cpp — `clawguard capability` (placeholder: not implemented yet; exits 2 and says so).
#include "commands.h"

namespace clawguard::cli {

void RegisterCapability(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("capability", "pause or resume a plugin's ERP capability (not implemented yet)");
  cmd->allow_extras();
  cmd->callback([&ctx] {
    ctx.exit_code = ReportError("capability", Status(Reason::kUsage, "this command is not implemented yet"));
  });
}

}  // namespace clawguard::cli
