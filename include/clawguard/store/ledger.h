// store/ledger.h — the append-only, hash-chained ledger of releases, deploys and allowlist
// versions (interface; engines in store/sqlite and store/postgresql). The loader and signer hold a
// Ledger&, never an engine.
//
// Row hash = lowercase hex SHA-256 over length-prefixed fields (each a 4-byte big-endian length
// then its bytes): "cg-ledger-v1", seq (decimal), kind, name, version, sha256, time (decimal
// Unix seconds), prev_hash. The first row's prev_hash is 64 '0's. See VerifyLedgerChain.
//
// Every floor the loader enforces is a row of the chain, so deleting or lowering one breaks the
// chain or the anchor (ledger_tampered): the rollback floor is the highest `deploy` row of a
// name, the allowlist floor the highest `allowlist` row.
#ifndef CLAWGUARD_STORE_LEDGER_H_
#define CLAWGUARD_STORE_LEDGER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/error.h"

namespace clawguard {

// LedgerKind is what a row records:
//   release    the signer reserved name+version for these bytes (before the .sig exists)
//   attempt    a host is about to dlopen name+version (written before any plugin code runs;
//              the rollback rule ignores it, so a load refused after dlopen raises no floor)
//   deploy     name+version loaded (init returned 0) or `verify --record`: the rollback floor
//   allowlist  allowlist version (decimal) with the sha256 of its bytes, name
//              kAllowlistLedgerName: the allowlist floor
enum class LedgerKind { kRelease, kDeploy, kAttempt, kAllowlist };
std::string_view LedgerKindName(LedgerKind k);  // "release" / "deploy" / "attempt" / "allowlist"
// LedgerKindFromName is the inverse of LedgerKindName; nullopt for any other text.
std::optional<LedgerKind> LedgerKindFromName(std::string_view name);

// kAllowlistLedgerName names allowlist rows; a plugin name ([a-z0-9-]) can never be it.
inline constexpr std::string_view kAllowlistLedgerName = "clawguard/allowlist";

struct LedgerRow {
  int64_t seq = 0;  // 1-based position in the chain
  LedgerKind kind = LedgerKind::kRelease;
  std::string name, version, sha256;  // sha256: lowercase hex of the package (allowlist: its bytes)
  int64_t time = 0;                   // Unix seconds
  std::string prev_hash;              // hash of row seq-1 (64 '0' for the first)
  std::string hash;                   // this row's hash
};

// LedgerCheckpoint anchors the chain: row |count| has hash |head|.
struct LedgerCheckpoint {
  int64_t count = 0;
  std::string head;  // 64 '0' when count == 0
};

struct LedgerAppend {
  bool appended = false;  // false: an identical row already existed (no-op)
  LedgerCheckpoint head;  // the chain's head after the call
};

// LedgerRecordRules are the policy inputs of Record.
struct LedgerRecordRules {
  bool rollback_allowed = false;  // the trust policy's `rollback: allow`
  // Checkpoints the caller trusts (its anchor file, its audit log's last checkpoint): the whole
  // chain, read inside Record's transaction, must verify and hold each of them, or Record writes
  // nothing (kLedgerTampered) — a head returned by Record always extends the caller's anchors.
  std::vector<LedgerCheckpoint> anchors;
};

// Ledger is thread-safe in every engine (each call is its own transaction).
class Ledger {
 public:
  virtual ~Ledger() = default;

  // Rows returns every row for |name| (all versions, every kind) in chain order.
  virtual Result<std::vector<LedgerRow>> RowsFor(const std::string& name) = 0;
  // Record appends (kind, name, version, sha256) in one transaction that first reads the whole
  // chain and checks it with PrepareLedgerRecord (it verifies and holds rules.anchors, else
  // kLedgerTampered; the SQL objects are plain tables — no view, trigger or rule can answer the
  // reads — else kLedgerTampered), then applies CheckLedgerRecord to the rows of |name| as they
  // are inside that transaction (so two writers racing cannot both pass a floor):
  // kVersionOverwritten, kVersionRollback (deploy and attempt below the highest deploy, unless
  // rules.rollback_allowed), kAllowlistInvalid (an allowlist version below the highest recorded)
  // with nothing written; an identical row → no-op (appended=false). kInternal for a malformed row,
  // kStoreUnavailable when the store cannot be reached.
  virtual Result<LedgerAppend> Record(LedgerKind kind, const std::string& name,
                                      const std::string& version, const std::string& sha256,
                                      const LedgerRecordRules& rules) = 0;
  // Record with the default rules (rollback refused).
  Result<LedgerAppend> Record(LedgerKind kind, const std::string& name, const std::string& version,
                              const std::string& sha256) {
    return Record(kind, name, version, sha256, LedgerRecordRules{});
  }
  // ReadAll returns the whole chain in order (for ledger verify/show).
  virtual Result<std::vector<LedgerRow>> ReadAll() = 0;
  // Head returns the current checkpoint.
  virtual Result<LedgerCheckpoint> Head() = 0;
};

// LedgerRowHash computes a row's hash from its fields (ignores row.hash).
std::string LedgerRowHash(const LedgerRow& row);

// LedgerKindFromText reads a stored kind; kLedgerTampered (naming |seq|) for text this build
// does not know — an edited row, or a row written by a newer clawguard.
Result<LedgerKind> LedgerKindFromText(const std::string& text, int64_t seq);

// CheckLedgerRowInput refuses (kInternal) a row no caller may write: an empty name or version,
// a sha256 that is not 64 lowercase hex, a deploy/attempt version that is not SemVer, an
// allowlist row whose name is not kAllowlistLedgerName or whose version is not a positive
// decimal, or another kind under kAllowlistLedgerName.
Status CheckLedgerRowInput(LedgerKind kind, const std::string& name, const std::string& version,
                           const std::string& sha256);

// CheckLedgerRecord applies the recording rules to |same_name| (the chain's rows with |name|, in
// chain order) for a new (kind, name, version, sha256) row. Returns true to append, false when
// an identical row exists (no-op), or:
//   kVersionOverwritten  release/deploy/attempt: a row of any kind holds name+version with
//                        another sha256 (a version is never re-used for other bytes)
//   kVersionRollback     deploy/attempt: version (SemVer) lower than the highest deploy row,
//                        unless rules.rollback_allowed (attempt rows never raise this floor)
//   kAllowlistInvalid    allowlist: version lower than the highest allowlist row (an allowlist
//                        version already recorded is a no-op, whatever its bytes: the floor is
//                        about versions; the row keeps the bytes that first raised it)
// The engines call it inside Record's transaction; the loader calls it before recording.
Result<bool> CheckLedgerRecord(const std::vector<LedgerRow>& same_name, LedgerKind kind,
                               const std::string& name, const std::string& version,
                               const std::string& sha256, const LedgerRecordRules& rules);

// HighestAllowlistVersion is the allowlist floor of |rows| (a verified chain): the highest
// version of its allowlist rows, nullopt when there is none.
std::optional<int64_t> HighestAllowlistVersion(const std::vector<LedgerRow>& rows);

// ReadAllowlistFloor reads |ledger|'s whole chain, verifies it (VerifyLedgerChain, no anchor:
// the loader checks its anchors before anything is recorded or loaded) and returns its
// allowlist floor. kLedgerTampered when the chain does not verify.
Result<std::optional<int64_t>> ReadAllowlistFloor(Ledger& ledger);

// RecordAllowlist records allowlist |version| with the sha256 of its bytes (Record of kind
// allowlist under kAllowlistLedgerName).
Result<LedgerAppend> RecordAllowlist(Ledger& ledger, int64_t version, const std::string& sha256,
                                     const LedgerRecordRules& rules = {});

// VerifyLedgerChain re-walks |rows|: seq 1..N contiguous, each prev_hash = the previous hash,
// each hash recomputed; and, when |anchor| is given, CheckLedgerAnchor. kLedgerTampered with the
// first failing seq.
Status VerifyLedgerChain(const std::vector<LedgerRow>& rows,
                         const std::optional<LedgerCheckpoint>& anchor);

// LedgerRecordView is what PrepareLedgerRecord found in the chain a Record read.
struct LedgerRecordView {
  std::vector<LedgerRow> same_name;  // rows with the name being recorded, in chain order
  LedgerCheckpoint head;             // the last row of the verified chain
};
// PrepareLedgerRecord verifies |all| (the whole chain as read inside Record's transaction) with
// VerifyLedgerChain against every checkpoint of |rules.anchors| (kLedgerTampered) and returns the
// rows of |name| and the head the new row will chain onto. Every engine's Record calls it.
Result<LedgerRecordView> PrepareLedgerRecord(const std::vector<LedgerRow>& all,
                                             const std::string& name,
                                             const LedgerRecordRules& rules);

// CheckLedgerAnchor checks |rows| (already walked by VerifyLedgerChain) against |anchor|: the
// chain is at least anchor.count long and row anchor.count has hash anchor.head (other hosts may
// have appended since). kLedgerTampered otherwise.
Status CheckLedgerAnchor(const std::vector<LedgerRow>& rows, const LedgerCheckpoint& anchor);

}  // namespace clawguard

#endif  // CLAWGUARD_STORE_LEDGER_H_
