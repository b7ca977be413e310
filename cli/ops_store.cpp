// ops_store.cpp — the operator commands' shared store access (see ops_store.h).
#include "ops_store.h"

#include <fcntl.h>
#include <pwd.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "clawguard/clock.h"
#include "clawguard/json_dump.h"
#include "sqlite/sqlite_dlq.h"
#include "sqlite/sqlite_idempotency_store.h"
#include "sqlite/sqlite_outbox.h"
#include "store_url.h"
#ifdef CLAWGUARD_HAVE_POSTGRESQL
#include "postgresql/pg_dlq.h"
#include "postgresql/pg_idempotency_store.h"
#include "postgresql/pg_outbox.h"
#endif

namespace clawguard::cli {

// OpenOpsStore opens the engines of an existing store at |url| (see ops_store.h).
Result<OpsStore> OpenOpsStore(const std::string& url) {
  CLAWGUARD_ASSIGN_OR_RETURN(StoreUrl u, ParseStoreUrl(url));
  OpsStore s;
  s.shown = u.shown;
  if (u.engine == StoreUrl::Engine::kPostgres) {
    CLAWGUARD_ASSIGN_OR_RETURN(std::shared_ptr<pg::PgPool> pool, OpenExistingPgStore(u));
#ifdef CLAWGUARD_HAVE_POSTGRESQL
    CLAWGUARD_ASSIGN_OR_RETURN(s.dlq, pg::PgDlq::Open(pool));
    CLAWGUARD_ASSIGN_OR_RETURN(s.idem, pg::PgIdempotencyStore::Open(pool));
    CLAWGUARD_ASSIGN_OR_RETURN(s.outbox, pg::PgOutbox::Open(pool));
#endif
    return s;
  }
  if (::access(u.path.c_str(), F_OK) != 0) {
    return Status(Reason::kStoreUnavailable,
                  "no store at '" + u.path + "': expected the SQLite file the host uses");
  }
  CLAWGUARD_ASSIGN_OR_RETURN(s.dlq, sqlite::SqliteDlq::Open(u.path, SystemClock::Instance()));
  CLAWGUARD_ASSIGN_OR_RETURN(s.idem,
                             sqlite::SqliteIdempotencyStore::Open(u.path, SystemClock::Instance()));
  CLAWGUARD_ASSIGN_OR_RETURN(s.outbox, sqlite::SqliteOutbox::Open(u.path, SystemClock::Instance()));
  return s;
}

// OperatorActor names the person running the command: "cli:<login>" (or "cli:uid=<n>").
std::string OperatorActor() {
  const uid_t uid = ::geteuid();
  if (const passwd* pw = ::getpwuid(uid); pw != nullptr && pw->pw_name != nullptr) {
    return "cli:" + std::string(pw->pw_name);
  }
  return "cli:uid=" + std::to_string(uid);
}

// FinishOperatorWrite runs after an operator write the store accepted (and recorded): bumps the
// operations generation and appends the action to |audit_log| when one is given.
Status FinishOperatorWrite(OpsStore& store, const std::string& audit_log, const std::string& action,
                           const std::string& target, const std::string& detail) {
  auto gen = store.idem->BumpGeneration();
  if (!gen.ok())
    return gen.error().WithContext("the change was written, but hosts were not told (generation)");
  if (audit_log.empty()) return Status::Ok();
  nlohmann::json j = {{"time", FormatRfc3339Utc(SystemClock::Instance().NowSeconds())},
                      {"event", "operator_action"},
                      {"actor", OperatorActor()},
                      {"action", action},
                      {"target", target},
                      {"detail", TruncateDlqText(detail)},
                      {"store", store.shown},
                      {"generation", *gen}};
  // Details may hold bytes that are not UTF-8 (an ERP's answer): replaced, never thrown on.
  const std::string line = DumpJson(j) + "\n";
  const int fd = ::open(audit_log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0)
    return Status(Reason::kFileUnreadable,
                  "cannot open audit log '" + audit_log + "' for appending");
  const ssize_t n = ::write(fd, line.data(), line.size());  // one write: lines never interleave
  ::close(fd);
  if (n != static_cast<ssize_t>(line.size())) {
    return Status(Reason::kInternal, "cannot append to audit log '" + audit_log + "'");
  }
  return Status::Ok();
}

}  // namespace clawguard::cli
