// cmd_audit.cpp — `clawguard audit` (placeholder: not implemented yet; exits 2 and says so).
#include "commands.h"

namespace clawguard::cli {

void RegisterAudit(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("audit", "audit a deployment (host.yaml) and report findings (not implemented yet)");
  cmd->allow_extras();
  cmd->callback([&ctx] {
    ctx.exit_code = ReportError("audit", Status(Reason::kUsage, "this command is not implemented yet"));
  });
}

}  // namespace clawguard::cli
