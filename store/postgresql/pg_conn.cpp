// pg_conn.cpp — libpq handle owners, PQexecParams and the bounded connection pool.
#include "postgresql/pg_conn.h"

#include <charconv>
#include <chrono>
#include <condition_variable>

#include "core/mutex.h"
#include "postgresql/pg_schema.h"

namespace clawguard::pg {
namespace {

// kSessionOptions: durable commits whatever the server default (ARCHITECTURE.md "Stores": fsync'd
// before the answer), bytea in hex (what PQunescapeBytea reads), and no statement or lock wait
// that blocks a host for ever.
// client_min_messages=warning: the NOTICEs of idempotent DDL ("relation … already exists,
// skipping") would otherwise go to stderr of every CLI command and mix with its --json output.
constexpr char kSessionOptions[] =
    "-c synchronous_commit=on -c bytea_output=hex -c statement_timeout=60000 -c "
    "client_min_messages=warning";

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

PgResult::~PgResult() {
  if (r_ != nullptr) PQclear(r_);
}

std::string PgResult::Text(int row, int col) const {
  return std::string(PQgetvalue(r_, row, col), static_cast<size_t>(PQgetlength(r_, row, col)));
}

int64_t PgResult::Int(int row, int col) const {
  const char* v = PQgetvalue(r_, row, col);
  const char* end = v + PQgetlength(r_, row, col);
  int64_t out = 0;
  (void)std::from_chars(v, end, out);  // the columns read this way are bigint/integer
  return out;
}

std::string PgResult::Bytes(int row, int col) const {
  size_t len = 0;
  unsigned char* raw =
      PQunescapeBytea(reinterpret_cast<const unsigned char*>(PQgetvalue(r_, row, col)), &len);
  CLAWGUARD_CHECK(raw != nullptr);  // only fails on out-of-memory
  std::string out(reinterpret_cast<const char*>(raw), len);
  PQfreemem(raw);
  return out;
}

int64_t PgResult::Affected() const {
  const char* n = PQcmdTuples(r_);
  int64_t out = 0;
  (void)std::from_chars(n, n + std::char_traits<char>::length(n), out);
  return out;
}

PgParams& PgParams::Int(int64_t v) {
  values_.push_back(std::to_string(v));
  null_.push_back(false);
  formats_.push_back(0);
  return *this;
}

PgParams& PgParams::Text(std::string_view v) {
  values_.emplace_back(v);
  null_.push_back(false);
  formats_.push_back(0);
  return *this;
}

PgParams& PgParams::Bytes(std::string_view v) {
  values_.emplace_back(v);
  null_.push_back(false);
  formats_.push_back(1);
  return *this;
}

PgParams& PgParams::Null() {
  values_.emplace_back();
  null_.push_back(true);
  formats_.push_back(0);
  return *this;
}

Result<std::shared_ptr<PgPool>> PgPool::Create(const std::string& url, const PgOptions& options) {
  if (options.max_connections < 1 || options.max_connections > 64 ||
      options.connect_timeout_s < 1 || options.acquire_timeout_ms < 1) {
    return Status(Reason::kInternal,
                  "PostgreSQL pool options out of range: expected 1..64 connections and "
                  "positive timeouts");
  }
  char* err = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(url.c_str(), &err);
  if (parsed == nullptr) {
    if (err != nullptr) PQfreemem(err);  // not echoed: a malformed URL may still hold a password
    return Status(Reason::kUsage,
                  "expected a PostgreSQL URL postgresql://user@host:port/db; the one given "
                  "does not parse");
  }
  bool has_password = false;
  for (PQconninfoOption* o = parsed; o->keyword != nullptr; ++o) {
    if (std::string_view(o->keyword) == "password" && o->val != nullptr && o->val[0] != '\0')
      has_password = true;
  }
  PQconninfoFree(parsed);
  if (has_password) {
    return Status(Reason::kUsage,
                  "the PostgreSQL URL carries a password: give it through PGPASSWORD or "
                  "~/.pgpass, never in the URL");
  }
  return std::shared_ptr<PgPool>(new PgPool(url, options));
}

struct PgPool::State {
  Mutex mu;
  std::condition_variable cv;
  std::vector<PGconn*> idle CLAWGUARD_GUARDED_BY(mu);
  int open CLAWGUARD_GUARDED_BY(mu) = 0;  // idle + checked out
  Mutex migrate_mu;
  bool migrated CLAWGUARD_GUARDED_BY(migrate_mu) = false;
};

PgPool::PgPool(std::string url, PgOptions options)
    : url_(std::move(url)), options_(options), state_(std::make_unique<State>()) {}

PgPool::~PgPool() {
  MutexLock lock(state_->mu);
  for (PGconn* c : state_->idle) PQfinish(c);
  state_->idle.clear();
}

Status PgPool::Unavailable(std::string_view what, std::string_view detail) const {
  return Status(Reason::kStoreUnavailable, "PostgreSQL store " + url_ + ": " + std::string(what) +
                                               " failed: " + std::string(detail));
}

std::optional<int64_t> PgPool::NowParam() const {
  if (options_.clock == nullptr) return std::nullopt;
  return options_.clock->NowMillis();
}

Result<PGconn*> PgPool::Connect() {
  const std::string timeout = std::to_string(options_.connect_timeout_s);
  // dbname first with expand_dbname: the URL's own settings are read, the later keywords win.
  const char* keys[] = {"dbname", "connect_timeout", "application_name", "options", nullptr};
  const char* values[] = {url_.c_str(), timeout.c_str(), "clawguard", kSessionOptions, nullptr};
  PGconn* conn = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (conn == nullptr) return Unavailable("connect", "out of memory");
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string detail = Trim(PQerrorMessage(conn));
    PQfinish(conn);
    return Unavailable("connect", detail + " (is the server running and the database created?)");
  }
  return conn;
}

Result<PgPool::Lease> PgPool::Acquire() {
  State& s = *state_;
  MutexLock lock(s.mu);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.acquire_timeout_ms);
  while (true) {
    if (!s.idle.empty()) {
      PGconn* c = s.idle.back();
      s.idle.pop_back();
      return Lease(this, c);
    }
    if (s.open < options_.max_connections) {
      ++s.open;
      lock.Unlock();
      Result<PGconn*> c = Connect();
      if (!c.ok()) {
        lock.Lock();
        --s.open;
        s.cv.notify_one();
        return c.error();
      }
      return Lease(this, *c);
    }
    if (s.mu.WaitUntil(s.cv, deadline) == std::cv_status::timeout && s.idle.empty() &&
        s.open >= options_.max_connections) {
      return Unavailable("acquire", "all " + std::to_string(options_.max_connections) +
                                        " connections stayed busy for " +
                                        std::to_string(options_.acquire_timeout_ms) + " ms");
    }
  }
}

void PgPool::Return(PGconn* conn, bool broken) {
  std::vector<PGconn*> drop;
  {
    MutexLock lock(state_->mu);
    if (broken) {
      drop.swap(state_->idle);  // the idle ones most likely point at the same dead server
      drop.push_back(conn);
      state_->open -= static_cast<int>(drop.size());
    } else {
      state_->idle.push_back(conn);
    }
  }
  state_->cv.notify_all();
  for (PGconn* c : drop) PQfinish(c);
}

Status PgPool::EnsureMigrated() {
  MutexLock lock(state_->migrate_mu);
  if (state_->migrated) return Status::Ok();
  CLAWGUARD_ASSIGN_OR_RETURN(MigrationReport report, MigrateSchema(*this));
  (void)report;
  state_->migrated = true;
  return Status::Ok();
}

PgPool::Lease::~Lease() {
  if (conn_ == nullptr) return;
  const bool broken =
      PQstatus(conn_) != CONNECTION_OK || PQtransactionStatus(conn_) != PQTRANS_IDLE;
  pool_->Return(conn_, broken);
}

Result<PgResult> PgPool::Lease::Exec(std::string_view what, const std::string& sql,
                                     const PgParams& params) {
  const size_t n = params.values_.size();
  std::vector<const char*> values(n);
  std::vector<int> lengths(n);
  for (size_t i = 0; i < n; ++i) {
    values[i] = params.null_[i] ? nullptr : params.values_[i].data();
    lengths[i] = static_cast<int>(params.values_[i].size());
  }
  PgResult r(PQexecParams(conn_, sql.c_str(), static_cast<int>(n), /*paramTypes=*/nullptr,
                          values.data(), lengths.data(), params.formats_.data(),
                          /*resultFormat=*/0));
  CLAWGUARD_RETURN_IF_ERROR(Check(what, r));
  return r;
}

Status PgPool::Lease::ExecScript(std::string_view what, const std::string& sql) {
  PgResult r(PQexec(conn_, sql.c_str()));
  return Check(what, r);
}

Status PgPool::Lease::Check(std::string_view what, const PgResult& r) const {
  // A null result (out of memory, connection lost) reads as PGRES_FATAL_ERROR.
  const ExecStatusType st = PQresultStatus(r.raw());
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return Status::Ok();
  std::string detail;
  if (r.raw() != nullptr) {
    const char* primary = PQresultErrorField(r.raw(), PG_DIAG_MESSAGE_PRIMARY);
    const char* state = PQresultErrorField(r.raw(), PG_DIAG_SQLSTATE);
    if (primary != nullptr) detail = primary;
    if (state != nullptr) detail += std::string(" (SQLSTATE ") + state + ")";
  }
  if (detail.empty()) detail = Trim(PQerrorMessage(conn_));
  if (PQstatus(conn_) != CONNECTION_OK) detail += " (connection lost; the next call reconnects)";
  return pool_->Unavailable(what, detail);
}

Result<PgTx> PgTx::Begin(PgPool::Lease& lease) {
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r, lease.Exec("BEGIN", "BEGIN"));
  (void)r;
  return PgTx(&lease);
}

PgTx::~PgTx() {
  if (open_)
    (void)lease_->Exec("ROLLBACK", "ROLLBACK");  // a failure leaves the lease broken: closed
}

Status PgTx::Commit() {
  CLAWGUARD_ASSIGN_OR_RETURN(PgResult r, lease_->Exec("COMMIT", "COMMIT"));
  (void)r;
  open_ = false;
  return Status::Ok();
}

}  // namespace clawguard::pg
