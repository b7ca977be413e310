// pg_dlq.cpp — dead-letter entries on PostgreSQL: de-duplicated Add, listing, counts, replay
// claims with FOR UPDATE SKIP LOCKED.
#include "postgresql/pg_dlq.h"

#include <algorithm>

#include "clawguard/encoding.h"
#include "clawguard/limits.h"

namespace clawguard::pg {
namespace {

constexpr char kColumns[] =
    "id, class, event_key, plugin, route, call_index, endpoint, erp_status, detail, has_request, "
    "request_omitted, "
    "state, occurrences, attempts, next_attempt_ms, lease_until_ms, claimed_by, resolution, "
    "created_ms, updated_ms, "
    "webhook_id, content_type";
constexpr char kUnresolved[] = "('open', 'replay_requested', 'replaying')";

std::string NowCte(int param) {
  return "WITH now AS (SELECT COALESCE($" + std::to_string(param) +
         "::bigint, cg_now_ms()) AS ms) ";
}

// ReadEntry reads kColumns of row |i|; with |body_col| ≥ 0 (the body's column) also the request.
DlqEntry ReadEntry(const PgResult& r, int i, int body_col) {
  DlqEntry e;
  e.id = r.Int(i, 0);
  e.klass = DlqClassFromName(r.Text(i, 1)).value_or(DlqClass::kManualReview);
  e.event_key = r.Text(i, 2);
  e.plugin = r.Text(i, 3);
  e.route = r.Text(i, 4);
  e.call_index = r.Int(i, 5);
  e.endpoint = r.Text(i, 6);
  e.erp_status = static_cast<int>(r.Int(i, 7));
  e.detail = r.Bytes(i, 8);
  e.has_request = r.Text(i, 9) == "t";
  e.request_omitted = r.Text(i, 10) == "t";
  e.state = DlqStateFromName(r.Text(i, 11)).value_or(DlqState::kOpen);
  e.occurrences = r.Int(i, 12);
  e.attempts = r.Int(i, 13);
  e.next_attempt_ms = r.Int(i, 14);
  e.lease_until_ms = r.Int(i, 15);
  e.claimed_by = r.Text(i, 16);
  e.resolution = r.Bytes(i, 17);
  e.created_ms = r.Int(i, 18);
  e.updated_ms = r.Int(i, 19);
  if (body_col >= 0 && e.has_request)
    e.request = DlqRequest{r.Bytes(i, 20), r.Bytes(i, 21), r.Bytes(i, body_col)};
  return e;
}

// Validate refuses an entry the host should never produce (a caller bug, kInternal) — the same
// checks as the SQLite engine.
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

Result<std::unique_ptr<PgDlq>> PgDlq::Open(std::shared_ptr<PgPool> pool) {
  CLAWGUARD_CHECK(pool != nullptr);
  CLAWGUARD_RETURN_IF_ERROR(pool->EnsureMigrated());
  return std::unique_ptr<PgDlq>(new PgDlq(std::move(pool)));
}

Result<int64_t> PgDlq::Now(PgPool::Lease& db) const {
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r, db.Exec("time", "SELECT COALESCE($1::bigint, cg_now_ms())",
                                                 PgParams().OptionalInt(pool_->NowParam())));
  return r.Int(0, 0);
}

Result<DlqAdded> PgDlq::Add(const DlqNewEntry& e) {
  CLAWGUARD_RETURN_IF_ERROR(Validate(e));
  const bool omitted = e.request && e.request->body.size() > kMaxDlqRequestBody;
  const bool has_request = e.request && !omitted;
  const std::string detail = TruncateDlqText(
      omitted ? e.detail + " (request body over " + std::to_string(kMaxDlqRequestBody) +
                    " bytes: not stored, not replayable by the host)"
              : e.detail);
  // Fold (one unresolved entry per key and class): occurrences + 1, detail and status refreshed,
  // a request filled in only if the entry has none. `xmax = 0` is true for a freshly inserted row.
  static const std::string kSql =
      NowCte(15) +
      "INSERT INTO dlq_entries AS d (class, event_key, plugin, route, call_index, endpoint, "
      "erp_status, detail, "
      "has_request, request_omitted, webhook_id, content_type, body, state, next_attempt_ms, "
      "created_ms, updated_ms) "
      "SELECT $1::text, $2::text, $3::text, $4::text, $5::bigint, $6::text, $7::integer, "
      "$8::bytea, $9::boolean, "
      "$10::boolean, $11::bytea, $12::bytea, $13::bytea, 'open', $14::bigint, now.ms, now.ms FROM "
      "now "
      "ON CONFLICT (event_key, class) WHERE state IN " +
      std::string(kUnresolved) +
      " DO UPDATE SET occurrences = d.occurrences + 1, detail = EXCLUDED.detail, erp_status = "
      "EXCLUDED.erp_status, "
      "endpoint = CASE WHEN EXCLUDED.endpoint = '' THEN d.endpoint ELSE EXCLUDED.endpoint END, "
      "updated_ms = EXCLUDED.updated_ms, "
      "next_attempt_ms = CASE WHEN EXCLUDED.next_attempt_ms > 0 THEN EXCLUDED.next_attempt_ms "
      "ELSE d.next_attempt_ms END, "
      "request_omitted = CASE WHEN d.has_request THEN d.request_omitted ELSE "
      "EXCLUDED.request_omitted END, "
      "webhook_id = CASE WHEN NOT d.has_request AND EXCLUDED.has_request THEN EXCLUDED.webhook_id "
      "ELSE d.webhook_id END, "
      "content_type = CASE WHEN NOT d.has_request AND EXCLUDED.has_request THEN "
      "EXCLUDED.content_type "
      "ELSE d.content_type END, "
      "body = CASE WHEN NOT d.has_request AND EXCLUDED.has_request THEN EXCLUDED.body ELSE d.body "
      "END, "
      "has_request = d.has_request OR EXCLUDED.has_request "
      "RETURNING d.id, (d.xmax = 0)";
  const DlqRequest none;
  const DlqRequest& req = has_request ? *e.request : none;
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r, db.Exec("DLQ add", kSql,
                                                 PgParams()
                                                     .Text(DlqClassName(e.klass))
                                                     .Text(e.event_key)
                                                     .Text(e.plugin)
                                                     .Text(e.route)
                                                     .Int(e.call_index)
                                                     .Text(e.endpoint)
                                                     .Int(e.erp_status)
                                                     .Bytes(detail)
                                                     .Text(has_request ? "true" : "false")
                                                     .Text(omitted ? "true" : "false")
                                                     .Bytes(req.webhook_id)
                                                     .Bytes(req.content_type)
                                                     .Bytes(req.body)
                                                     .Int(e.next_attempt_ms)
                                                     .OptionalInt(pool_->NowParam())));
  if (r.rows() != 1) return pool_->Unavailable("DLQ add", "the insert returned no row");
  return DlqAdded{r.Int(0, 0), r.Text(0, 1) == "t"};
}

Result<std::optional<DlqEntry>> PgDlq::Get(int64_t id) {
  static const std::string kSql =
      std::string("SELECT ") + kColumns + ", body FROM dlq_entries WHERE id = $1::bigint";
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r, db.Exec("DLQ get", kSql, PgParams().Int(id)));
  if (r.rows() != 1) return std::optional<DlqEntry>();
  return std::optional<DlqEntry>(ReadEntry(r, 0, /*body_col=*/22));
}

Result<std::vector<DlqEntry>> PgDlq::List(const DlqFilter& f) {
  if (f.limit < 1 || f.limit > kMaxDlqList) {
    return Status(Reason::kUsage, "DLQ list: expected a limit of 1.." +
                                      std::to_string(kMaxDlqList) + ", found " +
                                      std::to_string(f.limit));
  }
  // NULL filters match everything; PQexecParams plans with the values, so the index still serves.
  const std::string sql = std::string("SELECT ") + kColumns +
                          " FROM dlq_entries WHERE ($1::text IS NULL OR class = $1::text) "
                          "AND ($2::text IS NULL OR state = $2::text) ORDER BY " +
                          (f.newest_first ? "created_ms DESC, id DESC" : "created_ms, id") +
                          " LIMIT $3::bigint";
  PgParams params;
  if (f.klass) {
    params.Text(DlqClassName(*f.klass));
  } else {
    params.Null();
  }
  if (f.state) {
    params.Text(DlqStateName(*f.state));
  } else {
    params.Null();
  }
  params.Int(f.limit);
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r, db.Exec("DLQ list", sql, params));
  std::vector<DlqEntry> out;
  out.reserve(static_cast<size_t>(r.rows()));
  for (int i = 0; i < r.rows(); ++i) out.push_back(ReadEntry(r, i, /*body_col=*/-1));
  return out;
}

Result<std::vector<DlqCount>> PgDlq::CountUnresolved() {
  // Bucketed in SQL: one pass however many entries there are.
  static const std::string kSql =
      NowCte(1) +
      "SELECT class, CASE WHEN now.ms - created_ms < $2::bigint THEN 0 WHEN now.ms - created_ms < "
      "$3::bigint "
      "THEN 1 ELSE 2 END AS age, count(*) FROM dlq_entries, now WHERE state IN " +
      std::string(kUnresolved) + " GROUP BY class, age ORDER BY class, age";
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(
      PgResult r,
      db.Exec("DLQ count", kSql,
              PgParams().OptionalInt(pool_->NowParam()).Int(kDlqHourMs).Int(24 * kDlqHourMs)));
  std::vector<DlqCount> out;
  for (int i = 0; i < r.rows(); ++i) {
    auto klass = DlqClassFromName(r.Text(i, 0));
    if (!klass) continue;  // written by a newer build: not ours to count
    out.push_back(DlqCount{*klass, kAllDlqAges[static_cast<size_t>(r.Int(i, 1))], r.Int(i, 2)});
  }
  return out;
}

Result<std::optional<DlqEntry>> PgDlq::LockedEntry(PgPool::Lease& db, int64_t id, int64_t& now_ms) {
  static const std::string kSql =
      std::string("SELECT ") + kColumns +
      ", COALESCE($2::bigint, cg_now_ms()) FROM dlq_entries WHERE id = $1::bigint "
      "FOR UPDATE";
  CLAWGUARD_ASSIGN_OR_RETURN(
      PgResult r,
      db.Exec("DLQ entry (lock)", kSql, PgParams().Int(id).OptionalInt(pool_->NowParam())));
  if (r.rows() != 1) return std::optional<DlqEntry>();
  now_ms = r.Int(0, 22);
  return std::optional<DlqEntry>(ReadEntry(r, 0, /*body_col=*/-1));
}

Status PgDlq::RequestReplay(int64_t id, const std::string& actor) {
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgTx tx, PgTx::Begin(db));
  int64_t now = 0;
  CLAWGUARD_ASSIGN_OR_RETURN(std::optional<DlqEntry> e, LockedEntry(db, id, now));
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
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult u,
                             db.Exec("DLQ replay request",
                                     "UPDATE dlq_entries SET state = 'replay_requested', "
                                     "updated_ms = $2::bigint WHERE id = $1::bigint",
                                     PgParams().Int(id).Int(now)));
  (void)u;
  CLAWGUARD_RETURN_IF_ERROR(InsertAction(db, now, actor, "dlq.replay", std::to_string(id),
                                         std::string(DlqClassName(e->klass)) + " " + e->event_key));
  return tx.Commit();
}

Status PgDlq::Drop(int64_t id, const std::string& reason, const std::string& actor) {
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgTx tx, PgTx::Begin(db));
  int64_t now = 0;
  CLAWGUARD_ASSIGN_OR_RETURN(std::optional<DlqEntry> e, LockedEntry(db, id, now));
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
  CLAWGUARD_ASSIGN_OR_RETURN(
      PgResult u, db.Exec("DLQ drop",
                          "UPDATE dlq_entries SET state = 'dropped', resolution = $2::bytea, "
                          "lease_until_ms = 0, updated_ms = $3::bigint WHERE id = $1::bigint",
                          PgParams().Int(id).Bytes(why).Int(now)));
  (void)u;
  CLAWGUARD_RETURN_IF_ERROR(InsertAction(db, now, actor, "dlq.drop", std::to_string(id), why));
  return tx.Commit();
}

Result<std::vector<DlqEntry>> PgDlq::ClaimReplays(const std::string& owner, int64_t limit,
                                                  int64_t lease_ms) {
  if (limit < 1 || limit > kMaxDlqList || lease_ms <= 0 || owner.empty()) {
    return Status(Reason::kInternal, "DLQ claim: expected an owner, a limit of 1.." +
                                         std::to_string(kMaxDlqList) + " and a lease > 0");
  }
  // SKIP LOCKED: rows another host is claiming right now are left to it; under READ COMMITTED
  // a locked row's WHERE is re-checked on its newest version, so a row claimed and committed in
  // between is not claimed twice.
  static const std::string kSql =
      NowCte(1) +
      ", due AS (SELECT id FROM dlq_entries WHERE state = 'replay_requested' "
      "OR (state = 'open' AND next_attempt_ms > 0 AND next_attempt_ms <= (SELECT ms FROM now)) "
      "OR (state = 'replaying' AND lease_until_ms <= (SELECT ms FROM now)) "
      "ORDER BY created_ms, id LIMIT $2::bigint FOR UPDATE SKIP LOCKED) "
      "UPDATE dlq_entries d SET state = 'replaying', attempts = d.attempts + 1, lease_until_ms = "
      "now.ms + $3::bigint, "
      "claimed_by = $4::text, updated_ms = now.ms FROM due, now WHERE d.id = due.id RETURNING d." +
      std::string(kColumns) + ", body";  // only id is ambiguous (due.id)
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r, db.Exec("DLQ claim", kSql,
                                                 PgParams()
                                                     .OptionalInt(pool_->NowParam())
                                                     .Int(limit)
                                                     .Int(lease_ms)
                                                     .Text(TruncateDlqText(owner))));
  std::vector<DlqEntry> out;
  out.reserve(static_cast<size_t>(r.rows()));
  for (int i = 0; i < r.rows(); ++i) out.push_back(ReadEntry(r, i, /*body_col=*/22));
  // RETURNING has no order: oldest first, as the interface says.
  std::sort(out.begin(), out.end(), [](const DlqEntry& a, const DlqEntry& b) {
    return a.created_ms != b.created_ms ? a.created_ms < b.created_ms : a.id < b.id;
  });
  return out;
}

Result<bool> PgDlq::MarkReplayed(int64_t id, int64_t attempt, bool succeeded,
                                 const std::string& detail, int64_t next_attempt_ms) {
  static const std::string kSucceeded = NowCte(4) +
                                        "UPDATE dlq_entries d SET state = 'replayed', resolution = "
                                        "$3::bytea, lease_until_ms = 0, next_attempt_ms = 0, "
                                        "updated_ms = now.ms FROM now WHERE d.id = $1::bigint AND "
                                        "d.attempts = $2::bigint AND d.state = 'replaying'";
  static const std::string kFailed = NowCte(4) +
                                     "UPDATE dlq_entries d SET state = 'open', detail = $3::bytea, "
                                     "lease_until_ms = 0, next_attempt_ms = $5::bigint, "
                                     "updated_ms = now.ms FROM now WHERE d.id = $1::bigint AND "
                                     "d.attempts = $2::bigint AND d.state = 'replaying'";
  PgParams params;
  params.Int(id).Int(attempt).Bytes(TruncateDlqText(detail)).OptionalInt(pool_->NowParam());
  if (!succeeded) params.Int(next_attempt_ms);
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(
      PgResult r, db.Exec("DLQ mark replayed", succeeded ? kSucceeded : kFailed, params));
  return r.Affected() == 1;  // 0: the claim moved on, nothing written
}

Result<bool> PgDlq::Resolve(const std::string& event_key, DlqClass klass,
                            const std::string& detail) {
  static const std::string kSql = NowCte(4) +
                                  "UPDATE dlq_entries d SET state = 'replayed', resolution = "
                                  "$3::bytea, lease_until_ms = 0, next_attempt_ms = 0, "
                                  "updated_ms = now.ms FROM now WHERE d.event_key = $1::text AND "
                                  "d.class = $2::text AND d.state IN " +
                                  std::string(kUnresolved);
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r, db.Exec("DLQ resolve", kSql,
                                                 PgParams()
                                                     .Text(event_key)
                                                     .Text(DlqClassName(klass))
                                                     .Bytes(TruncateDlqText(detail))
                                                     .OptionalInt(pool_->NowParam())));
  return r.Affected() > 0;
}

}  // namespace clawguard::pg
