// pg_idempotency_store.cpp — the claim as INSERT … ON CONFLICT plus a conditional UPDATE.
#include "postgresql/pg_idempotency_store.h"

#include <algorithm>

namespace clawguard::pg {
namespace {

// A claim that loses every race this many times in a row reports the store as unavailable
// (each loss means another worker made progress on the key, so this does not happen in practice).
constexpr int kClaimRounds = 8;

constexpr char kColumns[] =
    "key, plugin, route, level, fingerprint, state, lease_until_ms, fencing_token, status, content_type, body, "
    "created_ms, updated_ms, webhook_id, x_idempotency_key";

// kNow is the time of one statement: the injected clock's (a parameter) or the database's.
std::string NowCte(int param) { return "WITH now AS (SELECT COALESCE($" + std::to_string(param) + "::bigint, cg_now_ms()) AS ms) "; }

IdempotencyRecord ReadRecord(const PgResult& r, int row) {
  IdempotencyRecord rec;
  rec.key = r.Text(row, 0);
  rec.plugin = r.Text(row, 1);
  rec.route = r.Text(row, 2);
  rec.level = static_cast<int>(r.Int(row, 3));
  rec.fingerprint = r.Text(row, 4);
  rec.state = r.Text(row, 5) == "completed" ? IdemState::kCompleted : IdemState::kInProgress;
  rec.lease_until_ms = r.Int(row, 6);
  rec.fencing_token = r.Int(row, 7);
  rec.status = static_cast<int>(r.Int(row, 8));
  rec.content_type = r.Bytes(row, 9);
  rec.body = r.Bytes(row, 10);
  rec.created_ms = r.Int(row, 11);
  rec.updated_ms = r.Int(row, 12);
  rec.webhook_id = r.Bytes(row, 13);
  rec.x_idempotency_key = r.Bytes(row, 14);
  return rec;
}

ClaimOutcome Claimed(const PgResult& r, bool taken_over) {
  ClaimOutcome out;
  out.kind = ClaimOutcome::Kind::kClaimed;
  out.record = ReadRecord(r, 0);
  out.fencing_token = out.record.fencing_token;
  out.taken_over = taken_over;
  return out;
}

}  // namespace

Result<std::unique_ptr<PgIdempotencyStore>> PgIdempotencyStore::Open(std::shared_ptr<PgPool> pool) {
  CLAWGUARD_CHECK(pool != nullptr);
  CLAWGUARD_RETURN_IF_ERROR(pool->EnsureMigrated());
  return std::unique_ptr<PgIdempotencyStore>(new PgIdempotencyStore(std::move(pool)));
}

Result<ClaimOutcome> PgIdempotencyStore::Claim(const std::string& key, const std::string& fingerprint,
                                               const ClaimMeta& meta, int64_t lease_ms) {
  CLAWGUARD_CHECK(!fingerprint.empty() && lease_ms > 0);
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  static const std::string kInsert =
      NowCte(9) +
      "INSERT INTO idem_records (key, plugin, route, level, fingerprint, state, lease_until_ms, fencing_token, "
      "created_ms, updated_ms, webhook_id, x_idempotency_key) "
      "SELECT $1::text, $2::text, $3::text, $4::integer, $5::text, 'in_progress', now.ms + $6::bigint, 1, now.ms, "
      "now.ms, $7::bytea, $8::bytea FROM now ON CONFLICT (key) DO NOTHING RETURNING " +
      std::string(kColumns);
  static const std::string kRead = std::string("SELECT ") + kColumns +
                                   ", COALESCE($2::bigint, cg_now_ms()) FROM idem_records WHERE key = $1::text";
  static const std::string kTakeover =
      NowCte(9) +
      "UPDATE idem_records r SET fingerprint = $2::text, lease_until_ms = now.ms + $3::bigint, "
      "fencing_token = r.fencing_token + 1, updated_ms = now.ms, webhook_id = $4::bytea, "
      "x_idempotency_key = $5::bytea, plugin = $6::text, route = $7::text, level = $8::integer FROM now "
      "WHERE r.key = $1::text AND r.state = 'in_progress' AND r.fencing_token = $10::bigint "
      "AND r.lease_until_ms <= now.ms AND (r.fingerprint = '' OR r.fingerprint = $2::text) RETURNING r.key, "
      "r.plugin, r.route, r.level, r.fingerprint, r.state, r.lease_until_ms, r.fencing_token, r.status, "
      "r.content_type, r.body, r.created_ms, r.updated_ms, r.webhook_id, r.x_idempotency_key";
  const std::optional<int64_t> now_param = pool_->NowParam();
  for (int round = 0; round < kClaimRounds; ++round) {
    {
      CLAWGUARD_ASSIGN_OR_RETURN(
          PgResult ins, db.Exec("claim (insert)", kInsert,
                                PgParams()
                                    .Text(key)
                                    .Text(meta.plugin)
                                    .Text(meta.route)
                                    .Int(meta.level)
                                    .Text(fingerprint)
                                    .Int(lease_ms)
                                    .Bytes(meta.webhook_id)
                                    .Bytes(meta.x_idempotency_key)
                                    .OptionalInt(now_param)));
      if (ins.rows() == 1) return Claimed(ins, /*taken_over=*/false);
    }
    CLAWGUARD_ASSIGN_OR_RETURN(PgResult cur, db.Exec("claim (read)", kRead, PgParams().Text(key).OptionalInt(now_param)));
    if (cur.rows() != 1) continue;  // cannot happen (records are never deleted); try again
    IdempotencyRecord rec = ReadRecord(cur, 0);
    const int64_t now = cur.Int(0, 15);
    ClaimOutcome out;
    // Fingerprint first: a mismatch never reveals or changes the record's state.
    if (!rec.fingerprint.empty() && rec.fingerprint != fingerprint) {
      out.kind = ClaimOutcome::Kind::kFingerprintMismatch;
      return out;
    }
    if (rec.state == IdemState::kCompleted) {
      out.kind = ClaimOutcome::Kind::kCompleted;
      out.record = std::move(rec);
      return out;
    }
    if (rec.lease_until_ms > now) {
      out.kind = ClaimOutcome::Kind::kInProgress;
      out.retry_after_ms = std::max<int64_t>(1, rec.lease_until_ms - now);
      out.record = std::move(rec);
      return out;
    }
    CLAWGUARD_ASSIGN_OR_RETURN(PgResult up, db.Exec("claim (takeover)", kTakeover,
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
                                                        .Int(rec.fencing_token)));
    if (up.rows() == 1) return Claimed(up, /*taken_over=*/true);
    // Another worker changed the record between the read and the update: decide again.
  }
  return pool_->Unavailable("claim", "the record of key " + key + " kept changing under " +
                                         std::to_string(kClaimRounds) + " attempts");
}

Result<FencedWrite> PgIdempotencyStore::Fenced(std::string_view what, const std::string& sql, const PgParams& params) {
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r, db.Exec(what, sql, params));
  return r.Affected() == 1 ? FencedWrite::kApplied : FencedWrite::kFenced;
}

Result<FencedWrite> PgIdempotencyStore::Renew(const std::string& key, int64_t token, int64_t lease_ms) {
  static const std::string kSql = NowCte(4) +
                                  "UPDATE idem_records r SET lease_until_ms = now.ms + $3::bigint, updated_ms = now.ms "
                                  "FROM now WHERE r.key = $1::text AND r.fencing_token = $2::bigint "
                                  "AND r.state = 'in_progress'";
  return Fenced("renew", kSql, PgParams().Text(key).Int(token).Int(lease_ms).OptionalInt(pool_->NowParam()));
}

Result<FencedWrite> PgIdempotencyStore::Complete(const std::string& key, int64_t token, int status,
                                                 const std::string& content_type, const std::string& body) {
  static const std::string kSql = NowCte(6) +
                                  "UPDATE idem_records r SET state = 'completed', status = $3::integer, "
                                  "content_type = $4::bytea, body = $5::bytea, lease_until_ms = 0, "
                                  "updated_ms = now.ms FROM now WHERE r.key = $1::text "
                                  "AND r.fencing_token = $2::bigint AND r.state = 'in_progress'";
  return Fenced("complete", kSql,
                PgParams().Text(key).Int(token).Int(status).Bytes(content_type).Bytes(body).OptionalInt(
                    pool_->NowParam()));
}

Result<FencedWrite> PgIdempotencyStore::Release(const std::string& key, int64_t token) {
  static const std::string kSql = NowCte(3) +
                                  "UPDATE idem_records r SET lease_until_ms = 0, updated_ms = now.ms FROM now "
                                  "WHERE r.key = $1::text AND r.fencing_token = $2::bigint "
                                  "AND r.state = 'in_progress'";
  return Fenced("release", kSql, PgParams().Text(key).Int(token).OptionalInt(pool_->NowParam()));
}

Result<std::optional<IdempotencyRecord>> PgIdempotencyStore::Get(const std::string& key) {
  static const std::string kSql = std::string("SELECT ") + kColumns + " FROM idem_records WHERE key = $1::text";
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r, db.Exec("get", kSql, PgParams().Text(key)));
  if (r.rows() != 1) return std::optional<IdempotencyRecord>();
  return std::optional<IdempotencyRecord>(ReadRecord(r, 0));
}

Result<bool> PgIdempotencyStore::Reset(const std::string& key) {
  static const std::string kSql = NowCte(2) +
                                  "UPDATE idem_records r SET state = 'in_progress', fingerprint = '', "
                                  "lease_until_ms = 0, status = 0, content_type = ''::bytea, body = ''::bytea, "
                                  "updated_ms = now.ms FROM now WHERE r.key = $1::text";
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgTx tx, PgTx::Begin(db));
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r, db.Exec("reset", kSql, PgParams().Text(key).OptionalInt(pool_->NowParam())));
  const bool existed = r.Affected() == 1;
  if (existed) {
    CLAWGUARD_ASSIGN_OR_RETURN(PgResult g, db.Exec("reset (generation)",
                                                   "UPDATE idem_generation SET generation = generation + 1 WHERE id = 1"));
    (void)g;
  }
  CLAWGUARD_RETURN_IF_ERROR(tx.Commit());
  return existed;
}

Result<int64_t> PgIdempotencyStore::Generation() {
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r, db.Exec("generation", "SELECT generation FROM idem_generation WHERE id = 1"));
  if (r.rows() != 1) return pool_->Unavailable("generation", "idem_generation is empty");
  return r.Int(0, 0);
}

Result<int64_t> PgIdempotencyStore::BumpGeneration() {
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r, db.Exec("bump generation",
                                                 "UPDATE idem_generation SET generation = generation + 1 "
                                                 "WHERE id = 1 RETURNING generation"));
  if (r.rows() != 1) return pool_->Unavailable("bump generation", "idem_generation is empty");
  return r.Int(0, 0);
}

}  // namespace clawguard::pg
