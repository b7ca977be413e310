// pg_outbox.h — the PostgreSQL engine of Outbox (table outbox_rows, fenced by idem_records).
//
// Append runs in one transaction that first reads the event's idempotency record FOR SHARE: a
// takeover (an UPDATE of that record) waits until the append commits, and an append that comes
// after a takeover sees the new token and is refused (kFenced). The insert itself is
// `INSERT … ON CONFLICT DO NOTHING`, so two appends of one call index never both write. A send
// claims its row with one conditional UPDATE (Claim): of two hosts, one finds it due.
// Thread-safe (connections from the shared PgPool).
#ifndef CLAWGUARD_STORE_POSTGRESQL_PG_OUTBOX_H_
#define CLAWGUARD_STORE_POSTGRESQL_PG_OUTBOX_H_

#include <memory>
#include <string>
#include <vector>

#include "clawguard/store/outbox.h"
#include "postgresql/pg_conn.h"

namespace clawguard::pg {

class PgOutbox final : public Outbox {
 public:
  // Open migrates the database (once per pool). kStoreUnavailable when it cannot be reached.
  static Result<std::unique_ptr<PgOutbox>> Open(std::shared_ptr<PgPool> pool);

  Result<OutboxAppend> Append(const OutboxRow& row) override;
  Result<std::optional<OutboxRow>> Get(const std::string& event_key, int64_t call_index) override;
  // Claim is one conditional `UPDATE … RETURNING` (see pg_outbox.cpp): across hosts, one wins.
  Result<std::optional<OutboxRow>> Claim(const std::string& event_key, int64_t call_index,
                                         int64_t now_ms, const std::string& owner,
                                         int64_t until_ms) override;
  Status MarkAnswered(const std::string& event_key, int64_t call_index, const std::string& owner,
                      int reply_status, const std::string& reply_body) override;
  Status Release(const std::string& event_key, int64_t call_index, const std::string& owner,
                 int64_t next_attempt_ms) override;
  Status MarkDead(const std::string& event_key, int64_t call_index,
                  const std::string& owner) override;
  Status Defer(const std::string& event_key, int64_t call_index, int64_t now_ms,
               int64_t next_attempt_ms) override;
  Result<bool> Revive(const std::string& event_key, int64_t call_index, int64_t now_ms) override;
  Result<int64_t> ConfirmHeld(const std::string& event_key, int64_t now_ms) override;
  Result<std::vector<OutboxRow>> ListEvent(const std::string& event_key) override;
  Result<std::vector<OutboxRow>> DuePending(int64_t now_ms, int64_t limit) override;

 private:
  explicit PgOutbox(std::shared_ptr<PgPool> pool) : pool_(std::move(pool)) {}
  // Update runs one UPDATE whose $1/$2 are event_key/call_index; kNotFound if no row changed.
  Status Update(std::string_view what, const std::string& event_key, int64_t call_index,
                const std::string& sql, PgParams params);
  Result<std::vector<OutboxRow>> Select(std::string_view what, const std::string& sql,
                                        const PgParams& params);

  const std::shared_ptr<PgPool> pool_;
};

}  // namespace clawguard::pg

#endif  // CLAWGUARD_STORE_POSTGRESQL_PG_OUTBOX_H_
