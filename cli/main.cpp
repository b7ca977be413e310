// main.cpp — `clawguard`: parses arguments and hands each subcommand to its library.
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.h"

namespace clawguard::cli {

int ReportError(std::string_view command, const Status& status, bool json) {
  if (json) {
    nlohmann::json j = {{"error", std::string(ReasonName(status.reason()))},
                        {"detail", status.message()}};
    std::cout << j.dump() << "\n";
  } else {
    std::cerr << "clawguard " << command << ": " << status.ToString() << "\n";
  }
  return ExitCodeFor(status.reason());
}

}  // namespace clawguard::cli

int main(int argc, char** argv) {
  using namespace clawguard::cli;
  CLI::App app{"clawguard — sign, verify and safely host ClawHub plugins"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "clawguard 0.1.0");
  CommandContext ctx;
  RegisterKeys(app, ctx);
  RegisterPack(app, ctx);
  RegisterSign(app, ctx);
  RegisterInspect(app, ctx);
  RegisterVerify(app, ctx);
  RegisterLedger(app, ctx);
  RegisterHost(app, ctx);
  RegisterIdem(app, ctx);
  RegisterDlq(app, ctx);
  RegisterCapability(app, ctx);
  RegisterStore(app, ctx);
  RegisterAudit(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;  // usage errors exit 2 (grep, minisign)
  }
  return ctx.exit_code;
}
