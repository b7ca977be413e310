// cmd_dlq.cpp — `clawguard dlq list|show|replay|drop [ID] --store URL [--json]` (the
// operator-write helpers are in ops_store.h).
//
// list groups unresolved entries by class and age (< 1 h, < 24 h, older) and lists entries;
// show prints one entry (the stored request as webhook-id, content type, size and SHA-256 —
// never the body, which may hold personal data); replay asks a running host to re-run it with
// the original keys; drop resolves it with a reason. Operator writes are recorded in the store's
// operator_actions (same transaction), optionally appended to --audit-log FILE as a JSON line,
// and bump the operations generation so running hosts notice within a second.
// Exit codes: 0 ok; 1 refused (unknown id, or a state that does not allow it: not_found);
// 2 usage or store errors.

#include <iostream>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "clawguard/clock.h"
#include "clawguard/json_dump.h"
#include "clawguard/sha256.h"
#include "clawguard/store/dlq.h"
#include "commands.h"
#include "ops_store.h"
#include "store_url.h"

namespace clawguard::cli {

namespace {

struct DlqOptions {
  std::string store;
  std::string audit_log;
  int64_t id = 0;
  std::string klass, state, reason;
  int64_t limit = 100;
  bool oldest = false;
  bool json = false;
};

std::string AgeText(DlqAge a) {
  return a == DlqAge::kUnderHour ? "< 1 h" : a == DlqAge::kUnderDay ? "< 24 h" : "older";
}

nlohmann::json EntryJson(const DlqEntry& e, int64_t now_ms) {
  nlohmann::json j = {
      {"id", e.id},
      {"class", std::string(DlqClassName(e.klass))},
      {"state", std::string(DlqStateName(e.state))},
      {"age", std::string(DlqAgeName(DlqAgeOf(now_ms - e.created_ms)))},
      {"event_key", e.event_key},
      {"plugin", e.plugin},
      {"route", e.route},
      {"call_index",
       e.call_index == kDlqEventLevel ? nlohmann::json(nullptr) : nlohmann::json(e.call_index)},
      {"endpoint", e.endpoint},
      {"erp_status", e.erp_status},
      {"detail", e.detail},
      {"occurrences", e.occurrences},
      {"attempts", e.attempts},
      {"next_attempt", e.next_attempt_ms > 0
                           ? nlohmann::json(FormatRfc3339Utc(e.next_attempt_ms / 1000))
                           : nlohmann::json(nullptr)},
      {"claimed_by", e.claimed_by},
      {"resolution", e.resolution},
      {"created", FormatRfc3339Utc(e.created_ms / 1000)},
      {"updated", FormatRfc3339Utc(e.updated_ms / 1000)},
      {"has_request", e.has_request},
      {"request_omitted", e.request_omitted}};
  if (e.request) {
    j["request"] = {{"webhook_id", e.request->webhook_id},
                    {"content_type", e.request->content_type},
                    {"body_bytes", e.request->body.size()},
                    {"body_sha256", Sha256Hex(e.request->body)}};
  }
  return j;
}

int RunList(const DlqOptions& o) {
  DlqFilter f;
  f.limit = o.limit;
  f.newest_first = !o.oldest;
  if (!o.klass.empty()) {
    f.klass = DlqClassFromName(o.klass);
    if (!f.klass)
      return ReportError(
          "dlq list", Status(Reason::kUsage, "--class: unknown class '" + o.klass + "'"), o.json);
  }
  if (!o.state.empty()) {
    f.state = DlqStateFromName(o.state);
    if (!f.state)
      return ReportError(
          "dlq list", Status(Reason::kUsage, "--state: unknown state '" + o.state + "'"), o.json);
  }
  auto store = OpenOpsStore(o.store);
  if (!store.ok()) return ReportError("dlq list", store.error(), o.json);
  auto counts = store->dlq->CountUnresolved();
  if (!counts.ok()) return ReportError("dlq list", counts.error(), o.json);
  auto entries = store->dlq->List(f);
  if (!entries.ok()) return ReportError("dlq list", entries.error(), o.json);
  const int64_t now = SystemClock::Instance().NowMillis();

  // Group the listed entries by class, then age bucket (the order of the contract's tables).
  std::map<std::pair<DlqClass, DlqAge>, std::vector<const DlqEntry*>> groups;
  for (const auto& e : *entries) groups[{e.klass, DlqAgeOf(now - e.created_ms)}].push_back(&e);
  if (o.json) {
    nlohmann::json j = {{"store", store->shown},
                        {"unresolved", nlohmann::json::object()},
                        {"groups", nlohmann::json::array()}};
    int64_t total = 0;
    for (const auto& c : *counts) {
      j["unresolved"][std::string(DlqClassName(c.klass))][std::string(DlqAgeName(c.age))] = c.count;
      total += c.count;
    }
    j["unresolved_total"] = total;
    for (const auto& [k, list] : groups) {
      nlohmann::json g = {{"class", std::string(DlqClassName(k.first))},
                          {"age", std::string(DlqAgeName(k.second))},
                          {"entries", nlohmann::json::array()}};
      for (const DlqEntry* e : list) g["entries"].push_back(EntryJson(*e, now));
      j["groups"].push_back(std::move(g));
    }
    std::cout << DumpJson(j) << "\n";
    return 0;
  }
  std::map<DlqClass, std::array<int64_t, 3>> table;
  for (const auto& c : *counts) table[c.klass][static_cast<size_t>(c.age)] = c.count;
  std::cout << "unresolved by class and age (store " << store->shown << "):\n";
  std::cout << "class\t< 1 h\t< 24 h\tolder\n";
  for (const auto& [k, row] : table) {
    std::cout << DlqClassName(k) << '\t' << row[0] << '\t' << row[1] << '\t' << row[2] << '\n';
  }
  if (table.empty()) std::cout << "(none)\n";
  for (const auto& [k, list] : groups) {
    std::cout << "\n" << DlqClassName(k.first) << ", " << AgeText(k.second) << ":\n";
    for (const DlqEntry* e : list) {
      std::cout << "  #" << e->id << '\t' << DlqStateName(e->state) << '\t' << e->plugin << '/'
                << e->route << '\t'
                << (e->call_index == kDlqEventLevel ? std::string("event")
                                                    : "call " + std::to_string(e->call_index))
                << '\t' << (e->endpoint.empty() ? "-" : e->endpoint) << '\t' << "x"
                << e->occurrences << '\t' << e->event_key.substr(0, 16) << "…\t" << e->detail
                << '\n';
    }
  }
  std::cout << entries->size() << " entries listed\n";
  return 0;
}

int RunShow(const DlqOptions& o) {
  auto store = OpenOpsStore(o.store);
  if (!store.ok()) return ReportError("dlq show", store.error(), o.json);
  auto e = store->dlq->Get(o.id);
  if (!e.ok()) return ReportError("dlq show", e.error(), o.json);
  if (!e->has_value()) {
    return ReportError("dlq show",
                       Status(Reason::kNotFound, "no DLQ entry " + std::to_string(o.id)), o.json);
  }
  const nlohmann::json j = EntryJson(**e, SystemClock::Instance().NowMillis());
  if (o.json) {
    std::cout << DumpJson(j) << "\n";
    return 0;
  }
  for (const auto& [k, v] : j.items()) {
    std::cout << k << ": " << (v.is_string() ? v.get<std::string>() : DumpJson(v)) << '\n';
  }
  return 0;
}

int RunWrite(const DlqOptions& o, bool replay) {
  const std::string cmd = replay ? "dlq replay" : "dlq drop";
  auto store = OpenOpsStore(o.store);
  if (!store.ok()) return ReportError(cmd, store.error(), o.json);
  const std::string actor = OperatorActor();
  const Status st =
      replay ? store->dlq->RequestReplay(o.id, actor) : store->dlq->Drop(o.id, o.reason, actor);
  if (!st.ok()) return ReportError(cmd, st, o.json);
  const Status fin = FinishOperatorWrite(*store, o.audit_log, replay ? "dlq.replay" : "dlq.drop",
                                         std::to_string(o.id), replay ? "" : o.reason);
  if (!fin.ok()) return ReportError(cmd, fin, o.json);
  const std::string state = replay ? "replay_requested" : "dropped";
  if (o.json) {
    std::cout << DumpJson({{"id", o.id}, {"state", state}, {"actor", actor}}) << "\n";
  } else if (replay) {
    std::cout << "DLQ entry " << o.id
              << ": replay requested; a running host replays it with the original keys\n";
  } else {
    std::cout << "DLQ entry " << o.id << ": dropped\n";
  }
  return 0;
}

}  // namespace

void RegisterDlq(CLI::App& app, CommandContext& ctx) {
  auto o = std::make_shared<DlqOptions>();
  auto* cmd = app.add_subcommand("dlq", "list, show, replay or drop dead-lettered events");
  cmd->require_subcommand(1);
  auto common = [o](CLI::App* sub, bool writes) {
    sub->add_option("--store", o->store, "sqlite:PATH, a path, or postgresql://user@host:port/db")
        ->required();
    sub->add_flag("--json", o->json, "print one JSON object");
    if (writes)
      sub->add_option("--audit-log", o->audit_log,
                      "also append the action to this JSON-lines file");
  };
  auto* list = cmd->add_subcommand("list", "unresolved entries by class and age, then the entries");
  common(list, false);
  list->add_option("--class", o->klass, "only this class (breaker, cooldown, auth, …)");
  list->add_option("--state", o->state,
                   "only this state (open, replay_requested, replaying, replayed, dropped)");
  list->add_option("--limit", o->limit, "at most this many entries (1..1000)")
      ->check(CLI::Range(int64_t{1}, kMaxDlqList));
  list->add_flag("--oldest", o->oldest, "oldest first (default: newest first)");
  list->callback([&ctx, o] { ctx.exit_code = RunList(*o); });

  auto* show = cmd->add_subcommand("show", "one entry");
  show->add_option("ID", o->id, "entry id")->required();
  common(show, false);
  show->callback([&ctx, o] { ctx.exit_code = RunShow(*o); });

  auto* replay = cmd->add_subcommand("replay", "ask a running host to replay an open entry");
  replay->add_option("ID", o->id, "entry id")->required();
  common(replay, true);
  replay->callback([&ctx, o] { ctx.exit_code = RunWrite(*o, /*replay=*/true); });

  auto* drop = cmd->add_subcommand("drop", "resolve an entry without replaying it");
  drop->add_option("ID", o->id, "entry id")->required();
  drop->add_option("--reason", o->reason, "why (kept as the entry's resolution)");
  common(drop, true);
  drop->callback([&ctx, o] { ctx.exit_code = RunWrite(*o, /*replay=*/false); });
}

}  // namespace clawguard::cli
