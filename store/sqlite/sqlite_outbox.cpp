// sqlite_outbox.cpp — outbox rows fenced by the idempotency record's token.
#include "sqlite/sqlite_outbox.h"

#include "sqlite/sqlite_idempotency_store.h"

namespace clawguard::sqlite {
namespace {

constexpr std::string_view kColumns =
    "event_key, fencing_token, call_index, method, path, body, body_sha256, state, reply_status, "
    "reply_body, "
    "attempts, next_attempt_ms, idempotency_key, claimed_by";

// An event's rows are addressed by its record's id (the key's first column, schema v6), and their
// event key must match too; a row adds its call index. ?1 is the event key, ?2 the call index.
// Macros, so the statements stay literals (prepared once, cached by their text).
#define CLAWGUARD_OUTBOX_EVENT_IS \
  "record_id = (SELECT id FROM idem_records WHERE key = ?1) AND event_key = ?1"
#define CLAWGUARD_OUTBOX_ROW_IS CLAWGUARD_OUTBOX_EVENT_IS " AND call_index = ?2"

OutboxRow ReadRow(const Stmt& s) {
  OutboxRow r;
  r.event_key = s.Text(0);
  r.fencing_token = s.Int(1);
  r.call_index = s.Int(2);
  r.method = s.Text(3);
  r.path = s.Text(4);
  r.body = s.Text(5);
  r.body_sha256 = s.Text(6);
  // The table's CHECK admits only known names; were another to appear, dead is never sent.
  r.state = OutboxStateFromName(s.Text(7)).value_or(OutboxState::kDead);
  r.reply_status = static_cast<int>(s.Int(8));
  r.reply_body = s.Text(9);
  r.attempts = s.Int(10);
  r.next_attempt_ms = s.Int(11);
  r.idempotency_key = s.Text(12);
  r.claimed_by = s.Text(13);
  return r;
}

}  // namespace

Result<std::unique_ptr<SqliteOutbox>> SqliteOutbox::Open(const std::string& path,
                                                         const Clock& /*clock*/) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path));
  CLAWGUARD_RETURN_IF_ERROR(MigrateIdempotencySchema(*db));
  CLAWGUARD_ASSIGN_OR_RETURN(std::shared_ptr<SqliteWriter> writer, SqliteWriter::ForPath(path));
  return std::unique_ptr<SqliteOutbox>(new SqliteOutbox(std::move(db), std::move(writer)));
}

namespace {

Result<std::optional<OutboxRow>> LoadRow(SqliteDb& db, const std::string& event_key,
                                         int64_t call_index) {
  CLAWGUARD_ASSIGN_OR_RETURN(Stmt s,
                             db.Prepare("SELECT " + std::string(kColumns) +
                                        " FROM outbox_rows WHERE " CLAWGUARD_OUTBOX_ROW_IS));
  s.Bind(1, event_key).Bind(2, call_index);
  CLAWGUARD_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return std::optional<OutboxRow>();
  return std::optional<OutboxRow>(ReadRow(s));
}

// AppendIn is Append inside the writer's transaction.
Status AppendIn(SqliteDb& db, const OutboxRow& row, OutboxAppend& out) {
  int64_t record_id = 0;
  {
    // The fence: the idempotency record must exist, be in progress and hold exactly this token.
    CLAWGUARD_ASSIGN_OR_RETURN(
        Stmt f, db.Prepare("SELECT fencing_token, state, id FROM idem_records WHERE key = ?1"));
    f.Bind(1, row.event_key);
    CLAWGUARD_ASSIGN_OR_RETURN(bool found, f.Step());
    if (!found || f.Int(0) != row.fencing_token || f.Text(1) != "in_progress") {
      out.kind = OutboxAppend::Kind::kFenced;
      return Status::Ok();
    }
    record_id = f.Int(2);
  }
  CLAWGUARD_ASSIGN_OR_RETURN(
      Stmt i,
      db.Prepare(
          "INSERT INTO outbox_rows (record_id, event_key, fencing_token, call_index, method, path, "
          "body, body_sha256, state, attempts, next_attempt_ms, idempotency_key, claimed_by) "
          "VALUES (?12, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?10, ?11, ?8, ?9, ?13) "
          "ON CONFLICT (record_id, call_index) DO NOTHING"));
  // A row appended as sent records the gateway's first send attempt (outbox.h).
  const int64_t attempts = row.state == OutboxState::kSent ? 1 : 0;
  i.Bind(1, row.event_key)
      .Bind(2, row.fencing_token)
      .Bind(3, row.call_index)
      .Bind(4, row.method)
      .Bind(5, row.path);
  i.BindBlob(6, row.body)
      .Bind(7, row.body_sha256)
      .Bind(8, row.next_attempt_ms)
      .Bind(9, row.idempotency_key);
  i.Bind(10, std::string(OutboxStateName(row.state)))
      .Bind(11, attempts)
      .Bind(12, record_id)
      .Bind(13, row.claimed_by);
  CLAWGUARD_RETURN_IF_ERROR(i.Run());
  if (sqlite3_changes(db.raw()) == 0) {
    // The call index has a row already (a re-run plugin): compare, never overwrite. The insert is
    // tried first because a first-time call (the common case) then needs no lookup before it.
    CLAWGUARD_ASSIGN_OR_RETURN(std::optional<OutboxRow> existing,
                               LoadRow(db, row.event_key, row.call_index));
    if (!existing)
      return db.Error(
          "outbox append: the row that blocked the insert is gone or is another event's");
    const bool same = existing->method == row.method && existing->path == row.path &&
                      existing->body_sha256 == row.body_sha256 && existing->body == row.body;
    out.kind = same ? OutboxAppend::Kind::kExisting : OutboxAppend::Kind::kMismatch;
    if (same && existing->fencing_token != row.fencing_token) {
      // The row now belongs to the worker that took the lease over.
      CLAWGUARD_ASSIGN_OR_RETURN(
          Stmt u,
          db.Prepare("UPDATE outbox_rows SET fencing_token = ?3 WHERE " CLAWGUARD_OUTBOX_ROW_IS));
      u.Bind(1, row.event_key).Bind(2, row.call_index).Bind(3, row.fencing_token);
      CLAWGUARD_RETURN_IF_ERROR(u.Run());
      existing->fencing_token = row.fencing_token;
    }
    out.row = std::move(*existing);
    return Status::Ok();
  }
  out.kind = OutboxAppend::Kind::kAppended;
  out.row = row;
  out.row.attempts = attempts;
  out.row.reply_status = 0;
  out.row.reply_body.clear();
  return Status::Ok();
}

}  // namespace

Result<OutboxAppend> SqliteOutbox::Append(const OutboxRow& row) {
  CLAWGUARD_RETURN_IF_ERROR(CheckNewOutboxRow(row));
  OutboxAppend out;
  // Lazy (sqlite_writer.h): a row lost in a machine crash belongs to a delivery not answered yet
  // (Complete is durable and fsyncs it); the re-run plugin appends it again with the same
  // derived Idempotency-Key, so an ERP call already made is replayed, not repeated.
  const Status written = writer_->Write(
      [&](SqliteDb& db) {
        out = OutboxAppend{};
        return AppendIn(db, row, out);
      },
      Durability::kLazy);
  if (!written.ok()) return written;
  return out;
}

Result<std::optional<OutboxRow>> SqliteOutbox::Get(const std::string& event_key,
                                                   int64_t call_index) {
  MutexLock lock(mu_);
  return LoadRow(*db_, event_key, call_index);
}

namespace {

// UpdateRow runs |sql| (?1 event_key, ?2 call_index, then |bind| adds the rest) through |writer|
// with |durability|; kNotFound when no row changed.
template <typename BindFn>
Status UpdateRow(SqliteWriter& writer, Durability durability, const std::string& event_key,
                 int64_t call_index, std::string_view sql, BindFn bind) {
  return writer.Write(
      [&](SqliteDb& db) -> Status {
        {
          CLAWGUARD_ASSIGN_OR_RETURN(Stmt u, db.Prepare(sql));
          u.Bind(1, event_key).Bind(2, call_index);
          bind(u);
          CLAWGUARD_RETURN_IF_ERROR(u.Run());
        }
        if (sqlite3_changes(db.raw()) != 1) {
          return Status(Reason::kNotFound, "no outbox row " + event_key + "/" +
                                               std::to_string(call_index) +
                                               " in a state that allows this change");
        }
        return Status::Ok();
      },
      durability);
}

}  // namespace

// Update is UpdateRow's durable form (the header's private helper); the lazy steps of a delivery
// call UpdateRow with Durability::kLazy.
template <typename BindFn>
Status SqliteOutbox::Update(const std::string& event_key, int64_t call_index, std::string_view sql,
                            BindFn bind) {
  return UpdateRow(*writer_, Durability::kBeforeReturn, event_key, call_index, sql, bind);
}

Result<std::optional<OutboxRow>> SqliteOutbox::Claim(const std::string& event_key,
                                                     int64_t call_index, int64_t now_ms,
                                                     const std::string& owner, int64_t until_ms) {
  if (owner.empty()) return Status(Reason::kInternal, "outbox claim: the send needs an owner");
  std::optional<OutboxRow> claimed;
  // Lazy, as the send's record always was: a claim lost in a machine crash means one more send
  // with the same Idempotency-Key (the ERP replays); attempts may count one less. Atomic: the
  // condition and the change are one UPDATE in the writer's transaction, so of two claims (two
  // threads, or two processes on the file) only the first finds the row due.
  const Status written = writer_->Write(
      [&](SqliteDb& db) -> Status {
        claimed.reset();
        static const std::string kSql =
            "UPDATE outbox_rows SET state = 'sent', attempts = attempts + 1, claimed_by = ?4, "
            "next_attempt_ms = ?5 "
            "WHERE " CLAWGUARD_OUTBOX_ROW_IS
            " AND (state = 'pending' OR state = 'sent') AND next_attempt_ms <= ?3 "
            "RETURNING " +
            std::string(kColumns);
        CLAWGUARD_ASSIGN_OR_RETURN(Stmt u, db.Prepare(kSql));
        u.Bind(1, event_key).Bind(2, call_index).Bind(3, now_ms).Bind(4, owner).Bind(5, until_ms);
        CLAWGUARD_ASSIGN_OR_RETURN(bool row, u.Step());
        if (!row) return Status::Ok();
        claimed = ReadRow(u);
        // One row at most (the key); step once more so the statement completes here.
        CLAWGUARD_ASSIGN_OR_RETURN(row, u.Step());
        return Status::Ok();
      },
      Durability::kLazy);
  if (!written.ok()) return written;
  return claimed;
}

namespace {
// An owned send's answer: the row must still be sent and still that send's (outbox.h).
constexpr std::string_view kMarkAnsweredSql =
    "UPDATE outbox_rows SET state = 'answered', reply_status = ?3, reply_body = ?4, claimed_by = "
    "'' "
    "WHERE " CLAWGUARD_OUTBOX_ROW_IS " AND state = 'sent' AND claimed_by = ?5";
}  // namespace

Status SqliteOutbox::MarkAnswered(const std::string& event_key, int64_t call_index,
                                  const std::string& owner, int reply_status,
                                  const std::string& reply_body) {
  if (owner.empty()) return Status(Reason::kNotFound, "outbox answer: no send named");
  // Lazy: a lost reply is fetched again by re-sending with the same Idempotency-Key (the ERP
  // replays it); an answer built from it is stored by the durable Complete, which fsyncs this.
  return UpdateRow(
      *writer_, Durability::kLazy, event_key, call_index, kMarkAnsweredSql,
      [&](Stmt& s) { s.Bind(3, int64_t{reply_status}).BindBlob(4, reply_body).Bind(5, owner); });
}

void SqliteOutbox::NoteAnswer(const std::string& event_key, int64_t call_index,
                              const std::string& owner, int reply_status,
                              const std::string& reply_body) {
  if (owner.empty()) return;
  // Not waited for: the delivery's durable Complete is queued after it, so it commits first and
  // is flushed with it. A mark that fails or is lost is MarkAnswered's lazy case above; one that
  // finds the row no longer this send's changes nothing, as MarkAnswered.
  writer_->Submit([event_key, call_index, owner, reply_status, reply_body](SqliteDb& db) -> Status {
    CLAWGUARD_ASSIGN_OR_RETURN(Stmt u, db.Prepare(kMarkAnsweredSql));
    u.Bind(1, event_key)
        .Bind(2, call_index)
        .Bind(3, int64_t{reply_status})
        .BindBlob(4, reply_body)
        .Bind(5, owner);
    return u.Run();
  });
}

Status SqliteOutbox::Release(const std::string& event_key, int64_t call_index,
                             const std::string& owner, int64_t next_attempt_ms) {
  if (owner.empty()) return Status(Reason::kNotFound, "outbox release: no send named");
  // Lazy: a lost release leaves the row claimed until its claim ends, then due (same key).
  return UpdateRow(
      *writer_, Durability::kLazy, event_key, call_index,
      "UPDATE outbox_rows SET next_attempt_ms = ?3, claimed_by = '' WHERE " CLAWGUARD_OUTBOX_ROW_IS
      " AND state = 'sent' AND claimed_by = ?4",
      [&](Stmt& s) { s.Bind(3, next_attempt_ms).Bind(4, owner); });
}

Status SqliteOutbox::MarkDead(const std::string& event_key, int64_t call_index,
                              const std::string& owner) {
  // Durable: a dead row is handed to operators (DLQ) and must not come back to life.
  if (owner.empty()) {
    return Update(
        event_key, call_index,
        "UPDATE outbox_rows SET state = 'dead', claimed_by = '' WHERE " CLAWGUARD_OUTBOX_ROW_IS,
        [](Stmt&) {});
  }
  return Update(
      event_key, call_index,
      "UPDATE outbox_rows SET state = 'dead', claimed_by = '' WHERE " CLAWGUARD_OUTBOX_ROW_IS
      " AND state = 'sent' AND claimed_by = ?3",
      [&](Stmt& s) { s.Bind(3, owner); });
}

Status SqliteOutbox::Defer(const std::string& event_key, int64_t call_index, int64_t now_ms,
                           int64_t next_attempt_ms) {
  // Lazy: a lost deferral only makes the retry come sooner (same Idempotency-Key). A row a live
  // send owns is not due, so it is left alone.
  return UpdateRow(*writer_, Durability::kLazy, event_key, call_index,
                   "UPDATE outbox_rows SET next_attempt_ms = ?3 WHERE " CLAWGUARD_OUTBOX_ROW_IS
                   " AND (state = 'pending' OR state = 'sent') AND next_attempt_ms <= ?4",
                   [&](Stmt& s) { s.Bind(3, next_attempt_ms).Bind(4, now_ms); });
}

Result<bool> SqliteOutbox::Revive(const std::string& event_key, int64_t call_index,
                                  int64_t now_ms) {
  bool revived = false;
  const Status written = writer_->Write([&](SqliteDb& db) -> Status {
    revived = false;
    {
      CLAWGUARD_ASSIGN_OR_RETURN(
          Stmt u,
          db.Prepare(
              "UPDATE outbox_rows SET state = 'pending', attempts = 0, next_attempt_ms = ?3, "
              "reply_status = 0, reply_body = x'', claimed_by = '' WHERE " CLAWGUARD_OUTBOX_ROW_IS
              " AND state IN ('dead', 'answered')"));
      u.Bind(1, event_key).Bind(2, call_index).Bind(3, now_ms);
      CLAWGUARD_RETURN_IF_ERROR(u.Run());
    }
    if (sqlite3_changes(db.raw()) == 1) {
      revived = true;
      return Status::Ok();
    }
    CLAWGUARD_ASSIGN_OR_RETURN(std::optional<OutboxRow> row, LoadRow(db, event_key, call_index));
    if (!row) {
      return Status(Reason::kNotFound,
                    "no outbox row " + event_key + "/" + std::to_string(call_index) + " to revive");
    }
    return Status::Ok();
  });
  if (!written.ok()) return written;
  return revived;
}

Result<int64_t> SqliteOutbox::ConfirmHeld(const std::string& event_key, int64_t now_ms) {
  int64_t changed = 0;
  const Status written = writer_->Write([&](SqliteDb& db) -> Status {
    CLAWGUARD_ASSIGN_OR_RETURN(
        Stmt u, db.Prepare("UPDATE outbox_rows SET state = 'pending', next_attempt_ms = ?2 "
                           "WHERE " CLAWGUARD_OUTBOX_EVENT_IS " AND state = 'held'"));
    u.Bind(1, event_key).Bind(2, now_ms);
    CLAWGUARD_RETURN_IF_ERROR(u.Run());
    changed = sqlite3_changes(db.raw());
    return Status::Ok();
  });
  if (!written.ok()) return written;
  return changed;
}

Result<std::vector<OutboxRow>> SqliteOutbox::ListEvent(const std::string& event_key) {
  MutexLock lock(mu_);
  CLAWGUARD_ASSIGN_OR_RETURN(
      Stmt s,
      db_->Prepare("SELECT " + std::string(kColumns) +
                   " FROM outbox_rows WHERE " CLAWGUARD_OUTBOX_EVENT_IS " ORDER BY call_index"));
  s.Bind(1, event_key);
  std::vector<OutboxRow> out;
  while (true) {
    CLAWGUARD_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    out.push_back(ReadRow(s));
  }
  return out;
}

Result<std::vector<OutboxRow>> SqliteOutbox::DuePending(int64_t now_ms, int64_t limit) {
  MutexLock lock(mu_);
  CLAWGUARD_ASSIGN_OR_RETURN(
      Stmt s,
      db_->Prepare("SELECT " + std::string(kColumns) +
                   " FROM outbox_rows WHERE state IN ('pending', 'sent') AND next_attempt_ms <= ?1 "
                   "ORDER BY next_attempt_ms, event_key, call_index LIMIT ?2"));
  s.Bind(1, now_ms).Bind(2, limit);
  std::vector<OutboxRow> out;
  while (true) {
    CLAWGUARD_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    out.push_back(ReadRow(s));
  }
  return out;
}

#undef CLAWGUARD_OUTBOX_ROW_IS
#undef CLAWGUARD_OUTBOX_EVENT_IS

}  // namespace clawguard::sqlite
