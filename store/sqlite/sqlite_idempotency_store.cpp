// sqlite_idempotency_store.cpp — conditional writes on idem_records inside BEGIN IMMEDIATE.
// Over 500 lines on purpose: every operation of the IdempotencyStore interface is one fenced
// transaction on the same table and statements; the interface is the seam.
#include "sqlite/sqlite_idempotency_store.h"

#include <algorithm>

namespace clawguard::sqlite {
namespace {

// kColumns are read by every load; kRequestColumns only where the stored request is wanted
// (Get, ListStuck), so a claim never copies a large body it does not need.
constexpr std::string_view kColumns =
    "key, plugin, route, level, fingerprint, state, lease_until_ms, fencing_token, status, "
    "content_type, body, "
    "created_ms, updated_ms, webhook_id, x_idempotency_key, has_request, reconcile_attempts, "
    "tombstone_until_ms";
constexpr std::string_view kRequestColumns = ", request_content_type, request_body";

// Row is one idem_records row: a record, or a tombstone (purged record).
struct Row {
  IdempotencyRecord rec;
  bool tombstone = false;
};

Row ReadRow(const Stmt& s, bool with_request) {
  Row row;
  IdempotencyRecord& r = row.rec;
  r.key = s.Text(0);
  r.plugin = s.Text(1);
  r.route = s.Text(2);
  r.level = static_cast<int>(s.Int(3));
  r.fingerprint = s.Text(4);
  const std::string state = s.Text(5);
  row.tombstone = state == "tombstone";
  // A tombstone was a completed record: its outcome carries the status it had stored.
  r.state = state == "in_progress" ? IdemState::kInProgress : IdemState::kCompleted;
  r.lease_until_ms = s.Int(6);
  r.fencing_token = s.Int(7);
  r.status = static_cast<int>(s.Int(8));
  r.content_type = s.Text(9);
  r.body = s.Text(10);
  r.created_ms = s.Int(11);
  r.updated_ms = s.Int(12);
  r.webhook_id = s.Text(13);
  r.x_idempotency_key = s.Text(14);
  r.has_request = s.Int(15) != 0;
  r.reconcile_attempts = s.Int(16);
  r.tombstone_until_ms = s.Int(17);
  if (with_request) {
    r.request_content_type = s.Text(18);
    r.request_body = s.Text(19);
  }
  return row;
}

}  // namespace

Result<std::unique_ptr<SqliteIdempotencyStore>> SqliteIdempotencyStore::Open(
    const std::string& path, const Clock& clock) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path));
  CLAWGUARD_RETURN_IF_ERROR(MigrateIdempotencySchema(*db));
  CLAWGUARD_ASSIGN_OR_RETURN(std::shared_ptr<SqliteWriter> writer, SqliteWriter::ForPath(path));
  return std::unique_ptr<SqliteIdempotencyStore>(
      new SqliteIdempotencyStore(std::move(db), std::move(writer), clock));
}

namespace {

Result<std::optional<Row>> LoadRow(SqliteDb& db, const std::string& key, bool with_request) {
  CLAWGUARD_ASSIGN_OR_RETURN(
      Stmt s, db.Prepare("SELECT " + std::string(kColumns) +
                         (with_request ? std::string(kRequestColumns) : std::string()) +
                         " FROM idem_records WHERE key = ?1"));
  s.Bind(1, key);
  CLAWGUARD_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return std::optional<Row>();
  return std::optional<Row>(ReadRow(s, with_request));
}

Result<int64_t> ReadGeneration(SqliteDb& db) {
  CLAWGUARD_ASSIGN_OR_RETURN(Stmt s,
                             db.Prepare("SELECT generation FROM idem_generation WHERE id = 1"));
  CLAWGUARD_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return db.Error("idem_generation is empty");
  return s.Int(0);
}

Result<int64_t> BumpIn(SqliteDb& db) {
  CLAWGUARD_RETURN_IF_ERROR(
      db.Exec("UPDATE idem_generation SET generation = generation + 1 WHERE id = 1"));
  return ReadGeneration(db);
}

// FencedUpdate runs one UPDATE … WHERE key = ?1 AND fencing_token = ?2 AND state = 'in_progress'
// through the writer with |durability|; kApplied if it changed the record.
template <typename BindFn>
Result<FencedWrite> FencedUpdate(SqliteWriter& writer, Durability durability,
                                 const std::string& key, int64_t token, std::string_view sql,
                                 BindFn bind) {
  bool applied = false;
  const Status written = writer.Write(
      [&](SqliteDb& db) -> Status {
        CLAWGUARD_ASSIGN_OR_RETURN(Stmt u, db.Prepare(sql));
        u.Bind(1, key).Bind(2, token);
        bind(u);
        CLAWGUARD_RETURN_IF_ERROR(u.Run());
        applied = sqlite3_changes(db.raw()) == 1;
        return Status::Ok();
      },
      durability);
  if (!written.ok()) return written;
  return applied ? FencedWrite::kApplied : FencedWrite::kFenced;
}

// Next is what a claim does after reading the key's row.
enum class Next {
  kAnswer,    // answer without writing (Verdict::answer)
  kTakeOver,  // an in-progress record whose lease ended: the next token
  kRevive,    // a tombstone past its end: the key is new again (the next token, a fresh record)
};
struct Verdict {
  Next next = Next::kAnswer;
  ClaimOutcome answer;
};

// Decide is the claim's decision on an existing row (the order of the header's file comment).
Verdict Decide(Row row, const std::string& fingerprint, int64_t now) {
  Verdict v;
  if (row.tombstone && row.rec.tombstone_until_ms <= now) {
    v.next = Next::kRevive;
    return v;
  }
  // Fingerprint first: a mismatch never reveals or changes the record's state.
  if (!row.rec.fingerprint.empty() && row.rec.fingerprint != fingerprint) {
    v.answer.kind = ClaimOutcome::Kind::kFingerprintMismatch;
    return v;
  }
  if (row.tombstone) {
    v.answer.kind = ClaimOutcome::Kind::kTombstone;
    v.answer.record = std::move(row.rec);
    return v;
  }
  if (row.rec.state == IdemState::kCompleted) {
    v.answer.kind = ClaimOutcome::Kind::kCompleted;
    v.answer.record = std::move(row.rec);
    return v;
  }
  if (row.rec.lease_until_ms > now) {
    v.answer.kind = ClaimOutcome::Kind::kInProgress;
    v.answer.retry_after_ms = std::max<int64_t>(1, row.rec.lease_until_ms - now);
    v.answer.record = std::move(row.rec);
    return v;
  }
  v.next = Next::kTakeOver;
  return v;
}

// Parameters of the claim statements: ?1 key, ?2 fingerprint, ?3 lease end, ?4 now, ?5 webhook id,
// ?6 X-Idempotency-Key, ?7 plugin, ?8 route, ?9 level, ?10 the token seen, ?11..?13 the request.
void BindClaim(Stmt& u, const std::string& key, const std::string& fingerprint,
               const ClaimMeta& meta, int64_t now, int64_t lease_ms, int64_t seen_token) {
  const bool storable = IdemRequestStorable(meta);
  u.Bind(1, key).Bind(2, fingerprint).Bind(3, now + lease_ms).Bind(4, now).Bind(5, meta.webhook_id);
  u.Bind(6, meta.x_idempotency_key)
      .Bind(7, meta.plugin)
      .Bind(8, meta.route)
      .Bind(9, int64_t{meta.level});
  u.Bind(10, seen_token);
  // Never a null pointer: SQLite binds a blob whose pointer is null as NULL, not as x''.
  const std::string_view none("");
  u.BindBlob(11, storable ? std::string_view(meta.request_content_type.c_str(),
                                             meta.request_content_type.size())
                          : none);
  u.BindBlob(
      12, storable ? std::string_view(meta.request_body.c_str(), meta.request_body.size()) : none);
  u.Bind(13, int64_t{storable ? 1 : 0});
}

// InsertedRecord is the record kInsertSql writes (the request columns are not read back by a
// claim: LoadRow without the request).
IdempotencyRecord InsertedRecord(const std::string& key, const std::string& fingerprint,
                                 const ClaimMeta& meta, int64_t now, int64_t lease_ms,
                                 int64_t token) {
  IdempotencyRecord r;
  r.key = key;
  r.plugin = meta.plugin;
  r.route = meta.route;
  r.level = meta.level;
  r.fingerprint = fingerprint;
  r.state = IdemState::kInProgress;
  r.lease_until_ms = now + lease_ms;
  r.fencing_token = token;  // the ?10 BindClaim bound
  r.status = 0;
  r.created_ms = now;
  r.updated_ms = now;
  r.webhook_id = meta.webhook_id;
  r.x_idempotency_key = meta.x_idempotency_key;
  r.has_request = IdemRequestStorable(meta);
  r.reconcile_attempts = 0;
  r.tombstone_until_ms = 0;
  return r;
}

// The takeover keeps a stored request (the first claim's); the request columns are assigned
// from the row's values before the update (SQLite evaluates every SET expression first).
constexpr std::string_view kTakeOverSql =
    "UPDATE idem_records SET fingerprint = ?2, lease_until_ms = ?3, fencing_token = fencing_token "
    "+ 1, "
    "updated_ms = ?4, webhook_id = ?5, x_idempotency_key = ?6, plugin = ?7, route = ?8, level = "
    "?9, "
    "request_content_type = CASE WHEN has_request = 1 THEN request_content_type ELSE ?11 END, "
    "request_body = CASE WHEN has_request = 1 THEN request_body ELSE ?12 END, "
    "has_request = CASE WHEN has_request = 1 THEN 1 ELSE ?13 END "
    "WHERE key = ?1 AND state = 'in_progress' AND fencing_token = ?10";
constexpr std::string_view kReviveSql =
    "UPDATE idem_records SET state = 'in_progress', fingerprint = ?2, lease_until_ms = ?3, "
    "fencing_token = fencing_token + 1, status = 0, content_type = '', body = x'', created_ms = "
    "?4, updated_ms = ?4, "
    "webhook_id = ?5, x_idempotency_key = ?6, plugin = ?7, route = ?8, level = ?9, "
    "request_content_type = ?11, "
    "request_body = ?12, has_request = ?13, reconcile_attempts = 0, tombstone_until_ms = 0 "
    "WHERE key = ?1 AND state = 'tombstone' AND fencing_token = ?10";
constexpr std::string_view kInsertSql =
    "INSERT INTO idem_records (key, fingerprint, lease_until_ms, created_ms, updated_ms, "
    "webhook_id, "
    "x_idempotency_key, plugin, route, level, state, fencing_token, request_content_type, "
    "request_body, has_request) "
    "VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6, ?7, ?8, ?9, 'in_progress', ?10, ?11, ?12, ?13) "
    "ON CONFLICT (key) DO NOTHING";

// The columns a purge clears: a tombstone keeps key, plugin, route, level, fingerprint, status,
// fencing token and times — no body, no header values, no request.
constexpr std::string_view kTombstoneSql =
    "UPDATE idem_records SET state = 'tombstone', tombstone_until_ms = ?2, updated_ms = ?3, "
    "lease_until_ms = 0, "
    "content_type = '', body = x'', webhook_id = '', x_idempotency_key = '', has_request = 0, "
    "request_content_type = x'', request_body = x'', reconcile_attempts = 0 WHERE key = ?1 AND "
    "state = 'completed'";

// What Reset and ClearTombstone write (a tombstone becomes a reset record).
constexpr std::string_view kResetSql =
    "UPDATE idem_records SET state = 'in_progress', fingerprint = '', lease_until_ms = 0, status = "
    "0, "
    "content_type = '', body = x'', has_request = 0, request_content_type = x'', request_body = "
    "x'', "
    "reconcile_attempts = 0, tombstone_until_ms = 0, updated_ms = ?2 WHERE key = ?1";

Status CheckLimit(std::string_view what, int64_t limit) {
  if (limit >= 1 && limit <= kMaxIdemBatch) return Status::Ok();
  return Status(Reason::kUsage, std::string(what) + ": limit must be 1.." +
                                    std::to_string(kMaxIdemBatch) + ", got " +
                                    std::to_string(limit));
}

}  // namespace

Result<ClaimOutcome> SqliteIdempotencyStore::Claim(const std::string& key,
                                                   const std::string& fingerprint,
                                                   const ClaimMeta& meta, int64_t lease_ms) {
  CLAWGUARD_CHECK(!fingerprint.empty() && lease_ms > 0);
  // Straight to the writer, which inserts a new key and otherwise reads the row and answers a
  // completed record, a tombstone or another fingerprint without writing. There is no
  // read-snapshot pre-check on the reader connection: it would serve only replays that miss the
  // host's record cache, yet cost every first-time delivery a read transaction (shared-memory
  // locks, ~3 page reads from a WAL the writer just changed, a process-wide mutex). Without it
  // first-time deliveries are 9 % faster and cold replays 7 % slower, still 4–5× a first-time
  // delivery (decision 0026).
  // Lazy (sqlite_writer.h): nothing is answered from a claim alone but "in progress, retry".
  // Lost in a machine crash, the delivery was not answered, so its sender retries and it is
  // claimed again; the ERP calls made meanwhile carry derived Idempotency-Keys and replay.
  ClaimOutcome out;
  const Status written = writer_->Write(
      [&](SqliteDb& db) -> Status {
        out = ClaimOutcome{};
        const int64_t now = clock_.NowMillis();
        {
          // The insert is tried first: a new key (every first-time delivery) then needs no lookup
          // before it. ON CONFLICT (key) DO NOTHING: an existing record is left as it is, and read.
          CLAWGUARD_ASSIGN_OR_RETURN(Stmt i, db.Prepare(kInsertSql));
          BindClaim(i, key, fingerprint, meta, now, lease_ms, /*seen_token=*/1);
          CLAWGUARD_RETURN_IF_ERROR(i.Run());
        }
        if (sqlite3_changes(db.raw()) == 1) {
          // A new record is exactly what kInsertSql wrote: no read back inside the writer's batch
          // (the writer is the host's serial section; ClaimsANewKeyWithTokenOne compares it with
          // Get).
          out.kind = ClaimOutcome::Kind::kClaimed;
          out.record = InsertedRecord(key, fingerprint, meta, now, lease_ms, /*token=*/1);
          out.fencing_token = out.record.fencing_token;
          return Status::Ok();
        }
        CLAWGUARD_ASSIGN_OR_RETURN(std::optional<Row> row,
                                   LoadRow(db, key, /*with_request=*/false));
        if (!row) return db.Error("claim: the record that blocked the insert is gone");
        std::string_view sql;
        const int64_t seen_token = row->rec.fencing_token;
        Verdict v = Decide(std::move(*row), fingerprint, now);
        switch (v.next) {
          case Next::kAnswer: out = std::move(v.answer); return Status::Ok();  // nothing written
          case Next::kTakeOver:
            sql = kTakeOverSql;
            out.taken_over = true;
            break;
          case Next::kRevive: sql = kReviveSql; break;
        }
        CLAWGUARD_ASSIGN_OR_RETURN(Stmt u, db.Prepare(sql));
        BindClaim(u, key, fingerprint, meta, now, lease_ms, seen_token);
        CLAWGUARD_RETURN_IF_ERROR(u.Run());
        if (sqlite3_changes(db.raw()) != 1)
          return db.Error("claim of an idempotency record changed no row");
        out.kind = ClaimOutcome::Kind::kClaimed;
        CLAWGUARD_ASSIGN_OR_RETURN(std::optional<Row> after,
                                   LoadRow(db, key, /*with_request=*/false));
        CLAWGUARD_CHECK(after.has_value());
        out.fencing_token = after->rec.fencing_token;
        out.record = std::move(after->rec);
        return Status::Ok();
      },
      Durability::kLazy);
  if (!written.ok()) return written;
  return out;
}

Result<FencedWrite> SqliteIdempotencyStore::Renew(const std::string& key, int64_t token,
                                                  int64_t lease_ms) {
  const int64_t now = clock_.NowMillis();
  // Lazy: a lost renew only shortens a lease whose holder died with the machine.
  return FencedUpdate(*writer_, Durability::kLazy, key, token,
                      "UPDATE idem_records SET lease_until_ms = ?3, updated_ms = ?4 "
                      "WHERE key = ?1 AND fencing_token = ?2 AND state = 'in_progress'",
                      [&](Stmt& u) { u.Bind(3, now + lease_ms).Bind(4, now); });
}

Result<FencedWrite> SqliteIdempotencyStore::Complete(const std::string& key, int64_t token,
                                                     int status, const std::string& content_type,
                                                     const std::string& body) {
  const int64_t now = clock_.NowMillis();
  // Durable: this stores the answer, which is sent only after this returns (and its fsync
  // makes every earlier lazy step of this delivery durable too).
  return FencedUpdate(
      *writer_, Durability::kBeforeReturn, key, token,
      "UPDATE idem_records SET state = 'completed', status = ?3, content_type = ?4, body = ?5, "
      "lease_until_ms = 0, updated_ms = ?6, has_request = 0, request_content_type = x'', "
      "request_body = x'', reconcile_attempts = 0 "
      "WHERE key = ?1 AND fencing_token = ?2 AND state = 'in_progress'",
      [&](Stmt& u) {
        u.Bind(3, int64_t{status}).Bind(4, content_type).BindBlob(5, body).Bind(6, now);
      });
}

Result<FencedWrite> SqliteIdempotencyStore::Release(const std::string& key, int64_t token) {
  const int64_t now = clock_.NowMillis();
  // Lazy: a lost release leaves the lease to expire by itself (a release is best effort anyway).
  return FencedUpdate(*writer_, Durability::kLazy, key, token,
                      "UPDATE idem_records SET lease_until_ms = 0, updated_ms = ?3 "
                      "WHERE key = ?1 AND fencing_token = ?2 AND state = 'in_progress'",
                      [&](Stmt& u) { u.Bind(3, now); });
}

Result<std::optional<IdempotencyRecord>> SqliteIdempotencyStore::Get(const std::string& key) {
  MutexLock lock(mu_);
  CLAWGUARD_ASSIGN_OR_RETURN(std::optional<Row> row, LoadRow(*db_, key, /*with_request=*/true));
  if (!row || row->tombstone) return std::optional<IdempotencyRecord>();
  return std::optional<IdempotencyRecord>(std::move(row->rec));
}

Result<bool> SqliteIdempotencyStore::ResetWhere(const std::string& key,
                                                std::string_view condition) {
  bool existed = false;
  const Status written = writer_->Write([&](SqliteDb& db) -> Status {
    CLAWGUARD_ASSIGN_OR_RETURN(Stmt u, db.Prepare(std::string(kResetSql) + std::string(condition)));
    u.Bind(1, key).Bind(2, clock_.NowMillis());
    CLAWGUARD_RETURN_IF_ERROR(u.Run());
    existed = sqlite3_changes(db.raw()) == 1;
    if (existed) {
      CLAWGUARD_ASSIGN_OR_RETURN(int64_t g, BumpIn(db));
      (void)g;
    }
    return Status::Ok();
  });
  if (!written.ok()) return written;
  return existed;
}

Result<bool> SqliteIdempotencyStore::Reset(const std::string& key) { return ResetWhere(key, ""); }

Result<bool> SqliteIdempotencyStore::ClearTombstone(const std::string& key) {
  return ResetWhere(key, " AND state = 'tombstone'");
}

Result<int64_t> SqliteIdempotencyStore::Generation() {
  MutexLock lock(mu_);
  return ReadGeneration(*db_);
}

Result<int64_t> SqliteIdempotencyStore::BumpGeneration() {
  int64_t g = 0;
  const Status written = writer_->Write([&](SqliteDb& db) -> Status {
    CLAWGUARD_ASSIGN_OR_RETURN(g, BumpIn(db));
    return Status::Ok();
  });
  if (!written.ok()) return written;
  return g;
}

Result<int64_t> SqliteIdempotencyStore::Purge(int64_t completed_before_ms,
                                              int64_t tombstone_until_ms, int64_t limit) {
  CLAWGUARD_RETURN_IF_ERROR(CheckLimit("idempotency purge", limit));
  int64_t purged = 0;
  const Status written = writer_->Write([&](SqliteDb& db) -> Status {
    purged = 0;
    const int64_t now = clock_.NowMillis();
    std::vector<std::string> keys;
    {
      // A record whose ERP calls are not final yet (pending, sent or held rows) is kept: its
      // outbox rows are the retry worker's queue.
      CLAWGUARD_ASSIGN_OR_RETURN(
          Stmt q,
          db.Prepare(
              "SELECT key FROM idem_records r WHERE state = 'completed' AND updated_ms < ?1 "
              "AND NOT EXISTS (SELECT 1 FROM outbox_rows o WHERE o.record_id = r.id "
              "AND o.state IN ('pending', 'sent', 'held')) ORDER BY updated_ms, key LIMIT ?2"));
      q.Bind(1, completed_before_ms).Bind(2, limit);
      while (true) {
        CLAWGUARD_ASSIGN_OR_RETURN(bool row, q.Step());
        if (!row) break;
        keys.push_back(q.Text(0));
      }
    }
    CLAWGUARD_ASSIGN_OR_RETURN(Stmt del,
                               db.Prepare("DELETE FROM outbox_rows WHERE record_id = (SELECT id "
                                          "FROM idem_records WHERE key = ?1)"));
    CLAWGUARD_ASSIGN_OR_RETURN(Stmt tomb, db.Prepare(kTombstoneSql));
    for (const std::string& key : keys) {
      del.Bind(1, key);
      CLAWGUARD_RETURN_IF_ERROR(del.Run());
      CLAWGUARD_RETURN_IF_ERROR(del.Reset());
      tomb.Bind(1, key).Bind(2, tombstone_until_ms).Bind(3, now);
      CLAWGUARD_RETURN_IF_ERROR(tomb.Run());
      purged += sqlite3_changes(db.raw());
      CLAWGUARD_RETURN_IF_ERROR(tomb.Reset());
    }
    CLAWGUARD_ASSIGN_OR_RETURN(
        Stmt expired,
        db.Prepare("DELETE FROM idem_records WHERE key IN (SELECT key FROM idem_records "
                   "WHERE state = 'tombstone' AND tombstone_until_ms <= ?1 "
                   "ORDER BY tombstone_until_ms LIMIT ?2)"));
    expired.Bind(1, now).Bind(2, limit);
    return expired.Run();
  });
  if (!written.ok()) return written;
  return purged;
}

Result<std::vector<IdempotencyRecord>> SqliteIdempotencyStore::ListStuck(int64_t now_ms,
                                                                         int64_t stuck_for_ms,
                                                                         int64_t limit) {
  CLAWGUARD_RETURN_IF_ERROR(CheckLimit("list of stuck idempotency records", limit));
  if (stuck_for_ms < 0) {
    return Status(Reason::kUsage,
                  "list of stuck idempotency records: stuck_for must be >= 0 ms, got " +
                      std::to_string(stuck_for_ms));
  }
  MutexLock lock(mu_);
  CLAWGUARD_ASSIGN_OR_RETURN(
      Stmt q,
      db_->Prepare("SELECT " + std::string(kColumns) + std::string(kRequestColumns) +
                   " FROM idem_records WHERE state = 'in_progress' AND fingerprint <> '' "
                   "AND lease_until_ms <= ?1 AND updated_ms <= ?1 "
                   "ORDER BY reconcile_attempts, MAX(lease_until_ms, updated_ms), key LIMIT ?2"));
  q.Bind(1, now_ms - stuck_for_ms).Bind(2, limit);
  std::vector<IdempotencyRecord> out;
  while (true) {
    CLAWGUARD_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    out.push_back(ReadRow(q, /*with_request=*/true).rec);
  }
  return out;
}

Result<int64_t> SqliteIdempotencyStore::NoteReconcileAttempt(const std::string& key) {
  std::optional<int64_t> attempts;
  const Status written = writer_->Write([&](SqliteDb& db) -> Status {
    attempts.reset();
    CLAWGUARD_ASSIGN_OR_RETURN(
        Stmt u, db.Prepare("UPDATE idem_records SET reconcile_attempts = reconcile_attempts + 1, "
                           "updated_ms = ?2 WHERE key = ?1 AND state <> 'tombstone'"));
    u.Bind(1, key).Bind(2, clock_.NowMillis());
    CLAWGUARD_RETURN_IF_ERROR(u.Run());
    if (sqlite3_changes(db.raw()) != 1) return Status::Ok();
    CLAWGUARD_ASSIGN_OR_RETURN(
        Stmt q, db.Prepare("SELECT reconcile_attempts FROM idem_records WHERE key = ?1"));
    q.Bind(1, key);
    CLAWGUARD_ASSIGN_OR_RETURN(bool row, q.Step());
    if (row) attempts = q.Int(0);
    return Status::Ok();
  });
  if (!written.ok()) return written;
  if (!attempts) {
    return Status(Reason::kNotFound,
                  "no idempotency record for key " + key + " in '" + path_ + "'");
  }
  return *attempts;
}

}  // namespace clawguard::sqlite
