// cmd_dlq.cpp — `clawguard dlq` (placeholder: not implemented yet; exits 2 and says so).
#include "commands.h"

namespace clawguard::cli {

void RegisterDlq(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("dlq", "list, show, replay or drop dead-lettered events (not implemented yet)");
  cmd->allow_extras();
  cmd->callback([&ctx] {
    ctx.exit_code = ReportError("dlq", Status(Reason::kUsage, "this command is not implemented yet"));
  });
}

}  // namespace clawguard::cli
