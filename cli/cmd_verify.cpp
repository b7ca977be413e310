// cmd_verify.cpp — `clawguard verify PKG --trust T --allowlist A [--ledger URL [--record]] [--json]
// [--audit-log FILE] [--anchor FILE]`: runs the loader's whole verification pipeline (never
// dlopen) and prints the verdict; --record writes the allowlist and deploy rows (the operator says
// the version is deployed). The ledger is checked against the anchor file (default:
// ledger-anchor.json beside --audit-log) and the audit log's last checkpoint; without either, a
// non-empty ledger is trusted on first use with a warning on stderr. Exit 0 verified or audit, 1
// refused, 2 configuration or operational error.
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "clawguard/json_dump.h"
#include "clawguard/loader.h"
#include "commands.h"
#if __has_include("store_url.h")
#include "store_url.h"
#define CLAWGUARD_CLI_HAS_STORE_URL 1
#endif

namespace clawguard::cli {
namespace {

struct VerifyArgs {
  std::string package, trust, allowlist, ledger_url, audit_log, anchor;
  bool record = false;
  bool json = false;
};

int RunVerify(const VerifyArgs& a) {
  if (a.record && a.ledger_url.empty()) {
    return ReportError("verify", Status(Reason::kUsage, "--record needs --ledger URL"), a.json);
  }
  std::unique_ptr<Ledger> ledger;
  if (!a.ledger_url.empty()) {
#ifdef CLAWGUARD_CLI_HAS_STORE_URL
    auto opened = OpenLedger(a.ledger_url);
    if (!opened) return ReportError("verify", opened.error(), a.json);
    ledger = std::move(*opened);
#else
    return ReportError(
        "verify", Status(Reason::kStoreUnavailable, "this build has no store engine for --ledger"),
        a.json);
#endif
  }
  LoaderOptions options;
  options.trust_policy_path = a.trust;
  options.allowlist_path = a.allowlist;
  options.ledger = ledger.get();
  if (!a.audit_log.empty()) options.audit_log_path = a.audit_log;
  if (!a.anchor.empty()) options.anchor_path = a.anchor;
  auto loader = Loader::Create(std::move(options));
  if (!loader) return ReportError("verify", loader.error(), a.json);
  auto verdict = (*loader)->Verify(a.package, VerifyOptions{a.record});
  if (!verdict) return ReportError("verify", verdict.error(), a.json);
  const Verdict& v = *verdict;
  if (a.json) {
    std::cout << DumpJson(VerdictToJson(v)) << "\n";
  } else if (v.verdict == VerdictKind::kRefused) {
    std::cerr << "clawguard verify: refused: " << ReasonName(v.reason) << ": " << v.detail << "\n";
  } else {
    std::cout << VerdictKindName(v.verdict) << ": " << v.name << " " << v.version << " by "
              << v.publisher << " (sha256 " << v.sha256 << "), ledger " << v.ledger << ", mode "
              << v.mode << "\n";
    if (v.verdict == VerdictKind::kAudit) std::cout << "  audit mode relaxed: " << v.detail << "\n";
  }
  for (const auto& w : v.warnings) std::cerr << "clawguard verify: warning: " << w << "\n";
  return v.verdict == VerdictKind::kRefused ? 1 : 0;
}

}  // namespace

void RegisterVerify(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<VerifyArgs>();
  auto* cmd =
      app.add_subcommand("verify", "verify a plugin package as the loader would (never loads it)");
  cmd->add_option("package", args->package, "NAME-VERSION.claw (its bundle is PKG.sig)")
      ->required();
  cmd->add_option("--trust", args->trust, "trust policy (trust.yaml)")->required();
  cmd->add_option("--allowlist", args->allowlist, "allowlist.yaml")->required();
  cmd->add_option("--ledger", args->ledger_url, "ledger store URL (sqlite:PATH or postgresql://…)");
  cmd->add_flag("--record", args->record, "record a deploy row in the ledger when verified");
  cmd->add_flag("--json", args->json, "print one JSON object");
  cmd->add_option(
      "--audit-log", args->audit_log,
      "append the decision to this JSON-lines audit log (and read its last ledger checkpoint)");
  cmd->add_option("--anchor", args->anchor,
                  "the ledger anchor file the chain must hold (default: ledger-anchor.json beside "
                  "--audit-log)");
  cmd->callback([&ctx, args] { ctx.exit_code = RunVerify(*args); });
}

}  // namespace clawguard::cli
