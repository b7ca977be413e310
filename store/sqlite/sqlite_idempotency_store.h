// sqlite_idempotency_store.h — the SQLite engine of IdempotencyStore.
//
// Tables idem_records, idem_generation (and the outbox's outbox_rows), versioned in
// idem_schema_version — names of their own so they can share a database file with the ledger
// (schema in sqlite_idempotency_schema.cpp). A tombstone is an idem_records row in state
// 'tombstone' (a purged record keeps its key, fingerprint, status and fencing token), so a claim
// meets it with the same primary-key lookup as a record; expired tombstones are deleted.
// Each state change is an op of the file's SqliteWriter (group commit: several callers' changes
// in one BEGIN IMMEDIATE transaction, each op in its own savepoint) on a WAL database; Complete,
// Reset and the operator calls are durable before the call returns (a group fdatasync of the WAL
// after their commit); Claim, Renew and Release are lazy (committed, flushed by the next durable
// op — safe because the answer is sent only after Complete; see sqlite_writer.h "Durability").
// Several instances (processes) may open the same file: BEGIN IMMEDIATE serialises their
// conditional writes. Reads use the store's own connection behind a mutex. Thread-safe.
#ifndef CLAWGUARD_STORE_SQLITE_SQLITE_IDEMPOTENCY_STORE_H_
#define CLAWGUARD_STORE_SQLITE_SQLITE_IDEMPOTENCY_STORE_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/clock.h"
#include "clawguard/store/idempotency_store.h"
#include "core/mutex.h"
#include "sqlite/sqlite_db.h"
#include "sqlite/sqlite_writer.h"

namespace clawguard::sqlite {

// MigrateIdempotencySchema creates or upgrades the idem_* and outbox_* tables (idempotent).
// kStoreUnavailable if the file holds a newer schema than this build knows.
Status MigrateIdempotencySchema(SqliteDb& db);
// MigrateIdempotencySchemaTo stops at version |target| (tests build older databases with it).
Status MigrateIdempotencySchemaTo(SqliteDb& db, int64_t target);

class SqliteIdempotencyStore final : public IdempotencyStore {
 public:
  // Open opens (creating) |path| and migrates it. |clock| must outlive the store.
  static Result<std::unique_ptr<SqliteIdempotencyStore>> Open(const std::string& path,
                                                              const Clock& clock);

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
  SqliteIdempotencyStore(std::unique_ptr<SqliteDb> db, std::shared_ptr<SqliteWriter> writer,
                         const Clock& clock)
      : db_(std::move(db)), path_(db_->path()), writer_(std::move(writer)), clock_(clock) {}
  // ResetWhere runs Reset's update on the key's row if it also meets |condition| (SQL "AND …").
  Result<bool> ResetWhere(const std::string& key, std::string_view condition);

  Mutex mu_;
  // The connection for reads; writes go through writer_.
  const std::unique_ptr<SqliteDb> db_ CLAWGUARD_PT_GUARDED_BY(mu_);
  const std::string path_;  // db_'s file, for messages
  const std::shared_ptr<SqliteWriter> writer_;
  const Clock& clock_;
};

}  // namespace clawguard::sqlite

#endif  // CLAWGUARD_STORE_SQLITE_SQLITE_IDEMPOTENCY_STORE_H_
