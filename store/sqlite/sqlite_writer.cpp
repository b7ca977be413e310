// sqlite_writer.cpp — leader/follower group commit on one connection per database file. Its
// neighbours: sqlite_group_sync.cpp (group fsync of the WAL), sqlite_checkpointer.{h,cpp}
// (checkpoints off the commit path), sqlite_wakeups.{h,cpp} (how waiters sleep and wake).
#include "sqlite/sqlite_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>
#include <system_error>

#include "runtime/fiber.h"
#include "sqlite/sqlite_checkpointer.h"
#include "sqlite/sqlite_wakeups.h"
#include "sqlite/sqlite_wal_vfs.h"

namespace clawguard::sqlite {
namespace {

// RunOp runs one op; an exception it throws (an allocation failure, a library's) fails that op
// alone, as a Status would, so the batch and the writer go on.
Status RunOp(const SqliteWriter::Op& op, SqliteDb& db) {
  try {
    return op(db);
  } catch (const std::exception& e) {
    return Status(Reason::kInternal, std::string("a store operation threw: ") + e.what());
  } catch (...) {
    return Status(Reason::kInternal, "a store operation threw");
  }
}

std::string CanonicalPath(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : p.string();
}

int Fdatasync(int fd) { return ::fdatasync(fd) == 0 ? 0 : errno; }

using wake::kDone;
using wake::kLead;
using wake::kSynced;
using wake::Post;
using wake::Sleep;
using wake::WakeAll;
using wake::Wakes;

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

}  // namespace

SqliteWriter::SqliteWriter(std::unique_ptr<SqliteDb> db)
    : db_(std::move(db)), db_file_(DbFile(*db_)), wal_file_(WalFile(*db_)), sync_(Fdatasync) {}

SqliteWriter::~SqliteWriter() {
  {
    MutexLock lock(mu_);
    flusher_stop_ = true;
  }
  flusher_cv_.notify_one();
  if (flusher_.joinable()) flusher_.join();
  if (checkpointer_ != nullptr) sqlite3_wal_hook(db_->raw(), nullptr, nullptr);
  checkpointer_.reset();
}

int64_t SqliteWriter::gathers() const {
  MutexLock lock(mu_);
  return gathers_;
}

int64_t SqliteWriter::steals() const {
  MutexLock lock(mu_);
  return steals_;
}

Result<std::shared_ptr<SqliteWriter>> SqliteWriter::ForPath(const std::string& path) {
  static Mutex* registry_mu = new Mutex;
  static auto* registry = new std::map<std::string, std::weak_ptr<SqliteWriter>>;
  MutexLock lock(*registry_mu);
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
  MutexLock lock(mu_);
  return commits_;
}

int64_t SqliteWriter::lazy_commits() const {
  MutexLock lock(mu_);
  return lazy_commits_;
}

int64_t SqliteWriter::queued() const {
  MutexLock lock(mu_);
  return static_cast<int64_t>(queue_.size());
}

Status SqliteWriter::Write(const Op& op, Durability durability) {
  Pending mine;
  mine.op = &op;
  mine.durability = durability;
  {
    MutexLock lock(mu_);
    if (poisoned_) return *poisoned_;
    if (mine.fiber != nullptr && !flusher_on_) StartFlusherLocked();
    queue_.emplace_back(&mine);  // borrowed: |mine| outlives its entry (see Queued)
    if (!leading_) {
      LeadBatch(&mine);
    } else if (gathering_ && queue_.size() >= kGatherOps) {
      lock.Unlock();
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
      MutexLock lock(mu_);
      // Not done and nobody leads: the op is still queued (a batch sets kDone before it ends).
      if (!leading_ && (mine.signal.load(std::memory_order_acquire) & kDone) == 0) LeadBatch(&mine);
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
  MutexLock lock(mu_);
  if (poisoned_) return;
  queue_.push_back(Queued(mine.release()));  // its entry owns it now; freed after its batch ran
  if (!leading_) {
    LeadBatch(nullptr);
  } else if (gathering_ && queue_.size() >= kGatherOps) {
    lock.Unlock();
    gather_cv_.notify_one();
  }
}

bool SqliteWriter::Gather() {
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
      WithoutLock([] { fiber::Yield(); });
      if (lead_epoch_ != epoch) return false;
      fiber_leader_ = nullptr;
    }
    return true;
  }
  // Only under concurrency (the last batch had several ops): a lone writer never waits.
  if (last_batch_ops_ < kGatherAfterOps || queue_.size() >= kGatherOps) return true;
  ++gathers_;
  gathering_ = true;
  mu_.WaitFor(gather_cv_, kGatherFor,
              [this]() CLAWGUARD_REQUIRES(mu_) { return queue_.size() >= kGatherOps; });
  gathering_ = false;
  return true;
}

void SqliteWriter::StealFromHeldFiberLocked() {
  if (!leading_) {
    // Ops queued and nobody leads: the role was offered (kLead) to a fiber that has not taken
    // it — perhaps held by a plugin that blocks its carrier — and no writer came since.
    if (!queue_.empty()) LeadBatch(nullptr);
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
  LeadBatch(nullptr);
}

void SqliteWriter::LeadBatch(Pending* self) {
  while (!leading_ && !queue_.empty()) {
    // Lead: take everything queued so far (the caller's op included) into one transaction.
    leading_ = true;
    if (!Gather()) return;  // the role was taken over while this fiber was held
    std::vector<Queued> batch;
    batch.swap(queue_);
    last_batch_ops_ = batch.size();
    if (poisoned_) {
      for (const Queued& p : batch)
        p->result = *poisoned_;  // a failed flush refuses every op not yet run
    } else {
      // A durable op is flushed through the WAL descriptor after its commit; without one its
      // batch commits with FULL (SQLite flushes before COMMIT returns).
      const bool full =
          std::any_of(batch.begin(), batch.end(),
                      [](const Queued& p) { return p->durability == Durability::kBeforeReturn; }) &&
          !WalOpenLocked();
      Status lost;
      WithoutLock([&] {
        lost = RunBatch(batch, full);
        BoundWal();
      });
      if (!lost.ok() && !poisoned_) poisoned_ = std::move(lost);
      ++commits_;
      if (normal_sync_) ++lazy_commits_;
    }
    // A durable op that still needs a flush sleeps once (see "Durable wake-ups"): the flush
    // leader is this caller if its own op needs one, else the first such op (woken now with
    // kDone); the others are registered as sync waiters at once and woken when a flush ends.
    // While a flush runs, nobody is woken to lead: that flush's end wakes them all.
    const auto needs_flush = [this](const Pending* p) CLAWGUARD_REQUIRES(mu_) {
      return !p->detached && p->durability == Durability::kBeforeReturn && p->result.ok() &&
             normal_sync_ && !poisoned_;
    };
    // A fiber never flushes on its carrier (an fdatasync would hold every fiber of it): the
    // flusher thread flushes for it ("Fibers" in the header).
    const auto offloaded = [this](const Pending* p) CLAWGUARD_REQUIRES(mu_) {
      return p->fiber != nullptr && flusher_on_;
    };
    const auto may_lead_flush = [&](const Pending* p) CLAWGUARD_REQUIRES(mu_) {
      return needs_flush(p) && !offloaded(p);
    };
    Pending* sync_leader = nullptr;
    if (!syncing_) {
      const bool self_in_batch =
          self != nullptr && std::any_of(batch.begin(), batch.end(),
                                         [self](const Queued& p) { return p.get() == self; });
      if (self_in_batch && may_lead_flush(self)) {
        sync_leader = self;
      } else if (const auto it = std::find_if(batch.begin(), batch.end(),
                                              [&](const Queued& p) CLAWGUARD_REQUIRES(mu_) {
                                                return may_lead_flush(p.get());
                                              });
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
      Post(p->signal, p->fiber, kDone,
           wakes);  // the last touch of |p|: its waiter may return at once
    }
    // Nobody else will flush for the fibers registered above: the flusher does.
    if (request_flush && sync_leader == nullptr && !syncing_) RequestFlushLocked();
    leading_ = false;
    // The oldest queued waiter leads the next batch (it takes the whole queue). The role is only
    // offered: until it takes it, any writer that comes leads — and if it is a fiber held by a
    // plugin that blocks its carrier, the flusher leads the queue (StealFromHeldFiberLocked).
    const auto waiter =
        std::find_if(queue_.begin(), queue_.end(), [](const Queued& p) { return !p->detached; });
    if (waiter != queue_.end()) Post((*waiter)->signal, (*waiter)->fiber, kLead, wakes);
    const bool only_submitted = waiter == queue_.end() && !queue_.empty();
    if (!wakes.empty()) WithoutLock([&] { WakeAll(wakes); });
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
    Status failed(Reason::kStoreUnavailable,
                  "SQLite store '" + db.path() + "': writing the WAL after a commit failed: " +
                      sqlite3_errstr(rc) + "; restart the host (SQLite recovers the WAL)");
    for (const Queued& p : batch) p->result = failed;
    return failed;  // the commit is visible but not in the file: refuse everything until restart
  }
  return Status::Ok();
}

void SqliteWriter::RunOps(const std::vector<Queued>& batch) {
  SqliteDb& db = *db_;
  if (batch.size() == 1) {  // no SAVEPOINT needed: RunBatch rolls back the batch if the op fails
    batch.front()->result = RunOp(*batch.front()->op, db);
    return;
  }
  for (const Queued& p : batch) {
    if (Status s = db.Exec("SAVEPOINT op"); !s.ok()) {
      p->result = s;
      continue;
    }
    p->result = RunOp(*p->op, db);
    if (!p->result.ok()) (void)db.Exec("ROLLBACK TO op");
    if (Status s = db.Exec("RELEASE op"); !s.ok() && p->result.ok()) p->result = s;
  }
}

}  // namespace clawguard::sqlite
