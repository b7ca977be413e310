// audit_sink.h — HostApp::AuditSink, the host's audit log (host_app.h).
#ifndef CLAWGUARD_HOST_APP_AUDIT_SINK_H_
#define CLAWGUARD_HOST_APP_AUDIT_SINK_H_

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include "clawguard/error.h"
#include "core/mutex.h"
#include "host/app/host_app.h"
#include "host/app/host_config.h"
#include "host/observe/json_log.h"

namespace clawguard::host {

// AuditSink appends JSON lines to log.audit (or stderr), each one first re-rendered through the
// host's redaction rules (JsonLogger::RedactJsonLine: secret field names, host.yaml log.redact,
// value shapes, and the host's own secrets — admin token, erp.auth, every route secret, raw and
// base64). A line that is not a JSON object is written as an "unparseable_log_line" event.
// Thread-safe; closed when the last owner (the HostApp or a plugin thread's ErpEnv copy) lets go.
class HostApp::AuditSink {
 public:
  // Create: kConfigInvalid when log.audit cannot be opened for appending or log.redact is invalid.
  static Result<std::shared_ptr<AuditSink>> Create(const HostConfig& c);
  ~AuditSink() {
    if (file_ != nullptr) std::fclose(file_);
  }
  AuditSink(const AuditSink&) = delete;
  AuditSink& operator=(const AuditSink&) = delete;
  // Write redacts |line| and appends it with a newline, flushed (lines never interleave).
  void Write(const std::string& line);

 private:
  AuditSink(std::unique_ptr<JsonLogger> redactor, std::FILE* file)
      : redactor_(std::move(redactor)), file_(file) {}
  const std::unique_ptr<const JsonLogger> redactor_;
  Mutex mu_;  // serializes writes to the file (lines never interleave)
  std::FILE* const file_;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_APP_AUDIT_SINK_H_
