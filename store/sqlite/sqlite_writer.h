// sqlite_writer.h — SqliteWriter: group commit for one SQLite database file (ARCHITECTURE.md
// "Stores": "a writer may group several requests' changes into one transaction").
//
// Every state change of the SQLite idempotency store and outbox is an op run through Write. Ops
// that arrive while a commit is in flight are queued; the next leader (one of the waiting
// callers — there is no writer thread) runs all queued ops in ONE `BEGIN IMMEDIATE … COMMIT`,
// each op inside its own SAVEPOINT: an op that returns an error has only its own changes rolled
// back. If that COMMIT fails, every op of the batch gets the failure. Ops run serially in arrival
// order and each sees the changes of the ops before it (the same result as one transaction per
// op, with fewer commits).
//
// Durability (ARCHITECTURE.md "Durable means fsync'd before the answer"). Each op says whether
// it must be durable when Write returns:
//   - kBeforeReturn (the default): the batch commits with synchronous=FULL — the WAL is fsync'd
//     before Write returns. Used for what an answer or an operator relies on: Complete (the
//     stored answer), Reset, generation bumps, ConfirmHeld, MarkDead, Revive, Purge, …
//   - kLazy: if every op of a batch is lazy, it commits with synchronous=NORMAL — atomic and
//     visible to every connection when Write returns, not yet fsync'd. Used for the steps a
//     first-time delivery takes before its answer (claim, lease renew/release, outbox append,
//     mark sent/answered, defer).
// What is durable when: WAL frames are appended in commit order and a FULL commit fsyncs the
// whole WAL, so every durable commit makes every earlier commit (of any connection, any process
// on this file) durable too. After a power loss or OS crash the file holds a PREFIX of the commit
// order that ends at or after the last durable commit; only a suffix of lazy commits can be lost.
// A killed process loses nothing (its commits are in the OS page cache, not in the process).
// Why losing that suffix is harmless: it holds no answer (an answer is stored by the durable
// Complete before it is sent), only the progress of deliveries not yet answered. After restart
// such a delivery is claimed again (its sender retries: no 2xx was sent) and the plugin re-runs;
// each ERP call carries the same derived Idempotency-Key (event key + call index), so the ERP
// replays an answer it already gave instead of acting twice — the same thing that happens when
// the host dies between an ERP call and its mark, which the design already handles. Fencing
// tokens may restart (a lost claim is claimed again with the first token) only when every
// process using the file died with the machine, so no older holder of a token is still running.
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

// Durability is what an op needs when Write returns (see the file comment).
enum class Durability {
  kBeforeReturn,  // fsync'd (synchronous=FULL) before Write returns
  kLazy,          // committed (atomic, visible) before Write returns; fsync'd by the next durable commit
};

class SqliteWriter {
 public:
  using Op = std::function<Status(SqliteDb& db)>;

  // ForPath returns the process's writer for |path| (opened on first use; kStoreUnavailable if
  // the file cannot be opened).
  static Result<std::shared_ptr<SqliteWriter>> ForPath(const std::string& path);

  // Write runs |op| in a group-committed transaction (see the file comment) and returns its
  // Status, or the transaction's failure (kStoreUnavailable). The batch holding |op| commits
  // with synchronous=FULL if any of its ops is kBeforeReturn, else with synchronous=NORMAL.
  Status Write(const Op& op, Durability durability = Durability::kBeforeReturn);

  // commits is how many COMMITs this writer ran (for tests and metrics: ops / commits is the
  // group size); lazy_commits how many of them ran with synchronous=NORMAL.
  int64_t commits() const;
  int64_t lazy_commits() const;
  // queued is how many ops wait for the next batch (for tests: to know a batch will be shared).
  int64_t queued() const;

 private:
  struct Pending {
    const Op* op = nullptr;
    Durability durability = Durability::kBeforeReturn;
    Status result;
    bool done = false;
  };
  explicit SqliteWriter(std::unique_ptr<SqliteDb> db) : db_(std::move(db)) {}
  // RunBatch runs |batch| in one transaction; returns whether it committed with synchronous=NORMAL.
  bool RunBatch(const std::vector<Pending*>& batch);

  const std::unique_ptr<SqliteDb> db_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Pending*> queue_;  // guarded by mu_
  bool leading_ = false;         // a caller is running a batch; guarded by mu_
  int64_t commits_ = 0;          // guarded by mu_
  int64_t lazy_commits_ = 0;     // guarded by mu_
  // The connection's synchronous setting: true once NORMAL was set (Open sets FULL). Only the
  // leader (leading_ == true) touches it.
  bool normal_sync_ = false;
};

}  // namespace clawguard::sqlite

#endif  // CLAWGUARD_STORE_SQLITE_SQLITE_WRITER_H_
