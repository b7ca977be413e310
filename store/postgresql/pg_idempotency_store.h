// pg_idempotency_store.h — the PostgreSQL engine of IdempotencyStore (table idem_records and
// idem_generation; schema in pg_schema.h).
//
// Claim is one `INSERT … ON CONFLICT (key) DO NOTHING` (a new key: token 1), else a read and,
// for an expired or released lease, one conditional `UPDATE … WHERE fencing_token = <seen> AND
// lease_until_ms <= now … RETURNING` (the takeover: token + 1). Under READ COMMITTED a racing
// UPDATE re-checks its WHERE on the winner's row and matches nothing, so exactly one worker
// claims — no reliance on SERIALIZABLE. The fencing token lives in the record (Reset keeps it),
// so tokens per key only go up. A purge turns a completed record into a tombstone in place
// (state 'tombstone': the same row keeps key, fingerprint, status and token), so a racing claim
// meets either the record or its tombstone through the same ON CONFLICT — never a gap in which
// it could insert the key afresh. Rows are deleted only as tombstones past their end, long after
// any worker held a token. Times: the injected clock of
// PgOptions, or the database clock (cg_now_ms()) when none is given. Thread-safe.
#ifndef CLAWGUARD_STORE_POSTGRESQL_PG_IDEMPOTENCY_STORE_H_
#define CLAWGUARD_STORE_POSTGRESQL_PG_IDEMPOTENCY_STORE_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/store/idempotency_store.h"
#include "postgresql/pg_conn.h"

namespace clawguard::pg {

class PgIdempotencyStore final : public IdempotencyStore {
 public:
  // Open migrates the database (once per pool) and returns the store; kStoreUnavailable when
  // the server cannot be reached or its schema is newer than this build.
  static Result<std::unique_ptr<PgIdempotencyStore>> Open(std::shared_ptr<PgPool> pool);

  Result<ClaimOutcome> Claim(const std::string& key, const std::string& fingerprint,
                             const ClaimMeta& meta, int64_t lease_ms) override;
  Result<FencedWrite> Renew(const std::string& key, int64_t token, int64_t lease_ms) override;
  Result<FencedWrite> Complete(const std::string& key, int64_t token, int status,
                               const std::string& content_type, const std::string& body) override;
  Result<FencedWrite> Release(const std::string& key, int64_t token) override;
  Result<std::optional<IdempotencyRecord>> Get(const std::string& key) override;
  Result<bool> Reset(const std::string& key) override;
  Result<int64_t> Generation() override;
  Result<int64_t> BumpGeneration() override;
  Result<int64_t> Purge(int64_t completed_before_ms, int64_t tombstone_until_ms,
                        int64_t limit) override;
  Result<bool> ClearTombstone(const std::string& key) override;
  Result<std::vector<IdempotencyRecord>> ListStuck(int64_t now_ms, int64_t stuck_for_ms,
                                                   int64_t limit) override;
  Result<int64_t> NoteReconcileAttempt(const std::string& key) override;

 private:
  explicit PgIdempotencyStore(std::shared_ptr<PgPool> pool) : pool_(std::move(pool)) {}
  // Fenced runs one conditional UPDATE: kApplied when it changed the row.
  Result<FencedWrite> Fenced(std::string_view what, const std::string& sql, const PgParams& params);
  // ResetWhere runs Reset's update (and generation bump) if the row also meets |condition|.
  Result<bool> ResetWhere(std::string_view what, const std::string& key,
                          std::string_view condition);

  const std::shared_ptr<PgPool> pool_;
};

}  // namespace clawguard::pg

#endif  // CLAWGUARD_STORE_POSTGRESQL_PG_IDEMPOTENCY_STORE_H_
