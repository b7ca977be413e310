// ops_store.h — what every operator command (`dlq`, `capability`, `idem`) shares: the store it
// writes to and the step after each accepted write (bump the operations generation so running
// hosts notice within a second; append the action to --audit-log when one is given). The
// store itself records each action in operator_actions in the same transaction as the change.
#ifndef CLAWGUARD_CLI_OPS_STORE_H_
#define CLAWGUARD_CLI_OPS_STORE_H_

#include <memory>
#include <string>

#include "clawguard/error.h"
#include "clawguard/store/dlq.h"
#include "clawguard/store/idempotency_store.h"
#include "clawguard/store/outbox.h"

namespace clawguard::cli {

// OpsStore is the store an operator command writes to (engines of one SQLite file, or of one
// PostgreSQL database through one connection pool).
struct OpsStore {
  std::unique_ptr<Dlq> dlq;
  std::unique_ptr<IdempotencyStore> idem;  // records; the operations generation
  std::unique_ptr<Outbox> outbox;          // `idem show|confirm`
  std::string shown;                       // the URL, redacted
};

// OpenOpsStore opens the DLQ, idempotency and outbox engines of an EXISTING store at |url|:
// sqlite:PATH (the file must exist) or postgresql://user@host:port/db (the database must exist
// and hold ClawGuard's schema; times from the database clock). An operator command never
// creates a store: kStoreUnavailable; kUsage for a malformed URL or one with a password.
Result<OpsStore> OpenOpsStore(const std::string& url);

// OperatorActor names the person running the command: "cli:<login>" (or "cli:uid=<n>").
std::string OperatorActor();

// FinishOperatorWrite runs after an operator write the store accepted (and recorded): bumps the
// operations generation and appends the action to |audit_log| when one is given.
Status FinishOperatorWrite(OpsStore& store, const std::string& audit_log, const std::string& action,
                           const std::string& target, const std::string& detail);

}  // namespace clawguard::cli

#endif  // CLAWGUARD_CLI_OPS_STORE_H_
