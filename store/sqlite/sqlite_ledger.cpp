// sqlite_ledger.cpp — the hash-chained ledger on SQLite: versioned migrations, one BEGIN
// IMMEDIATE transaction per Record (ARCHITECTURE.md "Verification (loader)", Ledger paragraph).
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

constexpr char kHighestAllowlistKey[] = "highest_allowlist_version";

// kMigrations[i] brings the schema from version i to i + 1; never edit a released one.
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
};
static_assert(std::size(kMigrations) == SqliteLedger::kLedgerSchemaVersion);

Status Migrate(SqliteDb& db) {
  CLAWGUARD_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db));
  CLAWGUARD_RETURN_IF_ERROR(db.Exec("CREATE TABLE IF NOT EXISTS ledger_schema_version (version INTEGER NOT NULL)"));
  int64_t current = 0;
  {
    CLAWGUARD_ASSIGN_OR_RETURN(Stmt s, db.Prepare("SELECT COALESCE(MAX(version), 0) FROM ledger_schema_version"));
    CLAWGUARD_ASSIGN_OR_RETURN(bool row, s.Step());
    if (row) current = s.Int(0);
  }
  if (current > SqliteLedger::kLedgerSchemaVersion) {
    return Status(Reason::kStoreUnavailable, "ledger schema version " + std::to_string(current) + " in '" +
                                                 db.path() + "' is newer than this build's " +
                                                 std::to_string(SqliteLedger::kLedgerSchemaVersion) +
                                                 ": upgrade clawguard");
  }
  for (int64_t v = current; v < SqliteLedger::kLedgerSchemaVersion; ++v) {
    CLAWGUARD_RETURN_IF_ERROR(db.Exec(kMigrations[v]));
    CLAWGUARD_ASSIGN_OR_RETURN(Stmt ins, db.Prepare("INSERT INTO ledger_schema_version (version) VALUES (?)"));
    CLAWGUARD_RETURN_IF_ERROR(ins.Bind(1, v + 1).Run());
  }
  return tx.Commit();
}

Result<LedgerKind> KindFromText(const std::string& text, int64_t seq) {
  if (text == "release") return LedgerKind::kRelease;
  if (text == "deploy") return LedgerKind::kDeploy;
  return Status(Reason::kLedgerTampered,
                "seq " + std::to_string(seq) + ": expected kind release or deploy, found '" + text.substr(0, 32) + "'");
}

std::string Short(const std::string& hex) { return hex.substr(0, 16); }

}  // namespace

SqliteLedger::SqliteLedger(std::unique_ptr<SqliteDb> db, const Clock& clock) : db_(std::move(db)), clock_(clock) {}
SqliteLedger::~SqliteLedger() = default;

Result<std::unique_ptr<SqliteLedger>> SqliteLedger::Open(const std::string& path, const Clock& clock) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path));
  CLAWGUARD_RETURN_IF_ERROR(Migrate(*db));
  return std::unique_ptr<SqliteLedger>(new SqliteLedger(std::move(db), clock));
}

Result<std::vector<LedgerRow>> SqliteLedger::SelectRows(const std::string* name) {
  const std::string sql = std::string("SELECT seq, kind, name, version, sha256, time, prev_hash, hash FROM ledger") +
                          (name ? " WHERE name = ?" : "") + " ORDER BY seq";
  CLAWGUARD_ASSIGN_OR_RETURN(Stmt s, db_->Prepare(sql));
  if (name) s.Bind(1, std::string_view(*name));
  std::vector<LedgerRow> rows;
  while (true) {
    CLAWGUARD_ASSIGN_OR_RETURN(bool more, s.Step());
    if (!more) break;
    LedgerRow r;
    r.seq = s.Int(0);
    CLAWGUARD_ASSIGN_OR_RETURN(r.kind, KindFromText(s.Text(1), r.seq));
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
  std::lock_guard<std::mutex> lock(mu_);
  return SelectRows(&name);
}

Result<std::vector<LedgerRow>> SqliteLedger::ReadAll() {
  std::lock_guard<std::mutex> lock(mu_);
  return SelectRows(nullptr);
}

Result<LedgerCheckpoint> SqliteLedger::HeadLocked() {
  CLAWGUARD_ASSIGN_OR_RETURN(Stmt s, db_->Prepare("SELECT seq, hash FROM ledger ORDER BY seq DESC LIMIT 1"));
  CLAWGUARD_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return LedgerCheckpoint{0, std::string(64, '0')};
  return LedgerCheckpoint{s.Int(0), s.Text(1)};
}

Result<LedgerCheckpoint> SqliteLedger::Head() {
  std::lock_guard<std::mutex> lock(mu_);
  return HeadLocked();
}

Result<LedgerAppend> SqliteLedger::Record(LedgerKind kind, const std::string& name, const std::string& version,
                                          const std::string& sha256) {
  if (name.empty() || version.empty() || !IsLowerHex(sha256, 64)) {
    return Status(Reason::kInternal, "ledger record needs a name, a version and 64 lowercase hex of sha256; found '" +
                                         name + "' '" + version + "' '" + sha256.substr(0, 70) + "'");
  }
  std::lock_guard<std::mutex> lock(mu_);
  CLAWGUARD_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*db_));
  {
    // Overwrites are checked against both kinds (ARCHITECTURE.md): a deploy of other bytes than
    // were released, or a second release with other bytes, are the same attack.
    CLAWGUARD_ASSIGN_OR_RETURN(
        Stmt s, db_->Prepare("SELECT seq, kind, sha256 FROM ledger WHERE name = ? AND version = ? ORDER BY seq"));
    s.Bind(1, std::string_view(name)).Bind(2, std::string_view(version));
    bool identical = false;
    while (true) {
      CLAWGUARD_ASSIGN_OR_RETURN(bool more, s.Step());
      if (!more) break;
      const std::string existing_kind = s.Text(1);
      const std::string existing = s.Text(2);
      if (existing != sha256) {
        return Status(Reason::kVersionOverwritten,
                      name + " " + version + " is already recorded (" + existing_kind + " row, seq " +
                          std::to_string(s.Int(0)) + ") with sha256 " + Short(existing) + "…; refusing sha256 " +
                          Short(sha256) + "…: a version is never re-used for other bytes, publish a new version");
      }
      identical = identical || existing_kind == LedgerKindName(kind);
    }
    if (identical) {
      CLAWGUARD_ASSIGN_OR_RETURN(LedgerCheckpoint head, HeadLocked());
      return LedgerAppend{false, std::move(head)};
    }
  }
  CLAWGUARD_ASSIGN_OR_RETURN(LedgerCheckpoint last, HeadLocked());
  LedgerRow row;
  row.seq = last.count + 1;
  row.kind = kind;
  row.name = name;
  row.version = version;
  row.sha256 = sha256;
  row.time = clock_.NowSeconds();
  row.prev_hash = last.head;
  row.hash = LedgerRowHash(row);
  {
    CLAWGUARD_ASSIGN_OR_RETURN(Stmt ins, db_->Prepare("INSERT INTO ledger (seq, kind, name, version, sha256, time, "
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
  }
  CLAWGUARD_RETURN_IF_ERROR(tx.Commit());
  return LedgerAppend{true, LedgerCheckpoint{row.seq, row.hash}};
}

Result<std::optional<int64_t>> SqliteLedger::HighestAllowlistVersion() {
  std::lock_guard<std::mutex> lock(mu_);
  CLAWGUARD_ASSIGN_OR_RETURN(Stmt s, db_->Prepare("SELECT value FROM ledger_meta WHERE key = ?"));
  s.Bind(1, std::string_view(kHighestAllowlistKey));
  CLAWGUARD_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return std::optional<int64_t>();
  return std::optional<int64_t>(s.Int(0));
}

Status SqliteLedger::NoteAllowlistVersion(int64_t version) {
  std::lock_guard<std::mutex> lock(mu_);
  // One statement: the upsert keeps the maximum, so the version is never lowered, even by a
  // concurrent writer with an older allowlist.
  CLAWGUARD_ASSIGN_OR_RETURN(Stmt s, db_->Prepare("INSERT INTO ledger_meta (key, value) VALUES (?, ?) "
                                                  "ON CONFLICT (key) DO UPDATE SET value = MAX(value, excluded.value)"));
  s.Bind(1, std::string_view(kHighestAllowlistKey)).Bind(2, version);
  return s.Run();
}

}  // namespace clawguard
