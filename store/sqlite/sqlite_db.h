// sqlite_db.h — RAII owners for a SQLite connection and statement, shared by every SQLite store.
//
// SqliteDb::Open opens (creating) a database in WAL mode with synchronous=FULL (durable: fsync'd
// before a commit returns — the SqliteWriter lowers it to NORMAL for batches of lazy ops only; see
// sqlite_writer.h "Durability"), foreign keys on and a busy timeout; errors are kStoreUnavailable with
// the path. A SqliteDb is one connection: use it from one thread at a time (engines hold a mutex
// or one connection per thread).
#ifndef CLAWGUARD_STORE_SQLITE_SQLITE_DB_H_
#define CLAWGUARD_STORE_SQLITE_SQLITE_DB_H_

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "clawguard/error.h"

namespace clawguard::sqlite {

class Stmt;

class SqliteDb {
 public:
  static Result<std::unique_ptr<SqliteDb>> Open(const std::string& path);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  // Exec runs one or more statements without results.
  Status Exec(std::string_view sql);
  // Prepare compiles one statement.
  Result<Stmt> Prepare(std::string_view sql);
  // Error renders the connection's last error as a kStoreUnavailable Status with |what|.
  Status Error(std::string_view what) const;
  sqlite3* raw() const { return db_; }
  const std::string& path() const { return path_; }

 private:
  SqliteDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
};

// Stmt owns one prepared statement (finalized on destruction; move-only).
class Stmt {
 public:
  Stmt(Stmt&& o) noexcept : db_(o.db_), stmt_(o.stmt_) { o.stmt_ = nullptr; }
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
  Stmt(const SqliteDb* db, sqlite3_stmt* s) : db_(db), stmt_(s) {}
  const SqliteDb* db_;
  sqlite3_stmt* stmt_;
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
