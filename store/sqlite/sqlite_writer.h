// sqlite_writer.h — SqliteWriter: group commit for one SQLite database file (ARCHITECTURE.md
// "Stores": "a writer may group several requests' changes into one transaction").
//
// Every state change of the SQLite idempotency store and outbox is an op run through Write. Ops
// that arrive while a commit is in flight are queued; the next leader (one of the waiting
// callers — there is no writer thread) runs all queued ops in ONE `BEGIN IMMEDIATE … COMMIT`,
// each op inside its own SAVEPOINT (a batch of one op needs none: if it fails, the batch rolls
// back): an op that returns an error has only its own changes rolled back. If that COMMIT fails,
// every op of the batch gets the failure. Ops run serially in arrival order and each sees the
// changes of the ops before it (the same result as one transaction per op, with fewer commits).
//
// Durability (ARCHITECTURE.md "Durable means fsync'd before the answer"). Every batch commits with
// synchronous=NORMAL: atomic and visible to every connection when COMMIT returns, its WAL frames
// written but not yet flushed. Batches are numbered in commit order. Each op says what it needs
// when Write returns:
//   - kLazy: its batch committed. Used for the steps a first-time delivery takes before its
//     answer (claim, lease renew/release, outbox append, mark sent/answered, defer).
//   - kBeforeReturn (the default): its batch (number S) committed AND a flush of the WAL that
//     started after that commit finished (synced >= S). Used for what an answer or an operator
//     relies on: Complete (the stored answer), Reset, generation bumps, ConfirmHeld, MarkDead, …
// Group fsync: a durable op whose batch committed waits for a flush; if none is running it
// becomes the sync leader: it notes the last committed number, releases the writer's lock,
// fdatasync()s the WAL through a descriptor the writer opened itself, then marks everything up to
// that number synced and wakes the waiters. Batches keep committing during the flush, so a lazy
// op never waits for a disk, and one flush serves every durable op committed before it.
// Durable wake-ups: a durable op sleeps once, not once for its commit and again for its flush.
// When a batch commits, the leader registers its durable ops as sync waiters at once (kept
// asleep until a flush ends, which posts kDone with kSynced), except one that it wakes now to
// lead the flush if none is running — the leader's own op when it is durable (it is awake
// anyway). Any flush that starts after the commit covers it, so whichever one ends next
// releases them; one that had started before only wakes them to check and lead the next. A
// flush leader that finds the writer poisoned releases them too (host benchmark: −0.9 voluntary
// context switches per first-time delivery; bench/README.md, session 9).
// Why this is as durable as synchronous=FULL: in WAL mode a commit appends its frames to the WAL
// with write(); FULL only adds an fsync of the WAL before COMMIT returns. fsync/fdatasync act on
// the file (the inode), not on the descriptor, so fdatasync on our own descriptor after COMMIT
// returned makes that commit's frames durable just the same. The rest of SQLite's syncing does
// not depend on the level: it syncs the WAL header when it restarts the WAL after a checkpoint
// (also at NORMAL), and a checkpoint syncs the WAL before copying frames into the database file
// and the database file after. Before each flush the writer compares the file at `<db>-wal` with
// its descriptor (st_dev/st_ino); if they differ (the WAL was deleted and recreated) it flushes the
// old file, the new one and the database file. If the WAL cannot be opened when a batch holding a
// durable op starts (nothing was written in WAL mode yet), that batch commits with
// synchronous=FULL instead, as before; success is never returned without a flush.
// Fail closed (fsyncgate, PostgreSQL 2018: after a failed fsync Linux may drop the dirty pages
// and a retried fsync can falsely succeed): if a flush fails, every durable op waiting for it and
// every op not yet started returns kStoreUnavailable; the writer stays poisoned until the
// process restarts (SQLite then re-reads the WAL from disk and keeps only what reached it).
// What is durable when: WAL frames are appended in commit order and a flush covers the whole
// WAL, so every durable op makes every earlier commit (of any connection, any process on this
// file) durable too. After a power loss or OS crash the file holds a PREFIX of the commit order
// that ends at or after the last commit a durable Write returned for; only a suffix of lazy
// commits can be lost. A killed process loses nothing (its commits are in the OS page cache).
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
// WAL writes: the writer's connection opens the file through the "clawguard-wal" VFS
// (sqlite_wal_vfs.h), which hands a commit's frames to the kernel with one write() instead of two
// per frame (host benchmark: 29 → 6 pwrite calls per first-time delivery). A COMMIT that returns
// has written all its frames, as before; RunBatch then checks that nothing stayed buffered
// (FlushWalWrites) before the batch counts as committed, and poisons the writer if that write
// fails — so a group flush never acknowledges bytes the kernel has not been given.
// Gathering: under load a batch's fixed costs (BEGIN, COMMIT, the WAL write, page 1 and the
// tables' newest leaves written once per commit, SQLite's file locks) are shared by more ops if
// the batch waits briefly for them — PostgreSQL's commit_delay, gated like its commit_siblings.
// When the last batch held kGatherAfterOps ops or more (several callers are active) and fewer
// than kGatherOps are queued, the leader waits (the lock released, the leader role kept) up to
// kGatherFor, or until kGatherOps ops are queued. A lone writer (batches of one or two ops) never
// waits. Measured in the host benchmark (2026-12-03): batches of ~6 ops became ~19, WAL frames
// per op −19 %, first-time deliveries +7.6 % and p99 −12 % (4 of 4 interleaved rounds).
// Checkpoints: SQLite's auto-checkpoint runs inside the COMMIT of the connection that crosses
// 1000 WAL pages, i.e. on this writer while it holds the leader role — copying pages into the
// database file and fsyncing it while every queued op waits (profiling the host showed the writer
// checkpointing in 2 of 3 stack samples under load). The writer replaces it with a WAL hook that
// wakes a checkpointer thread with its own connection, which runs PASSIVE checkpoints beside the
// commits (WAL mode lets a checkpoint and a writer run at once), once the WAL holds
// kCheckpointFrames frames. Durability is unchanged: a checkpoint flushes the WAL before it copies
// and the database file after.
// A checkpoint beside the commits never catches up under sustained load: the frames committed
// while it copies are left for the next one, so the WAL is never complete in the database file and
// SQLite never starts writing it from its beginning again — the WAL file grew without bound (242 MB
// after 60,000 first-time deliveries in the host benchmark, and more the longer the load lasted:
// disk, crash-recovery time and wal-index searches with it). So once the WAL holds
// kWalRestartFrames frames, the leader checkpoints on its own connection between two batches
// (BoundWal); no batch commits meanwhile, so that checkpoint copies everything (unless a reader
// still uses an old snapshot: then it is tried again after the next batch), and the next batch
// writes the WAL from its start. In the same benchmark the WAL file stayed at 86 MB instead of
// 242 MB (it can pass the mark while the checkpointer's own run makes the leader's one busy).
// Fibers (fiber.h, host.yaml `listen.execution: fibers`): a Write from a fiber parks the fiber
// wherever a thread would sleep, and is woken by the same posts (the leader pins the fiber under
// mu_ and unparks it after, as it wakes a thread's futex after). Two things differ, because a
// fiber's carrier runs other fibers: a fiber never runs a flush (an fdatasync would hold its whole
// carrier) — its durable op is registered as a sync waiter and a flusher thread, started by the
// first Write from a fiber, runs the group flush; and a fiber leader gathers by yielding to its
// carrier's other fibers (up to kFiberGatherYields rounds), not by waiting on a timer. A fiber is
// held whenever a plugin blocks its carrier, so nothing the whole process waits for may depend on
// a held fiber: every kStealCheck the flusher leads ops that wait with nobody leading (the role
// offered to a fiber that has not taken it), and takes the role from a fiber leader held while it
// yields (a counter, epoch, tells the fiber when it runs again). Never handing the role to a
// fiber at all (the running leader leading on) was measured 9 % slower (0 of 4 rounds). Gathering without holding the role (every fiber yielding until
// one leads) was measured 14 % slower (0 of 6 rounds). Host benchmark, prototype: ops per commit
// 9.7 with one yield, 11.5 with four (22 for threads).
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
#include "clawguard/fiber.h"
#include "clawguard/unique_fd.h"
#include "sqlite/sqlite_db.h"

namespace clawguard::sqlite {

// Durability is what an op needs when Write returns (see the file comment).
enum class Durability {
  kBeforeReturn,  // committed, and the WAL flushed (fdatasync) after the commit, before Write returns
  kLazy,          // committed (atomic, visible) before Write returns; flushed by a later durable op
};

class SqliteWriter {
 public:
  // The WAL size (frames) at which a commit wakes the checkpointer: 8× SQLite's auto-checkpoint
  // default (1000), a WAL of up to ~32 MiB with 4 KiB pages. A checkpoint copies each page once
  // however many frames the WAL holds for it, and hot pages (B-tree interiors, the newest leaves)
  // are rewritten by most commits, so a longer WAL copies and syncs less per commit: first-time
  // deliveries +7 % against 1000 in an interleaved A/B (bench/README.md). Readers pay a longer
  // wal-index search, which is hashed.
  static constexpr int kCheckpointFrames = 8000;
  // The WAL size (frames) at which the leader, between two batches, checkpoints on its own
  // connection (see the file comment, "Checkpoints"): 2× kCheckpointFrames, ~64 MiB.
  static constexpr int kWalRestartFrames = 2 * kCheckpointFrames;

  // Gathering (see the file comment, "Gathering"): once a batch held at least kGatherAfterOps
  // ops, the next leader waits up to kGatherFor for kGatherOps ops to be queued before it commits.
  static constexpr size_t kGatherAfterOps = 3;
  // 24 ops / 300 µs (2026-12-04; 12 / 150 µs before): +4 % and +6 %, 10 of 12 interleaved rounds
  // ahead and p99 lower in 11 of 12 (bench/README.md, session 8). On the loaded benchmark VM a
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
    Op owned;                // a Submit'ed op (|op| points here)
    bool detached = false;   // Submit'ed: nobody waits; the leader deletes it after its batch
    Durability durability = Durability::kBeforeReturn;
    Status result;
    int64_t seq = 0;       // the batch's number in commit order
    bool flushed = false;  // the batch committed with synchronous=FULL
    // What the waiter is told (kDone, kLead, kSynced; see "Wake-ups" in sqlite_writer.cpp). Each
    // waiter sleeps on its own word: a finished batch wakes its members and the next leader only.
    // Bits are set under mu_, and the futex wake follows after mu_ is released, so a woken
    // waiter never blocks on mu_ again at once.
    std::atomic<uint32_t> signal{0};
    fiber::Fiber* fiber = fiber::Current();  // the waiter's fiber (fiber.h); nullptr on a thread
  };
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
  // LeadBatch runs everything queued as one batch (the caller holds |lock| and takes the leader
  // role), then hands the role to the oldest queued waiter; if only Submit'ed ops are queued it
  // runs them too (nobody else would). It releases |lock| to wake the batch's waiters and holds it
  // again when it returns. |self| is the caller's own op (nullptr for Submit): it is awake, so it
  // is never registered as a sync waiter and is the preferred flush leader.
  void LeadBatch(std::unique_lock<std::mutex>& lock, Pending* self);
  // AwaitDone waits (without mu_) until |mine|'s batch ran, leading a batch when handed the role.
  void AwaitDone(Pending& mine);
  // Gather waits (releasing |lock|, the leader role kept) for more ops before a batch (see
  // "Gathering"); returns at once unless the last batch had kGatherAfterOps ops or more.
  // false: a fiber leader lost the role while it yielded (StealFromHeldFiberLocked).
  bool Gather(std::unique_lock<std::mutex>& lock);
  // StealFromHeldFiberLocked takes the leader role from a fiber held while it yields (see "Fibers").
  void StealFromHeldFiberLocked(std::unique_lock<std::mutex>& lock);
  // RunBatch runs |batch| in one transaction, with synchronous=FULL if |full|. Not OK only if the
  // writer must be poisoned (a commit's WAL bytes could not be written after COMMIT returned).
  Status RunBatch(const std::vector<Pending*>& batch, bool full);
  void RunOps(const std::vector<Pending*>& batch);
  // SetSynchronous switches the connection to FULL or NORMAL if it is not already.
  Status SetSynchronous(bool full);
  // AwaitSync waits (leading a flush if none runs) until |mine|'s batch is flushed.
  Status AwaitSync(Pending& mine);
  void LeadSync(std::unique_lock<std::mutex>& lock);
  // WakeSyncWaiters wakes every registered sync waiter (kSynced | kDone); mu_ held by |lock|.
  void WakeSyncWaiters(std::unique_lock<std::mutex>& lock);
  // FlushWal flushes the WAL through |fd| (and more if the WAL was replaced); runs without mu_.
  Status FlushWal(const SyncFn& sync, int fd);
  Status Flush(const SyncFn& sync, int fd, const std::string& file) const;
  // WalOpenLocked opens the WAL descriptor if it is not open; whether it is open now.
  bool WalOpenLocked();

  const std::unique_ptr<SqliteDb> db_;
  const std::string db_file_;   // absolute, as SQLite resolved it ("" for a temporary database)
  const std::string wal_file_;  // db_file_ + "-wal" ("" if none)
  mutable std::mutex mu_;
  std::vector<Pending*> sync_waiters_;  // durable ops waiting for the running flush; guarded by mu_
  std::vector<Pending*> queue_;      // guarded by mu_
  bool leading_ = false;             // a caller is running a batch; guarded by mu_
  int64_t commits_ = 0;              // batches run = the number of the last one; guarded by mu_
  int64_t lazy_commits_ = 0;         // guarded by mu_
  bool syncing_ = false;             // a caller is flushing; guarded by mu_
  int64_t synced_seq_ = 0;           // every batch up to this number is flushed; guarded by mu_
  int64_t syncs_ = 0;                // guarded by mu_
  std::optional<Status> poisoned_;   // set when a flush failed, never cleared; guarded by mu_
  std::condition_variable gather_cv_;  // a gathering leader: kGatherOps ops are queued
  bool gathering_ = false;             // guarded by mu_
  size_t last_batch_ops_ = 0;          // ops in the last batch; guarded by mu_
  int64_t gathers_ = 0;                // guarded by mu_
  SyncFn sync_;                      // guarded by mu_
  // The WAL descriptor: opened under mu_ (once valid it stays valid); replaced only by the sync
  // leader (under mu_), which is also the only one using it without mu_.
  UniqueFd wal_fd_;
  // The connection's synchronous setting: true once NORMAL was set (Open sets FULL). Only the
  // leader (leading_ == true) touches it.
  bool normal_sync_ = false;
  int wal_frames_ = 0;  // frames in the WAL after the last commit (the WAL hook); leader only
  int wal_restart_frames_ = kWalRestartFrames;  // set before concurrent use (tests)
  int64_t wal_restarts_ = 0;  // written by the leader without mu_, read under mu_ (see wal_restarts)
  // The flusher (see "Fibers"): started by the first durable Write from a fiber.
  void StartFlusherLocked();
  void RequestFlushLocked();
  void FlusherLoop();
  std::condition_variable flusher_cv_;
  bool flusher_on_ = false;       // guarded by mu_
  bool flush_requested_ = false;  // guarded by mu_
  bool flusher_stop_ = false;     // guarded by mu_
  fiber::Fiber* fiber_leader_ = nullptr;  // the leader while it yields to gather; guarded by mu_
  uint64_t lead_epoch_ = 0;               // bumped when the role is taken from it; guarded by mu_
  int64_t steals_ = 0;                    // guarded by mu_
  std::thread flusher_;           // started under mu_; joined by the destructor
  std::unique_ptr<Checkpointer> checkpointer_;  // destroyed first (declared last)
};

}  // namespace clawguard::sqlite

#endif  // CLAWGUARD_STORE_SQLITE_SQLITE_WRITER_H_
