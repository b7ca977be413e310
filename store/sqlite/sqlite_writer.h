// sqlite_writer.h — SqliteWriter: group commit for one SQLite database file (ARCHITECTURE.md
// "Stores"; the reasons and measurements behind each rule: docs/decisions/0026 to 0030, 0033).
//
// Batches. Every state change of the SQLite idempotency store and outbox is an op run through
// Write. Ops that arrive while a commit is in flight are queued; the next leader (one of the
// waiting callers — there is no writer thread) runs them all in ONE `BEGIN IMMEDIATE … COMMIT`,
// each inside its own SAVEPOINT (a batch of one op needs none), so an op that returns an error has
// only its own changes rolled back, and a failed COMMIT fails every op of the batch. Ops run
// serially in arrival order and each sees the changes before it: the result of one transaction
// per op, with fewer commits.
// Durability. Every batch commits with synchronous=NORMAL. A kLazy op returns once its batch
// committed; a kBeforeReturn op (the default) also waits until a fdatasync of the WAL that started
// after its commit finished. The sync leader flushes through a descriptor the writer opened itself,
// without the writer's lock, so lazy ops never wait for a disk and one flush serves every durable
// op committed before it. fsync acts on the inode, and SQLite's other syncs (WAL header at a
// restart, checkpoints) do not depend on the level, so this is as durable as synchronous=FULL. A
// WAL replaced on disk (st_dev/st_ino differ) is flushed with the new one and the database file; a
// WAL that cannot be opened makes a batch holding a durable op commit with synchronous=FULL.
// Frames reach the WAL in commit order, so a power loss can drop only lazy steps of unanswered
// deliveries, which re-run with the same derived Idempotency-Keys. A killed process loses nothing.
// Fail closed: a failed flush poisons the writer — every waiting durable op and every later op
// returns kStoreUnavailable until the process restarts (after a failed fsync the kernel may have
// dropped the dirty pages, and a retried fsync can falsely succeed).
// Wake-ups. Each waiter sleeps on its own futex word, woken after the leader released mu_. Durable
// wake-ups: a durable op sleeps once — at its commit it becomes a sync waiter (one leads the
// flush). WAL writes go through the "clawguard-wal" VFS (sqlite_wal_vfs.h): one write() per commit.
// After each COMMIT, RunBatch checks that nothing stayed buffered (FlushWalWrites) and poisons the
// writer if that write fails, so a flush never acknowledges bytes the kernel was not given.
// Gathering. When the last batch held kGatherAfterOps ops or more, the leader waits (lock released,
// role kept) up to kGatherFor or until kGatherOps ops are queued. A lone writer never waits.
// Checkpoints never run inside a COMMIT: a WAL hook wakes a checkpointer thread with its own
// connection (PASSIVE) at kCheckpointFrames; at kWalRestartFrames the leader checkpoints between
// two batches (BoundWal), so the WAL restarts and stays bounded under sustained load.
// Fibers (fiber.h): a Write from a fiber parks where a thread would sleep. A fiber never runs a
// flush (a flusher thread does) and a fiber leader gathers by yielding (kFiberGatherYields rounds).
// Every kStealCheck the flusher leads ops nobody leads and takes the role from a fiber leader held
// while it yields: nothing the process waits for may depend on a fiber a plugin holds.
// WARNING: an op must not call Write (it would wait for itself) and must use only the SqliteDb
// it is given (the writer's own connection).
// Shared: ForPath returns one writer per database file per process. Thread-safe.
#ifndef CLAWGUARD_STORE_SQLITE_SQLITE_WRITER_H_
#define CLAWGUARD_STORE_SQLITE_SQLITE_WRITER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "clawguard/error.h"
#include "clawguard/unique_fd.h"
#include "core/mutex.h"
#include "runtime/fiber.h"
#include "sqlite/sqlite_db.h"

namespace clawguard::sqlite {

// Durability is what an op needs when Write returns (see the file comment).
enum class Durability {
  kBeforeReturn,  // committed, and the WAL flushed (fdatasync) after the commit, before Write
                  // returns
  kLazy,          // committed (atomic, visible) before Write returns; flushed by a later durable op
};

class SqliteWriter {
 public:
  // The WAL size (frames) at which a commit wakes the checkpointer: 8× SQLite's auto-checkpoint
  // default (1000), a WAL of up to ~32 MiB with 4 KiB pages. A checkpoint copies each page once
  // however many frames the WAL holds for it, and hot pages (B-tree interiors, the newest leaves)
  // are rewritten by most commits, so a longer WAL copies and syncs less per commit (decision
  // 0029). Readers pay a longer wal-index search, which is hashed.
  static constexpr int kCheckpointFrames = 8000;
  // The WAL size (frames) at which the leader, between two batches, checkpoints on its own
  // connection (see the file comment, "Checkpoints"): 2× kCheckpointFrames, ~64 MiB.
  static constexpr int kWalRestartFrames = 2 * kCheckpointFrames;

  // Gathering (see the file comment, "Gathering"): once a batch held at least kGatherAfterOps
  // ops, the next leader waits up to kGatherFor for kGatherOps ops to be queued before it commits.
  static constexpr size_t kGatherAfterOps = 3;
  // 24 ops / 300 µs is the setting that measured best (decision 0027). On a loaded machine a
  // gather lasts longer than its timeout anyway (the wait ends when the leader gets a CPU back).
  static constexpr size_t kGatherOps = 24;
  static constexpr std::chrono::microseconds kGatherFor{300};
  // A fiber leader gathers by yielding to its carrier's other fibers, at most this many rounds
  // (see "Fibers").
  static constexpr int kFiberGatherYields = 4;
  // How often the flusher checks that no held fiber holds the leader role (see "Fibers").
  static constexpr std::chrono::milliseconds kStealCheck{50};

  using Op = std::function<Status(SqliteDb& db)>;
  // SyncFn flushes the open file |fd| to disk: 0 on success, else an errno value.
  using SyncFn = std::function<int(int fd)>;

  // ForPath returns the process's writer for |path| (opened on first use; kStoreUnavailable if
  // the file cannot be opened).
  static Result<std::shared_ptr<SqliteWriter>> ForPath(const std::string& path);

  // Write runs |op| in a group-committed transaction and, for kBeforeReturn, waits for a WAL
  // flush after the commit (see the file comment). Returns |op|'s Status, or kStoreUnavailable
  // if the transaction failed, a flush failed, or an earlier flush failed (poisoned writer).
  Status Write(const Op& op, Durability durability = Durability::kBeforeReturn);

  // Submit queues |op| as a kLazy write and returns without waiting for it; its Status is
  // dropped (for steps whose failure the caller ignores anyway). Ops still run in arrival order:
  // every later Write, by any thread, runs after it and sees its changes; a later durable Write
  // makes it durable. Until its batch commits, other connections (readers) do not see it. If no
  // batch is running the caller runs it now, as Write would. A poisoned writer drops it.
  void Submit(Op op);

  // commits is how many batches (transactions) this writer ran (for tests and metrics: ops /
  // commits is the group size); lazy_commits how many of them ran with synchronous=NORMAL (all
  // but those of the FULL fallback); syncs how many WAL flushes durable ops ran.
  int64_t commits() const;
  int64_t lazy_commits() const;
  int64_t syncs() const;
  // queued is how many ops wait for the next batch (for tests: to know a batch will be shared).
  int64_t queued() const;

  // checkpoints is how many WAL checkpoints the background checkpointer ran (see the file comment,
  // "Checkpoints"); 0 when SQLite's own auto-checkpoint is in use. wal_restarts is how many
  // checkpoints the leader ran that copied the whole WAL (kWalRestartFrames).
  int64_t checkpoints() const;
  int64_t wal_restarts() const;
  // gathers is how many batches waited to gather ops (see "Gathering").
  int64_t gathers() const;
  // steals is how many times the flusher took the leader role from a held fiber (see "Fibers").
  int64_t steals() const;

  ~SqliteWriter();
  SqliteWriter(const SqliteWriter&) = delete;
  SqliteWriter& operator=(const SqliteWriter&) = delete;

  // SetSyncForTesting replaces fdatasync for this writer's flushes (tests block it, count it or
  // make it fail). Test-only; call before the writer is used concurrently.
  void SetSyncForTesting(SyncFn sync);
  // SetWalRestartFramesForTesting replaces kWalRestartFrames for this writer. Test-only.
  void SetWalRestartFramesForTesting(int frames);

 private:
  struct Pending {
    const Op* op = nullptr;
    Op owned;               // a Submit'ed op (|op| points here)
    bool detached = false;  // Submit'ed: nobody waits; its queue entry owns it (see Queued)
    Durability durability = Durability::kBeforeReturn;
    Status result;
    int64_t seq = 0;       // the batch's number in commit order
    bool flushed = false;  // the batch committed with synchronous=FULL
    // What the waiter is told (kDone, kLead, kSynced; see sqlite_wakeups.h). Each
    // waiter sleeps on its own word: a finished batch wakes its members and the next leader only.
    // Bits are set under mu_, and the futex wake follows after mu_ is released, so a woken
    // waiter never blocks on mu_ again at once.
    std::atomic<uint32_t> signal{0};
    fiber::Fiber* fiber = fiber::Current();  // the waiter's fiber (fiber.h); nullptr on a thread
  };
  // Queued is one entry of the queue (and then of a batch). A Submit'ed Pending (detached) has no
  // waiter: its entry owns it and frees it when the entry goes, once its batch ran. A Write's
  // Pending lives on the waiting caller's stack and is only borrowed: its entry is released, never
  // destroyed, before the waiter is told its batch ran (the waiter may return at once), so
  // QueuedDeleter reads |detached| only while the Pending is alive. As small as a raw pointer.
  struct QueuedDeleter {
    void operator()(Pending* p) const {
      if (p->detached) delete p;
    }
  };
  using Queued = std::unique_ptr<Pending, QueuedDeleter>;
  class Checkpointer;
  explicit SqliteWriter(std::unique_ptr<SqliteDb> db);
  // StartCheckpointer moves checkpoints off the commit path: SQLite's auto-checkpoint is replaced
  // by a WAL hook that wakes a checkpointer thread on its own connection to |path|. If that
  // connection cannot be opened the auto-checkpoint stays (correct, only slower).
  void StartCheckpointer(const std::string& path);
  static int OnWalCommit(void* self, sqlite3* db, const char* name, int pages);
  // BoundWal runs after each batch, on the leader's thread: once the WAL holds
  // wal_restart_frames_ frames it checkpoints on the writer's connection (see the file comment).
  void BoundWal();
  // LeadBatch runs everything queued as one batch (the caller holds mu_ and takes the leader
  // role), then hands the role to the oldest queued waiter; if only Submit'ed ops are queued it
  // runs them too (nobody else would). It releases mu_ to wake the batch's waiters and holds it
  // again when it returns. |self| is the caller's own op (nullptr for Submit): it is awake, so it
  // is never registered as a sync waiter and is the preferred flush leader.
  void LeadBatch(Pending* self) CLAWGUARD_REQUIRES(mu_);
  // AwaitDone waits (without mu_) until |mine|'s batch ran, leading a batch when handed the role.
  void AwaitDone(Pending& mine);
  // Gather waits (releasing mu_, the leader role kept) for more ops before a batch (see
  // "Gathering"); returns at once unless the last batch had kGatherAfterOps ops or more.
  // false: a fiber leader lost the role while it yielded (StealFromHeldFiberLocked).
  bool Gather() CLAWGUARD_REQUIRES(mu_);
  // StealFromHeldFiberLocked takes the leader role from a fiber held while it yields (see
  // "Fibers").
  void StealFromHeldFiberLocked() CLAWGUARD_REQUIRES(mu_);
  // RunBatch runs |batch| in one transaction, with synchronous=FULL if |full|. Not OK only if the
  // writer must be poisoned (a commit's WAL bytes could not be written after COMMIT returned).
  Status RunBatch(const std::vector<Queued>& batch, bool full);
  void RunOps(const std::vector<Queued>& batch);
  // SetSynchronous switches the connection to FULL or NORMAL if it is not already.
  Status SetSynchronous(bool full);
  // AwaitSync waits (leading a flush if none runs) until |mine|'s batch is flushed.
  Status AwaitSync(Pending& mine);
  void LeadSync() CLAWGUARD_REQUIRES(mu_);
  // WakeSyncWaiters wakes every registered sync waiter (kSynced | kDone); mu_ held (released while
  // it wakes them).
  void WakeSyncWaiters() CLAWGUARD_REQUIRES(mu_);
  // FlushWal flushes the WAL through |fd| (and more if the WAL was replaced); runs without mu_.
  Status FlushWal(const SyncFn& sync, int fd);
  Status Flush(const SyncFn& sync, int fd, const std::string& file) const;
  // WithoutLock runs |fn| with mu_ released and takes mu_ back when |fn| returns or throws, so the
  // caller's MutexLock always finds mu_ held again (never unlocks a mutex it does not hold).
  template <class Fn>
  void WithoutLock(Fn&& fn) CLAWGUARD_REQUIRES(mu_) {
    mu_.Unlock();
    try {
      fn();
    } catch (...) {
      mu_.Lock();
      throw;
    }
    mu_.Lock();
  }
  // WalOpenLocked opens the WAL descriptor if it is not open; whether it is open now.
  bool WalOpenLocked() CLAWGUARD_REQUIRES(mu_);

  const std::unique_ptr<SqliteDb> db_;
  const std::string db_file_;   // absolute, as SQLite resolved it ("" for a temporary database)
  const std::string wal_file_;  // db_file_ + "-wal" ("" if none)
  mutable Mutex mu_;
  std::vector<Pending*> sync_waiters_
      CLAWGUARD_GUARDED_BY(mu_);  // durable ops waiting for the running flush
  std::vector<Queued> queue_ CLAWGUARD_GUARDED_BY(mu_);
  bool leading_ CLAWGUARD_GUARDED_BY(mu_) = false;  // a caller is running a batch
  int64_t commits_ CLAWGUARD_GUARDED_BY(mu_) = 0;   // batches run = the number of the last one
  int64_t lazy_commits_ CLAWGUARD_GUARDED_BY(mu_) = 0;
  bool syncing_ CLAWGUARD_GUARDED_BY(mu_) = false;    // a caller is flushing
  int64_t synced_seq_ CLAWGUARD_GUARDED_BY(mu_) = 0;  // every batch up to this number is flushed
  int64_t syncs_ CLAWGUARD_GUARDED_BY(mu_) = 0;
  std::optional<Status> poisoned_
      CLAWGUARD_GUARDED_BY(mu_);       // set when a flush failed, never cleared
  std::condition_variable gather_cv_;  // a gathering leader: kGatherOps ops are queued
  bool gathering_ CLAWGUARD_GUARDED_BY(mu_) = false;
  size_t last_batch_ops_ CLAWGUARD_GUARDED_BY(mu_) = 0;  // ops in the last batch
  int64_t gathers_ CLAWGUARD_GUARDED_BY(mu_) = 0;
  SyncFn sync_ CLAWGUARD_GUARDED_BY(mu_);
  // The WAL descriptor: opened under mu_ (once valid it stays valid); replaced only by the sync
  // leader (under mu_), which is also the only one using it without mu_.
  UniqueFd wal_fd_;
  // The connection's synchronous setting: true once NORMAL was set (Open sets FULL). Only the
  // leader (leading_ == true) touches it.
  bool normal_sync_ = false;
  int wal_frames_ = 0;  // frames in the WAL after the last commit (the WAL hook); leader only
  int wal_restart_frames_ = kWalRestartFrames;  // set before concurrent use (tests)
  int64_t wal_restarts_ =
      0;  // written by the leader without mu_, read under mu_ (see wal_restarts)
  // The flusher (see "Fibers"): started by the first durable Write from a fiber.
  void StartFlusherLocked() CLAWGUARD_REQUIRES(mu_);
  void RequestFlushLocked() CLAWGUARD_REQUIRES(mu_);
  void FlusherLoop();
  std::condition_variable flusher_cv_;
  bool flusher_on_ CLAWGUARD_GUARDED_BY(mu_) = false;
  bool flush_requested_ CLAWGUARD_GUARDED_BY(mu_) = false;
  bool flusher_stop_ CLAWGUARD_GUARDED_BY(mu_) = false;
  fiber::Fiber* fiber_leader_ CLAWGUARD_GUARDED_BY(mu_) =
      nullptr;                                         // the leader while it yields to gather
  uint64_t lead_epoch_ CLAWGUARD_GUARDED_BY(mu_) = 0;  // bumped when the role is taken from it
  int64_t steals_ CLAWGUARD_GUARDED_BY(mu_) = 0;
  std::thread flusher_;                         // started under mu_; joined by the destructor
  std::unique_ptr<Checkpointer> checkpointer_;  // destroyed first (declared last)
};

}  // namespace clawguard::sqlite

#endif  // CLAWGUARD_STORE_SQLITE_SQLITE_WRITER_H_
