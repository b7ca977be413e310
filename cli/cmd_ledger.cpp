// cmd_ledger.cpp — `clawguard ledger show|verify [--anchor FILE] [--expect-head N:HEX]
// [--write-anchor] --store URL [--json]`: prints the ledger and re-walks its hash chain
// (VerifyLedgerChain), anchored at the anchor file and/or a checkpoint given by hand (from another
// host's anchor or audit log). --write-anchor (with --anchor and --expect-head) writes the chain's
// current head to the anchor file once the chain held the given checkpoint: how a new host is
// anchored from a checkpoint it did not write, and how a head trusted on first use is confirmed.
#include <charconv>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "clawguard/clock.h"
#include "clawguard/encoding.h"
#include "commands.h"
#include "loader/ledger_anchor.h"
#include "store_url.h"

namespace clawguard::cli {
namespace {

struct LedgerOptions {
  std::string store;
  std::string expect_head;
  std::string anchor;
  bool write_anchor = false;
  bool json = false;
};

// ParseExpectHead parses "N:HEX" (N a decimal count, HEX 64 lowercase hex) into a checkpoint.
Result<LedgerCheckpoint> ParseExpectHead(const std::string& text) {
  const size_t colon = text.find(':');
  const Status bad(
      Reason::kUsage,
      "--expect-head: expected N:HEX (the count and head of a ledger anchor or an audit "
      "log's ledger_checkpoint, HEX 64 lowercase hex), found \"" +
          text.substr(0, 80) + "\"");
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
    std::cout << r.seq << '\t' << LedgerKindName(r.kind) << '\t' << r.name << '\t' << r.version
              << '\t' << r.sha256 << '\t' << FormatRfc3339Utc(r.time) << '\n';
  }
  std::cout << rows->size() << " rows\n";
  return 0;
}

nlohmann::json CheckpointJson(const std::optional<LedgerCheckpoint>& cp) {
  return cp ? nlohmann::json{{"count", cp->count}, {"head", cp->head}} : nlohmann::json(nullptr);
}

int RunVerify(const LedgerOptions& o) {
  std::optional<LedgerCheckpoint> expected;
  if (!o.expect_head.empty()) {
    auto cp = ParseExpectHead(o.expect_head);
    if (!cp.ok()) return ReportError("ledger verify", cp.error(), o.json);
    expected = *cp;
  }
  if (o.write_anchor && (o.anchor.empty() || !expected)) {
    return ReportError("ledger verify",
                       Status(Reason::kUsage,
                              "--write-anchor needs --anchor FILE and --expect-head N:HEX (a "
                              "checkpoint from elsewhere that the chain must hold first)"),
                       o.json);
  }
  std::optional<LedgerAnchor> anchor;
  if (!o.anchor.empty()) {
    auto read = LedgerAnchorFile(o.anchor).Read();
    if (!read.ok()) return ReportError("ledger verify", read.error(), o.json);
    anchor = *read;
  }
  auto ledger = OpenLedger(o.store, StoreOpen::kMustExist);
  if (!ledger.ok()) return ReportError("ledger verify", ledger.error(), o.json);
  auto rows = (*ledger)->ReadAll();
  if (!rows.ok()) return ReportError("ledger verify", rows.error(), o.json);
  if (Status st = VerifyLedgerChain(*rows, expected); !st.ok())
    return ReportError("ledger verify", st, o.json);
  const auto count = static_cast<int64_t>(rows->size());
  const std::string head = rows->empty() ? std::string(64, '0') : rows->back().hash;
  if (anchor) {
    if (Status st = CheckLedgerAnchor(*rows, anchor->checkpoint); !st.ok()) {
      return ReportError("ledger verify",
                         Status(st.reason(), st.message() + " (anchor file " + o.anchor + ")"),
                         o.json);
    }
  } else if (!o.anchor.empty() && !o.write_anchor && count > 0) {
    return ReportError(
        "ledger verify",
        Status(
            Reason::kFileUnreadable,
            "the ledger anchor '" + o.anchor + "' does not exist while the ledger holds " +
                std::to_string(count) +
                " rows: nothing shows whether the chain was rewritten; restore the anchor, or "
                "anchor it from another host's checkpoint with --expect-head N:HEX --write-anchor"),
        o.json);
  }
  bool written = false;
  if (o.write_anchor) {
    const LedgerAnchor fresh{LedgerCheckpoint{count, head}, SystemClock::Instance().NowSeconds(),
                             std::nullopt, 0};
    if (Status st = LedgerAnchorFile(o.anchor).Write(fresh); !st.ok()) {
      return ReportError("ledger verify", st, o.json);
    }
    anchor = fresh;
    written = true;
  }
  const std::optional<LedgerCheckpoint> from_file =
      anchor ? std::optional<LedgerCheckpoint>(anchor->checkpoint) : std::nullopt;
  const std::optional<LedgerCheckpoint> tofu = anchor ? anchor->trust_on_first_use : std::nullopt;
  const bool anchored = expected.has_value() || anchor.has_value();
  if (o.json) {
    nlohmann::json j = {{"verdict", "ok"}, {"rows", count}, {"head", head}, {"anchored", anchored}};
    j["anchor"] = CheckpointJson(expected ? expected : from_file);
    j["anchor_file"] = o.anchor.empty()
                           ? nlohmann::json(nullptr)
                           : nlohmann::json{{"path", o.anchor},
                                            {"checkpoint", CheckpointJson(from_file)},
                                            {"trust_on_first_use", CheckpointJson(tofu)},
                                            {"written", written}};
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::cout << "ok: " << count << " rows, head " << head;
  if (!anchored) {
    std::cout << " — not anchored (pass --anchor FILE, or --expect-head N:HEX from a ledger anchor "
                 "or an audit "
                 "log's ledger_checkpoint)\n";
    return 0;
  }
  if (expected) std::cout << ", anchored at " << expected->count;
  if (from_file && !written) {
    std::cout << (expected ? ", and at " : ", anchored at ") << from_file->count << " (" << o.anchor
              << ")";
  }
  std::cout << "\n";
  if (written)
    std::cout << "anchor written: " << o.anchor << " at " << count << ":" << head << "\n";
  if (tofu) {
    std::cout << "warning: the anchor began by trusting " << tofu->count << ":" << tofu->head
              << " on first use, not confirmed: compare it with another host's anchor and confirm "
                 "with --expect-head "
                 "N:HEX --write-anchor\n";
  }
  return 0;
}

}  // namespace

void RegisterLedger(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<LedgerOptions>();
  auto* cmd = app.add_subcommand("ledger", "show or verify the release/deploy ledger");
  cmd->require_subcommand(1);

  auto* show =
      cmd->add_subcommand("show", "print every ledger row: seq kind name version sha256 time");
  show->add_option("--store", opts->store, "sqlite:PATH, a path, or postgresql://user@host:port/db")
      ->required();
  show->add_flag("--json", opts->json, "print one JSON object");
  show->callback([&ctx, opts] { ctx.exit_code = RunShow(*opts); });

  auto* verify = cmd->add_subcommand(
      "verify", "re-walk the hash chain (exit 1 with ledger_tampered if broken)");
  verify
      ->add_option("--store", opts->store, "sqlite:PATH, a path, or postgresql://user@host:port/db")
      ->required();
  verify->add_option("--expect-head", opts->expect_head,
                     "N:HEX from a ledger anchor or an audit log's ledger_checkpoint: row N must "
                     "still have hash HEX");
  verify->add_option("--anchor", opts->anchor,
                     "a ledger anchor file (host.yaml log.anchor): the chain must hold it");
  verify->add_flag("--write-anchor", opts->write_anchor,
                   "after the chain held --expect-head, write its head to --anchor (confirms a "
                   "trust on first use)");
  verify->add_flag("--json", opts->json, "print one JSON object");
  verify->callback([&ctx, opts] { ctx.exit_code = RunVerify(*opts); });
}

}  // namespace clawguard::cli
