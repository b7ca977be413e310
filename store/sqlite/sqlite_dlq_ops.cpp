// sqlite_dlq_ops.cpp — capability pauses and the operator-actions record of SqliteDlq.
#include "sqlite/sqlite_dlq.h"

namespace clawguard::sqlite {
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

Status SqliteDlq::InsertAction(int64_t now_ms, const std::string& actor, const std::string& action,
                               const std::string& target, const std::string& detail) {
  CLAWGUARD_ASSIGN_OR_RETURN(
      Stmt i, db_->Prepare("INSERT INTO operator_actions (time_ms, actor, action, target, "
                           "detail) VALUES (?1, ?2, ?3, ?4, ?5)"));
  i.Bind(1, now_ms)
      .Bind(2, TruncateDlqText(actor.empty() ? "unknown" : actor))
      .Bind(3, TruncateDlqText(action));
  i.Bind(4, TruncateDlqText(target)).Bind(5, TruncateDlqText(detail));
  return i.Run();
}

Result<bool> SqliteDlq::Pause(const std::string& plugin, const std::string& capability,
                              const std::string& reason, const std::string& actor) {
  CLAWGUARD_RETURN_IF_ERROR(CheckCapability(plugin, capability));
  MutexLock lock(mu_);
  CLAWGUARD_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*db_));
  const int64_t now = clock_.NowMillis();
  {
    CLAWGUARD_ASSIGN_OR_RETURN(
        Stmt i, db_->Prepare("INSERT OR IGNORE INTO capability_pauses (plugin, capability, "
                             "reason, actor, since_ms) VALUES (?1, ?2, ?3, ?4, ?5)"));
    i.Bind(1, plugin)
        .Bind(2, capability)
        .Bind(3, TruncateDlqText(reason))
        .Bind(4, TruncateDlqText(actor));
    i.Bind(5, now);
    CLAWGUARD_RETURN_IF_ERROR(i.Run());
  }
  const bool paused_now = sqlite3_changes(db_->raw()) == 1;
  CLAWGUARD_RETURN_IF_ERROR(InsertAction(now, actor, "capability.pause", plugin + " " + capability,
                                         paused_now ? reason : "already paused; " + reason));
  CLAWGUARD_RETURN_IF_ERROR(tx.Commit());
  return paused_now;
}

Result<bool> SqliteDlq::Resume(const std::string& plugin, const std::string& capability,
                               const std::string& actor) {
  CLAWGUARD_RETURN_IF_ERROR(CheckCapability(plugin, capability));
  MutexLock lock(mu_);
  CLAWGUARD_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*db_));
  const int64_t now = clock_.NowMillis();
  {
    CLAWGUARD_ASSIGN_OR_RETURN(Stmt d,
                               db_->Prepare("DELETE FROM capability_pauses WHERE plugin = ?1 AND "
                                            "capability = ?2"));
    d.Bind(1, plugin).Bind(2, capability);
    CLAWGUARD_RETURN_IF_ERROR(d.Run());
  }
  const bool resumed = sqlite3_changes(db_->raw()) == 1;
  CLAWGUARD_RETURN_IF_ERROR(InsertAction(now, actor, "capability.resume", plugin + " " + capability,
                                         resumed ? "" : "was not paused"));
  CLAWGUARD_RETURN_IF_ERROR(tx.Commit());
  return resumed;
}

Result<bool> SqliteDlq::IsPaused(const std::string& plugin, const std::string& capability) {
  MutexLock lock(mu_);
  CLAWGUARD_ASSIGN_OR_RETURN(Stmt s,
                             db_->Prepare("SELECT 1 FROM capability_pauses WHERE plugin = ?1 AND "
                                          "capability = ?2"));
  s.Bind(1, plugin).Bind(2, capability);
  return s.Step();
}

Result<std::vector<CapabilityPause>> SqliteDlq::ListPauses() {
  MutexLock lock(mu_);
  CLAWGUARD_ASSIGN_OR_RETURN(Stmt s,
                             db_->Prepare("SELECT plugin, capability, reason, actor, since_ms FROM "
                                          "capability_pauses ORDER BY plugin, capability"));
  std::vector<CapabilityPause> out;
  while (true) {
    CLAWGUARD_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    out.push_back(CapabilityPause{s.Text(0), s.Text(1), s.Text(2), s.Text(3), s.Int(4)});
  }
  return out;
}

Status SqliteDlq::RecordOperatorAction(const std::string& actor, const std::string& action,
                                       const std::string& target, const std::string& detail) {
  MutexLock lock(mu_);
  CLAWGUARD_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*db_));
  CLAWGUARD_RETURN_IF_ERROR(InsertAction(clock_.NowMillis(), actor, action, target, detail));
  return tx.Commit();
}

Result<std::vector<OperatorAction>> SqliteDlq::ListOperatorActions(int64_t limit) {
  if (limit < 1 || limit > kMaxDlqList) {
    return Status(Reason::kUsage,
                  "operator actions: expected a limit of 1.." + std::to_string(kMaxDlqList));
  }
  MutexLock lock(mu_);
  CLAWGUARD_ASSIGN_OR_RETURN(Stmt s,
                             db_->Prepare("SELECT id, time_ms, actor, action, target, detail FROM "
                                          "operator_actions ORDER BY id DESC LIMIT ?1"));
  s.Bind(1, limit);
  std::vector<OperatorAction> out;
  while (true) {
    CLAWGUARD_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    out.push_back(OperatorAction{s.Int(0), s.Int(1), s.Text(2), s.Text(3), s.Text(4), s.Text(5)});
  }
  return out;
}

}  // namespace clawguard::sqlite
