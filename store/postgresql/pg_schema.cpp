// pg_schema.cpp — the migrations (never edit a released one; append a new version instead).
#include "postgresql/pg_schema.h"

#include <iterator>
#include <string>

#include "postgresql/pg_conn.h"

namespace clawguard::pg {
namespace {

// A constant key for pg_advisory_xact_lock ("cg" schema migrations).
constexpr char kLockSql[] = "SELECT pg_advisory_xact_lock(7166630000000001)";

// kMigrations[i] brings the schema from version i to i + 1. Free-form bytes that come from
// outside (bodies, header values, content types) are bytea: a webhook or ERP may send bytes
// that are not UTF-8, which a text column refuses. Keys are compared bytewise (COLLATE "C").
constexpr const char* kMigrations[] = {
    R"sql(
CREATE OR REPLACE FUNCTION cg_now_ms() RETURNS bigint LANGUAGE sql VOLATILE
  AS $$ SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;
CREATE TABLE idem_records (
  key               text COLLATE "C" PRIMARY KEY,
  plugin            text    NOT NULL,
  route             text    NOT NULL,
  level             integer NOT NULL,
  fingerprint       text    NOT NULL,
  state             text    NOT NULL CHECK (state IN ('in_progress', 'completed')),
  lease_until_ms    bigint  NOT NULL,
  fencing_token     bigint  NOT NULL,
  status            integer NOT NULL DEFAULT 0,
  content_type      bytea   NOT NULL DEFAULT ''::bytea,
  body              bytea   NOT NULL DEFAULT ''::bytea,
  created_ms        bigint  NOT NULL,
  updated_ms        bigint  NOT NULL,
  webhook_id        bytea   NOT NULL DEFAULT ''::bytea,
  x_idempotency_key bytea   NOT NULL DEFAULT ''::bytea
);
CREATE TABLE idem_generation (
  id         integer PRIMARY KEY CHECK (id = 1),
  generation bigint  NOT NULL
);
INSERT INTO idem_generation (id, generation) VALUES (1, 0);
CREATE TABLE outbox_rows (
  event_key       text COLLATE "C" NOT NULL,
  call_index      bigint  NOT NULL,
  fencing_token   bigint  NOT NULL,
  method          text    NOT NULL,
  path            text    NOT NULL,
  body            bytea   NOT NULL,
  body_sha256     text    NOT NULL,
  state           text    NOT NULL CHECK (state IN ('pending', 'sent', 'answered', 'dead', 'held')),
  reply_status    integer NOT NULL DEFAULT 0,
  reply_body      bytea   NOT NULL DEFAULT ''::bytea,
  attempts        bigint  NOT NULL DEFAULT 0,
  next_attempt_ms bigint  NOT NULL DEFAULT 0,
  idempotency_key text    NOT NULL,
  PRIMARY KEY (event_key, call_index)
);
CREATE INDEX outbox_rows_due ON outbox_rows (next_attempt_ms) WHERE state IN ('pending', 'sent');
CREATE TABLE ledger (
  seq       bigint PRIMARY KEY,
  kind      text   NOT NULL,
  name      text   NOT NULL,
  version   text   NOT NULL,
  sha256    text   NOT NULL,
  time      bigint NOT NULL,
  prev_hash text   NOT NULL,
  hash      text   NOT NULL,
  UNIQUE (kind, name, version)
);
CREATE INDEX ledger_by_name ON ledger (name, version);
CREATE TABLE ledger_meta (key text PRIMARY KEY, value bigint NOT NULL);
INSERT INTO ledger_meta (key, value) VALUES ('chain_lock', 0);
)sql",
    // Version 2: the DLQ, capability pauses and operator actions (pg_dlq.h). Same
    // tables as the SQLite engine; no CHECK on class (a new class needs no migration). One
    // unresolved entry per (event key, class) is the partial unique index that Add's
    // `ON CONFLICT … WHERE` names. Free text that may carry outside bytes (details, reasons,
    // resolutions, targets) is bytea, like the stored request.
    R"sql(
CREATE TABLE dlq_entries (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  class           text    NOT NULL,
  event_key       text COLLATE "C" NOT NULL,
  plugin          text    NOT NULL,
  route           text    NOT NULL,
  call_index      bigint  NOT NULL,
  endpoint        text    NOT NULL DEFAULT '',
  erp_status      integer NOT NULL DEFAULT 0,
  detail          bytea   NOT NULL DEFAULT ''::bytea,
  has_request     boolean NOT NULL DEFAULT false,
  request_omitted boolean NOT NULL DEFAULT false,
  webhook_id      bytea   NOT NULL DEFAULT ''::bytea,
  content_type    bytea   NOT NULL DEFAULT ''::bytea,
  body            bytea   NOT NULL DEFAULT ''::bytea,
  state           text    NOT NULL
                  CHECK (state IN ('open', 'replay_requested', 'replaying', 'replayed', 'dropped')),
  occurrences     bigint  NOT NULL DEFAULT 1,
  attempts        bigint  NOT NULL DEFAULT 0,
  next_attempt_ms bigint  NOT NULL DEFAULT 0,
  lease_until_ms  bigint  NOT NULL DEFAULT 0,
  claimed_by      text    NOT NULL DEFAULT '',
  resolution      bytea   NOT NULL DEFAULT ''::bytea,
  created_ms      bigint  NOT NULL,
  updated_ms      bigint  NOT NULL
);
CREATE UNIQUE INDEX dlq_entries_unresolved ON dlq_entries (event_key, class)
  WHERE state IN ('open', 'replay_requested', 'replaying');
CREATE INDEX dlq_entries_due ON dlq_entries (state, next_attempt_ms);
CREATE INDEX dlq_entries_created ON dlq_entries (created_ms, id);
CREATE TABLE capability_pauses (
  plugin     text   NOT NULL,
  capability text   NOT NULL,
  reason     bytea  NOT NULL,
  actor      text   NOT NULL,
  since_ms   bigint NOT NULL,
  PRIMARY KEY (plugin, capability)
);
CREATE TABLE operator_actions (
  id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  time_ms bigint NOT NULL,
  actor   text   NOT NULL,
  action  text   NOT NULL,
  target  bytea  NOT NULL,
  detail  bytea  NOT NULL
);
)sql",
    // Version 3: idempotency tombstones and stored requests. A tombstone is a purged
    // record (state 'tombstone' until tombstone_until_ms); the request is stored by the first
    // claim and deleted by Complete; reconcile_attempts counts the reconciler's re-drives.
    R"sql(
ALTER TABLE idem_records DROP CONSTRAINT idem_records_state_check;
ALTER TABLE idem_records ADD CONSTRAINT idem_records_state_check
  CHECK (state IN ('in_progress', 'completed', 'tombstone'));
ALTER TABLE idem_records
  ADD COLUMN has_request          boolean NOT NULL DEFAULT false,
  ADD COLUMN request_content_type bytea   NOT NULL DEFAULT ''::bytea,
  ADD COLUMN request_body         bytea   NOT NULL DEFAULT ''::bytea,
  ADD COLUMN reconcile_attempts   bigint  NOT NULL DEFAULT 0,
  ADD COLUMN tombstone_until_ms   bigint  NOT NULL DEFAULT 0;
CREATE INDEX idem_records_purge ON idem_records (updated_ms) WHERE state = 'completed';
CREATE INDEX idem_records_tombstones ON idem_records (tombstone_until_ms) WHERE state = 'tombstone';
CREATE INDEX idem_records_stuck ON idem_records (lease_until_ms) WHERE state = 'in_progress';
)sql",
    // Version 4: the allowlist floor is a row of the ledger's hash chain (kind 'allowlist', name
    // 'clawguard/allowlist', the version in decimal): a floor outside the chain could be deleted
    // or lowered unseen. The value of the old side row ledger_meta 'highest_allowlist_version' is
    // appended as such a row with an all-zero sha256 (its bytes were never recorded), hashed as
    // LedgerRowHash does (length-prefixed fields, store/ledger.h), under the chain lock, and the
    // side row is deleted in the same transaction. A build older than this one refuses the
    // database ("newer schema: upgrade clawguard") instead of meeting a kind it does not know.
    R"sql(
DO $$
DECLARE
  carried   bigint;
  last_seq  bigint;
  last_hash text;
  row_time  bigint;
  row_hash  text;
BEGIN
  PERFORM 1 FROM ledger_meta WHERE key = 'chain_lock' FOR UPDATE;
  SELECT value INTO carried FROM ledger_meta WHERE key = 'highest_allowlist_version';
  IF carried IS NOT NULL AND carried >= 1 THEN
    SELECT seq, hash INTO last_seq, last_hash FROM ledger ORDER BY seq DESC LIMIT 1;
    IF last_seq IS NULL THEN
      last_seq := 0;
      last_hash := repeat('0', 64);
    END IF;
    row_time := cg_now_ms() / 1000;
    SELECT encode(sha256(string_agg(int4send(octet_length(f)) || convert_to(f, 'UTF8'), ''::bytea ORDER BY i)), 'hex')
      INTO row_hash
      FROM unnest(ARRAY['cg-ledger-v1', (last_seq + 1)::text, 'allowlist', 'clawguard/allowlist', carried::text,
                        repeat('0', 64), row_time::text, last_hash]) WITH ORDINALITY AS u(f, i);
    INSERT INTO ledger (seq, kind, name, version, sha256, time, prev_hash, hash)
      VALUES (last_seq + 1, 'allowlist', 'clawguard/allowlist', carried::text, repeat('0', 64), row_time, last_hash,
              row_hash);
  END IF;
  DELETE FROM ledger_meta WHERE key = 'highest_allowlist_version';
END
$$;
)sql",
    // Version 5: an outbox row names the send that owns it (claimed_by; its claim ends at
    // next_attempt_ms), so a row in flight is sent by one host at a time (pg_outbox.h Claim).
    // Rows an older build left sent are unclaimed and due at their next attempt, as they were.
    R"sql(
ALTER TABLE outbox_rows ADD COLUMN claimed_by text NOT NULL DEFAULT '';
)sql",
};
static_assert(std::size(kMigrations) == kPgSchemaVersion);

}  // namespace

Result<MigrationReport> MigrateSchema(PgPool& pool) {
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease lease, pool.Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgTx tx, PgTx::Begin(lease));
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult locked, lease.Exec("schema lock", kLockSql));
  (void)locked;
  CLAWGUARD_RETURN_IF_ERROR(lease.ExecScript(
      "schema version table",
      "CREATE TABLE IF NOT EXISTS clawguard_schema_version (version bigint PRIMARY KEY, "
      "applied_ms bigint NOT NULL)"));
  CLAWGUARD_ASSIGN_OR_RETURN(
      PgResult cur, lease.Exec("schema version",
                               "SELECT COALESCE(MAX(version), 0) FROM clawguard_schema_version"));
  MigrationReport report;
  report.from = cur.Int(0, 0);
  if (report.from > kPgSchemaVersion) {
    return pool.Unavailable("schema check",
                            "the database holds schema version " + std::to_string(report.from) +
                                ", newer than this build's " + std::to_string(kPgSchemaVersion) +
                                ": upgrade clawguard");
  }
  for (int64_t v = report.from; v < kPgSchemaVersion; ++v) {
    CLAWGUARD_RETURN_IF_ERROR(
        lease.ExecScript("migration to schema version " + std::to_string(v + 1), kMigrations[v]));
    CLAWGUARD_ASSIGN_OR_RETURN(
        PgResult ins,
        lease.Exec(
            "schema version row",
            "INSERT INTO clawguard_schema_version (version, applied_ms) "
            "VALUES ($1::bigint, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint)",
            PgParams().Int(v + 1)));
    (void)ins;
    report.applied.push_back(v + 1);
  }
  CLAWGUARD_RETURN_IF_ERROR(tx.Commit());
  report.to = kPgSchemaVersion;
  return report;
}

}  // namespace clawguard::pg
