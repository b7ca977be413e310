// pg_idempotency_store.cpp — the claim as INSERT … ON CONFLICT plus a conditional UPDATE.
#include "postgresql/pg_idempotency_store.h"

#include <algorithm>

namespace clawguard::pg {
namespace {

// A claim that loses every race this many times in a row reports the store as unavailable
// (each loss means another worker made progress on the key, so this does not happen in practice).
constexpr int kClaimRounds = 8;

// kColumns are read by every load; kRequestColumns only where the stored request is wanted.
constexpr char kColumns[] =
    "key, plugin, route, level, fingerprint, state, lease_until_ms, fencing_token, status, "
    "content_type, body, "
    "created_ms, updated_ms, webhook_id, x_idempotency_key, has_request::integer, "
    "reconcile_attempts, "
    "tombstone_until_ms";
constexpr int kColumnCount = 18;
constexpr char kRequestColumns[] = ", request_content_type, request_body";

// kNow is the time of one statement: the injected clock's (a parameter) or the database's.
std::string NowCte(int param) {
  return "WITH now AS (SELECT COALESCE($" + std::to_string(param) +
         "::bigint, cg_now_ms()) AS ms) ";
}

// Row is one idem_records row: a record, or a tombstone (purged record).
struct Row {
  IdempotencyRecord rec;
  bool tombstone = false;
};

Row ReadRow(const PgResult& r, int row, bool with_request) {
  Row out;
  IdempotencyRecord& rec = out.rec;
  rec.key = r.Text(row, 0);
  rec.plugin = r.Text(row, 1);
  rec.route = r.Text(row, 2);
  rec.level = static_cast<int>(r.Int(row, 3));
  rec.fingerprint = r.Text(row, 4);
  const std::string state = r.Text(row, 5);
  out.tombstone = state == "tombstone";
  // A tombstone was a completed record: its outcome carries the status it had stored.
  rec.state = state == "in_progress" ? IdemState::kInProgress : IdemState::kCompleted;
  rec.lease_until_ms = r.Int(row, 6);
  rec.fencing_token = r.Int(row, 7);
  rec.status = static_cast<int>(r.Int(row, 8));
  rec.content_type = r.Bytes(row, 9);
  rec.body = r.Bytes(row, 10);
  rec.created_ms = r.Int(row, 11);
  rec.updated_ms = r.Int(row, 12);
  rec.webhook_id = r.Bytes(row, 13);
  rec.x_idempotency_key = r.Bytes(row, 14);
  rec.has_request = r.Int(row, 15) != 0;
  rec.reconcile_attempts = r.Int(row, 16);
  rec.tombstone_until_ms = r.Int(row, 17);
  if (with_request) {
    rec.request_content_type = r.Bytes(row, kColumnCount);
    rec.request_body = r.Bytes(row, kColumnCount + 1);
  }
  return out;
}

ClaimOutcome Claimed(const PgResult& r, bool taken_over) {
  ClaimOutcome out;
  out.kind = ClaimOutcome::Kind::kClaimed;
  out.record = ReadRow(r, 0, /*with_request=*/false).rec;
  out.fencing_token = out.record.fencing_token;
  out.taken_over = taken_over;
  return out;
}

Status CheckLimit(std::string_view what, int64_t limit) {
  if (limit >= 1 && limit <= kMaxIdemBatch) return Status::Ok();
  return Status(Reason::kUsage, std::string(what) + ": limit must be 1.." +
                                    std::to_string(kMaxIdemBatch) + ", got " +
                                    std::to_string(limit));
}

// What Reset and ClearTombstone write (a tombstone becomes a reset record); $1 key, $2 now.
const std::string& ResetSql() {
  static const std::string kSql =
      NowCte(2) +
      "UPDATE idem_records r SET state = 'in_progress', fingerprint = '', "
      "lease_until_ms = 0, status = 0, content_type = ''::bytea, body = ''::bytea, "
      "has_request = false, request_content_type = ''::bytea, request_body = ''::bytea, "
      "reconcile_attempts = 0, tombstone_until_ms = 0, updated_ms = now.ms FROM now "
      "WHERE r.key = $1::text";
  return kSql;
}

}  // namespace

Result<std::unique_ptr<PgIdempotencyStore>> PgIdempotencyStore::Open(std::shared_ptr<PgPool> pool) {
  CLAWGUARD_CHECK(pool != nullptr);
  CLAWGUARD_RETURN_IF_ERROR(pool->EnsureMigrated());
  return std::unique_ptr<PgIdempotencyStore>(new PgIdempotencyStore(std::move(pool)));
}

Result<ClaimOutcome> PgIdempotencyStore::Claim(const std::string& key,
                                               const std::string& fingerprint,
                                               const ClaimMeta& meta, int64_t lease_ms) {
  CLAWGUARD_CHECK(!fingerprint.empty() && lease_ms > 0);
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  static const std::string kInsert =
      NowCte(9) +
      "INSERT INTO idem_records (key, plugin, route, level, fingerprint, state, lease_until_ms, "
      "fencing_token, "
      "created_ms, updated_ms, webhook_id, x_idempotency_key, request_content_type, request_body, "
      "has_request) "
      "SELECT $1::text, $2::text, $3::text, $4::integer, $5::text, 'in_progress', now.ms + "
      "$6::bigint, 1, now.ms, "
      "now.ms, $7::bytea, $8::bytea, $10::bytea, $11::bytea, $12::integer = 1 FROM now "
      "ON CONFLICT (key) DO NOTHING RETURNING " +
      std::string(kColumns);
  static const std::string kRead =
      std::string("SELECT ") + kColumns +
      ", COALESCE($2::bigint, cg_now_ms()) FROM idem_records WHERE key = $1::text";
  // The takeover keeps a stored request (the first claim's): SET expressions see the old row.
  static const std::string kTakeover =
      NowCte(9) +
      "UPDATE idem_records r SET fingerprint = $2::text, lease_until_ms = now.ms + $3::bigint, "
      "fencing_token = r.fencing_token + 1, updated_ms = now.ms, webhook_id = $4::bytea, "
      "x_idempotency_key = $5::bytea, plugin = $6::text, route = $7::text, level = $8::integer, "
      "request_content_type = CASE WHEN r.has_request THEN r.request_content_type ELSE $11::bytea "
      "END, "
      "request_body = CASE WHEN r.has_request THEN r.request_body ELSE $12::bytea END, "
      "has_request = r.has_request OR $13::integer = 1 FROM now "
      "WHERE r.key = $1::text AND r.state = 'in_progress' AND r.fencing_token = $10::bigint "
      "AND r.lease_until_ms <= now.ms AND (r.fingerprint = '' OR r.fingerprint = $2::text) "
      "RETURNING " +
      std::string(kColumns);
  // An expired tombstone: the key is new again (a fresh record with the next token).
  static const std::string kRevive =
      NowCte(9) +
      "UPDATE idem_records r SET state = 'in_progress', fingerprint = $2::text, "
      "lease_until_ms = now.ms + $3::bigint, fencing_token = r.fencing_token + 1, status = 0, "
      "content_type = ''::bytea, body = ''::bytea, created_ms = now.ms, updated_ms = now.ms, "
      "webhook_id = $4::bytea, x_idempotency_key = $5::bytea, plugin = $6::text, route = $7::text, "
      "level = $8::integer, request_content_type = $11::bytea, request_body = $12::bytea, "
      "has_request = $13::integer = 1, reconcile_attempts = 0, tombstone_until_ms = 0 FROM now "
      "WHERE r.key = $1::text AND r.state = 'tombstone' AND r.fencing_token = $10::bigint "
      "AND r.tombstone_until_ms <= now.ms RETURNING " +
      std::string(kColumns);
  const std::optional<int64_t> now_param = pool_->NowParam();
  const bool storable = IdemRequestStorable(meta);
  const std::string_view request_type =
      storable ? std::string_view(meta.request_content_type) : std::string_view();
  const std::string_view request_body =
      storable ? std::string_view(meta.request_body) : std::string_view();
  for (int round = 0; round < kClaimRounds; ++round) {
    {
      CLAWGUARD_ASSIGN_OR_RETURN(PgResult ins, db.Exec("claim (insert)", kInsert,
                                                       PgParams()
                                                           .Text(key)
                                                           .Text(meta.plugin)
                                                           .Text(meta.route)
                                                           .Int(meta.level)
                                                           .Text(fingerprint)
                                                           .Int(lease_ms)
                                                           .Bytes(meta.webhook_id)
                                                           .Bytes(meta.x_idempotency_key)
                                                           .OptionalInt(now_param)
                                                           .Bytes(request_type)
                                                           .Bytes(request_body)
                                                           .Int(storable ? 1 : 0)));
      if (ins.rows() == 1) return Claimed(ins, /*taken_over=*/false);
    }
    CLAWGUARD_ASSIGN_OR_RETURN(
        PgResult cur, db.Exec("claim (read)", kRead, PgParams().Text(key).OptionalInt(now_param)));
    if (cur.rows() != 1) continue;  // an expired tombstone was just deleted: insert again
    Row row = ReadRow(cur, 0, /*with_request=*/false);
    const int64_t now = cur.Int(0, kColumnCount);
    const bool revive = row.tombstone && row.rec.tombstone_until_ms <= now;
    if (!revive) {
      ClaimOutcome out;
      // Fingerprint first: a mismatch never reveals or changes the record's state.
      if (!row.rec.fingerprint.empty() && row.rec.fingerprint != fingerprint) {
        out.kind = ClaimOutcome::Kind::kFingerprintMismatch;
        return out;
      }
      if (row.tombstone) {
        out.kind = ClaimOutcome::Kind::kTombstone;
        out.record = std::move(row.rec);
        return out;
      }
      if (row.rec.state == IdemState::kCompleted) {
        out.kind = ClaimOutcome::Kind::kCompleted;
        out.record = std::move(row.rec);
        return out;
      }
      if (row.rec.lease_until_ms > now) {
        out.kind = ClaimOutcome::Kind::kInProgress;
        out.retry_after_ms = std::max<int64_t>(1, row.rec.lease_until_ms - now);
        out.record = std::move(row.rec);
        return out;
      }
    }
    CLAWGUARD_ASSIGN_OR_RETURN(PgResult up, db.Exec(revive ? "claim (revive)" : "claim (takeover)",
                                                    revive ? kRevive : kTakeover,
                                                    PgParams()
                                                        .Text(key)
                                                        .Text(fingerprint)
                                                        .Int(lease_ms)
                                                        .Bytes(meta.webhook_id)
                                                        .Bytes(meta.x_idempotency_key)
                                                        .Text(meta.plugin)
                                                        .Text(meta.route)
                                                        .Int(meta.level)
                                                        .OptionalInt(now_param)
                                                        .Int(row.rec.fencing_token)
                                                        .Bytes(request_type)
                                                        .Bytes(request_body)
                                                        .Int(storable ? 1 : 0)));
    if (up.rows() == 1) return Claimed(up, /*taken_over=*/!revive);
    // Another worker changed the record between the read and the update: decide again.
  }
  return pool_->Unavailable("claim", "the record of key " + key + " kept changing under " +
                                         std::to_string(kClaimRounds) + " attempts");
}

Result<FencedWrite> PgIdempotencyStore::Fenced(std::string_view what, const std::string& sql,
                                               const PgParams& params) {
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r, db.Exec(what, sql, params));
  return r.Affected() == 1 ? FencedWrite::kApplied : FencedWrite::kFenced;
}

Result<FencedWrite> PgIdempotencyStore::Renew(const std::string& key, int64_t token,
                                              int64_t lease_ms) {
  static const std::string kSql =
      NowCte(4) +
      "UPDATE idem_records r SET lease_until_ms = now.ms + $3::bigint, updated_ms = now.ms "
      "FROM now WHERE r.key = $1::text AND r.fencing_token = $2::bigint "
      "AND r.state = 'in_progress'";
  return Fenced("renew", kSql,
                PgParams().Text(key).Int(token).Int(lease_ms).OptionalInt(pool_->NowParam()));
}

Result<FencedWrite> PgIdempotencyStore::Complete(const std::string& key, int64_t token, int status,
                                                 const std::string& content_type,
                                                 const std::string& body) {
  static const std::string kSql =
      NowCte(6) +
      "UPDATE idem_records r SET state = 'completed', status = $3::integer, "
      "content_type = $4::bytea, body = $5::bytea, lease_until_ms = 0, "
      "has_request = false, request_content_type = ''::bytea, "
      "request_body = ''::bytea, reconcile_attempts = 0, "
      "updated_ms = now.ms FROM now WHERE r.key = $1::text "
      "AND r.fencing_token = $2::bigint AND r.state = 'in_progress'";
  return Fenced("complete", kSql,
                PgParams()
                    .Text(key)
                    .Int(token)
                    .Int(status)
                    .Bytes(content_type)
                    .Bytes(body)
                    .OptionalInt(pool_->NowParam()));
}

Result<FencedWrite> PgIdempotencyStore::Release(const std::string& key, int64_t token) {
  static const std::string kSql =
      NowCte(3) +
      "UPDATE idem_records r SET lease_until_ms = 0, updated_ms = now.ms FROM now "
      "WHERE r.key = $1::text AND r.fencing_token = $2::bigint "
      "AND r.state = 'in_progress'";
  return Fenced("release", kSql, PgParams().Text(key).Int(token).OptionalInt(pool_->NowParam()));
}

Result<std::optional<IdempotencyRecord>> PgIdempotencyStore::Get(const std::string& key) {
  static const std::string kSql =
      std::string("SELECT ") + kColumns + kRequestColumns +
      " FROM idem_records WHERE key = $1::text AND state <> 'tombstone'";
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r, db.Exec("get", kSql, PgParams().Text(key)));
  if (r.rows() != 1) return std::optional<IdempotencyRecord>();
  return std::optional<IdempotencyRecord>(ReadRow(r, 0, /*with_request=*/true).rec);
}

Result<bool> PgIdempotencyStore::ResetWhere(std::string_view what, const std::string& key,
                                            std::string_view condition) {
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgTx tx, PgTx::Begin(db));
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r,
                             db.Exec(what, ResetSql() + std::string(condition),
                                     PgParams().Text(key).OptionalInt(pool_->NowParam())));
  const bool existed = r.Affected() == 1;
  if (existed) {
    CLAWGUARD_ASSIGN_OR_RETURN(
        PgResult g, db.Exec("reset (generation)",
                            "UPDATE idem_generation SET generation = generation + 1 WHERE id = 1"));
    (void)g;
  }
  CLAWGUARD_RETURN_IF_ERROR(tx.Commit());
  return existed;
}

Result<bool> PgIdempotencyStore::Reset(const std::string& key) {
  return ResetWhere("reset", key, "");
}

Result<bool> PgIdempotencyStore::ClearTombstone(const std::string& key) {
  return ResetWhere("clear tombstone", key, " AND r.state = 'tombstone'");
}

Result<int64_t> PgIdempotencyStore::Generation() {
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(
      PgResult r, db.Exec("generation", "SELECT generation FROM idem_generation WHERE id = 1"));
  if (r.rows() != 1) return pool_->Unavailable("generation", "idem_generation is empty");
  return r.Int(0, 0);
}

Result<int64_t> PgIdempotencyStore::BumpGeneration() {
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r,
                             db.Exec("bump generation",
                                     "UPDATE idem_generation SET generation = generation + 1 "
                                     "WHERE id = 1 RETURNING generation"));
  if (r.rows() != 1) return pool_->Unavailable("bump generation", "idem_generation is empty");
  return r.Int(0, 0);
}

Result<int64_t> PgIdempotencyStore::Purge(int64_t completed_before_ms, int64_t tombstone_until_ms,
                                          int64_t limit) {
  CLAWGUARD_RETURN_IF_ERROR(CheckLimit("idempotency purge", limit));
  // A record whose ERP calls are not final yet (pending, sent or held rows) is kept: its outbox
  // rows are the retry worker's queue. SKIP LOCKED: a record another purge (host) holds is left
  // to it. The claim never waits on a purge: it meets the record or its tombstone by key.
  static const std::string kTombstones =
      NowCte(4) +
      ", victims AS (SELECT v.key FROM idem_records v WHERE v.state = 'completed' AND v.updated_ms "
      "< $1::bigint "
      "AND NOT EXISTS (SELECT 1 FROM outbox_rows o WHERE o.event_key = v.key "
      "AND o.state IN ('pending', 'sent', 'held')) ORDER BY v.updated_ms, v.key LIMIT $3::bigint "
      "FOR UPDATE SKIP LOCKED), "
      "gone AS (DELETE FROM outbox_rows o USING victims WHERE o.event_key = victims.key) "
      "UPDATE idem_records r SET state = 'tombstone', tombstone_until_ms = $2::bigint, updated_ms "
      "= now.ms, "
      "lease_until_ms = 0, content_type = ''::bytea, body = ''::bytea, webhook_id = ''::bytea, "
      "x_idempotency_key = ''::bytea, has_request = false, request_content_type = ''::bytea, "
      "request_body = ''::bytea, reconcile_attempts = 0 FROM now, victims "
      "WHERE r.key = victims.key AND r.state = 'completed'";
  static const std::string kExpired =
      NowCte(2) +
      ", old AS (SELECT t.key FROM idem_records t, now WHERE t.state = 'tombstone' "
      "AND t.tombstone_until_ms <= now.ms ORDER BY t.tombstone_until_ms LIMIT $1::bigint FOR "
      "UPDATE SKIP LOCKED) "
      "DELETE FROM idem_records r USING old WHERE r.key = old.key AND r.state = 'tombstone'";
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult purged, db.Exec("purge", kTombstones,
                                                      PgParams()
                                                          .Int(completed_before_ms)
                                                          .Int(tombstone_until_ms)
                                                          .Int(limit)
                                                          .OptionalInt(pool_->NowParam())));
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult expired,
                             db.Exec("purge (expired tombstones)", kExpired,
                                     PgParams().Int(limit).OptionalInt(pool_->NowParam())));
  (void)expired;
  return purged.Affected();
}

Result<std::vector<IdempotencyRecord>> PgIdempotencyStore::ListStuck(int64_t now_ms,
                                                                     int64_t stuck_for_ms,
                                                                     int64_t limit) {
  CLAWGUARD_RETURN_IF_ERROR(CheckLimit("list of stuck idempotency records", limit));
  if (stuck_for_ms < 0) {
    return Status(Reason::kUsage,
                  "list of stuck idempotency records: stuck_for must be >= 0 ms, got " +
                      std::to_string(stuck_for_ms));
  }
  static const std::string kSql =
      std::string("SELECT ") + kColumns + kRequestColumns +
      " FROM idem_records WHERE state = 'in_progress' AND fingerprint <> '' "
      "AND lease_until_ms <= $1::bigint AND updated_ms <= $1::bigint "
      "ORDER BY reconcile_attempts, GREATEST(lease_until_ms, updated_ms), key "
      "LIMIT $2::bigint";
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(
      PgResult r, db.Exec("list stuck", kSql, PgParams().Int(now_ms - stuck_for_ms).Int(limit)));
  std::vector<IdempotencyRecord> out;
  out.reserve(static_cast<size_t>(r.rows()));
  for (int i = 0; i < r.rows(); ++i) out.push_back(ReadRow(r, i, /*with_request=*/true).rec);
  return out;
}

Result<int64_t> PgIdempotencyStore::NoteReconcileAttempt(const std::string& key) {
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(
      PgResult r, db.Exec("note reconcile attempt",
                          NowCte(2) + "UPDATE idem_records r SET reconcile_attempts = "
                                      "r.reconcile_attempts + 1, updated_ms = now.ms FROM now "
                                      "WHERE r.key = $1::text AND r.state <> 'tombstone' "
                                      "RETURNING r.reconcile_attempts",
                          PgParams().Text(key).OptionalInt(pool_->NowParam())));
  if (r.rows() != 1) {
    return Status(Reason::kNotFound,
                  "no idempotency record for key " + key + " in " + pool_->shown_url());
  }
  return r.Int(0, 0);
}

}  // namespace clawguard::pg
