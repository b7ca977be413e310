// sqlite_writer.cpp — leader/follower group commit on one connection per database file, and
// group fsync of its WAL beside the commit order.
#include "sqlite/sqlite_writer.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>
#include <system_error>
#include <thread>

#include "runtime/fiber.h"
#include "runtime/thread_name.h"
#include "sqlite/sqlite_wal_vfs.h"

namespace clawguard::sqlite {
namespace {

std::string CanonicalPath(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : p.string();
}

int Fdatasync(int fd) { return ::fdatasync(fd) == 0 ? 0 : errno; }

// Wake-ups. A waiter (a Write's Pending, on its caller's stack) sleeps on its own 32-bit word:
// kDone (its batch ran: result, seq and flushed are set), kLead (it may lead the next batch),
// kSynced (the flush it waited for ended). Bits are only set under mu_, by a leader that knows
// the Pending is alive (a batch member not yet done, a queued waiter, a registered sync waiter);
// the waiter returns only after it saw the bit it waits for. The FUTEX_WAKE comes after mu_ is
// released: woken under mu_ (as a condition variable notified under its lock), the waiter's first
// act was to block on mu_ again — in the host benchmark 14 % of the host's context switches were
// such re-blocks. A wake names an address only (the kernel reads nothing there): if the waiter
// already returned and the stack word is reused, its new owner wakes spuriously and re-checks,
// which every futex user (this one, glibc's mutexes and condition variables) tolerates.
constexpr uint32_t kDone = 1;
constexpr uint32_t kLead = 2;
constexpr uint32_t kSynced = 4;
constexpr uint32_t kSleeping = 8;  // the waiter slept (or may sleep): a setter must wake it
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free);

// A waiter on a fiber (fiber.h) parks instead of sleeping in the kernel: Post pins its fiber
// (under mu_, while the waiter is known to be alive) and WakeAll unparks it.
using Wakes = std::vector<std::pair<std::atomic<uint32_t>*, fiber::Fiber*>>;

// Post sets |bit| in |word| (mu_ held) and notes a wake if its waiter (on |f| if not nullptr) may sleep.
void Post(std::atomic<uint32_t>& word, fiber::Fiber* f, uint32_t bit, Wakes& wakes) {
  if ((word.fetch_or(bit, std::memory_order_acq_rel) & kSleeping) == 0) return;
  if (f != nullptr) fiber::Pin(f);
  wakes.emplace_back(&word, f);
}

void WakeAll(const Wakes& wakes) {
  for (const auto& [word, f] : wakes) {
    if (f != nullptr) {
      fiber::UnparkPinned(f);
      continue;
    }
    ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  }
}

// Sleep waits until |word| differs from |seen| (which holds none of the bits waited for); it may
// return early (a spurious wake-up): callers re-check.
void Sleep(std::atomic<uint32_t>& word, uint32_t seen) {
  if ((seen & kSleeping) == 0) {
    if (!word.compare_exchange_strong(seen, seen | kSleeping, std::memory_order_acq_rel)) return;
    seen |= kSleeping;
  }
  if (fiber::Current() != nullptr) {
    fiber::Park();  // a setter saw kSleeping and unparks us (or already did: Park returns at once)
    return;
  }
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, seen, nullptr, nullptr, 0);
}

// AwaitBit waits until |bit| is set in |word|, then clears it.
void AwaitBit(std::atomic<uint32_t>& word, uint32_t bit) {
  for (uint32_t s = word.load(std::memory_order_acquire); (s & bit) == 0; s = word.load(std::memory_order_acquire)) {
    Sleep(word, s);
  }
  word.fetch_and(~bit, std::memory_order_relaxed);
}

// DbFile and WalFile are the files as SQLite resolved them (absolute, symlinks followed), so a
// later chdir does not matter; "" for a temporary or in-memory database.
std::string DbFile(const SqliteDb& db) {
  const char* f = sqlite3_db_filename(db.raw(), "main");
  return f != nullptr ? f : "";
}
std::string WalFile(const SqliteDb& db) {
  const char* f = sqlite3_db_filename(db.raw(), "main");
  if (f == nullptr || *f == '\0') return "";
  const char* wal = sqlite3_filename_wal(f);
  return wal != nullptr ? wal : "";
}

// SameFile says whether |path| names the file open as |fd|.
bool SameFile(int fd, const std::string& path) {
  struct stat at_path {};
  struct stat held {};
  return ::stat(path.c_str(), &at_path) == 0 && ::fstat(fd, &held) == 0 && at_path.st_dev == held.st_dev &&
         at_path.st_ino == held.st_ino;
}

// FlushFailed is the poison: see "Fail closed" in the header.
Status FlushFailed(const std::string& db_path, const std::string& file, int err) {
  return Status(Reason::kStoreUnavailable,
                "SQLite store '" + db_path + "': the database file could not be flushed to disk (fdatasync of '" +
                    file + "': " + std::generic_category().message(err) +
                    "); this store refuses every write until the process restarts (after a failed flush the OS "
                    "may have dropped the unwritten data, so a retried flush could falsely succeed)");
}

}  // namespace

// Checkpointer runs PASSIVE checkpoints on its own connection when the writer's WAL hook asks.
class SqliteWriter::Checkpointer {
 public:
  explicit Checkpointer(std::unique_ptr<SqliteDb> db) : db_(std::move(db)), thread_([this] { Loop(); }) {}
  ~Checkpointer() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  void Request() {
    {
      std::lock_guard lock(mu_);
      requested_ = true;
    }
    cv_.notify_one();
  }
  int64_t runs() const {
    std::lock_guard lock(mu_);
    return runs_;
  }

 private:
  void Loop() {
    NameThisThread("cg-checkpoint");
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stop_ || requested_; });
      if (stop_) return;
      requested_ = false;
      lock.unlock();
      // PASSIVE: copies what no reader still needs, never blocks the writer; a busy or failed
      // checkpoint is simply tried again at the next request (the WAL only grows meanwhile).
      int wal_pages = 0;
      int copied = 0;
      (void)sqlite3_wal_checkpoint_v2(db_->raw(), nullptr, SQLITE_CHECKPOINT_PASSIVE, &wal_pages, &copied);
      lock.lock();
      ++runs_;
    }
  }

  const std::unique_ptr<SqliteDb> db_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool requested_ = false;  // guarded by mu_
  bool stop_ = false;       // guarded by mu_
  int64_t runs_ = 0;        // guarded by mu_
  std::thread thread_;      // last: starts after the members above exist
};

SqliteWriter::SqliteWriter(std::unique_ptr<SqliteDb> db)
    : db_(std::move(db)), db_file_(DbFile(*db_)), wal_file_(WalFile(*db_)), sync_(Fdatasync) {}

void SqliteWriter::StartFlusherLocked() {
  try {
    flusher_ = std::thread([this] { FlusherLoop(); });
    flusher_on_ = true;
  } catch (...) {
    // No thread: fibers lead their flushes on their carrier, as threads do (correct, slower).
  }
}

void SqliteWriter::RequestFlushLocked() {
  flush_requested_ = true;
  flusher_cv_.notify_one();
}

void SqliteWriter::FlusherLoop() {
  NameThisThread("cg-flush");
  std::unique_lock lock(mu_);
  for (;;) {
    // Every kStealCheck it also checks that no held fiber holds the leader role.
    flusher_cv_.wait_for(lock, kStealCheck, [this] { return flush_requested_ || flusher_stop_; });
    if (flusher_stop_) return;
    StealFromHeldFiberLocked(lock);
    if (!flush_requested_) continue;
    flush_requested_ = false;
    if (syncing_) continue;  // that flush's end wakes the waiters; any it did not cover ask again
    if (poisoned_ || !WalOpenLocked()) {
      WakeSyncWaiters(lock);  // they see the poison (a durable op commits FULL while no WAL is open)
      continue;
    }
    LeadSync(lock);
  }
}

SqliteWriter::~SqliteWriter() {
  {
    std::lock_guard lock(mu_);
    flusher_stop_ = true;
  }
  flusher_cv_.notify_one();
  if (flusher_.joinable()) flusher_.join();
  if (checkpointer_ != nullptr) sqlite3_wal_hook(db_->raw(), nullptr, nullptr);
  checkpointer_.reset();
}

void SqliteWriter::StartCheckpointer(const std::string& path) {
  if (db_file_.empty()) return;  // a temporary database: nothing to checkpoint beside it
  Result<std::unique_ptr<SqliteDb>> other = SqliteDb::Open(path);
  if (!other.ok()) return;  // SQLite's auto-checkpoint stays in charge
  checkpointer_ = std::make_unique<Checkpointer>(std::move(other).value());
  // Replaces the auto-checkpoint (which SQLite implements with this same hook).
  sqlite3_wal_hook(db_->raw(), &SqliteWriter::OnWalCommit, this);
}

int SqliteWriter::OnWalCommit(void* self, sqlite3*, const char*, int pages) {
  auto* writer = static_cast<SqliteWriter*>(self);
  writer->wal_frames_ = pages;  // on the writer's connection: the leader's thread
  if (pages >= kCheckpointFrames) writer->checkpointer_->Request();
  return SQLITE_OK;
}

void SqliteWriter::BoundWal() {
  if (checkpointer_ == nullptr || wal_frames_ < wal_restart_frames_) return;
  // The leader's own checkpoint: no batch commits while it runs (this thread holds the leader
  // role), so unlike the checkpointer's it can copy every frame; the next batch then writes the
  // WAL from its start again. A checkpoint already running (the checkpointer's) makes this one
  // return SQLITE_BUSY at once: it is tried again after the next batch.
  int wal_pages = 0;
  int copied = 0;
  if (sqlite3_wal_checkpoint_v2(db_->raw(), nullptr, SQLITE_CHECKPOINT_PASSIVE, &wal_pages, &copied) == SQLITE_OK &&
      copied == wal_pages) {
    wal_frames_ = 0;
    ++wal_restarts_;
  }
}

int64_t SqliteWriter::checkpoints() const { return checkpointer_ != nullptr ? checkpointer_->runs() : 0; }

int64_t SqliteWriter::wal_restarts() const {
  std::lock_guard lock(mu_);  // the leader updates it before it takes mu_ back
  return wal_restarts_;
}

int64_t SqliteWriter::gathers() const {
  std::lock_guard lock(mu_);
  return gathers_;
}

int64_t SqliteWriter::steals() const {
  std::lock_guard lock(mu_);
  return steals_;
}

void SqliteWriter::SetWalRestartFramesForTesting(int frames) {
  std::lock_guard lock(mu_);
  wal_restart_frames_ = frames;
}

Result<std::shared_ptr<SqliteWriter>> SqliteWriter::ForPath(const std::string& path) {
  static std::mutex* registry_mu = new std::mutex;
  static auto* registry = new std::map<std::string, std::weak_ptr<SqliteWriter>>;
  std::lock_guard lock(*registry_mu);
  const std::string key = CanonicalPath(path);
  if (auto it = registry->find(key); it != registry->end()) {
    if (std::shared_ptr<SqliteWriter> w = it->second.lock()) return w;
  }
  // The WAL VFS writes each commit's frames with one write() (sqlite_wal_vfs.h).
  CLAWGUARD_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path, WalVfsName()));
  std::shared_ptr<SqliteWriter> w(new SqliteWriter(std::move(db)));
  w->StartCheckpointer(path);
  (*registry)[key] = w;
  return w;
}

int64_t SqliteWriter::commits() const {
  std::lock_guard lock(mu_);
  return commits_;
}

int64_t SqliteWriter::lazy_commits() const {
  std::lock_guard lock(mu_);
  return lazy_commits_;
}

int64_t SqliteWriter::syncs() const {
  std::lock_guard lock(mu_);
  return syncs_;
}

int64_t SqliteWriter::queued() const {
  std::lock_guard lock(mu_);
  return static_cast<int64_t>(queue_.size());
}

void SqliteWriter::SetSyncForTesting(SyncFn sync) {
  std::lock_guard lock(mu_);
  sync_ = std::move(sync);
}

Status SqliteWriter::Write(const Op& op, Durability durability) {
  Pending mine;
  mine.op = &op;
  mine.durability = durability;
  {
    std::unique_lock lock(mu_);
    if (poisoned_) return *poisoned_;
    if (mine.fiber != nullptr && !flusher_on_) StartFlusherLocked();
    queue_.emplace_back(&mine);  // borrowed: |mine| outlives its entry (see Queued)
    if (!leading_) {
      LeadBatch(lock, &mine);
    } else if (gathering_ && queue_.size() >= kGatherOps) {
      lock.unlock();
      gather_cv_.notify_one();  // the gathering leader re-checks the queue under mu_
    }
  }
  AwaitDone(mine);
  if (durability == Durability::kLazy || !mine.result.ok() || mine.flushed) return mine.result;
  // Registered for a flush by its batch's leader, it was woken by that flush's end (kSynced with
  // kDone); the bit is spent here, AwaitSync checks under mu_ what the flush covered.
  mine.signal.fetch_and(~kSynced, std::memory_order_relaxed);
  return AwaitSync(mine);
}

void SqliteWriter::AwaitDone(Pending& mine) {
  for (;;) {
    const uint32_t s = mine.signal.load(std::memory_order_acquire);
    if (s & kDone) return;
    if (s & kLead) {
      mine.signal.fetch_and(~kLead, std::memory_order_relaxed);
      std::unique_lock lock(mu_);
      // Not done and nobody leads: the op is still queued (a batch sets kDone before it ends).
      if (!leading_ && (mine.signal.load(std::memory_order_acquire) & kDone) == 0) LeadBatch(lock, &mine);
      continue;
    }
    Sleep(mine.signal, s);
  }
}

void SqliteWriter::Submit(Op op) {
  auto mine = std::make_unique<Pending>();
  mine->owned = std::move(op);
  mine->op = &mine->owned;
  mine->durability = Durability::kLazy;
  mine->detached = true;
  std::unique_lock lock(mu_);
  if (poisoned_) return;
  queue_.push_back(Queued(mine.release()));  // its entry owns it now; freed after its batch ran
  if (!leading_) {
    LeadBatch(lock, nullptr);
  } else if (gathering_ && queue_.size() >= kGatherOps) {
    lock.unlock();
    gather_cv_.notify_one();
  }
}

bool SqliteWriter::Gather(std::unique_lock<std::mutex>& lock) {
  if (fiber::Current() != nullptr) {
    // A fiber leader: the other fibers of its carrier cannot queue ops while it waits on a
    // condition variable, so it yields instead — they run (and queue theirs) first, up to
    // kFiberGatherYields rounds while fewer than kGatherOps are queued. If a plugin blocks its
    // carrier meanwhile, the flusher takes the role over (StealFromHeldFiberLocked): then this
    // caller is no longer the leader and returns false.
    const uint64_t epoch = lead_epoch_;
    for (int i = 0; i < kFiberGatherYields && queue_.size() < kGatherOps; ++i) {
      ++gathers_;
      fiber_leader_ = fiber::Current();
      lock.unlock();
      fiber::Yield();
      lock.lock();
      if (lead_epoch_ != epoch) return false;
      fiber_leader_ = nullptr;
    }
    return true;
  }
  // Only under concurrency (the last batch had several ops): a lone writer never waits.
  if (last_batch_ops_ < kGatherAfterOps || queue_.size() >= kGatherOps) return true;
  ++gathers_;
  gathering_ = true;
  gather_cv_.wait_for(lock, kGatherFor, [this] { return queue_.size() >= kGatherOps; });
  gathering_ = false;
  return true;
}

void SqliteWriter::StealFromHeldFiberLocked(std::unique_lock<std::mutex>& lock) {
  if (!leading_) {
    // Ops queued and nobody leads: the role was offered (kLead) to a fiber that has not taken
    // it — perhaps held by a plugin that blocks its carrier — and no writer came since.
    if (!queue_.empty()) LeadBatch(lock, nullptr);
    return;
  }
  // The leader is a fiber that yielded to gather and its carrier is now held: every writer of the
  // process would wait for it. Take the role over; the fiber, when it runs again, sees the epoch
  // changed and leads nothing.
  if (fiber_leader_ == nullptr || !fiber::Held(fiber_leader_)) return;
  ++lead_epoch_;
  ++steals_;
  fiber_leader_ = nullptr;
  leading_ = false;
  LeadBatch(lock, nullptr);
}

void SqliteWriter::LeadBatch(std::unique_lock<std::mutex>& lock, Pending* self) {
  while (!leading_ && !queue_.empty()) {
    // Lead: take everything queued so far (the caller's op included) into one transaction.
    leading_ = true;
    if (!Gather(lock)) return;  // the role was taken over while this fiber was held
    std::vector<Queued> batch;
    batch.swap(queue_);
    last_batch_ops_ = batch.size();
    if (poisoned_) {
      for (const Queued& p : batch) p->result = *poisoned_;  // a failed flush refuses every op not yet run
    } else {
      // A durable op is flushed through the WAL descriptor after its commit; without one its
      // batch commits with FULL (SQLite flushes before COMMIT returns).
      const bool full = std::any_of(batch.begin(), batch.end(),
                                    [](const Queued& p) { return p->durability == Durability::kBeforeReturn; }) &&
                        !WalOpenLocked();
      lock.unlock();
      Status lost = RunBatch(batch, full);
      BoundWal();
      lock.lock();
      if (!lost.ok() && !poisoned_) poisoned_ = std::move(lost);
      ++commits_;
      if (normal_sync_) ++lazy_commits_;
    }
    // A durable op that still needs a flush sleeps once (see "Durable wake-ups"): the flush
    // leader is this caller if its own op needs one, else the first such op (woken now with
    // kDone); the others are registered as sync waiters at once and woken when a flush ends.
    // While a flush runs, nobody is woken to lead: that flush's end wakes them all.
    const auto needs_flush = [this](const Pending* p) {
      return !p->detached && p->durability == Durability::kBeforeReturn && p->result.ok() && normal_sync_ &&
             !poisoned_;
    };
    // A fiber never flushes on its carrier (an fdatasync would hold every fiber of it): the
    // flusher thread flushes for it ("Fibers" in the header).
    const auto offloaded = [this](const Pending* p) { return p->fiber != nullptr && flusher_on_; };
    const auto may_lead_flush = [&](const Pending* p) { return needs_flush(p) && !offloaded(p); };
    Pending* sync_leader = nullptr;
    if (!syncing_) {
      const bool self_in_batch = self != nullptr && std::any_of(batch.begin(), batch.end(),
                                                                [self](const Queued& p) { return p.get() == self; });
      if (self_in_batch && may_lead_flush(self)) {
        sync_leader = self;
      } else if (const auto it = std::find_if(batch.begin(), batch.end(),
                                              [&](const Queued& p) { return may_lead_flush(p.get()); });
                 it != batch.end()) {
        sync_leader = it->get();
      }
    }
    bool request_flush = false;
    Wakes wakes;
    wakes.reserve(batch.size() + 1);
    for (Queued& entry : batch) {
      if (entry->detached) {
        entry.reset();  // nobody waits for a Submit'ed op: its entry frees it now
        continue;
      }
      // A Write's op, borrowed from its waiter, which may return as soon as it is posted below.
      Pending* const p = entry.release();
      p->seq = commits_;
      p->flushed = !normal_sync_;
      if (p != sync_leader && needs_flush(p) && (p != self || offloaded(p))) {
        sync_waiters_.push_back(p);  // LeadSync posts kDone with kSynced: the last touch of |p|
        request_flush = request_flush || offloaded(p);
        continue;
      }
      Post(p->signal, p->fiber, kDone, wakes);  // the last touch of |p|: its waiter may return at once
    }
    // Nobody else will flush for the fibers registered above: the flusher does.
    if (request_flush && sync_leader == nullptr && !syncing_) RequestFlushLocked();
    leading_ = false;
    // The oldest queued waiter leads the next batch (it takes the whole queue). The role is only
    // offered: until it takes it, any writer that comes leads — and if it is a fiber held by a
    // plugin that blocks its carrier, the flusher leads the queue (StealFromHeldFiberLocked).
    const auto waiter = std::find_if(queue_.begin(), queue_.end(), [](const Queued& p) { return !p->detached; });
    if (waiter != queue_.end()) Post((*waiter)->signal, (*waiter)->fiber, kLead, wakes);
    const bool only_submitted = waiter == queue_.end() && !queue_.empty();
    if (!wakes.empty()) {
      lock.unlock();
      WakeAll(wakes);
      lock.lock();
    }
    // Only Submit'ed ops are queued: nobody would lead them, so this caller runs them now (unless
    // someone took the role meanwhile: the loop's condition).
    if (!only_submitted) return;
  }
}

Status SqliteWriter::RunBatch(const std::vector<Queued>& batch, bool full) {
  SqliteDb& db = *db_;
  if (Status s = SetSynchronous(full); !s.ok() && full) {
    // A durable op must not commit unflushed: fail the batch rather than risk it. (If NORMAL
    // could not be set the connection is still FULL, which is only safer.)
    for (const Queued& p : batch) p->result = s;
    return Status::Ok();
  }
  if (Status begin = db.Exec("BEGIN IMMEDIATE"); !begin.ok()) {
    for (const Queued& p : batch) p->result = begin;
    return Status::Ok();
  }
  RunOps(batch);
  if (batch.size() == 1 && !batch.front()->result.ok()) {
    (void)db.Exec("ROLLBACK");  // undoes the one op's changes, and nothing else was in the batch
    return Status::Ok();
  }
  if (Status commit = db.Exec("COMMIT"); !commit.ok()) {
    (void)db.Exec("ROLLBACK");
    for (const Queued& p : batch) p->result = commit;
    return Status::Ok();
  }
  // The WAL VFS wrote the commit's frames before COMMIT returned (sqlite_wal_vfs.h); this only
  // makes sure nothing is left buffered before a flush (fdatasync) can acknowledge the batch.
  if (const int rc = FlushWalWrites(db.raw()); rc != SQLITE_OK) {
    Status failed(Reason::kStoreUnavailable, "SQLite store '" + db.path() + "': writing the WAL after a commit failed: " +
                                                 sqlite3_errstr(rc) + "; restart the host (SQLite recovers the WAL)");
    for (const Queued& p : batch) p->result = failed;
    return failed;  // the commit is visible but not in the file: refuse everything until restart
  }
  return Status::Ok();
}

void SqliteWriter::RunOps(const std::vector<Queued>& batch) {
  SqliteDb& db = *db_;
  if (batch.size() == 1) {  // no SAVEPOINT needed: RunBatch rolls back the batch if the op fails
    batch.front()->result = (*batch.front()->op)(db);
    return;
  }
  for (const Queued& p : batch) {
    if (Status s = db.Exec("SAVEPOINT op"); !s.ok()) {
      p->result = s;
      continue;
    }
    p->result = (*p->op)(db);
    if (!p->result.ok()) (void)db.Exec("ROLLBACK TO op");
    if (Status s = db.Exec("RELEASE op"); !s.ok() && p->result.ok()) p->result = s;
  }
}

Status SqliteWriter::SetSynchronous(bool full) {
  // synchronous is per connection and applies to the next COMMIT; set it only when it changes.
  if (normal_sync_ != full) return Status::Ok();
  CLAWGUARD_RETURN_IF_ERROR(db_->Exec(full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL"));
  normal_sync_ = !full;
  return Status::Ok();
}

bool SqliteWriter::WalOpenLocked() {
  // The WAL exists once this connection has written in WAL mode; until then a durable batch
  // commits with FULL, and the next one tries again.
  if (!wal_fd_.valid() && !wal_file_.empty()) wal_fd_.Reset(::open(wal_file_.c_str(), O_RDONLY | O_CLOEXEC));
  return wal_fd_.valid();
}

Status SqliteWriter::AwaitSync(Pending& mine) {
  std::unique_lock lock(mu_);
  while (true) {
    if (synced_seq_ >= mine.seq) return mine.result;  // a flush that succeeded covered it
    if (poisoned_) {
      // No flush will start: release the waiters a batch leader registered for this one to lead.
      if (!syncing_) WakeSyncWaiters(lock);
      return *poisoned_;
    }
    if (!syncing_) {
      if (mine.fiber == nullptr || !flusher_on_) {
        LeadSync(lock);
        continue;
      }
      RequestFlushLocked();  // a fiber waits for the flusher (see LeadBatch)
    }
    // That flush may have started before our commit: check again after it.
    sync_waiters_.push_back(&mine);
    lock.unlock();
    AwaitBit(mine.signal, kSynced);
    lock.lock();
  }
}

void SqliteWriter::LeadSync(std::unique_lock<std::mutex>& lock) {
  syncing_ = true;
  const int64_t target = commits_;  // every batch up to here has committed: the flush covers it
  const SyncFn sync = sync_;
  const int fd = wal_fd_.get();
  CLAWGUARD_CHECK(fd >= 0);  // a batch with a durable op commits NORMAL only once the WAL is open
  lock.unlock();
  Status flushed = FlushWal(sync, fd);
  lock.lock();
  syncing_ = false;
  ++syncs_;
  if (flushed.ok()) {
    synced_seq_ = std::max(synced_seq_, target);
  } else {
    poisoned_ = std::move(flushed);
  }
  WakeSyncWaiters(lock);
}

void SqliteWriter::WakeSyncWaiters(std::unique_lock<std::mutex>& lock) {
  Wakes wakes;
  // kDone too: a waiter registered by its batch's leader still sleeps in AwaitDone.
  for (Pending* p : sync_waiters_) Post(p->signal, p->fiber, kSynced | kDone, wakes);
  sync_waiters_.clear();
  if (!wakes.empty()) {
    lock.unlock();
    WakeAll(wakes);
    lock.lock();
  }
}

Status SqliteWriter::FlushWal(const SyncFn& sync, int fd) {
  if (SameFile(fd, wal_file_)) return Flush(sync, fd, wal_file_);
  // The WAL at the path is not the file we hold: it was deleted (every connection closed, after a
  // checkpoint copied it into the database file) and maybe recreated. Our commits are in one of
  // three places: flush the file we hold, the file now at the path, and the database file.
  CLAWGUARD_RETURN_IF_ERROR(Flush(sync, fd, wal_file_));
  UniqueFd fresh(::open(wal_file_.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fresh.valid() && errno != ENOENT) return FlushFailed(db_->path(), wal_file_, errno);
  if (fresh.valid()) {
    CLAWGUARD_RETURN_IF_ERROR(Flush(sync, fresh.get(), wal_file_));
    std::lock_guard lock(mu_);
    wal_fd_ = std::move(fresh);  // closes |fd|: only the sync leader (we) used it without mu_
  }
  UniqueFd main(::open(db_file_.c_str(), O_RDONLY | O_CLOEXEC));
  if (!main.valid()) return FlushFailed(db_->path(), db_file_, errno);
  return Flush(sync, main.get(), db_file_);
}

Status SqliteWriter::Flush(const SyncFn& sync, int fd, const std::string& file) const {
  const int err = sync(fd);
  return err == 0 ? Status::Ok() : FlushFailed(db_->path(), file, err);
}

}  // namespace clawguard::sqlite
