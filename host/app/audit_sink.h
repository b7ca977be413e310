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
// Reopen opens log.audit again by its path and writes there from then on: after logrotate moved
// the file, the next line goes to a new one at the configured path (SIGHUP, cli/cmd_host.cpp).
// Thread-safe; closed when the last owner (the HostApp or a plugin thread's ErpEnv copy) lets go.
class HostApp::AuditSink {
 public:
  // Create: kConfigInvalid when log.audit cannot be opened for appending or log.redact is invalid.
  static Result<std::shared_ptr<AuditSink>> Create(const HostConfig& c);
  ~AuditSink() {
    if (file_ != nullptr) std::fclose(file_);
  }
  // Reopen: see the class comment. On failure (kConfigInvalid: the path cannot be opened for
  // appending) the sink keeps writing to the file it had. With no log.audit (stderr) it does
  // nothing.
  Status Reopen();
  AuditSink(const AuditSink&) = delete;
  AuditSink& operator=(const AuditSink&) = delete;
  // Write redacts |line| and appends it with a newline, flushed (lines never interleave).
  void Write(const std::string& line);

 private:
  AuditSink(std::unique_ptr<JsonLogger> redactor, std::string path, std::string source,
            std::FILE* file)
      : redactor_(std::move(redactor)),
        path_(std::move(path)),
        source_(std::move(source)),
        file_(file) {}
  // OpenAppend opens |path| for appending: a regular file only (a FIFO must not hang the host).
  static Result<std::FILE*> OpenAppend(const std::string& path, const std::string& source);
  const std::unique_ptr<const JsonLogger> redactor_;
  const std::string path_;    // log.audit; "" = stderr
  const std::string source_;  // host.yaml's path, for errors
  Mutex mu_;                  // serializes writes to the file (lines never interleave)
  std::FILE* file_ CLAWGUARD_GUARDED_BY(mu_);
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_APP_AUDIT_SINK_H_
