// sqlite_writer.h — SqliteWriter: group commit for one SQLite database file (ARCHITECTURE.md
// "Stores": "a writer may group several requests' changes into one transaction").
//
// Every state change of the SQLite idempotency store and outbox is an op run through Write. Ops
// that arrive while a commit is in flight are queued; the next leader (one of the waiting
// callers — there is no writer thread) runs all queued ops in ONE `BEGIN IMMEDIATE … COMMIT`
// (one WAL fsync with synchronous=FULL), each op inside its own SAVEPOINT: an op that returns an
// error has only its own changes rolled back. Write returns only after the COMMIT that holds the
// op is durable; if that COMMIT fails, every op of the batch gets the failure. Ops run serially in
// arrival order and each sees the changes of the ops before it (the same result as one
// transaction per op, with fewer fsyncs).
// WARNING: an op must not call Write (it would wait for itself) and must use only the SqliteDb
// it is given (the writer's own connection).
// Shared: ForPath returns one writer per database file per process. Thread-safe.
#ifndef CLAWGUARD_STORE_SQLITE_SQLITE_WRITER_H_
#define CLAWGUARD_STORE_SQLITE_SQLITE_WRITER_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "clawguard/error.h"
#include "sqlite/sqlite_db.h"

namespace clawguard::sqlite {

class SqliteWriter {
 public:
  using Op = std::function<Status(SqliteDb& db)>;

  // ForPath returns the process's writer for |path| (opened on first use; kStoreUnavailable if
  // the file cannot be opened).
  static Result<std::shared_ptr<SqliteWriter>> ForPath(const std::string& path);

  // Write runs |op| in a group-committed transaction (see the file comment) and returns its
  // Status, or the transaction's failure (kStoreUnavailable).
  Status Write(const Op& op);

  // commits is how many COMMITs this writer ran (for tests and metrics: ops / commits is the
  // group size).
  int64_t commits() const;

 private:
  struct Pending {
    const Op* op = nullptr;
    Status result;
    bool done = false;
  };
  explicit SqliteWriter(std::unique_ptr<SqliteDb> db) : db_(std::move(db)) {}
  void RunBatch(const std::vector<Pending*>& batch);

  const std::unique_ptr<SqliteDb> db_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Pending*> queue_;  // guarded by mu_
  bool leading_ = false;         // a caller is running a batch; guarded by mu_
  int64_t commits_ = 0;          // guarded by mu_
};

}  // namespace clawguard::sqlite

#endif  // CLAWGUARD_STORE_SQLITE_SQLITE_WRITER_H_
