// sqlite_outbox.h — the SQLite engine of Outbox (table outbox_rows, fenced by idem_records).
//
// Writes are ops of the file's SqliteWriter, shared with SqliteIdempotencyStore (group commit;
// the fence reads idem_records inside the same transaction as the insert); reads use the
// outbox's own connection behind a mutex. Thread-safe.
#ifndef CLAWGUARD_STORE_SQLITE_SQLITE_OUTBOX_H_
#define CLAWGUARD_STORE_SQLITE_SQLITE_OUTBOX_H_

#include <memory>
#include <string>

#include "clawguard/clock.h"
#include "clawguard/store/outbox.h"
#include "core/mutex.h"
#include "sqlite/sqlite_db.h"
#include "sqlite/sqlite_writer.h"

namespace clawguard::sqlite {

class SqliteOutbox final : public Outbox {
 public:
  // Open opens (creating) |path| and migrates it (MigrateIdempotencySchema). |clock| is not
  // read: every call that needs the time takes it as now_ms.
  static Result<std::unique_ptr<SqliteOutbox>> Open(const std::string& path, const Clock& clock);

  Result<OutboxAppend> Append(const OutboxRow& row) override;
  Result<std::optional<OutboxRow>> Get(const std::string& event_key, int64_t call_index) override;
  // Claim is one `UPDATE … RETURNING` in the writer's transaction (atomic across threads and
  // processes sharing the file).
  Result<std::optional<OutboxRow>> Claim(const std::string& event_key, int64_t call_index,
                                         int64_t now_ms, const std::string& owner,
                                         int64_t until_ms) override;
  Status MarkAnswered(const std::string& event_key, int64_t call_index, const std::string& owner,
                      int reply_status, const std::string& reply_body) override;
  // NoteAnswer queues the mark on the writer (SqliteWriter::Submit) and returns without waiting.
  void NoteAnswer(const std::string& event_key, int64_t call_index, const std::string& owner,
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
  SqliteOutbox(std::unique_ptr<SqliteDb> db, std::shared_ptr<SqliteWriter> writer)
      : db_(std::move(db)), writer_(std::move(writer)) {}
  // Update runs |sql| (?1 event_key, ?2 call_index, then |bind| adds the rest) in a transaction;
  // kNotFound when no row changed.
  template <typename BindFn>
  Status Update(const std::string& event_key, int64_t call_index, std::string_view sql,
                BindFn bind);

  Mutex mu_;
  // The connection for reads; writes go through writer_.
  const std::unique_ptr<SqliteDb> db_ CLAWGUARD_PT_GUARDED_BY(mu_);
  const std::shared_ptr<SqliteWriter> writer_;
};

}  // namespace clawguard::sqlite

#endif  // CLAWGUARD_STORE_SQLITE_SQLITE_OUTBOX_H_
