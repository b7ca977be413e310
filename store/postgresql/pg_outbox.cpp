// pg_outbox.cpp — outbox rows fenced by the idempotency record's token.
#include "postgresql/pg_outbox.h"

namespace clawguard::pg {
namespace {

constexpr char kColumns[] =
    "event_key, fencing_token, call_index, method, path, body, body_sha256, state, reply_status, "
    "reply_body, "
    "attempts, next_attempt_ms, idempotency_key, claimed_by";

OutboxRow ReadRow(const PgResult& r, int i) {
  OutboxRow row;
  row.event_key = r.Text(i, 0);
  row.fencing_token = r.Int(i, 1);
  row.call_index = r.Int(i, 2);
  row.method = r.Text(i, 3);
  row.path = r.Text(i, 4);
  row.body = r.Bytes(i, 5);
  row.body_sha256 = r.Text(i, 6);
  // The table's CHECK admits only known names; were another to appear, dead is never sent.
  row.state = OutboxStateFromName(r.Text(i, 7)).value_or(OutboxState::kDead);
  row.reply_status = static_cast<int>(r.Int(i, 8));
  row.reply_body = r.Bytes(i, 9);
  row.attempts = r.Int(i, 10);
  row.next_attempt_ms = r.Int(i, 11);
  row.idempotency_key = r.Text(i, 12);
  row.claimed_by = r.Text(i, 13);
  return row;
}

const std::string& SelectOne() {
  static const std::string sql =
      std::string("SELECT ") + kColumns +
      " FROM outbox_rows WHERE event_key = $1::text AND call_index = $2::bigint";
  return sql;
}

}  // namespace

Result<std::unique_ptr<PgOutbox>> PgOutbox::Open(std::shared_ptr<PgPool> pool) {
  CLAWGUARD_CHECK(pool != nullptr);
  CLAWGUARD_RETURN_IF_ERROR(pool->EnsureMigrated());
  return std::unique_ptr<PgOutbox>(new PgOutbox(std::move(pool)));
}

Result<OutboxAppend> PgOutbox::Append(const OutboxRow& row) {
  CLAWGUARD_RETURN_IF_ERROR(CheckNewOutboxRow(row));
  static const std::string kInsert =
      "INSERT INTO outbox_rows (event_key, fencing_token, call_index, method, path, body, "
      "body_sha256, state, "
      "attempts, next_attempt_ms, idempotency_key, claimed_by) VALUES ($1::text, $2::bigint, "
      "$3::bigint, $4::text, "
      "$5::text, $6::bytea, $7::text, $8::text, $11::bigint, $9::bigint, $10::text, $12::text) "
      "ON CONFLICT (event_key, call_index) DO NOTHING";
  // A row appended as sent records the gateway's first send attempt (outbox.h).
  const int64_t attempts = row.state == OutboxState::kSent ? 1 : 0;
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgTx tx, PgTx::Begin(db));
  OutboxAppend out;
  {
    // The fence: the record must exist, be in progress and hold exactly this token; FOR SHARE
    // keeps a takeover out until this transaction ends.
    CLAWGUARD_ASSIGN_OR_RETURN(
        PgResult f,
        db.Exec("append (fence)",
                "SELECT fencing_token, state FROM idem_records WHERE key = $1::text FOR SHARE",
                PgParams().Text(row.event_key)));
    if (f.rows() != 1 || f.Int(0, 0) != row.fencing_token || f.Text(0, 1) != "in_progress") {
      out.kind = OutboxAppend::Kind::kFenced;
      return out;  // rolls back: nothing written
    }
  }
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult ins, db.Exec("append (insert)", kInsert,
                                                   PgParams()
                                                       .Text(row.event_key)
                                                       .Int(row.fencing_token)
                                                       .Int(row.call_index)
                                                       .Text(row.method)
                                                       .Text(row.path)
                                                       .Bytes(row.body)
                                                       .Text(row.body_sha256)
                                                       .Text(OutboxStateName(row.state))
                                                       .Int(row.next_attempt_ms)
                                                       .Text(row.idempotency_key)
                                                       .Int(attempts)
                                                       .Text(row.claimed_by)));
  if (ins.Affected() == 1) {
    CLAWGUARD_RETURN_IF_ERROR(tx.Commit());
    out.kind = OutboxAppend::Kind::kAppended;
    out.row = row;
    out.row.attempts = attempts;
    out.row.reply_status = 0;
    out.row.reply_body.clear();
    return out;
  }
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult cur,
                             db.Exec("append (existing)", SelectOne() + " FOR UPDATE",
                                     PgParams().Text(row.event_key).Int(row.call_index)));
  if (cur.rows() != 1) return pool_->Unavailable("append", "the existing outbox row vanished");
  OutboxRow existing = ReadRow(cur, 0);
  const bool same = existing.method == row.method && existing.path == row.path &&
                    existing.body_sha256 == row.body_sha256 && existing.body == row.body;
  out.kind = same ? OutboxAppend::Kind::kExisting : OutboxAppend::Kind::kMismatch;
  if (same && existing.fencing_token != row.fencing_token) {
    // The row now belongs to the worker that took the lease over.
    CLAWGUARD_ASSIGN_OR_RETURN(
        PgResult u,
        db.Exec("append (re-own)",
                "UPDATE outbox_rows SET fencing_token = $3::bigint WHERE event_key = $1::text "
                "AND call_index = $2::bigint",
                PgParams().Text(row.event_key).Int(row.call_index).Int(row.fencing_token)));
    (void)u;
    existing.fencing_token = row.fencing_token;
  }
  CLAWGUARD_RETURN_IF_ERROR(tx.Commit());
  out.row = std::move(existing);
  return out;
}

Result<std::optional<OutboxRow>> PgOutbox::Get(const std::string& event_key, int64_t call_index) {
  CLAWGUARD_ASSIGN_OR_RETURN(
      std::vector<OutboxRow> rows,
      Select("get", SelectOne(), PgParams().Text(event_key).Int(call_index)));
  if (rows.empty()) return std::optional<OutboxRow>();
  return std::optional<OutboxRow>(std::move(rows.front()));
}

Status PgOutbox::Update(std::string_view what, const std::string& event_key, int64_t call_index,
                        const std::string& sql, PgParams params) {
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r, db.Exec(what, sql, params));
  if (r.Affected() != 1) {
    return Status(Reason::kNotFound, "no outbox row " + event_key + "/" +
                                         std::to_string(call_index) +
                                         " in a state that allows this change");
  }
  return Status::Ok();
}

Result<std::optional<OutboxRow>> PgOutbox::Claim(const std::string& event_key, int64_t call_index,
                                                 int64_t now_ms, const std::string& owner,
                                                 int64_t until_ms) {
  if (owner.empty()) return Status(Reason::kInternal, "outbox claim: the send needs an owner");
  // One conditional UPDATE under READ COMMITTED: a second claim of the same row waits for the
  // first to commit, then re-checks the WHERE on the row the first wrote (not due any more) and
  // changes nothing — one send at a time per row across hosts.
  static const std::string kSql =
      std::string(
          "UPDATE outbox_rows SET state = 'sent', attempts = attempts + 1, claimed_by = $4::text, "
          "next_attempt_ms = $5::bigint WHERE event_key = $1::text AND call_index = $2::bigint "
          "AND state IN ('pending', 'sent') AND next_attempt_ms <= $3::bigint RETURNING ") +
      kColumns;
  CLAWGUARD_ASSIGN_OR_RETURN(
      std::vector<OutboxRow> rows,
      Select("claim", kSql,
             PgParams().Text(event_key).Int(call_index).Int(now_ms).Text(owner).Int(until_ms)));
  if (rows.empty()) return std::optional<OutboxRow>();
  return std::optional<OutboxRow>(std::move(rows.front()));
}

Status PgOutbox::MarkAnswered(const std::string& event_key, int64_t call_index,
                              const std::string& owner, int reply_status,
                              const std::string& reply_body) {
  if (owner.empty()) return Status(Reason::kNotFound, "outbox answer: no send named");
  return Update(
      "mark answered", event_key, call_index,
      "UPDATE outbox_rows SET state = 'answered', reply_status = $3::integer, reply_body = "
      "$4::bytea, "
      "claimed_by = '' WHERE event_key = $1::text AND call_index = $2::bigint AND state = 'sent' "
      "AND claimed_by = $5::text",
      PgParams().Text(event_key).Int(call_index).Int(reply_status).Bytes(reply_body).Text(owner));
}

Status PgOutbox::Release(const std::string& event_key, int64_t call_index, const std::string& owner,
                         int64_t next_attempt_ms) {
  if (owner.empty()) return Status(Reason::kNotFound, "outbox release: no send named");
  return Update("release", event_key, call_index,
                "UPDATE outbox_rows SET next_attempt_ms = $3::bigint, claimed_by = '' WHERE "
                "event_key = $1::text "
                "AND call_index = $2::bigint AND state = 'sent' AND claimed_by = $4::text",
                PgParams().Text(event_key).Int(call_index).Int(next_attempt_ms).Text(owner));
}

Status PgOutbox::MarkDead(const std::string& event_key, int64_t call_index,
                          const std::string& owner) {
  if (owner.empty()) {
    return Update(
        "mark dead", event_key, call_index,
        "UPDATE outbox_rows SET state = 'dead', claimed_by = '' WHERE event_key = $1::text "
        "AND call_index = $2::bigint",
        PgParams().Text(event_key).Int(call_index));
  }
  return Update("mark dead", event_key, call_index,
                "UPDATE outbox_rows SET state = 'dead', claimed_by = '' WHERE event_key = $1::text "
                "AND call_index = $2::bigint AND state = 'sent' AND claimed_by = $3::text",
                PgParams().Text(event_key).Int(call_index).Text(owner));
}

Status PgOutbox::Defer(const std::string& event_key, int64_t call_index, int64_t now_ms,
                       int64_t next_attempt_ms) {
  return Update("defer", event_key, call_index,
                "UPDATE outbox_rows SET next_attempt_ms = $3::bigint WHERE event_key = $1::text "
                "AND call_index = $2::bigint AND state IN ('pending', 'sent') AND next_attempt_ms "
                "<= $4::bigint",
                PgParams().Text(event_key).Int(call_index).Int(next_attempt_ms).Int(now_ms));
}

Result<bool> PgOutbox::Revive(const std::string& event_key, int64_t call_index, int64_t now_ms) {
  // One statement: the UPDATE revives a dead or answered row; the outer SELECT says whether the
  // row exists at all (a pending/sent/held row is left alone: false).
  static const std::string kSql =
      "WITH revived AS (UPDATE outbox_rows SET state = 'pending', attempts = 0, next_attempt_ms = "
      "$3::bigint, "
      "reply_status = 0, reply_body = ''::bytea, claimed_by = '' WHERE event_key = $1::text AND "
      "call_index = $2::bigint "
      "AND state IN ('dead', 'answered') RETURNING 1) "
      "SELECT (SELECT count(*) FROM revived), "
      "(SELECT count(*) FROM outbox_rows WHERE event_key = $1::text AND call_index = $2::bigint)";
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(
      PgResult r, db.Exec("revive", kSql, PgParams().Text(event_key).Int(call_index).Int(now_ms)));
  if (r.rows() != 1) return pool_->Unavailable("revive", "expected one result row");
  if (r.Int(0, 1) == 0) {
    return Status(Reason::kNotFound,
                  "no outbox row " + event_key + "/" + std::to_string(call_index) + " to revive");
  }
  return r.Int(0, 0) == 1;
}

Result<int64_t> PgOutbox::ConfirmHeld(const std::string& event_key, int64_t now_ms) {
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(
      PgResult r, db.Exec("confirm held",
                          "UPDATE outbox_rows SET state = 'pending', next_attempt_ms = $2::bigint "
                          "WHERE event_key = $1::text AND state = 'held'",
                          PgParams().Text(event_key).Int(now_ms)));
  return r.Affected();
}

Result<std::vector<OutboxRow>> PgOutbox::Select(std::string_view what, const std::string& sql,
                                                const PgParams& params) {
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r, db.Exec(what, sql, params));
  std::vector<OutboxRow> out;
  out.reserve(static_cast<size_t>(r.rows()));
  for (int i = 0; i < r.rows(); ++i) out.push_back(ReadRow(r, i));
  return out;
}

Result<std::vector<OutboxRow>> PgOutbox::ListEvent(const std::string& event_key) {
  static const std::string kSql =
      std::string("SELECT ") + kColumns +
      " FROM outbox_rows WHERE event_key = $1::text ORDER BY call_index";
  return Select("list event", kSql, PgParams().Text(event_key));
}

Result<std::vector<OutboxRow>> PgOutbox::DuePending(int64_t now_ms, int64_t limit) {
  static const std::string kSql =
      std::string("SELECT ") + kColumns +
      " FROM outbox_rows WHERE state IN ('pending', 'sent') AND next_attempt_ms <= "
      "$1::bigint ORDER BY next_attempt_ms, event_key, call_index LIMIT $2::bigint";
  return Select("due pending", kSql, PgParams().Int(now_ms).Int(limit));
}

}  // namespace clawguard::pg
