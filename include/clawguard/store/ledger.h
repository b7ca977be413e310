// store/ledger.h — the append-only, hash-chained release/deploy ledger (interface; engines in
// store/sqlite and store/postgresql). The loader and signer hold a Ledger&, never an engine.
//
// Row hash = lowercase hex SHA-256 over length-prefixed fields (each a 4-byte big-endian length
// then its bytes): "cg-ledger-v1", seq (decimal), kind, name, version, sha256, time (decimal
// Unix seconds), prev_hash. The first row's prev_hash is 64 '0's. See VerifyLedgerChain.
#ifndef CLAWGUARD_STORE_LEDGER_H_
#define CLAWGUARD_STORE_LEDGER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/error.h"

namespace clawguard {

enum class LedgerKind { kRelease, kDeploy };
std::string_view LedgerKindName(LedgerKind k);  // "release" / "deploy"

struct LedgerRow {
  int64_t seq = 0;  // 1-based position in the chain
  LedgerKind kind = LedgerKind::kRelease;
  std::string name, version, sha256;  // sha256: lowercase hex of the package
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

// Ledger is thread-safe in every engine (each call is its own transaction).
class Ledger {
 public:
  virtual ~Ledger() = default;

  // Rows returns every row for |name| (all versions, both kinds) in chain order.
  virtual Result<std::vector<LedgerRow>> RowsFor(const std::string& name) = 0;
  // Record appends (kind, name, version, sha256) in one transaction: a row of either kind with
  // the same name+version and another sha256 → kVersionOverwritten and nothing written; an
  // identical (kind, name, version, sha256) row → no-op (appended=false). kStoreUnavailable when
  // the store cannot be reached.
  virtual Result<LedgerAppend> Record(LedgerKind kind, const std::string& name, const std::string& version,
                                      const std::string& sha256) = 0;
  // ReadAll returns the whole chain in order (for ledger verify/show).
  virtual Result<std::vector<LedgerRow>> ReadAll() = 0;
  // Head returns the current checkpoint.
  virtual Result<LedgerCheckpoint> Head() = 0;
  // HighestAllowlistVersion returns the highest allowlist version seen (nullopt if none).
  virtual Result<std::optional<int64_t>> HighestAllowlistVersion() = 0;
  // NoteAllowlistVersion raises the highest allowlist version seen (never lowers it).
  virtual Status NoteAllowlistVersion(int64_t version) = 0;
};

// LedgerRowHash computes a row's hash from its fields (ignores row.hash).
std::string LedgerRowHash(const LedgerRow& row);

// VerifyLedgerChain re-walks |rows|: seq 1..N contiguous, each prev_hash = the previous hash,
// each hash recomputed; and, when |anchor| is given, the chain is at least anchor->count long
// and row anchor->count has hash anchor->head. kLedgerTampered with the first failing seq.
Status VerifyLedgerChain(const std::vector<LedgerRow>& rows, const std::optional<LedgerCheckpoint>& anchor);

}  // namespace clawguard

#endif  // CLAWGUARD_STORE_LEDGER_H_
