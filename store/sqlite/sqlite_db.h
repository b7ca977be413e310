// sqlite_db.h — RAII owners for a SQLite connection and statement, shared by every SQLite store.
//
// SqliteDb::Open opens (creating) a database in WAL mode with synchronous=FULL (durable: fsync'd
// before a commit returns — the SqliteWriter commits with NORMAL and flushes the WAL itself; see
// sqlite_writer.h "Durability"), foreign keys on and a busy timeout; errors are kStoreUnavailable
// with the path. A SqliteDb is one connection: use it from one thread at a time (engines hold a
// mutex or one connection per thread).
//
// Statement cache: parsing SQL costs more than running most of the stores' statements, so a
// SqliteDb keeps up to kMaxCachedStatements compiled statements keyed by their exact SQL text.
// Prepare (and Exec of one statement without parameters) hands out the cached statement; when
// the Stmt is destroyed it is reset and its bindings cleared, so the next user starts clean.
// A SQL text that is already checked out (nested use) or does not fit the cache is compiled
// fresh and finalized on destruction. PRAGMA statements are never cached: SQLite applies a
// pragma's setting, and reads its value, while compiling it (pragma.c), so re-running a cached
// one would neither set nor read anything. A schema change does not invalidate the cache: SQLite
// re-prepares an expired statement on its next step (sqlite3_prepare_v3).
// WARNING: a Stmt must not outlive the SqliteDb that made it (the cache is finalized on close).
#ifndef CLAWGUARD_STORE_SQLITE_SQLITE_DB_H_
#define CLAWGUARD_STORE_SQLITE_SQLITE_DB_H_

#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "clawguard/error.h"

namespace clawguard::sqlite {

// kMaxCachedStatements bounds the statement cache of one connection. The stores use a few dozen
// distinct SQL texts; past the bound, statements are compiled per use as without a cache.
inline constexpr size_t kMaxCachedStatements = 128;

class Stmt;

// ConfigureSqlite applies the process-wide settings (sqlite3_config) once, before SQLite
// initializes: SqliteDb::Open and the WAL VFS call it first, on the start-up thread that opens
// the stores. Memory statistics are turned off: with them on (Debian's default), every
// sqlite3_malloc and sqlite3_free takes one process-wide mutex to count bytes that nothing here
// reads (no soft heap limit is set), and Debian's SQLite has no lookaside allocator, so that is
// every small allocation a statement makes. If SQLite was initialized first (another component
// of the process used it), sqlite3_config refuses and the defaults stay: slower, equally correct.
void ConfigureSqlite();

class SqliteDb {
 public:
  // |vfs|: the name of a registered VFS, nullptr for the default one.
  static Result<std::unique_ptr<SqliteDb>> Open(const std::string& path, const char* vfs = nullptr);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  // Exec runs one or more statements without results (rows a statement returns are dropped).
  // One statement without parameters (not a PRAGMA) runs through the statement cache; anything
  // else (schema scripts) runs through sqlite3_exec. kStoreUnavailable with the path on failure.
  Status Exec(std::string_view sql);
  // Prepare compiles one statement, or hands out the cached compilation of |sql| (see the file
  // comment); kStoreUnavailable with the path if it does not compile.
  Result<Stmt> Prepare(std::string_view sql);
  // Error renders the connection's last error as a kStoreUnavailable Status with |what|.
  Status Error(std::string_view what) const;
  sqlite3* raw() const { return db_; }
  const std::string& path() const { return path_; }

 private:
  struct Cached {
    sqlite3_stmt* stmt = nullptr;
    bool checked_out = false;  // a Stmt holds it; cleared by ~Stmt
  };
  // Transparent hashing: look up by string_view without building a std::string per call.
  struct SqlHash {
    using is_transparent = void;
    size_t operator()(std::string_view sql) const { return std::hash<std::string_view>{}(sql); }
  };
  SqliteDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  // Checkout marks the cached statement of |sql| checked out; nullptr if none is free.
  Cached* Checkout(std::string_view sql);
  // Cacheable says whether a new compilation of |sql| may enter the cache.
  bool Cacheable(std::string_view sql) const;
  // ExecCached runs |sql| through the cache if it is one cacheable statement without parameters;
  // nullopt if it is not (then nothing ran).
  std::optional<Status> ExecCached(std::string_view sql);
  Status ExecScript(std::string_view sql);
  Status RunToEnd(sqlite3_stmt* s);

  sqlite3* db_;
  std::string path_;
  // Node-based: a Cached stays at its address while the map grows (a Stmt points at it).
  std::unordered_map<std::string, Cached, SqlHash, std::equal_to<>> cache_;
};

// Stmt owns one prepared statement, or borrows a cached one (reset and unbound on destruction,
// finalized otherwise); move-only.
class Stmt {
 public:
  Stmt(Stmt&& o) noexcept : db_(o.db_), stmt_(o.stmt_), checked_out_(o.checked_out_) {
    o.stmt_ = nullptr;
    o.checked_out_ = nullptr;
  }
  Stmt& operator=(Stmt&&) = delete;
  Stmt(const Stmt&) = delete;
  ~Stmt();

  Stmt& Bind(int index, int64_t v);
  Stmt& Bind(int index, std::string_view text);  // bound as TEXT (copied)
  Stmt& BindBlob(int index, std::string_view bytes);
  Stmt& BindNull(int index);
  // Step returns true for a row, false when done; an error Status otherwise.
  Result<bool> Step();
  // Run steps to completion (for statements without rows).
  Status Run();
  Status Reset();
  int64_t Int(int col) const;
  std::string Text(int col) const;
  bool IsNull(int col) const;

 private:
  friend class SqliteDb;
  Stmt(const SqliteDb* db, sqlite3_stmt* s, bool* checked_out = nullptr)
      : db_(db), stmt_(s), checked_out_(checked_out) {}
  const SqliteDb* db_;
  sqlite3_stmt* stmt_;
  bool* checked_out_;  // the cache entry's flag when borrowed from the cache; else nullptr
};

// Transaction runs BEGIN IMMEDIATE on construction-by-Begin and ROLLBACK on destruction unless
// Commit() succeeded.
class Transaction {
 public:
  static Result<Transaction> Begin(SqliteDb& db);
  Transaction(Transaction&& o) noexcept : db_(o.db_), open_(o.open_) { o.open_ = false; }
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();
  Status Commit();

 private:
  explicit Transaction(SqliteDb* db) : db_(db), open_(true) {}
  SqliteDb* db_;
  bool open_;
};

}  // namespace clawguard::sqlite

#endif  // CLAWGUARD_STORE_SQLITE_SQLITE_DB_H_
