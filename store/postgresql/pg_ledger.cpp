// pg_ledger.cpp — the hash-chained ledger on PostgreSQL (ARCHITECTURE.md "Verification
// (loader)", Ledger paragraph; the same rules as the SQLite engine).
#include "postgresql/pg_ledger.h"

#include "clawguard/encoding.h"

namespace clawguard::pg {
namespace {

Result<LedgerCheckpoint> HeadOn(PgPool::Lease& db) {
  CLAWGUARD_ASSIGN_OR_RETURN(
      PgResult r, db.Exec("ledger head", "SELECT seq, hash FROM ledger ORDER BY seq DESC LIMIT 1"));
  if (r.rows() == 0) return LedgerCheckpoint{0, std::string(64, '0')};
  return LedgerCheckpoint{r.Int(0, 0), r.Text(0, 1)};
}

// PlainSchema: the ledger's reads must come from its table: `ledger` resolves to an ordinary
// table with no user trigger, no rewrite rule and no row-level security, so whoever can write the
// database cannot answer Record's reads with one chain and keep another.
Status PlainSchema(PgPool::Lease& db) {
  CLAWGUARD_ASSIGN_OR_RETURN(
      PgResult r,
      db.Exec("ledger schema",
              "SELECT c.relkind::text, c.relrowsecurity::int, "
              "(SELECT count(*) FROM pg_trigger t WHERE t.tgrelid = c.oid AND NOT t.tgisinternal), "
              "(SELECT count(*) FROM pg_rewrite w WHERE w.ev_class = c.oid) "
              "FROM pg_class c WHERE c.oid = to_regclass('ledger')"));
  if (r.rows() != 1 || r.Text(0, 0) != "r" || r.Int(0, 1) != 0 || r.Int(0, 2) != 0 ||
      r.Int(0, 3) != 0) {
    return Status(
        Reason::kLedgerTampered,
        "the ledger is not a plain table (a view, trigger, rule or row-level security answers its "
        "reads); nothing written");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<PgLedger>> PgLedger::Open(std::shared_ptr<PgPool> pool) {
  CLAWGUARD_CHECK(pool != nullptr);
  CLAWGUARD_RETURN_IF_ERROR(pool->EnsureMigrated());
  return std::unique_ptr<PgLedger>(new PgLedger(std::move(pool)));
}

Result<std::vector<LedgerRow>> PgLedger::SelectRows(PgPool::Lease& db, const std::string* name) {
  const std::string sql =
      std::string("SELECT seq, kind, name, version, sha256, time, prev_hash, hash FROM ledger") +
      (name != nullptr ? " WHERE name = $1::text" : "") + " ORDER BY seq";
  PgParams params;
  if (name != nullptr) params.Text(*name);
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r, db.Exec("ledger read", sql, params));
  std::vector<LedgerRow> rows;
  rows.reserve(static_cast<size_t>(r.rows()));
  for (int i = 0; i < r.rows(); ++i) {
    LedgerRow row;
    row.seq = r.Int(i, 0);
    CLAWGUARD_ASSIGN_OR_RETURN(row.kind, LedgerKindFromText(r.Text(i, 1), row.seq));
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

Result<std::vector<LedgerRow>> PgLedger::RowsFor(const std::string& name) {
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  return SelectRows(db, &name);
}

Result<std::vector<LedgerRow>> PgLedger::ReadAll() {
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  return SelectRows(db, nullptr);
}

Result<LedgerCheckpoint> PgLedger::Head() {
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  return HeadOn(db);
}

Result<LedgerAppend> PgLedger::Record(LedgerKind kind, const std::string& name,
                                      const std::string& version, const std::string& sha256,
                                      const LedgerRecordRules& rules) {
  CLAWGUARD_RETURN_IF_ERROR(CheckLedgerRowInput(kind, name, version, sha256));
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgTx tx, PgTx::Begin(db));
  CLAWGUARD_ASSIGN_OR_RETURN(
      PgResult lock,
      db.Exec("ledger lock",
              "SELECT COALESCE($1::bigint, cg_now_ms()) FROM ledger_meta WHERE key = 'chain_lock' "
              "FOR UPDATE",
              PgParams().OptionalInt(pool_->NowParam())));
  if (lock.rows() != 1)
    return pool_->Unavailable("ledger lock", "ledger_meta has no chain_lock row");
  const int64_t now_ms = lock.Int(0, 0);
  // Read after the lock: every append of every process is serialised behind it, so the rules
  // below see the rows as they are when this one is written (READ COMMITTED takes a new snapshot
  // per statement). The whole chain is verified against the caller's anchors first.
  CLAWGUARD_RETURN_IF_ERROR(PlainSchema(db));
  CLAWGUARD_ASSIGN_OR_RETURN(std::vector<LedgerRow> all, SelectRows(db, nullptr));
  CLAWGUARD_ASSIGN_OR_RETURN(LedgerRecordView view, PrepareLedgerRecord(all, name, rules));
  CLAWGUARD_ASSIGN_OR_RETURN(bool append,
                             CheckLedgerRecord(view.same_name, kind, name, version, sha256, rules));
  if (!append) return LedgerAppend{false, std::move(view.head)};
  const LedgerCheckpoint& last = view.head;
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
      PgResult ins,
      db.Exec(
          "ledger append",
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

}  // namespace clawguard::pg
