// sqlite_db.cpp — the SQLite connection and statement owners, and the connection's statement cache.
#include "sqlite/sqlite_db.h"

#include <strings.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

namespace clawguard::sqlite {
namespace {

// SqliteFree releases memory SQLite allocated for the caller (sqlite3_free).
struct SqliteFree {
  void operator()(void* p) const { sqlite3_free(p); }
};

// SkipBlanks returns |sql| without leading whitespace and SQL comments.
std::string_view SkipBlanks(std::string_view sql) {
  while (!sql.empty()) {
    if (sql.front() == ' ' || sql.front() == '\t' || sql.front() == '\n' || sql.front() == '\r' ||
        sql.front() == '\f' || sql.front() == '\v') {
      sql.remove_prefix(1);
    } else if (sql.starts_with("--")) {
      const size_t eol = sql.find('\n');
      sql.remove_prefix(eol == std::string_view::npos ? sql.size() : eol + 1);
    } else if (sql.starts_with("/*")) {
      const size_t end = sql.find("*/", 2);
      sql.remove_prefix(end == std::string_view::npos ? sql.size() : end + 2);
    } else {
      break;
    }
  }
  return sql;
}

// IsPragma says whether |sql| starts with PRAGMA (then it must not be cached: see the header).
// Errs towards "yes": a false yes only costs a compile.
bool IsPragma(std::string_view sql) {
  sql = SkipBlanks(sql);
  return sql.size() >= 6 && strncasecmp(sql.data(), "pragma", 6) == 0;
}

// OnlySeparators says whether the text after the first statement holds no further statement.
bool OnlySeparators(std::string_view tail) {
  for (tail = SkipBlanks(tail); !tail.empty() && tail.front() == ';';
       tail = SkipBlanks(tail.substr(1))) {
  }
  return tail.empty();
}

}  // namespace

void ConfigureSqlite() {
  // Once per process; SQLITE_MISUSE if SQLite is already initialized: ignored (the defaults stay).
  static const int rc = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  (void)rc;
}

// kBusyTimeoutMs is how long a statement waits for another connection's lock.
constexpr int kBusyTimeoutMs = 10'000;

Result<std::unique_ptr<SqliteDb>> SqliteDb::Open(const std::string& path, const char* vfs) {
  ConfigureSqlite();
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, vfs);
  if (rc != SQLITE_OK) {
    std::string msg = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    if (raw) sqlite3_close(raw);
    return Status(Reason::kStoreUnavailable, "cannot open SQLite store '" + path + "': " + msg);
  }
  std::unique_ptr<SqliteDb> db(new SqliteDb(raw, path));
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, kBusyTimeoutMs);
  // Switching a database to WAL answers SQLITE_BUSY at once, without the busy handler, while
  // another connection (another `clawguard` process opening the same file) holds a lock: wait
  // for it as the busy timeout would, then report what is still in the way.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  for (int pause_ms = 1;; pause_ms = std::min(pause_ms * 2, 50)) {
    const int wal = sqlite3_exec(raw, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
    if (wal == SQLITE_OK) break;
    if ((wal & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() >= give_up) {
      return db->Error("switching to WAL mode");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
  }
  CLAWGUARD_RETURN_IF_ERROR(db->Exec("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;"));
  return db;
}

SqliteDb::~SqliteDb() {
  // Cached statements are ours (no Stmt may outlive the connection); uncached ones a caller
  // still holds keep the connection alive as a zombie until finalized (sqlite3_close_v2).
  for (auto& [sql, cached] : cache_) sqlite3_finalize(cached.stmt);
  sqlite3_close_v2(db_);
}

Status SqliteDb::Error(std::string_view what) const {
  return Status(Reason::kStoreUnavailable,
                std::string(what) + " on SQLite store '" + path_ + "': " + sqlite3_errmsg(db_));
}

Status SqliteDb::Exec(std::string_view sql) {
  if (std::optional<Status> s = ExecCached(sql)) return *std::move(s);
  return ExecScript(sql);
}

std::optional<Status> SqliteDb::ExecCached(std::string_view sql) {
  if (Cached* c = Checkout(sql)) {
    Status s = RunToEnd(c->stmt);
    c->checked_out = false;
    return s;
  }
  if (!Cacheable(sql)) return std::nullopt;
  sqlite3_stmt* s = nullptr;
  const char* tail = nullptr;
  // A compile error is left to sqlite3_exec, which reports it in the usual words.
  if (sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                         &s, &tail) != SQLITE_OK) {
    return std::nullopt;
  }
  // More than one statement (never run half of a script), or parameters sqlite3_exec would
  // bind as NULL: not ours to cache.
  if (s == nullptr ||
      !OnlySeparators(
          std::string_view(tail, static_cast<size_t>(sql.data() + sql.size() - tail))) ||
      sqlite3_bind_parameter_count(s) != 0) {
    sqlite3_finalize(s);
    return std::nullopt;
  }
  cache_.emplace(std::string(sql), Cached{s, false});
  return RunToEnd(s);
}

Status SqliteDb::ExecScript(std::string_view sql) {
  char* text = nullptr;
  const int rc = sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, &text);
  const std::unique_ptr<char, SqliteFree> err(text);  // sqlite3_exec allocated the message
  if (rc != SQLITE_OK) {
    std::string msg = err ? err.get() : sqlite3_errstr(rc);
    return Status(Reason::kStoreUnavailable, "SQLite store '" + path_ + "': " + msg);
  }
  return Status::Ok();
}

Status SqliteDb::RunToEnd(sqlite3_stmt* s) {
  int rc = sqlite3_step(s);
  while (rc == SQLITE_ROW) rc = sqlite3_step(s);
  // The same words as ExecScript; read the message before reset.
  Status out = rc == SQLITE_DONE ? Status::Ok()
                                 : Status(Reason::kStoreUnavailable,
                                          "SQLite store '" + path_ + "': " + sqlite3_errmsg(db_));
  sqlite3_reset(s);
  return out;
}

SqliteDb::Cached* SqliteDb::Checkout(std::string_view sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end() || it->second.checked_out) return nullptr;
  it->second.checked_out = true;
  return &it->second;
}

bool SqliteDb::Cacheable(std::string_view sql) const {
  return cache_.size() < kMaxCachedStatements && !cache_.contains(sql) && !IsPragma(sql);
}

Result<Stmt> SqliteDb::Prepare(std::string_view sql) {
  if (Cached* c = Checkout(sql)) return Stmt(this, c->stmt, &c->checked_out);
  const bool cache = Cacheable(sql);
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                         cache ? SQLITE_PREPARE_PERSISTENT : 0, &s, nullptr) != SQLITE_OK) {
    return Error("cannot prepare statement");
  }
  if (!cache || s == nullptr) return Stmt(this, s);
  Cached& c = cache_.emplace(std::string(sql), Cached{s, true}).first->second;
  return Stmt(this, s, &c.checked_out);
}

Stmt::~Stmt() {
  if (checked_out_ != nullptr) {
    // Back to the cache: no open read, no binding the next user could inherit.
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    *checked_out_ = false;
  } else if (stmt_ != nullptr) {
    sqlite3_finalize(stmt_);
  }
}

Stmt& Stmt::Bind(int index, int64_t v) {
  sqlite3_bind_int64(stmt_, index, v);
  return *this;
}
Stmt& Stmt::Bind(int index, std::string_view text) {
  sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  return *this;
}
Stmt& Stmt::BindBlob(int index, std::string_view bytes) {
  sqlite3_bind_blob64(stmt_, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
  return *this;
}
Stmt& Stmt::BindNull(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}

Result<bool> Stmt::Step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return db_->Error("statement failed");
}

Status Stmt::Run() {
  while (true) {
    CLAWGUARD_ASSIGN_OR_RETURN(bool row, Step());
    if (!row) return Status::Ok();
  }
}

Status Stmt::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  return Status::Ok();
}

int64_t Stmt::Int(int col) const { return sqlite3_column_int64(stmt_, col); }
std::string Stmt::Text(int col) const {
  const auto* p = sqlite3_column_blob(stmt_, col);
  const int n = sqlite3_column_bytes(stmt_, col);
  return p ? std::string(static_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
}
bool Stmt::IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

Result<Transaction> Transaction::Begin(SqliteDb& db) {
  CLAWGUARD_RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE"));
  return Transaction(&db);
}

Transaction::~Transaction() {
  if (open_) (void)db_->Exec("ROLLBACK");
}

Status Transaction::Commit() {
  CLAWGUARD_RETURN_IF_ERROR(db_->Exec("COMMIT"));
  open_ = false;
  return Status::Ok();
}

}  // namespace clawguard::sqlite
