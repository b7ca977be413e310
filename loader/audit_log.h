// audit_log.h — AuditLog: the JSON-lines audit log of loader decisions and ledger checkpoints.
//
// Append writes one line with O_APPEND (one write(2) per line, so concurrent writers do not
// interleave lines). LastCheckpoint scans the file for the last
// {"event":"ledger_checkpoint","count":N,"head":"<hex>"} line; unparsable lines are skipped.
// Thread-safe.
#ifndef CLAWGUARD_LOADER_AUDIT_LOG_H_
#define CLAWGUARD_LOADER_AUDIT_LOG_H_

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "clawguard/error.h"
#include "clawguard/store/ledger.h"

namespace clawguard {

class AuditLog {
 public:
  explicit AuditLog(std::string path) : path_(std::move(path)) {}
  const std::string& path() const { return path_; }
  // Append writes |line| as one JSON line; kInternal on an I/O failure.
  Status Append(const nlohmann::json& line) const;
  // LastCheckpoint returns the last checkpoint recorded (nullopt if none or no file).
  Result<std::optional<LedgerCheckpoint>> LastCheckpoint() const;

 private:
  const std::string path_;
};

}  // namespace clawguard

#endif  // CLAWGUARD_LOADER_AUDIT_LOG_H_
