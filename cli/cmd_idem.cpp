// cmd_idem.cpp — `clawguard idem` (placeholder: not implemented yet; exits 2 and says so).
#include "commands.h"

namespace clawguard::cli {

void RegisterIdem(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("idem", "show, reset or confirm an idempotency record (not implemented yet)");
  cmd->allow_extras();
  cmd->callback([&ctx] {
    ctx.exit_code = ReportError("idem", Status(Reason::kUsage, "this command is not implemented yet"));
  });
}

}  // namespace clawguard::cli
