// sqlite_idempotency_store.cpp — conditional writes on idem_records inside BEGIN IMMEDIATE.
#include "sqlite/sqlite_idempotency_store.h"

#include <algorithm>

namespace clawguard::sqlite {
namespace {

constexpr int64_t kSchemaVersion = 2;

constexpr std::string_view kSchemaV1 = R"sql(
CREATE TABLE IF NOT EXISTS idem_records (
  key TEXT PRIMARY KEY,
  plugin TEXT NOT NULL,
  route TEXT NOT NULL,
  level INTEGER NOT NULL,
  fingerprint TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('in_progress', 'completed')),
  lease_until_ms INTEGER NOT NULL,
  fencing_token INTEGER NOT NULL,
  status INTEGER NOT NULL DEFAULT 0,
  content_type TEXT NOT NULL DEFAULT '',
  body BLOB NOT NULL DEFAULT x'',
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  webhook_id TEXT NOT NULL DEFAULT '',
  x_idempotency_key TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS idem_generation (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  generation INTEGER NOT NULL
);
INSERT OR IGNORE INTO idem_generation (id, generation) VALUES (1, 0);
CREATE TABLE IF NOT EXISTS outbox_rows (
  event_key TEXT NOT NULL,
  call_index INTEGER NOT NULL,
  fencing_token INTEGER NOT NULL,
  method TEXT NOT NULL,
  path TEXT NOT NULL,
  body BLOB NOT NULL,
  body_sha256 TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'sent', 'answered', 'dead')),
  reply_status INTEGER NOT NULL DEFAULT 0,
  reply_body BLOB NOT NULL DEFAULT x'',
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_ms INTEGER NOT NULL DEFAULT 0,
  idempotency_key TEXT NOT NULL,
  PRIMARY KEY (event_key, call_index)
);
CREATE INDEX IF NOT EXISTS outbox_rows_due ON outbox_rows (state, next_attempt_ms);
)sql";

// v2: outbox rows may be 'held' (level-3 intents; v1 parked them as 'sent' with a never-due
// next attempt, which are carried over as held). SQLite cannot change a CHECK: copy the table.
constexpr std::string_view kSchemaV2 = R"sql(
CREATE TABLE outbox_rows_v2 (
  event_key TEXT NOT NULL,
  call_index INTEGER NOT NULL,
  fencing_token INTEGER NOT NULL,
  method TEXT NOT NULL,
  path TEXT NOT NULL,
  body BLOB NOT NULL,
  body_sha256 TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'sent', 'answered', 'dead', 'held')),
  reply_status INTEGER NOT NULL DEFAULT 0,
  reply_body BLOB NOT NULL DEFAULT x'',
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_ms INTEGER NOT NULL DEFAULT 0,
  idempotency_key TEXT NOT NULL,
  PRIMARY KEY (event_key, call_index)
);
INSERT INTO outbox_rows_v2 SELECT event_key, call_index, fencing_token, method, path, body, body_sha256,
  CASE WHEN state = 'sent' AND next_attempt_ms = 9223372036854775807 THEN 'held' ELSE state END,
  reply_status, reply_body, attempts, next_attempt_ms, idempotency_key FROM outbox_rows;
DROP TABLE outbox_rows;
ALTER TABLE outbox_rows_v2 RENAME TO outbox_rows;
CREATE INDEX IF NOT EXISTS outbox_rows_due ON outbox_rows (state, next_attempt_ms);
)sql";

constexpr std::string_view kColumns =
    "key, plugin, route, level, fingerprint, state, lease_until_ms, fencing_token, status, content_type, body, "
    "created_ms, updated_ms, webhook_id, x_idempotency_key";

IdempotencyRecord ReadRecord(const Stmt& s) {
  IdempotencyRecord r;
  r.key = s.Text(0);
  r.plugin = s.Text(1);
  r.route = s.Text(2);
  r.level = static_cast<int>(s.Int(3));
  r.fingerprint = s.Text(4);
  r.state = s.Text(5) == "completed" ? IdemState::kCompleted : IdemState::kInProgress;
  r.lease_until_ms = s.Int(6);
  r.fencing_token = s.Int(7);
  r.status = static_cast<int>(s.Int(8));
  r.content_type = s.Text(9);
  r.body = s.Text(10);
  r.created_ms = s.Int(11);
  r.updated_ms = s.Int(12);
  r.webhook_id = s.Text(13);
  r.x_idempotency_key = s.Text(14);
  return r;
}

}  // namespace

Status MigrateIdempotencySchema(SqliteDb& db) {
  CLAWGUARD_RETURN_IF_ERROR(db.Exec("CREATE TABLE IF NOT EXISTS idem_schema_version (version INTEGER NOT NULL)"));
  CLAWGUARD_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db));
  int64_t version = 0;
  {
    CLAWGUARD_ASSIGN_OR_RETURN(Stmt s, db.Prepare("SELECT COALESCE(MAX(version), 0) FROM idem_schema_version"));
    CLAWGUARD_ASSIGN_OR_RETURN(bool row, s.Step());
    if (row) version = s.Int(0);
  }
  if (version > kSchemaVersion) {
    return Status(Reason::kStoreUnavailable, "SQLite store '" + db.path() + "' has idempotency schema version " +
                                                 std::to_string(version) + ", newer than this build (" +
                                                 std::to_string(kSchemaVersion) + "): upgrade clawguard");
  }
  if (version < 1) {
    CLAWGUARD_RETURN_IF_ERROR(db.Exec(kSchemaV1));
    CLAWGUARD_RETURN_IF_ERROR(db.Exec("INSERT INTO idem_schema_version (version) VALUES (1)"));
  }
  if (version < 2) {
    CLAWGUARD_RETURN_IF_ERROR(db.Exec(kSchemaV2));
    CLAWGUARD_RETURN_IF_ERROR(db.Exec("INSERT INTO idem_schema_version (version) VALUES (2)"));
  }
  return tx.Commit();
}

Result<std::unique_ptr<SqliteIdempotencyStore>> SqliteIdempotencyStore::Open(const std::string& path,
                                                                             const Clock& clock) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path));
  CLAWGUARD_RETURN_IF_ERROR(MigrateIdempotencySchema(*db));
  CLAWGUARD_ASSIGN_OR_RETURN(std::shared_ptr<SqliteWriter> writer, SqliteWriter::ForPath(path));
  return std::unique_ptr<SqliteIdempotencyStore>(
      new SqliteIdempotencyStore(std::move(db), std::move(writer), clock));
}

namespace {

Result<std::optional<IdempotencyRecord>> LoadRecord(SqliteDb& db, const std::string& key) {
  CLAWGUARD_ASSIGN_OR_RETURN(Stmt s, db.Prepare("SELECT " + std::string(kColumns) +
                                                " FROM idem_records WHERE key = ?1"));
  s.Bind(1, key);
  CLAWGUARD_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return std::optional<IdempotencyRecord>();
  return std::optional<IdempotencyRecord>(ReadRecord(s));
}

Result<int64_t> ReadGeneration(SqliteDb& db) {
  CLAWGUARD_ASSIGN_OR_RETURN(Stmt s, db.Prepare("SELECT generation FROM idem_generation WHERE id = 1"));
  CLAWGUARD_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return db.Error("idem_generation is empty");
  return s.Int(0);
}

Result<int64_t> BumpIn(SqliteDb& db) {
  CLAWGUARD_RETURN_IF_ERROR(db.Exec("UPDATE idem_generation SET generation = generation + 1 WHERE id = 1"));
  return ReadGeneration(db);
}

// FencedUpdate runs one UPDATE … WHERE key = ?1 AND fencing_token = ?2 AND state = 'in_progress'
// through the writer; kApplied if it changed the record.
template <typename BindFn>
Result<FencedWrite> FencedUpdate(SqliteWriter& writer, const std::string& key, int64_t token, std::string_view sql,
                                 BindFn bind) {
  bool applied = false;
  const Status written = writer.Write([&](SqliteDb& db) -> Status {
    CLAWGUARD_ASSIGN_OR_RETURN(Stmt u, db.Prepare(sql));
    u.Bind(1, key).Bind(2, token);
    bind(u);
    CLAWGUARD_RETURN_IF_ERROR(u.Run());
    applied = sqlite3_changes(db.raw()) == 1;
    return Status::Ok();
  });
  if (!written.ok()) return written;
  return applied ? FencedWrite::kApplied : FencedWrite::kFenced;
}

}  // namespace

Result<ClaimOutcome> SqliteIdempotencyStore::Claim(const std::string& key, const std::string& fingerprint,
                                                   const ClaimMeta& meta, int64_t lease_ms) {
  CLAWGUARD_CHECK(!fingerprint.empty() && lease_ms > 0);
  ClaimOutcome out;
  {
    // Fast path without the writer (replays): a completed record, or one with another
    // fingerprint, is answered from a read snapshot. Both are final until an operator Reset, so
    // the answer is the one a write transaction at the snapshot's time would have given.
    std::lock_guard lock(mu_);
    CLAWGUARD_ASSIGN_OR_RETURN(std::optional<IdempotencyRecord> seen, LoadRecord(*db_, key));
    if (seen && !seen->fingerprint.empty() && seen->fingerprint != fingerprint) {
      out.kind = ClaimOutcome::Kind::kFingerprintMismatch;
      return out;
    }
    if (seen && seen->state == IdemState::kCompleted) {
      out.kind = ClaimOutcome::Kind::kCompleted;
      out.record = std::move(*seen);
      return out;
    }
  }
  const Status written = writer_->Write([&](SqliteDb& db) -> Status {
    out = ClaimOutcome{};
    const int64_t now = clock_.NowMillis();
    CLAWGUARD_ASSIGN_OR_RETURN(std::optional<IdempotencyRecord> rec, LoadRecord(db, key));
    if (rec) {
      // Fingerprint first: a mismatch never reveals or changes the record's state.
      if (!rec->fingerprint.empty() && rec->fingerprint != fingerprint) {
        out.kind = ClaimOutcome::Kind::kFingerprintMismatch;
        return Status::Ok();  // nothing written
      }
      if (rec->state == IdemState::kCompleted) {
        out.kind = ClaimOutcome::Kind::kCompleted;
        out.record = std::move(*rec);
        return Status::Ok();
      }
      if (rec->lease_until_ms > now) {
        out.kind = ClaimOutcome::Kind::kInProgress;
        out.retry_after_ms = std::max<int64_t>(1, rec->lease_until_ms - now);
        out.record = std::move(*rec);
        return Status::Ok();
      }
      // Expired or released: take over with the next fencing token.
      CLAWGUARD_ASSIGN_OR_RETURN(
          Stmt u, db.Prepare("UPDATE idem_records SET fingerprint = ?2, lease_until_ms = ?3, "
                             "fencing_token = fencing_token + 1, updated_ms = ?4, webhook_id = ?5, "
                             "x_idempotency_key = ?6, plugin = ?7, route = ?8, level = ?9 "
                             "WHERE key = ?1 AND state = 'in_progress' AND fencing_token = ?10"));
      u.Bind(1, key).Bind(2, fingerprint).Bind(3, now + lease_ms).Bind(4, now).Bind(5, meta.webhook_id);
      u.Bind(6, meta.x_idempotency_key).Bind(7, meta.plugin).Bind(8, meta.route).Bind(9, int64_t{meta.level});
      u.Bind(10, rec->fencing_token);
      CLAWGUARD_RETURN_IF_ERROR(u.Run());
      if (sqlite3_changes(db.raw()) != 1) return db.Error("takeover of an idempotency record failed");
      out.taken_over = true;
    } else {
      CLAWGUARD_ASSIGN_OR_RETURN(
          Stmt i, db.Prepare("INSERT INTO idem_records (key, plugin, route, level, fingerprint, state, "
                             "lease_until_ms, fencing_token, created_ms, updated_ms, webhook_id, x_idempotency_key) "
                             "VALUES (?1, ?2, ?3, ?4, ?5, 'in_progress', ?6, 1, ?7, ?7, ?8, ?9)"));
      i.Bind(1, key).Bind(2, meta.plugin).Bind(3, meta.route).Bind(4, int64_t{meta.level}).Bind(5, fingerprint);
      i.Bind(6, now + lease_ms).Bind(7, now).Bind(8, meta.webhook_id).Bind(9, meta.x_idempotency_key);
      CLAWGUARD_RETURN_IF_ERROR(i.Run());
    }
    CLAWGUARD_ASSIGN_OR_RETURN(std::optional<IdempotencyRecord> after, LoadRecord(db, key));
    CLAWGUARD_CHECK(after.has_value());
    out.kind = ClaimOutcome::Kind::kClaimed;
    out.fencing_token = after->fencing_token;
    out.record = std::move(*after);
    return Status::Ok();
  });
  if (!written.ok()) return written;
  return out;
}

Result<FencedWrite> SqliteIdempotencyStore::Renew(const std::string& key, int64_t token, int64_t lease_ms) {
  const int64_t now = clock_.NowMillis();
  return FencedUpdate(*writer_, key, token,
                      "UPDATE idem_records SET lease_until_ms = ?3, updated_ms = ?4 "
                      "WHERE key = ?1 AND fencing_token = ?2 AND state = 'in_progress'",
                      [&](Stmt& u) { u.Bind(3, now + lease_ms).Bind(4, now); });
}

Result<FencedWrite> SqliteIdempotencyStore::Complete(const std::string& key, int64_t token, int status,
                                                     const std::string& content_type, const std::string& body) {
  const int64_t now = clock_.NowMillis();
  return FencedUpdate(*writer_, key, token,
                      "UPDATE idem_records SET state = 'completed', status = ?3, content_type = ?4, body = ?5, "
                      "lease_until_ms = 0, updated_ms = ?6 "
                      "WHERE key = ?1 AND fencing_token = ?2 AND state = 'in_progress'",
                      [&](Stmt& u) { u.Bind(3, int64_t{status}).Bind(4, content_type).BindBlob(5, body).Bind(6, now); });
}

Result<FencedWrite> SqliteIdempotencyStore::Release(const std::string& key, int64_t token) {
  const int64_t now = clock_.NowMillis();
  return FencedUpdate(*writer_, key, token,
                      "UPDATE idem_records SET lease_until_ms = 0, updated_ms = ?3 "
                      "WHERE key = ?1 AND fencing_token = ?2 AND state = 'in_progress'",
                      [&](Stmt& u) { u.Bind(3, now); });
}

Result<std::optional<IdempotencyRecord>> SqliteIdempotencyStore::Get(const std::string& key) {
  std::lock_guard lock(mu_);
  return LoadRecord(*db_, key);
}

Result<bool> SqliteIdempotencyStore::Reset(const std::string& key) {
  bool existed = false;
  const Status written = writer_->Write([&](SqliteDb& db) -> Status {
    const int64_t now = clock_.NowMillis();
    CLAWGUARD_ASSIGN_OR_RETURN(
        Stmt u, db.Prepare("UPDATE idem_records SET state = 'in_progress', fingerprint = '', lease_until_ms = 0, "
                           "status = 0, content_type = '', body = x'', updated_ms = ?2 WHERE key = ?1"));
    u.Bind(1, key).Bind(2, now);
    CLAWGUARD_RETURN_IF_ERROR(u.Run());
    existed = sqlite3_changes(db.raw()) == 1;
    if (existed) {
      CLAWGUARD_ASSIGN_OR_RETURN(int64_t g, BumpIn(db));
      (void)g;
    }
    return Status::Ok();
  });
  if (!written.ok()) return written;
  return existed;
}

Result<int64_t> SqliteIdempotencyStore::Generation() {
  std::lock_guard lock(mu_);
  return ReadGeneration(*db_);
}

Result<int64_t> SqliteIdempotencyStore::BumpGeneration() {
  int64_t g = 0;
  const Status written = writer_->Write([&](SqliteDb& db) -> Status {
    CLAWGUARD_ASSIGN_OR_RETURN(g, BumpIn(db));
    return Status::Ok();
  });
  if (!written.ok()) return written;
  return g;
}

}  // namespace clawguard::sqlite
