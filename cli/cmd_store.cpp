// cmd_store.cpp — `clawguard store` (placeholder: not implemented yet; exits 2 and says so).
#include "commands.h"

namespace clawguard::cli {

void RegisterStore(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("store", "store maintenance (migrate) (not implemented yet)");
  cmd->allow_extras();
  cmd->callback([&ctx] {
    ctx.exit_code = ReportError("store", Status(Reason::kUsage, "this command is not implemented yet"));
  });
}

}  // namespace clawguard::cli
