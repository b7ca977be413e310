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

namespace clawguard::cli {

// OpsStore is the store an operator command writes to.
struct OpsStore {
  std::unique_ptr<Dlq> dlq;
  std::unique_ptr<IdempotencyStore> idem;  // for the operations generation
  std::string shown;                       // the URL, redacted
};

// OpenOpsStore opens the DLQ and idempotency engines of an EXISTING store at |url| (an operator
// command never creates a store: kStoreUnavailable).
Result<OpsStore> OpenOpsStore(const std::string& url);

// OperatorActor names the person running the command: "cli:<login>" (or "cli:uid=<n>").
std::string OperatorActor();

// FinishOperatorWrite runs after an operator write the store accepted (and recorded): bumps the
// operations generation and appends the action to |audit_log| when one is given.
Status FinishOperatorWrite(OpsStore& store, const std::string& audit_log, const std::string& action,
                           const std::string& target, const std::string& detail);

}  // namespace clawguard::cli

#endif  // CLAWGUARD_CLI_OPS_STORE_H_
