// cmd_audit.cpp — `clawguard audit --config host.yaml [--json]`: the deployment audit
// (host/app/deployment_audit.h) of the host.yaml given, printed as text or one JSON object. Exit 1
// when any finding is high, 0 otherwise, 2 when host.yaml itself does not load (config error).
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "clawguard/clock.h"
#include "commands.h"
#include "host/app/deployment_audit.h"
#include "host/app/host_config.h"
#include "store_url.h"

namespace clawguard::cli {
namespace {

struct AuditOptions {
  std::string config;
  bool json = false;
};

int RunAudit(const AuditOptions& o) {
  auto config = host::HostConfig::Load(o.config);
  if (!config.ok()) return ReportError("audit", config.error(), o.json);
  // Read-only: a missing store is reported as a finding, never created.
  auto ledger = OpenLedger((*config)->store, StoreOpen::kMustExist);
  host::LedgerSource source =
      ledger.ok() ? host::LedgerSource(ledger->get()) : host::LedgerSource(ledger.error());
  const host::AuditReport report =
      host::RunDeploymentAudit(**config, source, SystemClock::Instance());
  if (o.json) {
    std::cout << report.ToJson().dump() << "\n";
  } else {
    std::cout << report.ToText();
  }
  return report.HasHigh() ? 1 : 0;
}

}  // namespace

void RegisterAudit(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<AuditOptions>();
  auto* cmd = app.add_subcommand(
      "audit", "audit a deployment (host.yaml): findings with severities; exit 1 if any is high");
  cmd->add_option("--config", opts->config, "the host.yaml of the deployment")->required();
  cmd->add_flag("--json", opts->json, "print one JSON object");
  cmd->callback([&ctx, opts] { ctx.exit_code = RunAudit(*opts); });
}

}  // namespace clawguard::cli
