// cmd_capability.cpp — `clawguard capability pause|resume PLUGIN 'METHOD TEMPLATE' --store URL`
// (and `capability list`). A paused capability's ERP calls are not sent by running hosts (they
// stay in the outbox) until it is resumed; the host pauses one by itself on an ERP 401/403.
// Each action is recorded in the store's operator_actions, optionally appended to --audit-log,
// and bumps the operations generation. Exit codes: 0 ok (pausing a paused capability or resuming
// a running one is a no-op that says so), 2 usage or store errors.
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "clawguard/clock.h"
#include "clawguard/json_dump.h"
#include "clawguard/store/dlq.h"
#include "clawguard/store/idempotency_store.h"
#include "commands.h"
#include "ops_store.h"

namespace clawguard::cli {

namespace {

struct CapabilityOptions {
  std::string store, audit_log, plugin, capability, reason;
  bool json = false;
};

// CheckCapability wants "METHOD /template": an upper-case method, one space, a path.
Status CheckCapability(const std::string& cap) {
  const size_t sp = cap.find(' ');
  bool ok = sp != std::string::npos && sp > 0 && sp + 1 < cap.size() && cap[sp + 1] == '/' &&
            cap.size() <= kMaxDlqDetail && cap.find(' ', sp + 1) == std::string::npos;
  for (size_t i = 0; ok && i < sp; ++i) ok = cap[i] >= 'A' && cap[i] <= 'Z';
  if (ok) return Status::Ok();
  return Status(Reason::kUsage,
                "expected a capability 'METHOD TEMPLATE' exactly as in the manifest, e.g. "
                "'POST /orders/{id}/fulfil'; found '" +
                    cap.substr(0, 120) + "'");
}

int RunPauseResume(const CapabilityOptions& o, bool pause) {
  const std::string cmd = pause ? "capability pause" : "capability resume";
  if (const Status st = CheckCapability(o.capability); !st.ok())
    return ReportError(cmd, st, o.json);
  auto store = OpenOpsStore(o.store);
  if (!store.ok()) return ReportError(cmd, store.error(), o.json);
  const std::string actor = OperatorActor();
  const std::string reason = o.reason.empty() ? "paused by an operator" : o.reason;
  auto changed = pause ? store->dlq->Pause(o.plugin, o.capability, reason, actor)
                       : store->dlq->Resume(o.plugin, o.capability, actor);
  if (!changed.ok()) return ReportError(cmd, changed.error(), o.json);
  const Status fin =
      FinishOperatorWrite(*store, o.audit_log, pause ? "capability.pause" : "capability.resume",
                          o.plugin + " " + o.capability, pause ? reason : "");
  if (!fin.ok()) return ReportError(cmd, fin, o.json);
  if (o.json) {
    std::cout << DumpJson({{"plugin", o.plugin},
                           {"capability", o.capability},
                           {"paused", pause},
                           {"changed", *changed},
                           {"actor", actor}})
              << "\n";
  } else {
    std::cout << o.plugin << " '" << o.capability << "': "
              << (pause ? (*changed ? "paused" : "already paused")
                        : (*changed ? "resumed" : "was not paused"))
              << "\n";
  }
  return 0;
}

int RunList(const CapabilityOptions& o) {
  auto store = OpenOpsStore(o.store);
  if (!store.ok()) return ReportError("capability list", store.error(), o.json);
  auto pauses = store->dlq->ListPauses();
  if (!pauses.ok()) return ReportError("capability list", pauses.error(), o.json);
  if (o.json) {
    nlohmann::json j = {{"paused", nlohmann::json::array()}};
    for (const auto& p : *pauses) {
      j["paused"].push_back({{"plugin", p.plugin},
                             {"capability", p.capability},
                             {"reason", p.reason},
                             {"actor", p.actor},
                             {"since", FormatRfc3339Utc(p.since_ms / 1000)}});
    }
    std::cout << DumpJson(j) << "\n";
    return 0;
  }
  for (const auto& p : *pauses) {
    std::cout << p.plugin << "\t" << p.capability << "\tsince "
              << FormatRfc3339Utc(p.since_ms / 1000) << "\tby " << p.actor << "\t" << p.reason
              << "\n";
  }
  std::cout << pauses->size() << " paused\n";
  return 0;
}

}  // namespace

void RegisterCapability(CLI::App& app, CommandContext& ctx) {
  auto o = std::make_shared<CapabilityOptions>();
  auto* cmd = app.add_subcommand("capability", "pause or resume a plugin's ERP capability");
  cmd->require_subcommand(1);
  for (const bool pause : {true, false}) {
    auto* sub =
        cmd->add_subcommand(pause ? "pause" : "resume",
                            pause ? "stop sending this capability's ERP calls" : "send them again");
    sub->add_option("PLUGIN", o->plugin, "plugin name")->required();
    sub->add_option("CAPABILITY", o->capability, "'METHOD TEMPLATE' exactly as in the manifest")
        ->required();
    sub->add_option("--store", o->store, "sqlite:PATH, a path, or postgresql://user@host:port/db")
        ->required();
    if (pause) sub->add_option("--reason", o->reason, "why (recorded)");
    sub->add_option("--audit-log", o->audit_log, "also append the action to this JSON-lines file");
    sub->add_flag("--json", o->json, "print one JSON object");
    sub->callback([&ctx, o, pause] { ctx.exit_code = RunPauseResume(*o, pause); });
  }
  auto* list = cmd->add_subcommand("list", "paused capabilities");
  list->add_option("--store", o->store, "sqlite:PATH, a path, or postgresql://user@host:port/db")
      ->required();
  list->add_flag("--json", o->json, "print one JSON object");
  list->callback([&ctx, o] { ctx.exit_code = RunList(*o); });
}

}  // namespace clawguard::cli
