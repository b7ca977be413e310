// pg_ledger.cpp — the hash-chained ledger on PostgreSQL (ARCHITECTURE.md "Verification
// (loader)", Ledger paragraph; the same rules as the SQLite engine).
#include "postgresql/pg_ledger.h"

#include "clawguard/encoding.h"

namespace clawguard::pg {
namespace {

constexpr char kHighestAllowlistKey[] = "highest_allowlist_version";

Result<LedgerKind> KindFromText(const std::string& text, int64_t seq) {
  if (text == "release") return LedgerKind::kRelease;
  if (text == "deploy") return LedgerKind::kDeploy;
  return Status(Reason::kLedgerTampered,
                "seq " + std::to_string(seq) + ": expected kind release or deploy, found '" + text.substr(0, 32) + "'");
}

std::string Short(const std::string& hex) { return hex.substr(0, 16); }

Result<LedgerCheckpoint> HeadOn(PgPool::Lease& db) {
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r, db.Exec("ledger head", "SELECT seq, hash FROM ledger ORDER BY seq DESC LIMIT 1"));
  if (r.rows() == 0) return LedgerCheckpoint{0, std::string(64, '0')};
  return LedgerCheckpoint{r.Int(0, 0), r.Text(0, 1)};
}

}  // namespace

Result<std::unique_ptr<PgLedger>> PgLedger::Open(std::shared_ptr<PgPool> pool) {
  CLAWGUARD_CHECK(pool != nullptr);
  CLAWGUARD_RETURN_IF_ERROR(pool->EnsureMigrated());
  return std::unique_ptr<PgLedger>(new PgLedger(std::move(pool)));
}

Result<std::vector<LedgerRow>> PgLedger::SelectRows(const std::string* name) {
  const std::string sql = std::string("SELECT seq, kind, name, version, sha256, time, prev_hash, hash FROM ledger") +
                          (name != nullptr ? " WHERE name = $1::text" : "") + " ORDER BY seq";
  PgParams params;
  if (name != nullptr) params.Text(*name);
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r, db.Exec("ledger read", sql, params));
  std::vector<LedgerRow> rows;
  rows.reserve(static_cast<size_t>(r.rows()));
  for (int i = 0; i < r.rows(); ++i) {
    LedgerRow row;
    row.seq = r.Int(i, 0);
    CLAWGUARD_ASSIGN_OR_RETURN(row.kind, KindFromText(r.Text(i, 1), row.seq));
    row.name = r.Text(i, 2);
    row.version = r.Text(i, 3);
    row.sha256 = r.Text(i, 4);
    row.time = r.Int(i, 5);
    row.prev_hash = r.Text(i, 6);
    row.hash = r.Text(i, 7);
    rows.push_back(std::move(row));
  }
  return rows;
}

Result<std::vector<LedgerRow>> PgLedger::RowsFor(const std::string& name) { return SelectRows(&name); }

Result<std::vector<LedgerRow>> PgLedger::ReadAll() { return SelectRows(nullptr); }

Result<LedgerCheckpoint> PgLedger::Head() {
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  return HeadOn(db);
}

Result<LedgerAppend> PgLedger::Record(LedgerKind kind, const std::string& name, const std::string& version,
                                      const std::string& sha256) {
  if (name.empty() || version.empty() || !IsLowerHex(sha256, 64)) {
    return Status(Reason::kInternal, "ledger record needs a name, a version and 64 lowercase hex of sha256; found '" +
                                         name + "' '" + version + "' '" + sha256.substr(0, 70) + "'");
  }
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgTx tx, PgTx::Begin(db));
  CLAWGUARD_ASSIGN_OR_RETURN(
      PgResult lock, db.Exec("ledger lock",
                             "SELECT COALESCE($1::bigint, cg_now_ms()) FROM ledger_meta WHERE key = 'chain_lock' "
                             "FOR UPDATE",
                             PgParams().OptionalInt(pool_->NowParam())));
  if (lock.rows() != 1) return pool_->Unavailable("ledger lock", "ledger_meta has no chain_lock row");
  const int64_t now_ms = lock.Int(0, 0);
  {
    // Overwrites are checked against both kinds (ARCHITECTURE.md): a deploy of other bytes than
    // were released, or a second release with other bytes, are the same attack.
    CLAWGUARD_ASSIGN_OR_RETURN(
        PgResult s, db.Exec("ledger lookup",
                            "SELECT seq, kind, sha256 FROM ledger WHERE name = $1::text AND version = $2::text "
                            "ORDER BY seq",
                            PgParams().Text(name).Text(version)));
    bool identical = false;
    for (int i = 0; i < s.rows(); ++i) {
      const std::string existing_kind = s.Text(i, 1);
      const std::string existing = s.Text(i, 2);
      if (existing != sha256) {
        return Status(Reason::kVersionOverwritten,
                      name + " " + version + " is already recorded (" + existing_kind + " row, seq " +
                          std::to_string(s.Int(i, 0)) + ") with sha256 " + Short(existing) + "…; refusing sha256 " +
                          Short(sha256) + "…: a version is never re-used for other bytes, publish a new version");
      }
      identical = identical || existing_kind == LedgerKindName(kind);
    }
    if (identical) {
      CLAWGUARD_ASSIGN_OR_RETURN(LedgerCheckpoint head, HeadOn(db));
      return LedgerAppend{false, std::move(head)};
    }
  }
  CLAWGUARD_ASSIGN_OR_RETURN(LedgerCheckpoint last, HeadOn(db));
  LedgerRow row;
  row.seq = last.count + 1;
  row.kind = kind;
  row.name = name;
  row.version = version;
  row.sha256 = sha256;
  row.time = now_ms / 1000;
  row.prev_hash = last.head;
  row.hash = LedgerRowHash(row);
  CLAWGUARD_ASSIGN_OR_RETURN(
      PgResult ins, db.Exec("ledger append",
                            "INSERT INTO ledger (seq, kind, name, version, sha256, time, prev_hash, hash) VALUES "
                            "($1::bigint, $2::text, $3::text, $4::text, $5::text, $6::bigint, $7::text, $8::text)",
                            PgParams()
                                .Int(row.seq)
                                .Text(LedgerKindName(kind))
                                .Text(name)
                                .Text(version)
                                .Text(sha256)
                                .Int(row.time)
                                .Text(row.prev_hash)
                                .Text(row.hash)));
  (void)ins;
  CLAWGUARD_RETURN_IF_ERROR(tx.Commit());
  return LedgerAppend{true, LedgerCheckpoint{row.seq, row.hash}};
}

Result<std::optional<int64_t>> PgLedger::HighestAllowlistVersion() {
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r, db.Exec("allowlist version", "SELECT value FROM ledger_meta WHERE key = $1::text",
                                                 PgParams().Text(kHighestAllowlistKey)));
  if (r.rows() == 0) return std::optional<int64_t>();
  return std::optional<int64_t>(r.Int(0, 0));
}

Status PgLedger::NoteAllowlistVersion(int64_t version) {
  // One statement: the upsert keeps the maximum, so the version is never lowered, even by a
  // concurrent writer with an older allowlist.
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(
      PgResult r, db.Exec("note allowlist version",
                          "INSERT INTO ledger_meta (key, value) VALUES ($1::text, $2::bigint) ON CONFLICT (key) "
                          "DO UPDATE SET value = GREATEST(ledger_meta.value, excluded.value)",
                          PgParams().Text(kHighestAllowlistKey).Int(version)));
  (void)r;
  return Status::Ok();
}

}  // namespace clawguard::pg
