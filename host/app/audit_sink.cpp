// audit_sink.cpp — see audit_sink.h.
#include "host/app/audit_sink.h"

#include <fcntl.h>

#include <filesystem>
#include <system_error>

#include "loader/audit_log.h"

namespace clawguard::host {

Result<std::shared_ptr<HostApp::AuditSink>> HostApp::AuditSink::Create(const HostConfig& c) {
  JsonLogger::Options options;
  options.redact = c.log.redact;
  const auto known = [&options](const SecretBytes& s) {
    // Whatever its length: host.yaml refuses short secrets, and a leak is worse than a scrubbed
    // word.
    if (!s.empty()) options.known_secrets.push_back(s.Clone());
  };
  known(c.admin.token);
  known(c.erp.auth);
  // erp.auth is a whole header value ("Bearer <token>"): the credential after the scheme too.
  const std::string_view auth = InsecureSecretAccess::View(c.erp.auth);
  if (const size_t space = auth.find(' '); space != std::string_view::npos) {
    const SecretBytes credential(auth.substr(space + 1));
    known(credential);
  }
  for (const auto& [route, secrets] : c.webhooks.routes) {
    known(secrets.current);
    if (secrets.previous) known(*secrets.previous);
  }
  // The redactor never writes (its sink is unused) nor reads its clock; the process clock keeps
  // it valid for as long as an abandoned plugin thread may hold the sink.
  CLAWGUARD_ASSIGN_OR_RETURN(
      std::unique_ptr<JsonLogger> redactor,
      JsonLogger::Create(
          std::move(options), [](std::string_view) {}, SystemClock::Instance()));
  std::FILE* file = nullptr;
  if (!c.log.audit.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(c.log.audit).parent_path(), ec);
    CLAWGUARD_ASSIGN_OR_RETURN(file, OpenAppend(c.log.audit, c.source));
  }
  return std::shared_ptr<AuditSink>(
      new AuditSink(std::move(redactor), c.log.audit, c.source, file));
}

Result<std::FILE*> HostApp::AuditSink::OpenAppend(const std::string& path,
                                                  const std::string& source) {
  // O_NONBLOCK and a regular file only: a FIFO at log.audit must not hang the host.
  Result<UniqueFd> fd =
      OpenRegularFileNonBlocking(path, O_WRONLY | O_APPEND | O_CREAT, "audit log");
  if (!fd.ok())
    return Status(Reason::kConfigInvalid, source + ": log.audit: " + fd.error().message());
  std::FILE* file = ::fdopen(fd->get(), "a");
  if (file == nullptr) {
    return Status(Reason::kConfigInvalid,
                  source + ": log.audit: cannot open " + path + " for appending");
  }
  (void)fd->Release();  // owned by |file| now
  return file;
}

Status HostApp::AuditSink::Reopen() {
  if (path_.empty()) return Status::Ok();
  CLAWGUARD_ASSIGN_OR_RETURN(std::FILE * fresh, OpenAppend(path_, source_));
  std::FILE* old = nullptr;
  {
    MutexLock lock(mu_);
    old = file_;
    file_ = fresh;
  }
  if (old != nullptr) std::fclose(old);  // every line written to it was flushed under mu_
  return Status::Ok();
}

void HostApp::AuditSink::Write(const std::string& line) {
  const std::string clean = redactor_->RedactJsonLine(line);
  MutexLock lock(mu_);
  std::FILE* f = file_ != nullptr ? file_ : stderr;
  std::fputs(clean.c_str(), f);
  std::fputc('\n', f);
  std::fflush(f);
}

}  // namespace clawguard::host
