// sqlite_idempotency_schema.cpp — the idem_* and outbox_rows tables and their migrations
// (never edit a released version; append one).
#include "sqlite/sqlite_idempotency_store.h"

#include <iterator>

namespace clawguard::sqlite {
namespace {

constexpr int64_t kSchemaVersion = 7;

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

// v3: tombstones (state 'tombstone' with tombstone_until_ms: a purged record keeps its key,
// fingerprint, status and fencing token, nothing else), the stored request and the reconcile
// attempts. The state CHECK changes, so the table is copied like outbox_rows in v2.
constexpr std::string_view kSchemaV3 = R"sql(
CREATE TABLE idem_records_v3 (
  key TEXT PRIMARY KEY,
  plugin TEXT NOT NULL,
  route TEXT NOT NULL,
  level INTEGER NOT NULL,
  fingerprint TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('in_progress', 'completed', 'tombstone')),
  lease_until_ms INTEGER NOT NULL,
  fencing_token INTEGER NOT NULL,
  status INTEGER NOT NULL DEFAULT 0,
  content_type TEXT NOT NULL DEFAULT '',
  body BLOB NOT NULL DEFAULT x'',
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  webhook_id TEXT NOT NULL DEFAULT '',
  x_idempotency_key TEXT NOT NULL DEFAULT '',
  has_request INTEGER NOT NULL DEFAULT 0,
  request_content_type BLOB NOT NULL DEFAULT x'',
  request_body BLOB NOT NULL DEFAULT x'',
  reconcile_attempts INTEGER NOT NULL DEFAULT 0,
  tombstone_until_ms INTEGER NOT NULL DEFAULT 0
);
INSERT INTO idem_records_v3 (key, plugin, route, level, fingerprint, state, lease_until_ms, fencing_token, status,
  content_type, body, created_ms, updated_ms, webhook_id, x_idempotency_key)
  SELECT key, plugin, route, level, fingerprint, state, lease_until_ms, fencing_token, status, content_type, body,
  created_ms, updated_ms, webhook_id, x_idempotency_key FROM idem_records;
DROP TABLE idem_records;
ALTER TABLE idem_records_v3 RENAME TO idem_records;
CREATE INDEX idem_records_purge ON idem_records (updated_ms) WHERE state = 'completed';
CREATE INDEX idem_records_tombstones ON idem_records (tombstone_until_ms) WHERE state = 'tombstone';
CREATE INDEX idem_records_stuck ON idem_records (lease_until_ms) WHERE state = 'in_progress';
)sql";

// v4: outbox_rows_due indexes only the rows the retry worker looks for (pending, sent), as
// PostgreSQL's index does, instead of every row. An index over every row moves each answered
// row's entry from ('sent', t) to ('answered', t) and keeps every final row (2.4 of the 11 WAL
// frames a commit wrote in the host benchmark); the partial one is a few hot pages (0.9 frames per
// commit; decision 0031).
// DuePending's query names the same state list, so SQLite uses it (in next_attempt_ms order; only
// rows due at the same millisecond are sorted by event key and call index, up to its LIMIT).
constexpr std::string_view kSchemaV4 = R"sql(
DROP INDEX outbox_rows_due;
CREATE INDEX outbox_rows_due ON outbox_rows (next_attempt_ms) WHERE state IN ('pending', 'sent');
)sql";

// v5: the state CHECKs are OR chains instead of IN lists; they admit exactly the same values.
// SQLite evaluates `x IN (...)` over three or more constants by building an ephemeral b-tree of
// the list (sqlite3FindInIndex) — every time the constraint is checked, i.e. on every insert and
// every update that sets the state (a first-time delivery's claim, outbox rows, answers and
// completion): 4.6 % of the host's carrier thread in the benchmark profile (decision 0031). An OR
// chain is a few comparisons. A CHECK cannot be changed in place: both tables are copied, as in
// v2 and v3, and their indexes made again.
constexpr std::string_view kSchemaV5 = R"sql(
CREATE TABLE idem_records_v5 (
  key TEXT PRIMARY KEY,
  plugin TEXT NOT NULL,
  route TEXT NOT NULL,
  level INTEGER NOT NULL,
  fingerprint TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state = 'in_progress' OR state = 'completed' OR state = 'tombstone'),
  lease_until_ms INTEGER NOT NULL,
  fencing_token INTEGER NOT NULL,
  status INTEGER NOT NULL DEFAULT 0,
  content_type TEXT NOT NULL DEFAULT '',
  body BLOB NOT NULL DEFAULT x'',
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  webhook_id TEXT NOT NULL DEFAULT '',
  x_idempotency_key TEXT NOT NULL DEFAULT '',
  has_request INTEGER NOT NULL DEFAULT 0,
  request_content_type BLOB NOT NULL DEFAULT x'',
  request_body BLOB NOT NULL DEFAULT x'',
  reconcile_attempts INTEGER NOT NULL DEFAULT 0,
  tombstone_until_ms INTEGER NOT NULL DEFAULT 0
);
INSERT INTO idem_records_v5 (key, plugin, route, level, fingerprint, state, lease_until_ms, fencing_token, status,
  content_type, body, created_ms, updated_ms, webhook_id, x_idempotency_key, has_request, request_content_type,
  request_body, reconcile_attempts, tombstone_until_ms)
  SELECT key, plugin, route, level, fingerprint, state, lease_until_ms, fencing_token, status, content_type, body,
  created_ms, updated_ms, webhook_id, x_idempotency_key, has_request, request_content_type, request_body,
  reconcile_attempts, tombstone_until_ms FROM idem_records;
DROP TABLE idem_records;
ALTER TABLE idem_records_v5 RENAME TO idem_records;
CREATE INDEX idem_records_purge ON idem_records (updated_ms) WHERE state = 'completed';
CREATE INDEX idem_records_tombstones ON idem_records (tombstone_until_ms) WHERE state = 'tombstone';
CREATE INDEX idem_records_stuck ON idem_records (lease_until_ms) WHERE state = 'in_progress';
CREATE TABLE outbox_rows_v5 (
  event_key TEXT NOT NULL,
  call_index INTEGER NOT NULL,
  fencing_token INTEGER NOT NULL,
  method TEXT NOT NULL,
  path TEXT NOT NULL,
  body BLOB NOT NULL,
  body_sha256 TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state = 'pending' OR state = 'sent' OR state = 'answered' OR state = 'dead' OR
                             state = 'held'),
  reply_status INTEGER NOT NULL DEFAULT 0,
  reply_body BLOB NOT NULL DEFAULT x'',
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_ms INTEGER NOT NULL DEFAULT 0,
  idempotency_key TEXT NOT NULL,
  PRIMARY KEY (event_key, call_index)
);
INSERT INTO outbox_rows_v5 (event_key, call_index, fencing_token, method, path, body, body_sha256, state,
  reply_status, reply_body, attempts, next_attempt_ms, idempotency_key)
  SELECT event_key, call_index, fencing_token, method, path, body, body_sha256, state, reply_status, reply_body,
  attempts, next_attempt_ms, idempotency_key FROM outbox_rows;
DROP TABLE outbox_rows;
ALTER TABLE outbox_rows_v5 RENAME TO outbox_rows;
CREATE INDEX outbox_rows_due ON outbox_rows (next_attempt_ms) WHERE state IN ('pending', 'sent');
)sql";

// v6: outbox rows are keyed by their record's sequential id instead of the event key. The
// (event_key, call_index) primary key puts each ERP call's row in a random leaf of its index — one
// more WAL frame per call, half of all the frames the host benchmark wrote (14.1 of 27.7 frames per
// commit; decision 0031). idem_records gains `id INTEGER PRIMARY KEY` (its rowid, made explicit so
// that VACUUM keeps it: the outbox refers to it) and outbox_rows the key (record_id, call_index),
// whose new entries land on the index's right-most page. event_key stays in every row and every
// statement that addresses a row matches it too. Ids are not reused while rows refer to them: a
// record is only deleted as an expired tombstone, whose rows were deleted when it was tombstoned.
// A row without a record (none is written by any version; kept if found) gets the negative of its
// rowid and, if it was still to be sent, state 'dead': nothing can fence or answer it any more.
constexpr std::string_view kSchemaV6 = R"sql(
CREATE TABLE idem_records_v6 (
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL UNIQUE,
  plugin TEXT NOT NULL,
  route TEXT NOT NULL,
  level INTEGER NOT NULL,
  fingerprint TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state = 'in_progress' OR state = 'completed' OR state = 'tombstone'),
  lease_until_ms INTEGER NOT NULL,
  fencing_token INTEGER NOT NULL,
  status INTEGER NOT NULL DEFAULT 0,
  content_type TEXT NOT NULL DEFAULT '',
  body BLOB NOT NULL DEFAULT x'',
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  webhook_id TEXT NOT NULL DEFAULT '',
  x_idempotency_key TEXT NOT NULL DEFAULT '',
  has_request INTEGER NOT NULL DEFAULT 0,
  request_content_type BLOB NOT NULL DEFAULT x'',
  request_body BLOB NOT NULL DEFAULT x'',
  reconcile_attempts INTEGER NOT NULL DEFAULT 0,
  tombstone_until_ms INTEGER NOT NULL DEFAULT 0
);
INSERT INTO idem_records_v6 (id, key, plugin, route, level, fingerprint, state, lease_until_ms, fencing_token,
  status, content_type, body, created_ms, updated_ms, webhook_id, x_idempotency_key, has_request,
  request_content_type, request_body, reconcile_attempts, tombstone_until_ms)
  SELECT rowid, key, plugin, route, level, fingerprint, state, lease_until_ms, fencing_token, status, content_type,
  body, created_ms, updated_ms, webhook_id, x_idempotency_key, has_request, request_content_type, request_body,
  reconcile_attempts, tombstone_until_ms FROM idem_records;
DROP TABLE idem_records;
ALTER TABLE idem_records_v6 RENAME TO idem_records;
CREATE INDEX idem_records_purge ON idem_records (updated_ms) WHERE state = 'completed';
CREATE INDEX idem_records_tombstones ON idem_records (tombstone_until_ms) WHERE state = 'tombstone';
CREATE INDEX idem_records_stuck ON idem_records (lease_until_ms) WHERE state = 'in_progress';
CREATE TABLE outbox_rows_v6 (
  record_id INTEGER NOT NULL,
  call_index INTEGER NOT NULL,
  event_key TEXT NOT NULL,
  fencing_token INTEGER NOT NULL,
  method TEXT NOT NULL,
  path TEXT NOT NULL,
  body BLOB NOT NULL,
  body_sha256 TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state = 'pending' OR state = 'sent' OR state = 'answered' OR state = 'dead' OR
                             state = 'held'),
  reply_status INTEGER NOT NULL DEFAULT 0,
  reply_body BLOB NOT NULL DEFAULT x'',
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_ms INTEGER NOT NULL DEFAULT 0,
  idempotency_key TEXT NOT NULL,
  PRIMARY KEY (record_id, call_index)
);
INSERT INTO outbox_rows_v6 (record_id, call_index, event_key, fencing_token, method, path, body, body_sha256,
  state, reply_status, reply_body, attempts, next_attempt_ms, idempotency_key)
  SELECT COALESCE(r.id, -o.rowid), o.call_index, o.event_key, o.fencing_token, o.method, o.path, o.body,
  o.body_sha256,
  CASE WHEN r.id IS NULL AND (o.state = 'pending' OR o.state = 'sent' OR o.state = 'held') THEN 'dead'
       ELSE o.state END,
  o.reply_status, o.reply_body, o.attempts, o.next_attempt_ms, o.idempotency_key
  FROM outbox_rows o LEFT JOIN idem_records r ON r.key = o.event_key;
DROP TABLE outbox_rows;
ALTER TABLE outbox_rows_v6 RENAME TO outbox_rows;
CREATE INDEX outbox_rows_due ON outbox_rows (next_attempt_ms) WHERE state IN ('pending', 'sent');
)sql";

// v7: an outbox row names the send that owns it (claimed_by; its claim ends at next_attempt_ms),
// so a row in flight is never sent again by another worker or host before its answer is stored
// or its claim ends (store/outbox.h). A column with a constant default: no copy. Rows an older
// build left sent are unclaimed and due at their next attempt, as they were.
constexpr std::string_view kSchemaV7 = R"sql(
ALTER TABLE outbox_rows ADD COLUMN claimed_by TEXT NOT NULL DEFAULT '';
)sql";

// kMigrations[v - 1] brings a database at version v - 1 to version v.
constexpr std::string_view kMigrations[] = {kSchemaV1, kSchemaV2, kSchemaV3, kSchemaV4,
                                            kSchemaV5, kSchemaV6, kSchemaV7};
static_assert(std::size(kMigrations) == kSchemaVersion);

}  // namespace

Status MigrateIdempotencySchema(SqliteDb& db) {
  return MigrateIdempotencySchemaTo(db, kSchemaVersion);
}

Status MigrateIdempotencySchemaTo(SqliteDb& db, int64_t target) {
  if (target < 1 || target > kSchemaVersion) {
    return Status(Reason::kInternal, "idempotency schema version " + std::to_string(target) +
                                         " does not exist (1.." + std::to_string(kSchemaVersion) +
                                         ")");
  }
  CLAWGUARD_RETURN_IF_ERROR(
      db.Exec("CREATE TABLE IF NOT EXISTS idem_schema_version (version INTEGER NOT NULL)"));
  CLAWGUARD_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db));
  int64_t version = 0;
  {
    CLAWGUARD_ASSIGN_OR_RETURN(
        Stmt s, db.Prepare("SELECT COALESCE(MAX(version), 0) FROM idem_schema_version"));
    CLAWGUARD_ASSIGN_OR_RETURN(bool row, s.Step());
    if (row) version = s.Int(0);
  }
  if (version > kSchemaVersion) {
    return Status(Reason::kStoreUnavailable,
                  "SQLite store '" + db.path() + "' has idempotency schema version " +
                      std::to_string(version) + ", newer than this build (" +
                      std::to_string(kSchemaVersion) + "): upgrade clawguard");
  }
  for (int64_t v = version + 1; v <= target; ++v) {
    CLAWGUARD_RETURN_IF_ERROR(db.Exec(kMigrations[v - 1]));
    CLAWGUARD_RETURN_IF_ERROR(
        db.Exec("INSERT INTO idem_schema_version (version) VALUES (" + std::to_string(v) + ")"));
  }
  return tx.Commit();
}

}  // namespace clawguard::sqlite
