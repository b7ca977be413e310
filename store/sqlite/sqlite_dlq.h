// sqlite_dlq.h — the SQLite engine of Dlq: tables dlq_entries, capability_pauses and
// operator_actions, versioned in dlq_schema_version (names of their own, so they share a database
// file with the ledger and the idempotency store).
//
// One unresolved entry per (event key, class) is a partial unique index; every change is one
// BEGIN IMMEDIATE transaction on a WAL database with synchronous=FULL, which also serialises
// ClaimReplays between processes (the PostgreSQL engine uses FOR UPDATE SKIP LOCKED). Operator
// writes insert their operator_actions row in the same transaction. Thread-safe (one connection
// behind a mutex). sqlite_dlq.cpp holds the entries, sqlite_dlq_ops.cpp pauses and actions.
#ifndef CLAWGUARD_STORE_SQLITE_SQLITE_DLQ_H_
#define CLAWGUARD_STORE_SQLITE_SQLITE_DLQ_H_

#include <memory>
#include <string>

#include "clawguard/clock.h"
#include "clawguard/store/dlq.h"
#include "core/mutex.h"
#include "sqlite/sqlite_db.h"

namespace clawguard::sqlite {

// MigrateDlqSchema creates or upgrades the dlq_*, capability_pauses and operator_actions tables
// (idempotent). kStoreUnavailable if the file holds a newer schema than this build knows.
Status MigrateDlqSchema(SqliteDb& db);

class SqliteDlq final : public Dlq {
 public:
  // Open opens (creating) |path| and migrates it. |clock| must outlive the engine.
  static Result<std::unique_ptr<SqliteDlq>> Open(const std::string& path, const Clock& clock);

  Result<DlqAdded> Add(const DlqNewEntry& e) override;
  Result<std::optional<DlqEntry>> Get(int64_t id) override;
  Result<std::vector<DlqEntry>> List(const DlqFilter& f) override;
  Result<std::vector<DlqCount>> CountUnresolved() override;
  Status RequestReplay(int64_t id, const std::string& actor) override;
  Status Drop(int64_t id, const std::string& reason, const std::string& actor) override;
  Result<std::vector<DlqEntry>> ClaimReplays(const std::string& owner, int64_t limit,
                                             int64_t lease_ms) override;
  Result<bool> MarkReplayed(int64_t id, int64_t attempt, bool succeeded, const std::string& detail,
                            int64_t next_attempt_ms) override;
  Result<bool> Resolve(const std::string& event_key, DlqClass klass,
                       const std::string& detail) override;

  Result<bool> Pause(const std::string& plugin, const std::string& capability,
                     const std::string& reason, const std::string& actor) override;
  Result<bool> Resume(const std::string& plugin, const std::string& capability,
                      const std::string& actor) override;
  Result<bool> IsPaused(const std::string& plugin, const std::string& capability) override;
  Result<std::vector<CapabilityPause>> ListPauses() override;
  Status RecordOperatorAction(const std::string& actor, const std::string& action,
                              const std::string& target, const std::string& detail) override;
  Result<std::vector<OperatorAction>> ListOperatorActions(int64_t limit) override;

 private:
  SqliteDlq(std::unique_ptr<SqliteDb> db, const Clock& clock) : db_(std::move(db)), clock_(clock) {}
  // Load reads one entry (with its request when |with_request|).
  Result<std::optional<DlqEntry>> Load(int64_t id, bool with_request) CLAWGUARD_REQUIRES(mu_);
  // InsertAction writes an operator_actions row; callers are inside a transaction.
  Status InsertAction(int64_t now_ms, const std::string& actor, const std::string& action,
                      const std::string& target, const std::string& detail) CLAWGUARD_REQUIRES(mu_);

  Mutex mu_;
  const std::unique_ptr<SqliteDb> db_ CLAWGUARD_PT_GUARDED_BY(mu_);
  const Clock& clock_;
};

}  // namespace clawguard::sqlite

#endif  // CLAWGUARD_STORE_SQLITE_SQLITE_DLQ_H_
