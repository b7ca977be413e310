// ledger_chain.cpp — the ledger's row hash and the chain walk shared by every engine and by
// `clawguard ledger verify` (ARCHITECTURE.md "Verification (loader)", Ledger paragraph).
#include <string>

#include "clawguard/encoding.h"
#include "clawguard/sha256.h"
#include "clawguard/store/ledger.h"

namespace clawguard {
namespace {

constexpr std::string_view kLedgerDomain = "cg-ledger-v1";

std::string Short(std::string_view hex) { return std::string(hex.substr(0, 16)) + (hex.size() > 16 ? "…" : ""); }

Status Tampered(std::string message) { return Status(Reason::kLedgerTampered, std::move(message)); }

}  // namespace

std::string_view LedgerKindName(LedgerKind k) {
  switch (k) {
    case LedgerKind::kRelease:
      return "release";
    case LedgerKind::kDeploy:
      return "deploy";
  }
  return "unknown";
}

std::string LedgerRowHash(const LedgerRow& row) {
  const std::string seq = std::to_string(row.seq);
  const std::string time = std::to_string(row.time);
  return Sha256Hex(EncodeFields(
      {kLedgerDomain, seq, LedgerKindName(row.kind), row.name, row.version, row.sha256, time, row.prev_hash}));
}

Status VerifyLedgerChain(const std::vector<LedgerRow>& rows, const std::optional<LedgerCheckpoint>& anchor) {
  std::string prev(64, '0');
  for (size_t i = 0; i < rows.size(); ++i) {
    const LedgerRow& row = rows[i];
    const auto want_seq = static_cast<int64_t>(i + 1);
    if (row.seq != want_seq) {
      return Tampered("seq " + std::to_string(want_seq) + ": expected row " + std::to_string(want_seq) +
                      " at this position, found seq " + std::to_string(row.seq) +
                      " (rows were removed, duplicated or reordered)");
    }
    if (row.prev_hash != prev) {
      return Tampered("seq " + std::to_string(row.seq) + ": prev_hash " + Short(row.prev_hash) +
                      " does not match the hash of the row before it (" + Short(prev) +
                      "): rows were removed, inserted or reordered");
    }
    const std::string recomputed = LedgerRowHash(row);
    if (recomputed != row.hash) {
      return Tampered("seq " + std::to_string(row.seq) + ": stored hash " + Short(row.hash) +
                      " does not match the recomputed " + Short(recomputed) + ": the row was edited");
    }
    prev = row.hash;
  }
  if (!anchor) return Status::Ok();
  const auto count = static_cast<int64_t>(rows.size());
  if (anchor->count < 0) return Tampered("the anchor's count is negative (" + std::to_string(anchor->count) + ")");
  if (count < anchor->count) {
    return Tampered("seq " + std::to_string(count + 1) + ": expected at least " + std::to_string(anchor->count) +
                    " rows (the anchored checkpoint), found " + std::to_string(count) +
                    ": rows were removed from the tail");
  }
  const std::string at =
      anchor->count == 0 ? std::string(64, '0') : rows[static_cast<size_t>(anchor->count - 1)].hash;
  if (at != anchor->head) {
    return Tampered("seq " + std::to_string(anchor->count) + ": expected hash " + anchor->head +
                    " (the anchored checkpoint), found " + at + ": the ledger was rewritten");
  }
  return Status::Ok();
}

}  // namespace clawguard
