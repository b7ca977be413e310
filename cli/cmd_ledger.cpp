// cmd_ledger.cpp — `clawguard ledger show|verify [--expect-head N:HEX] --store URL [--json]`:
// prints the release/deploy ledger and re-walks its hash chain (VerifyLedgerChain), anchored at
// a checkpoint from the audit log when one is given.
#include <charconv>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "clawguard/clock.h"
#include "clawguard/encoding.h"
#include "commands.h"
#include "store_url.h"

namespace clawguard::cli {
namespace {

struct LedgerOptions {
  std::string store;
  std::string expect_head;
  bool json = false;
};

// ParseExpectHead parses "N:HEX" (N a decimal count, HEX 64 lowercase hex) into a checkpoint.
Result<LedgerCheckpoint> ParseExpectHead(const std::string& text) {
  const size_t colon = text.find(':');
  const Status bad(Reason::kUsage, "--expect-head: expected N:HEX (the count and head of the audit log's last "
                                   "ledger_checkpoint, HEX 64 lowercase hex), found \"" + text.substr(0, 80) + "\"");
  if (colon == std::string::npos || colon == 0) return bad;
  LedgerCheckpoint cp;
  const char* first = text.data();
  const char* last = text.data() + colon;
  auto [ptr, ec] = std::from_chars(first, last, cp.count);
  if (ec != std::errc() || ptr != last || cp.count < 0) return bad;
  cp.head = text.substr(colon + 1);
  if (!IsLowerHex(cp.head, 64)) return bad;
  return cp;
}

nlohmann::json RowJson(const LedgerRow& r) {
  return {{"seq", r.seq},       {"kind", std::string(LedgerKindName(r.kind))},
          {"name", r.name},     {"version", r.version},
          {"sha256", r.sha256}, {"time", FormatRfc3339Utc(r.time)}};
}

int RunShow(const LedgerOptions& o) {
  auto ledger = OpenLedger(o.store, StoreOpen::kMustExist);
  if (!ledger.ok()) return ReportError("ledger show", ledger.error(), o.json);
  auto rows = (*ledger)->ReadAll();
  if (!rows.ok()) return ReportError("ledger show", rows.error(), o.json);
  if (o.json) {
    nlohmann::json j = {{"store", RedactStoreUrl(o.store)}, {"rows", nlohmann::json::array()}};
    for (const auto& r : *rows) j["rows"].push_back(RowJson(r));
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::cout << "seq\tkind\tname\tversion\tsha256\ttime\n";
  for (const auto& r : *rows) {
    std::cout << r.seq << '\t' << LedgerKindName(r.kind) << '\t' << r.name << '\t' << r.version << '\t' << r.sha256
              << '\t' << FormatRfc3339Utc(r.time) << '\n';
  }
  std::cout << rows->size() << " rows\n";
  return 0;
}

int RunVerify(const LedgerOptions& o) {
  std::optional<LedgerCheckpoint> anchor;
  if (!o.expect_head.empty()) {
    auto cp = ParseExpectHead(o.expect_head);
    if (!cp.ok()) return ReportError("ledger verify", cp.error(), o.json);
    anchor = *cp;
  }
  auto ledger = OpenLedger(o.store, StoreOpen::kMustExist);
  if (!ledger.ok()) return ReportError("ledger verify", ledger.error(), o.json);
  auto rows = (*ledger)->ReadAll();
  if (!rows.ok()) return ReportError("ledger verify", rows.error(), o.json);
  const Status st = VerifyLedgerChain(*rows, anchor);
  if (!st.ok()) return ReportError("ledger verify", st, o.json);
  const auto count = static_cast<int64_t>(rows->size());
  const std::string head = rows->empty() ? std::string(64, '0') : rows->back().hash;
  if (o.json) {
    nlohmann::json j = {{"verdict", "ok"}, {"rows", count}, {"head", head}, {"anchored", anchor.has_value()}};
    j["anchor"] = anchor ? nlohmann::json{{"count", anchor->count}, {"head", anchor->head}} : nlohmann::json(nullptr);
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::cout << "ok: " << count << " rows, head " << head;
  if (anchor) {
    std::cout << ", anchored at " << anchor->count << "\n";
  } else {
    std::cout << " — not anchored (pass --expect-head N:HEX from the audit log's last ledger_checkpoint)\n";
  }
  return 0;
}

}  // namespace

void RegisterLedger(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<LedgerOptions>();
  auto* cmd = app.add_subcommand("ledger", "show or verify the release/deploy ledger");
  cmd->require_subcommand(1);

  auto* show = cmd->add_subcommand("show", "print every ledger row: seq kind name version sha256 time");
  show->add_option("--store", opts->store, "sqlite:PATH, a path, or postgresql://user@host:port/db")->required();
  show->add_flag("--json", opts->json, "print one JSON object");
  show->callback([&ctx, opts] { ctx.exit_code = RunShow(*opts); });

  auto* verify = cmd->add_subcommand("verify", "re-walk the hash chain (exit 1 with ledger_tampered if broken)");
  verify->add_option("--store", opts->store, "sqlite:PATH, a path, or postgresql://user@host:port/db")->required();
  verify->add_option("--expect-head", opts->expect_head,
                     "N:HEX from the audit log's last ledger_checkpoint: row N must still have hash HEX");
  verify->add_flag("--json", opts->json, "print one JSON object");
  verify->callback([&ctx, opts] { ctx.exit_code = RunVerify(*opts); });
}

}  // namespace clawguard::cli
