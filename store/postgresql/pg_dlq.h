// pg_dlq.h — the PostgreSQL engine of Dlq: tables dlq_entries, capability_pauses and
// operator_actions (schema version 2 in pg_schema.cpp), same behaviour as sqlite::SqliteDlq.
//
// Add is one `INSERT … ON CONFLICT (event_key, class) WHERE <unresolved> DO UPDATE`: the partial
// unique index makes two hosts adding the same failure fold into one entry, never two.
// ClaimReplays is one UPDATE over a `SELECT … FOR UPDATE SKIP LOCKED` of the due entries, so
// several hosts claim disjoint sets without waiting on each other; MarkReplayed is fenced by
// (id, attempts). Operator writes (RequestReplay, Drop, Pause, Resume) lock the row, check its
// state, change it and insert their operator_actions row in one transaction. Times: every
// statement takes `COALESCE($now, cg_now_ms())` — the injected clock of PgOptions, or the
// database clock. Thread-safe (connections from the shared PgPool). pg_dlq.cpp holds the
// entries, pg_dlq_ops.cpp pauses and operator actions.
#ifndef CLAWGUARD_STORE_POSTGRESQL_PG_DLQ_H_
#define CLAWGUARD_STORE_POSTGRESQL_PG_DLQ_H_

#include <memory>
#include <string>
#include <vector>

#include "clawguard/store/dlq.h"
#include "postgresql/pg_conn.h"

namespace clawguard::pg {

class PgDlq final : public Dlq {
 public:
  // Open migrates the database (once per pool). kStoreUnavailable when it cannot be reached or
  // its schema is newer than this build.
  static Result<std::unique_ptr<PgDlq>> Open(std::shared_ptr<PgPool> pool);

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
  explicit PgDlq(std::shared_ptr<PgPool> pool) : pool_(std::move(pool)) {}
  // LockedEntry reads entry |id| FOR UPDATE inside the caller's transaction on |db|, with the
  // statement's time in |now_ms|; nullopt if there is none.
  Result<std::optional<DlqEntry>> LockedEntry(PgPool::Lease& db, int64_t id, int64_t& now_ms);
  // InsertAction writes an operator_actions row inside the caller's transaction on |db|.
  static Status InsertAction(PgPool::Lease& db, int64_t now_ms, const std::string& actor,
                             const std::string& action, const std::string& target,
                             const std::string& detail);
  // Now reads the statement time (the injected clock or the database's) on |db|.
  Result<int64_t> Now(PgPool::Lease& db) const;

  const std::shared_ptr<PgPool> pool_;
};

}  // namespace clawguard::pg

#endif  // CLAWGUARD_STORE_POSTGRESQL_PG_DLQ_H_
