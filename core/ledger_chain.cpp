// ledger_chain.cpp — the ledger's row hash, the chain walk and the recording rules shared by
// every engine, the loader and `clawguard ledger verify` (ARCHITECTURE.md "Verification
// (loader)", Ledger paragraph).
#include <charconv>
#include <string>

#include "clawguard/encoding.h"
#include "clawguard/semver.h"
#include "clawguard/sha256.h"
#include "clawguard/store/ledger.h"

namespace clawguard {
namespace {

constexpr std::string_view kLedgerDomain = "cg-ledger-v1";

std::string Short(std::string_view hex) {
  return std::string(hex.substr(0, 16)) + (hex.size() > 16 ? "…" : "");
}

Status Tampered(std::string message) { return Status(Reason::kLedgerTampered, std::move(message)); }

// AllowlistVersionOf parses an allowlist row's version: a positive decimal without sign or
// leading zeros (exactly what std::to_string writes), else nullopt.
std::optional<int64_t> AllowlistVersionOf(std::string_view text) {
  if (text.empty() || text.size() > 19 || text[0] == '0') return std::nullopt;
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || v <= 0) return std::nullopt;
  return v;
}

}  // namespace

std::string_view LedgerKindName(LedgerKind k) {
  switch (k) {
    case LedgerKind::kRelease: return "release";
    case LedgerKind::kDeploy: return "deploy";
    case LedgerKind::kAttempt: return "attempt";
    case LedgerKind::kAllowlist: return "allowlist";
  }
  return "unknown";
}

std::optional<LedgerKind> LedgerKindFromName(std::string_view name) {
  for (LedgerKind k :
       {LedgerKind::kRelease, LedgerKind::kDeploy, LedgerKind::kAttempt, LedgerKind::kAllowlist}) {
    if (LedgerKindName(k) == name) return k;
  }
  return std::nullopt;
}

Result<LedgerKind> LedgerKindFromText(const std::string& text, int64_t seq) {
  if (auto k = LedgerKindFromName(text)) return *k;
  return Tampered("seq " + std::to_string(seq) + ": kind '" + text.substr(0, 32) +
                  "' is not one this build knows (release, deploy, attempt, allowlist): the row "
                  "was edited, or a "
                  "newer clawguard wrote it — upgrade clawguard before trusting this ledger");
}

std::string LedgerRowHash(const LedgerRow& row) {
  const std::string seq = std::to_string(row.seq);
  const std::string time = std::to_string(row.time);
  return Sha256Hex(EncodeFields({kLedgerDomain, seq, LedgerKindName(row.kind), row.name,
                                 row.version, row.sha256, time, row.prev_hash}));
}

Status CheckLedgerRowInput(LedgerKind kind, const std::string& name, const std::string& version,
                           const std::string& sha256) {
  const auto bad = [&](const std::string& why) {
    return Status(Reason::kInternal, "ledger record of kind " + std::string(LedgerKindName(kind)) +
                                         " " + why + "; found name '" + name.substr(0, 80) +
                                         "' version '" + version.substr(0, 80) + "' sha256 '" +
                                         sha256.substr(0, 70) + "'");
  };
  if (name.empty() || version.empty() || !IsLowerHex(sha256, 64)) {
    return bad("needs a name, a version and 64 lowercase hex of sha256");
  }
  const bool allowlist_name = name == kAllowlistLedgerName;
  if (kind == LedgerKind::kAllowlist) {
    if (!allowlist_name) return bad("needs the name " + std::string(kAllowlistLedgerName));
    if (!AllowlistVersionOf(version)) return bad("needs a positive decimal version");
    return Status::Ok();
  }
  if (allowlist_name) return bad("may not use the allowlist rows' name");
  if ((kind == LedgerKind::kDeploy || kind == LedgerKind::kAttempt) && !ParseSemVer(version)) {
    return bad("needs a SemVer version");
  }
  return Status::Ok();
}

Result<bool> CheckLedgerRecord(const std::vector<LedgerRow>& same_name, LedgerKind kind,
                               const std::string& name, const std::string& version,
                               const std::string& sha256, const LedgerRecordRules& rules) {
  CLAWGUARD_RETURN_IF_ERROR(CheckLedgerRowInput(kind, name, version, sha256));
  if (kind == LedgerKind::kAllowlist) {
    const int64_t wanted = *AllowlistVersionOf(version);
    const LedgerRow* highest = nullptr;
    std::optional<int64_t> highest_version;
    for (const LedgerRow& row : same_name) {
      if (row.kind != LedgerKind::kAllowlist || row.name != name) continue;
      const auto v = AllowlistVersionOf(row.version);
      if (v && (!highest_version || *v > *highest_version)) {
        highest_version = v;
        highest = &row;
      }
    }
    if (highest_version && wanted < *highest_version) {
      return Status(
          Reason::kAllowlistInvalid,
          "allowlist version " + version + " is lower than version " + highest->version +
              " already recorded in the ledger (seq " + std::to_string(highest->seq) +
              "): an allowlist is never rolled back; sign a new allowlist with a higher version");
    }
    return !(highest_version && wanted == *highest_version);  // each allowlist version once
  }
  const bool deploying = kind == LedgerKind::kDeploy || kind == LedgerKind::kAttempt;
  const std::optional<SemVer> wanted = deploying ? ParseSemVer(version) : std::nullopt;
  bool identical = false;
  const LedgerRow* floor = nullptr;
  std::optional<SemVer> floor_version;
  for (const LedgerRow& row : same_name) {
    if (row.name != name) continue;
    // Overwrites are checked against every kind (ARCHITECTURE.md): a deploy of other bytes than
    // were released, or a second release with other bytes, are the same attack.
    if (row.version == version && row.sha256 != sha256) {
      return Status(Reason::kVersionOverwritten,
                    name + " " + version + " is already recorded (" +
                        std::string(LedgerKindName(row.kind)) + " row, seq " +
                        std::to_string(row.seq) + ") with sha256 " + Short(row.sha256) +
                        "; refusing sha256 " + Short(sha256) +
                        ": a version is never re-used for other bytes, publish a new version");
    }
    identical = identical || (row.kind == kind && row.version == version);
    // The rollback floor: deploy rows only (signing 1.5.0, or a 1.5.0 refused after dlopen, must
    // not stop 1.4.2 from loading).
    if (row.kind != LedgerKind::kDeploy) continue;
    const auto v = ParseSemVer(row.version);
    if (v && (!floor_version || CompareSemVer(*v, *floor_version) > 0)) {
      floor_version = v;
      floor = &row;
    }
  }
  if (deploying && floor_version && CompareSemVer(*wanted, *floor_version) < 0 &&
      !rules.rollback_allowed) {
    return Status(Reason::kVersionRollback,
                  version + " is lower than " + floor->version + ", already deployed (seq " +
                      std::to_string(floor->seq) +
                      "): a rollback needs `rollback: allow` in the trust policy");
  }
  return !identical;
}

std::optional<int64_t> HighestAllowlistVersion(const std::vector<LedgerRow>& rows) {
  std::optional<int64_t> highest;
  for (const LedgerRow& row : rows) {
    if (row.kind != LedgerKind::kAllowlist || row.name != kAllowlistLedgerName) continue;
    const auto v = AllowlistVersionOf(row.version);
    if (v && (!highest || *v > *highest)) highest = v;
  }
  return highest;
}

Result<std::optional<int64_t>> ReadAllowlistFloor(Ledger& ledger) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::vector<LedgerRow> rows, ledger.ReadAll());
  CLAWGUARD_RETURN_IF_ERROR(VerifyLedgerChain(rows, std::nullopt));
  return HighestAllowlistVersion(rows);
}

Result<LedgerAppend> RecordAllowlist(Ledger& ledger, int64_t version, const std::string& sha256,
                                     const LedgerRecordRules& rules) {
  return ledger.Record(LedgerKind::kAllowlist, std::string(kAllowlistLedgerName),
                       std::to_string(version), sha256, rules);
}

Status VerifyLedgerChain(const std::vector<LedgerRow>& rows,
                         const std::optional<LedgerCheckpoint>& anchor) {
  std::string prev(64, '0');
  for (size_t i = 0; i < rows.size(); ++i) {
    const LedgerRow& row = rows[i];
    const auto want_seq = static_cast<int64_t>(i + 1);
    if (row.seq != want_seq) {
      return Tampered("seq " + std::to_string(want_seq) + ": expected row " +
                      std::to_string(want_seq) + " at this position, found seq " +
                      std::to_string(row.seq) + " (rows were removed, duplicated or reordered)");
    }
    if (row.prev_hash != prev) {
      return Tampered("seq " + std::to_string(row.seq) + ": prev_hash " + Short(row.prev_hash) +
                      " does not match the hash of the row before it (" + Short(prev) +
                      "): rows were removed, inserted or reordered");
    }
    const std::string recomputed = LedgerRowHash(row);
    if (recomputed != row.hash) {
      return Tampered("seq " + std::to_string(row.seq) + ": stored hash " + Short(row.hash) +
                      " does not match the recomputed " + Short(recomputed) +
                      ": the row was edited");
    }
    prev = row.hash;
  }
  if (!anchor) return Status::Ok();
  return CheckLedgerAnchor(rows, *anchor);
}

Result<LedgerRecordView> PrepareLedgerRecord(const std::vector<LedgerRow>& all,
                                             const std::string& name,
                                             const LedgerRecordRules& rules) {
  CLAWGUARD_RETURN_IF_ERROR(VerifyLedgerChain(all, std::nullopt));
  for (const auto& anchor : rules.anchors) {
    if (Status s = CheckLedgerAnchor(all, anchor); !s.ok()) {
      return Status(
          s.reason(),
          s.message() + " (checked again inside the recording transaction; nothing written)");
    }
  }
  LedgerRecordView view;
  for (const auto& r : all) {
    if (r.name == name) view.same_name.push_back(r);
  }
  view.head = all.empty() ? LedgerCheckpoint{0, std::string(64, '0')}
                          : LedgerCheckpoint{all.back().seq, all.back().hash};
  return view;
}

Status CheckLedgerAnchor(const std::vector<LedgerRow>& rows, const LedgerCheckpoint& anchor) {
  const auto count = static_cast<int64_t>(rows.size());
  if (anchor.count < 0)
    return Tampered("the anchor's count is negative (" + std::to_string(anchor.count) + ")");
  if (count < anchor.count) {
    return Tampered("seq " + std::to_string(count + 1) + ": expected at least " +
                    std::to_string(anchor.count) + " rows (the anchored checkpoint), found " +
                    std::to_string(count) + ": rows were removed from the tail");
  }
  const std::string at =
      anchor.count == 0 ? std::string(64, '0') : rows[static_cast<size_t>(anchor.count - 1)].hash;
  if (at != anchor.head) {
    return Tampered("seq " + std::to_string(anchor.count) + ": expected hash " + anchor.head +
                    " (the anchored checkpoint), found " + at + ": the ledger was rewritten");
  }
  return Status::Ok();
}

}  // namespace clawguard
