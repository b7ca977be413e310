// sqlite_ledger.cpp — the hash-chained ledger on SQLite: versioned migrations, one BEGIN
// IMMEDIATE transaction per Record that applies the recording rules inside it (ARCHITECTURE.md
// "Verification (loader)", Ledger paragraph).
#include "sqlite/sqlite_ledger.h"

#include <iterator>
#include <utility>

#include "clawguard/encoding.h"
#include "sqlite/sqlite_db.h"

namespace clawguard {
namespace {

using sqlite::SqliteDb;
using sqlite::Stmt;
using sqlite::Transaction;

// kMigrations[i] brings the schema from version i to i + 1; never edit a released one. Before
// migration 2 runs, CarryAllowlistFloor moves the side table's value into the chain.
constexpr const char* kMigrations[] = {
    R"sql(
CREATE TABLE ledger (
  seq       INTEGER PRIMARY KEY,
  kind      TEXT    NOT NULL,
  name      TEXT    NOT NULL,
  version   TEXT    NOT NULL,
  sha256    TEXT    NOT NULL,
  time      INTEGER NOT NULL,
  prev_hash TEXT    NOT NULL,
  hash      TEXT    NOT NULL,
  UNIQUE (kind, name, version)
);
CREATE INDEX ledger_by_name ON ledger (name, version);
CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
)sql",
    // Version 2: the allowlist floor is an `allowlist` row of the chain; the side table goes.
    R"sql(
DROP TABLE ledger_meta;
)sql",
};
static_assert(std::size(kMigrations) == SqliteLedger::kLedgerSchemaVersion);

Result<LedgerCheckpoint> HeadOn(SqliteDb& db) {
  CLAWGUARD_ASSIGN_OR_RETURN(Stmt s,
                             db.Prepare("SELECT seq, hash FROM ledger ORDER BY seq DESC LIMIT 1"));
  CLAWGUARD_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return LedgerCheckpoint{0, std::string(64, '0')};
  return LedgerCheckpoint{s.Int(0), s.Text(1)};
}

// PlainSchema: the ledger's reads must come from its table. A view named `ledger`, or a trigger
// anywhere in the database (an INSTEAD OF trigger can swap what a view shows after our insert),
// would let whoever can write the file answer Record's reads with one chain and keep another.
// The stores of this database create neither.
Status PlainSchema(SqliteDb& db) {
  CLAWGUARD_ASSIGN_OR_RETURN(
      Stmt s, db.Prepare("SELECT type, name FROM sqlite_master WHERE type IN ('view', 'trigger') "
                         "OR (name IN ('ledger', 'ledger_meta') AND type <> 'table') LIMIT 1"));
  CLAWGUARD_ASSIGN_OR_RETURN(bool found, s.Step());
  if (!found) return Status::Ok();
  return Status(Reason::kLedgerTampered,
                "the ledger database '" + db.path() + "' holds a " + s.Text(0) + " '" +
                    s.Text(1).substr(0, 64) +
                    "': the ledger is kept in plain tables only (nothing written)");
}

// Append chains (kind, name, version, sha256) onto |last|; the caller holds the transaction.
Result<LedgerCheckpoint> Append(SqliteDb& db, const LedgerCheckpoint& last, LedgerKind kind,
                                const std::string& name, const std::string& version,
                                const std::string& sha256, int64_t time) {
  LedgerRow row;
  row.seq = last.count + 1;
  row.kind = kind;
  row.name = name;
  row.version = version;
  row.sha256 = sha256;
  row.time = time;
  row.prev_hash = last.head;
  row.hash = LedgerRowHash(row);
  CLAWGUARD_ASSIGN_OR_RETURN(
      Stmt ins, db.Prepare("INSERT INTO ledger (seq, kind, name, version, sha256, time, "
                           "prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"));
  ins.Bind(1, row.seq)
      .Bind(2, LedgerKindName(kind))
      .Bind(3, std::string_view(name))
      .Bind(4, std::string_view(version))
      .Bind(5, std::string_view(sha256))
      .Bind(6, row.time)
      .Bind(7, std::string_view(row.prev_hash))
      .Bind(8, std::string_view(row.hash));
  CLAWGUARD_RETURN_IF_ERROR(ins.Run());
  return LedgerCheckpoint{row.seq, row.hash};
}

// CarryAllowlistFloor appends schema 1's side-table floor (ledger_meta) to the chain as an
// allowlist row with an all-zero sha256 (its bytes were never recorded), so upgrading loses no
// floor. Inside the migration's transaction.
Status CarryAllowlistFloor(SqliteDb& db, const Clock& clock) {
  CLAWGUARD_ASSIGN_OR_RETURN(
      Stmt s, db.Prepare("SELECT value FROM ledger_meta WHERE key = 'highest_allowlist_version'"));
  CLAWGUARD_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row || s.Int(0) < 1) return Status::Ok();
  const std::string version = std::to_string(s.Int(0));
  CLAWGUARD_ASSIGN_OR_RETURN(LedgerCheckpoint last, HeadOn(db));
  auto appended = Append(db, last, LedgerKind::kAllowlist, std::string(kAllowlistLedgerName),
                         version, std::string(64, '0'), clock.NowSeconds());
  return appended.ok() ? Status::Ok() : appended.error();
}

Status Migrate(SqliteDb& db, const Clock& clock) {
  CLAWGUARD_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db));
  CLAWGUARD_RETURN_IF_ERROR(
      db.Exec("CREATE TABLE IF NOT EXISTS ledger_schema_version (version INTEGER NOT NULL)"));
  int64_t current = 0;
  {
    CLAWGUARD_ASSIGN_OR_RETURN(
        Stmt s, db.Prepare("SELECT COALESCE(MAX(version), 0) FROM ledger_schema_version"));
    CLAWGUARD_ASSIGN_OR_RETURN(bool row, s.Step());
    if (row) current = s.Int(0);
  }
  if (current > SqliteLedger::kLedgerSchemaVersion) {
    return Status(Reason::kStoreUnavailable,
                  "ledger schema version " + std::to_string(current) + " in '" + db.path() +
                      "' is newer than this build's " +
                      std::to_string(SqliteLedger::kLedgerSchemaVersion) + ": upgrade clawguard");
  }
  for (int64_t v = current; v < SqliteLedger::kLedgerSchemaVersion; ++v) {
    if (v + 1 == 2) CLAWGUARD_RETURN_IF_ERROR(CarryAllowlistFloor(db, clock));
    CLAWGUARD_RETURN_IF_ERROR(db.Exec(kMigrations[v]));
    CLAWGUARD_ASSIGN_OR_RETURN(
        Stmt ins, db.Prepare("INSERT INTO ledger_schema_version (version) VALUES (?)"));
    CLAWGUARD_RETURN_IF_ERROR(ins.Bind(1, v + 1).Run());
  }
  return tx.Commit();
}

}  // namespace

SqliteLedger::SqliteLedger(std::unique_ptr<SqliteDb> db, const Clock& clock)
    : db_(std::move(db)), clock_(clock) {}
SqliteLedger::~SqliteLedger() = default;

Result<std::unique_ptr<SqliteLedger>> SqliteLedger::Open(const std::string& path,
                                                         const Clock& clock) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path));
  CLAWGUARD_RETURN_IF_ERROR(Migrate(*db, clock));
  return std::unique_ptr<SqliteLedger>(new SqliteLedger(std::move(db), clock));
}

Result<std::vector<LedgerRow>> SqliteLedger::SelectRows(const std::string* name) {
  const std::string sql =
      std::string("SELECT seq, kind, name, version, sha256, time, prev_hash, hash FROM ledger") +
      (name ? " WHERE name = ?" : "") + " ORDER BY seq";
  CLAWGUARD_ASSIGN_OR_RETURN(Stmt s, db_->Prepare(sql));
  if (name) s.Bind(1, std::string_view(*name));
  std::vector<LedgerRow> rows;
  while (true) {
    CLAWGUARD_ASSIGN_OR_RETURN(bool more, s.Step());
    if (!more) break;
    LedgerRow r;
    r.seq = s.Int(0);
    CLAWGUARD_ASSIGN_OR_RETURN(r.kind, LedgerKindFromText(s.Text(1), r.seq));
    r.name = s.Text(2);
    r.version = s.Text(3);
    r.sha256 = s.Text(4);
    r.time = s.Int(5);
    r.prev_hash = s.Text(6);
    r.hash = s.Text(7);
    rows.push_back(std::move(r));
  }
  return rows;
}

Result<std::vector<LedgerRow>> SqliteLedger::RowsFor(const std::string& name) {
  MutexLock lock(mu_);
  return SelectRows(&name);
}

Result<std::vector<LedgerRow>> SqliteLedger::ReadAll() {
  MutexLock lock(mu_);
  return SelectRows(nullptr);
}

Result<LedgerCheckpoint> SqliteLedger::Head() {
  MutexLock lock(mu_);
  return HeadOn(*db_);
}

Result<LedgerAppend> SqliteLedger::Record(LedgerKind kind, const std::string& name,
                                          const std::string& version, const std::string& sha256,
                                          const LedgerRecordRules& rules) {
  CLAWGUARD_RETURN_IF_ERROR(CheckLedgerRowInput(kind, name, version, sha256));
  MutexLock lock(mu_);
  // BEGIN IMMEDIATE: the rows read below cannot change before the insert commits.
  CLAWGUARD_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*db_));
  CLAWGUARD_RETURN_IF_ERROR(PlainSchema(*db_));
  CLAWGUARD_ASSIGN_OR_RETURN(std::vector<LedgerRow> all, SelectRows(nullptr));
  CLAWGUARD_ASSIGN_OR_RETURN(LedgerRecordView view, PrepareLedgerRecord(all, name, rules));
  CLAWGUARD_ASSIGN_OR_RETURN(bool append,
                             CheckLedgerRecord(view.same_name, kind, name, version, sha256, rules));
  if (!append) return LedgerAppend{false, std::move(view.head)};
  CLAWGUARD_ASSIGN_OR_RETURN(LedgerCheckpoint head, Append(*db_, view.head, kind, name, version,
                                                           sha256, clock_.NowSeconds()));
  CLAWGUARD_RETURN_IF_ERROR(tx.Commit());
  return LedgerAppend{true, std::move(head)};
}

}  // namespace clawguard
