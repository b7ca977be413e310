// sqlite_dlq.cpp — dead-letter entries: de-duplicated Add, listing, counts, replay claims.
#include "sqlite/sqlite_dlq.h"

#include "clawguard/encoding.h"
#include "clawguard/limits.h"

namespace clawguard::sqlite {
namespace {

constexpr int64_t kSchemaVersion = 1;

// No CHECK on class or state: the code validates them, and a new class then needs no table copy.
constexpr std::string_view kSchemaV1 = R"sql(
CREATE TABLE IF NOT EXISTS dlq_entries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  class TEXT NOT NULL,
  event_key TEXT NOT NULL,
  plugin TEXT NOT NULL,
  route TEXT NOT NULL,
  call_index INTEGER NOT NULL,
  endpoint TEXT NOT NULL DEFAULT '',
  erp_status INTEGER NOT NULL DEFAULT 0,
  detail TEXT NOT NULL DEFAULT '',
  has_request INTEGER NOT NULL DEFAULT 0,
  request_omitted INTEGER NOT NULL DEFAULT 0,
  webhook_id TEXT NOT NULL DEFAULT '',
  content_type TEXT NOT NULL DEFAULT '',
  body BLOB NOT NULL DEFAULT x'',
  state TEXT NOT NULL,
  occurrences INTEGER NOT NULL DEFAULT 1,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_ms INTEGER NOT NULL DEFAULT 0,
  lease_until_ms INTEGER NOT NULL DEFAULT 0,
  claimed_by TEXT NOT NULL DEFAULT '',
  resolution TEXT NOT NULL DEFAULT '',
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS dlq_entries_unresolved ON dlq_entries (event_key, class)
  WHERE state IN ('open', 'replay_requested', 'replaying');
CREATE INDEX IF NOT EXISTS dlq_entries_due ON dlq_entries (state, next_attempt_ms);
CREATE INDEX IF NOT EXISTS dlq_entries_created ON dlq_entries (created_ms);
CREATE TABLE IF NOT EXISTS capability_pauses (
  plugin TEXT NOT NULL,
  capability TEXT NOT NULL,
  reason TEXT NOT NULL,
  actor TEXT NOT NULL,
  since_ms INTEGER NOT NULL,
  PRIMARY KEY (plugin, capability)
);
CREATE TABLE IF NOT EXISTS operator_actions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  time_ms INTEGER NOT NULL,
  actor TEXT NOT NULL,
  action TEXT NOT NULL,
  target TEXT NOT NULL,
  detail TEXT NOT NULL
);
)sql";

constexpr std::string_view kColumns =
    "id, class, event_key, plugin, route, call_index, endpoint, erp_status, detail, has_request, "
    "request_omitted, "
    "state, occurrences, attempts, next_attempt_ms, lease_until_ms, claimed_by, resolution, "
    "created_ms, updated_ms, "
    "webhook_id, content_type";
constexpr std::string_view kUnresolved = "('open', 'replay_requested', 'replaying')";

DlqEntry ReadEntry(const Stmt& s) {
  DlqEntry e;
  e.id = s.Int(0);
  e.klass = DlqClassFromName(s.Text(1)).value_or(DlqClass::kManualReview);
  e.event_key = s.Text(2);
  e.plugin = s.Text(3);
  e.route = s.Text(4);
  e.call_index = s.Int(5);
  e.endpoint = s.Text(6);
  e.erp_status = static_cast<int>(s.Int(7));
  e.detail = s.Text(8);
  e.has_request = s.Int(9) != 0;
  e.request_omitted = s.Int(10) != 0;
  e.state = DlqStateFromName(s.Text(11)).value_or(DlqState::kOpen);
  e.occurrences = s.Int(12);
  e.attempts = s.Int(13);
  e.next_attempt_ms = s.Int(14);
  e.lease_until_ms = s.Int(15);
  e.claimed_by = s.Text(16);
  e.resolution = s.Text(17);
  e.created_ms = s.Int(18);
  e.updated_ms = s.Int(19);
  return e;
}

// Validate refuses an entry the host should never produce (a caller bug, kInternal).
Status Validate(const DlqNewEntry& e) {
  if (!IsLowerHex(e.event_key, 64)) {
    return Status(Reason::kInternal,
                  "DLQ entry: expected an event key of 64 lowercase hex characters");
  }
  if (e.plugin.empty() || e.plugin.size() > kMaxDlqDetail || e.route.size() > kMaxDlqDetail ||
      e.endpoint.size() > kMaxDlqDetail) {
    return Status(Reason::kInternal,
                  "DLQ entry: expected a plugin name and plugin, route and endpoint of at most " +
                      std::to_string(kMaxDlqDetail) + " bytes");
  }
  if (e.call_index < kDlqEventLevel) {
    return Status(Reason::kInternal, "DLQ entry: call index must be ≥ 0, or kDlqEventLevel");
  }
  if (e.request && (e.request->webhook_id.size() > limits::kMaxWebhookIdLength ||
                    e.request->content_type.size() > kMaxDlqContentType)) {
    return Status(Reason::kInternal, "DLQ entry: webhook-id or content type over its limit");
  }
  return Status::Ok();
}

}  // namespace

Status MigrateDlqSchema(SqliteDb& db) {
  CLAWGUARD_RETURN_IF_ERROR(
      db.Exec("CREATE TABLE IF NOT EXISTS dlq_schema_version (version INTEGER NOT NULL)"));
  CLAWGUARD_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db));
  int64_t version = 0;
  {
    CLAWGUARD_ASSIGN_OR_RETURN(
        Stmt s, db.Prepare("SELECT COALESCE(MAX(version), 0) FROM dlq_schema_version"));
    CLAWGUARD_ASSIGN_OR_RETURN(bool row, s.Step());
    if (row) version = s.Int(0);
  }
  if (version > kSchemaVersion) {
    return Status(Reason::kStoreUnavailable,
                  "SQLite store '" + db.path() + "' has DLQ schema version " +
                      std::to_string(version) + ", newer than this build (" +
                      std::to_string(kSchemaVersion) + "): upgrade clawguard");
  }
  if (version < 1) {
    CLAWGUARD_RETURN_IF_ERROR(db.Exec(kSchemaV1));
    CLAWGUARD_RETURN_IF_ERROR(db.Exec("INSERT INTO dlq_schema_version (version) VALUES (1)"));
  }
  return tx.Commit();
}

Result<std::unique_ptr<SqliteDlq>> SqliteDlq::Open(const std::string& path, const Clock& clock) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path));
  CLAWGUARD_RETURN_IF_ERROR(MigrateDlqSchema(*db));
  return std::unique_ptr<SqliteDlq>(new SqliteDlq(std::move(db), clock));
}

Result<std::optional<DlqEntry>> SqliteDlq::Load(int64_t id, bool with_request) {
  std::string sql = "SELECT " + std::string(kColumns);
  if (with_request) sql += ", body";
  CLAWGUARD_ASSIGN_OR_RETURN(Stmt s, db_->Prepare(sql + " FROM dlq_entries WHERE id = ?1"));
  s.Bind(1, id);
  CLAWGUARD_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return std::optional<DlqEntry>();
  DlqEntry e = ReadEntry(s);
  if (with_request && e.has_request) e.request = DlqRequest{s.Text(20), s.Text(21), s.Text(22)};
  return std::optional<DlqEntry>(std::move(e));
}

Result<DlqAdded> SqliteDlq::Add(const DlqNewEntry& e) {
  CLAWGUARD_RETURN_IF_ERROR(Validate(e));
  const bool omitted = e.request && e.request->body.size() > kMaxDlqRequestBody;
  const bool has_request = e.request && !omitted;
  const std::string detail = TruncateDlqText(
      omitted ? e.detail + " (request body over " + std::to_string(kMaxDlqRequestBody) +
                    " bytes: not stored, not replayable by the host)"
              : e.detail);
  MutexLock lock(mu_);
  CLAWGUARD_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*db_));
  const int64_t now = clock_.NowMillis();
  DlqAdded out;
  {
    CLAWGUARD_ASSIGN_OR_RETURN(
        Stmt f, db_->Prepare("SELECT id FROM dlq_entries WHERE event_key = ?1 AND class = ?2 "
                             "AND state IN " +
                             std::string(kUnresolved)));
    f.Bind(1, e.event_key).Bind(2, DlqClassName(e.klass));
    CLAWGUARD_ASSIGN_OR_RETURN(bool found, f.Step());
    if (found) out.id = f.Int(0);
  }
  if (out.id != 0) {
    // Fold: one unresolved entry per key and class. A request is filled in only if missing.
    CLAWGUARD_ASSIGN_OR_RETURN(
        Stmt u,
        db_->Prepare(
            "UPDATE dlq_entries SET occurrences = occurrences + 1, detail = ?2, erp_status = ?3, "
            "endpoint = CASE WHEN ?4 = '' THEN endpoint ELSE ?4 END, updated_ms = ?5, "
            "next_attempt_ms = CASE WHEN ?6 > 0 THEN ?6 ELSE next_attempt_ms END, "
            "request_omitted = CASE WHEN has_request = 0 THEN ?10 ELSE request_omitted END, "
            "webhook_id = CASE WHEN has_request = 0 AND ?7 THEN ?8 ELSE webhook_id END, "
            "content_type = CASE WHEN has_request = 0 AND ?7 THEN ?9 ELSE content_type END, "
            "body = CASE WHEN has_request = 0 AND ?7 THEN COALESCE(?11, x'') ELSE body END, "
            "has_request = MAX(has_request, ?7) WHERE id = ?1"));
    u.Bind(1, out.id)
        .Bind(2, detail)
        .Bind(3, int64_t{e.erp_status})
        .Bind(4, e.endpoint)
        .Bind(5, now);
    u.Bind(6, e.next_attempt_ms)
        .Bind(7, int64_t{has_request ? 1 : 0})
        .Bind(10, int64_t{omitted ? 1 : 0});
    u.Bind(8, has_request ? e.request->webhook_id : "")
        .Bind(9, has_request ? e.request->content_type : "");
    u.BindBlob(11, has_request ? std::string_view(e.request->body) : std::string_view(""));
    CLAWGUARD_RETURN_IF_ERROR(u.Run());
  } else {
    CLAWGUARD_ASSIGN_OR_RETURN(
        Stmt i,
        db_->Prepare(
            "INSERT INTO dlq_entries (class, event_key, plugin, route, call_index, endpoint, "
            "erp_status, detail, has_request, request_omitted, webhook_id, content_type, body, "
            "state, "
            "next_attempt_ms, created_ms, updated_ms) "
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, COALESCE(?13, x''), "
            "'open', ?14, ?15, ?15)"));
    i.Bind(1, DlqClassName(e.klass))
        .Bind(2, e.event_key)
        .Bind(3, e.plugin)
        .Bind(4, e.route)
        .Bind(5, e.call_index);
    i.Bind(6, e.endpoint)
        .Bind(7, int64_t{e.erp_status})
        .Bind(8, detail)
        .Bind(9, int64_t{has_request ? 1 : 0});
    i.Bind(10, int64_t{omitted ? 1 : 0}).Bind(11, has_request ? e.request->webhook_id : "");
    i.Bind(12, has_request ? e.request->content_type : "");
    i.BindBlob(13, has_request ? std::string_view(e.request->body) : std::string_view(""));
    i.Bind(14, e.next_attempt_ms).Bind(15, now);
    CLAWGUARD_RETURN_IF_ERROR(i.Run());
    out.id = sqlite3_last_insert_rowid(db_->raw());
    out.created = true;
  }
  CLAWGUARD_RETURN_IF_ERROR(tx.Commit());
  return out;
}

Result<std::optional<DlqEntry>> SqliteDlq::Get(int64_t id) {
  MutexLock lock(mu_);
  return Load(id, /*with_request=*/true);
}

Result<std::vector<DlqEntry>> SqliteDlq::List(const DlqFilter& f) {
  if (f.limit < 1 || f.limit > kMaxDlqList) {
    return Status(Reason::kUsage, "DLQ list: expected a limit of 1.." +
                                      std::to_string(kMaxDlqList) + ", found " +
                                      std::to_string(f.limit));
  }
  std::string sql = "SELECT " + std::string(kColumns) + " FROM dlq_entries WHERE 1 = 1";
  if (f.klass) sql += " AND class = ?1";
  if (f.state) sql += " AND state = ?2";
  sql += f.newest_first ? " ORDER BY created_ms DESC, id DESC" : " ORDER BY created_ms, id";
  sql += " LIMIT ?3";
  MutexLock lock(mu_);
  CLAWGUARD_ASSIGN_OR_RETURN(Stmt s, db_->Prepare(sql));
  if (f.klass) s.Bind(1, DlqClassName(*f.klass));
  if (f.state) s.Bind(2, DlqStateName(*f.state));
  s.Bind(3, f.limit);
  std::vector<DlqEntry> out;
  while (true) {
    CLAWGUARD_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    out.push_back(ReadEntry(s));
  }
  return out;
}

Result<std::vector<DlqCount>> SqliteDlq::CountUnresolved() {
  MutexLock lock(mu_);
  const int64_t now = clock_.NowMillis();
  // Bucket in SQL so the count stays one pass however many entries there are.
  CLAWGUARD_ASSIGN_OR_RETURN(
      Stmt s,
      db_->Prepare(
          "SELECT class, CASE WHEN ?1 - created_ms < ?2 THEN 0 WHEN ?1 - created_ms < ?3 THEN 1 "
          "ELSE 2 END AS age, COUNT(*) FROM dlq_entries WHERE state IN " +
          std::string(kUnresolved) + " GROUP BY class, age ORDER BY class, age"));
  s.Bind(1, now).Bind(2, kDlqHourMs).Bind(3, 24 * kDlqHourMs);
  std::vector<DlqCount> out;
  while (true) {
    CLAWGUARD_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    auto klass = DlqClassFromName(s.Text(0));
    if (!klass) continue;  // written by a newer build: not ours to count
    out.push_back(DlqCount{*klass, kAllDlqAges[static_cast<size_t>(s.Int(1))], s.Int(2)});
  }
  return out;
}

Status SqliteDlq::RequestReplay(int64_t id, const std::string& actor) {
  MutexLock lock(mu_);
  CLAWGUARD_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*db_));
  const int64_t now = clock_.NowMillis();
  CLAWGUARD_ASSIGN_OR_RETURN(std::optional<DlqEntry> e, Load(id, /*with_request=*/false));
  const std::string name = "DLQ entry " + std::to_string(id);
  if (!e) return Status(Reason::kNotFound, "no " + name + " (see `clawguard dlq list`)");
  if (e->state != DlqState::kOpen) {
    return Status(Reason::kNotFound, name + " is " + std::string(DlqStateName(e->state)) +
                                         ": only an open entry can be replayed");
  }
  if (e->call_index == kDlqEventLevel && !e->has_request) {
    return Status(Reason::kNotFound,
                  name + " holds no stored request to re-run" +
                      (e->request_omitted ? " (its body was over the size cap)" : std::string()) +
                      ": the platform's own retry must redeliver it; drop it instead");
  }
  {
    CLAWGUARD_ASSIGN_OR_RETURN(Stmt u,
                               db_->Prepare("UPDATE dlq_entries SET state = 'replay_requested', "
                                            "updated_ms = ?2 WHERE id = ?1"));
    u.Bind(1, id).Bind(2, now);
    CLAWGUARD_RETURN_IF_ERROR(u.Run());
  }
  CLAWGUARD_RETURN_IF_ERROR(InsertAction(now, actor, "dlq.replay", std::to_string(id),
                                         std::string(DlqClassName(e->klass)) + " " + e->event_key));
  return tx.Commit();
}

Status SqliteDlq::Drop(int64_t id, const std::string& reason, const std::string& actor) {
  MutexLock lock(mu_);
  CLAWGUARD_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*db_));
  const int64_t now = clock_.NowMillis();
  CLAWGUARD_ASSIGN_OR_RETURN(std::optional<DlqEntry> e, Load(id, /*with_request=*/false));
  const std::string name = "DLQ entry " + std::to_string(id);
  if (!e) return Status(Reason::kNotFound, "no " + name + " (see `clawguard dlq list`)");
  if (!DlqStateUnresolved(e->state)) {
    return Status(Reason::kNotFound, name + " is already " + std::string(DlqStateName(e->state)));
  }
  if (e->state == DlqState::kReplaying && e->lease_until_ms > now) {
    return Status(Reason::kNotFound, name + " is being replayed by " + e->claimed_by +
                                         " for another " +
                                         std::to_string((e->lease_until_ms - now + 999) / 1000) +
                                         " s: try again when the replay ends");
  }
  const std::string why = TruncateDlqText(reason.empty() ? "dropped by an operator" : reason);
  {
    CLAWGUARD_ASSIGN_OR_RETURN(
        Stmt u, db_->Prepare("UPDATE dlq_entries SET state = 'dropped', resolution = ?2, "
                             "lease_until_ms = 0, updated_ms = ?3 WHERE id = ?1"));
    u.Bind(1, id).Bind(2, why).Bind(3, now);
    CLAWGUARD_RETURN_IF_ERROR(u.Run());
  }
  CLAWGUARD_RETURN_IF_ERROR(InsertAction(now, actor, "dlq.drop", std::to_string(id), why));
  return tx.Commit();
}

Result<std::vector<DlqEntry>> SqliteDlq::ClaimReplays(const std::string& owner, int64_t limit,
                                                      int64_t lease_ms) {
  if (limit < 1 || limit > kMaxDlqList || lease_ms <= 0 || owner.empty()) {
    return Status(Reason::kInternal, "DLQ claim: expected an owner, a limit of 1.." +
                                         std::to_string(kMaxDlqList) + " and a lease > 0");
  }
  MutexLock lock(mu_);
  CLAWGUARD_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*db_));
  const int64_t now = clock_.NowMillis();
  std::vector<int64_t> ids;
  {
    CLAWGUARD_ASSIGN_OR_RETURN(
        Stmt s,
        db_->Prepare(
            "SELECT id FROM dlq_entries WHERE state = 'replay_requested' "
            "OR (state = 'open' AND next_attempt_ms > 0 AND next_attempt_ms <= ?1) "
            "OR (state = 'replaying' AND lease_until_ms <= ?1) ORDER BY created_ms, id LIMIT ?2"));
    s.Bind(1, now).Bind(2, limit);
    while (true) {
      CLAWGUARD_ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) break;
      ids.push_back(s.Int(0));
    }
  }
  std::vector<DlqEntry> out;
  for (int64_t id : ids) {
    {
      CLAWGUARD_ASSIGN_OR_RETURN(
          Stmt u, db_->Prepare("UPDATE dlq_entries SET state = 'replaying', attempts = "
                               "attempts + 1, lease_until_ms = ?2, claimed_by = ?3, "
                               "updated_ms = ?4 WHERE id = ?1"));
      u.Bind(1, id).Bind(2, now + lease_ms).Bind(3, TruncateDlqText(owner)).Bind(4, now);
      CLAWGUARD_RETURN_IF_ERROR(u.Run());
    }
    CLAWGUARD_ASSIGN_OR_RETURN(std::optional<DlqEntry> e, Load(id, /*with_request=*/true));
    if (e) out.push_back(std::move(*e));
  }
  CLAWGUARD_RETURN_IF_ERROR(tx.Commit());
  return out;
}

Result<bool> SqliteDlq::MarkReplayed(int64_t id, int64_t attempt, bool succeeded,
                                     const std::string& detail, int64_t next_attempt_ms) {
  MutexLock lock(mu_);
  CLAWGUARD_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*db_));
  const int64_t now = clock_.NowMillis();
  {
    CLAWGUARD_ASSIGN_OR_RETURN(
        Stmt u,
        db_->Prepare(
            succeeded ? "UPDATE dlq_entries SET state = 'replayed', resolution = ?3, "
                        "lease_until_ms = 0, next_attempt_ms = 0, updated_ms = ?5 "
                        "WHERE id = ?1 AND attempts = ?2 AND state = 'replaying'"
                      : "UPDATE dlq_entries SET state = 'open', detail = ?3, lease_until_ms = 0, "
                        "next_attempt_ms = ?4, updated_ms = ?5 "
                        "WHERE id = ?1 AND attempts = ?2 AND state = 'replaying'"));
    u.Bind(1, id)
        .Bind(2, attempt)
        .Bind(3, TruncateDlqText(detail))
        .Bind(4, next_attempt_ms)
        .Bind(5, now);
    CLAWGUARD_RETURN_IF_ERROR(u.Run());
  }
  if (sqlite3_changes(db_->raw()) != 1) return false;  // the claim moved on: nothing written
  CLAWGUARD_RETURN_IF_ERROR(tx.Commit());
  return true;
}

Result<bool> SqliteDlq::Resolve(const std::string& event_key, DlqClass klass,
                                const std::string& detail) {
  MutexLock lock(mu_);
  CLAWGUARD_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*db_));
  {
    CLAWGUARD_ASSIGN_OR_RETURN(
        Stmt u,
        db_->Prepare(
            "UPDATE dlq_entries SET state = 'replayed', resolution = ?3, lease_until_ms = 0, "
            "next_attempt_ms = 0, updated_ms = ?4 WHERE event_key = ?1 AND class = ?2 AND state "
            "IN " +
            std::string(kUnresolved)));
    u.Bind(1, event_key)
        .Bind(2, DlqClassName(klass))
        .Bind(3, TruncateDlqText(detail))
        .Bind(4, clock_.NowMillis());
    CLAWGUARD_RETURN_IF_ERROR(u.Run());
  }
  if (sqlite3_changes(db_->raw()) == 0) return false;
  CLAWGUARD_RETURN_IF_ERROR(tx.Commit());
  return true;
}

}  // namespace clawguard::sqlite
