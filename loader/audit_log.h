// audit_log.h — AuditLog: the JSON-lines audit log of loader decisions and ledger checkpoints;
// OpenRegularFileNonBlocking, the one way the loader opens the audit log and the ledger anchor.
//
// Append writes one line with O_APPEND (one write(2) per line, so concurrent writers do not
// interleave lines), then fsyncs. LastCheckpoint scans the last kMaxAuditTailBytes of the file
// for the last {"event":"ledger_checkpoint","count":N,"head":"<hex>"} line (every append writes
// one, and the anchor file is the primary anchor: a huge or sparse log must not stall the host's
// start); unparsable lines, lines of another shape and lines longer than kMaxAuditLineBytes are
// skipped. Both open with O_NONBLOCK|O_NOFOLLOW and refuse anything but a regular file
// (kConfigInvalid): a FIFO at the path must not hang the host's start, and a symbolic link must
// not send the host's lines into another file. Thread-safe.
#ifndef CLAWGUARD_LOADER_AUDIT_LOG_H_
#define CLAWGUARD_LOADER_AUDIT_LOG_H_

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "clawguard/error.h"
#include "clawguard/store/ledger.h"
#include "clawguard/unique_fd.h"

namespace clawguard {

// kMaxAuditLineBytes bounds one audit-log line that LastCheckpoint parses (checkpoint lines are
// under 200 bytes; longer lines are decisions and are skipped unparsed).
inline constexpr size_t kMaxAuditLineBytes = 64 * 1024;
// kMaxAuditTailBytes is how much of the log's end LastCheckpoint reads.
inline constexpr uint64_t kMaxAuditTailBytes = 16ull * 1024 * 1024;

// OpenRegularFileNonBlocking opens |path| (|what| names it in messages) with
// O_NONBLOCK|O_NOFOLLOW|O_CLOEXEC|O_NOCTTY and |flags| (O_RDONLY, or O_WRONLY|O_APPEND|O_CREAT),
// then fstats the opened fd: an fd that is not valid() when the file does not exist (and |flags|
// has no O_CREAT); kConfigInvalid when it is not a regular file (a FIFO, a socket, a directory, a
// device, a symbolic link) or cannot be opened. O_NONBLOCK makes opening a FIFO return at once
// instead of waiting for a writer or reader.
Result<UniqueFd> OpenRegularFileNonBlocking(const std::string& path, int flags,
                                            std::string_view what);

class AuditLog {
 public:
  explicit AuditLog(std::string path) : path_(std::move(path)) {}
  const std::string& path() const { return path_; }
  // Append writes |line| as one JSON line; kConfigInvalid when the path is not a regular file,
  // kInternal on an I/O failure.
  Status Append(const nlohmann::json& line) const;
  // LastCheckpoint returns the last checkpoint recorded (nullopt if none or no file);
  // kConfigInvalid when the path is not a regular file or cannot be read.
  Result<std::optional<LedgerCheckpoint>> LastCheckpoint() const;

 private:
  const std::string path_;
};

}  // namespace clawguard

#endif  // CLAWGUARD_LOADER_AUDIT_LOG_H_
