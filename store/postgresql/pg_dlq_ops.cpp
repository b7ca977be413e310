// pg_dlq_ops.cpp — capability pauses and the operator-actions record of PgDlq.
#include "postgresql/pg_dlq.h"

namespace clawguard::pg {
namespace {

Status CheckCapability(const std::string& plugin, const std::string& capability) {
  if (plugin.empty() || capability.empty() || plugin.size() > kMaxDlqDetail ||
      capability.size() > kMaxDlqDetail) {
    return Status(
        Reason::kUsage,
        "capability pause: expected a plugin name and a capability 'METHOD TEMPLATE' of at "
        "most " +
            std::to_string(kMaxDlqDetail) + " bytes each");
  }
  return Status::Ok();
}

}  // namespace

Status PgDlq::InsertAction(PgPool::Lease& db, int64_t now_ms, const std::string& actor,
                           const std::string& action, const std::string& target,
                           const std::string& detail) {
  CLAWGUARD_ASSIGN_OR_RETURN(
      PgResult r, db.Exec("operator action",
                          "INSERT INTO operator_actions (time_ms, actor, action, target, "
                          "detail) VALUES ($1::bigint, $2::text, $3::text, $4::bytea, $5::bytea)",
                          PgParams()
                              .Int(now_ms)
                              .Text(TruncateDlqText(actor.empty() ? "unknown" : actor))
                              .Text(TruncateDlqText(action))
                              .Bytes(TruncateDlqText(target))
                              .Bytes(TruncateDlqText(detail))));
  (void)r;
  return Status::Ok();
}

Result<bool> PgDlq::Pause(const std::string& plugin, const std::string& capability,
                          const std::string& reason, const std::string& actor) {
  CLAWGUARD_RETURN_IF_ERROR(CheckCapability(plugin, capability));
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgTx tx, PgTx::Begin(db));
  CLAWGUARD_ASSIGN_OR_RETURN(const int64_t now, Now(db));
  CLAWGUARD_ASSIGN_OR_RETURN(
      PgResult i, db.Exec("capability pause",
                          "INSERT INTO capability_pauses (plugin, capability, reason, actor, "
                          "since_ms) VALUES ($1::text, $2::text, $3::bytea, $4::text, $5::bigint) "
                          "ON CONFLICT (plugin, capability) DO NOTHING",
                          PgParams()
                              .Text(plugin)
                              .Text(capability)
                              .Bytes(TruncateDlqText(reason))
                              .Text(TruncateDlqText(actor))
                              .Int(now)));
  const bool paused_now = i.Affected() == 1;
  CLAWGUARD_RETURN_IF_ERROR(InsertAction(db, now, actor, "capability.pause",
                                         plugin + " " + capability,
                                         paused_now ? reason : "already paused; " + reason));
  CLAWGUARD_RETURN_IF_ERROR(tx.Commit());
  return paused_now;
}

Result<bool> PgDlq::Resume(const std::string& plugin, const std::string& capability,
                           const std::string& actor) {
  CLAWGUARD_RETURN_IF_ERROR(CheckCapability(plugin, capability));
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgTx tx, PgTx::Begin(db));
  CLAWGUARD_ASSIGN_OR_RETURN(const int64_t now, Now(db));
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult d,
                             db.Exec("capability resume",
                                     "DELETE FROM capability_pauses WHERE plugin = $1::text AND "
                                     "capability = $2::text",
                                     PgParams().Text(plugin).Text(capability)));
  const bool resumed = d.Affected() == 1;
  CLAWGUARD_RETURN_IF_ERROR(InsertAction(db, now, actor, "capability.resume",
                                         plugin + " " + capability,
                                         resumed ? "" : "was not paused"));
  CLAWGUARD_RETURN_IF_ERROR(tx.Commit());
  return resumed;
}

Result<bool> PgDlq::IsPaused(const std::string& plugin, const std::string& capability) {
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r,
                             db.Exec("capability paused?",
                                     "SELECT 1 FROM capability_pauses WHERE plugin = $1::text AND "
                                     "capability = $2::text",
                                     PgParams().Text(plugin).Text(capability)));
  return r.rows() == 1;
}

Result<std::vector<CapabilityPause>> PgDlq::ListPauses() {
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r,
                             db.Exec("capability pauses",
                                     "SELECT plugin, capability, reason, actor, since_ms FROM "
                                     "capability_pauses ORDER BY plugin, capability"));
  std::vector<CapabilityPause> out;
  for (int i = 0; i < r.rows(); ++i) {
    out.push_back(
        CapabilityPause{r.Text(i, 0), r.Text(i, 1), r.Bytes(i, 2), r.Text(i, 3), r.Int(i, 4)});
  }
  return out;
}

Status PgDlq::RecordOperatorAction(const std::string& actor, const std::string& action,
                                   const std::string& target, const std::string& detail) {
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(const int64_t now, Now(db));
  return InsertAction(db, now, actor, action, target, detail);
}

Result<std::vector<OperatorAction>> PgDlq::ListOperatorActions(int64_t limit) {
  if (limit < 1 || limit > kMaxDlqList) {
    return Status(Reason::kUsage,
                  "operator actions: expected a limit of 1.." + std::to_string(kMaxDlqList));
  }
  CLAWGUARD_ASSIGN_OR_RETURN(PgPool::Lease db, pool_->Acquire());
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r,
                             db.Exec("operator actions",
                                     "SELECT id, time_ms, actor, action, target, detail FROM "
                                     "operator_actions ORDER BY id DESC LIMIT $1::bigint",
                                     PgParams().Int(limit)));
  std::vector<OperatorAction> out;
  for (int i = 0; i < r.rows(); ++i) {
    out.push_back(OperatorAction{r.Int(i, 0), r.Int(i, 1), r.Text(i, 2), r.Text(i, 3),
                                 r.Bytes(i, 4), r.Bytes(i, 5)});
  }
  return out;
}

}  // namespace clawguard::pg
