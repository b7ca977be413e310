// sqlite_group_sync.cpp — group fsync of the WAL beside the commit order: a durable write waits
// until one flush that started after its commit succeeded, led by a waiting thread or by the
// flusher thread for fibers; a failed flush poisons the writer (sqlite_writer.h "Fail closed").
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <thread>

#include "runtime/thread_name.h"
#include "sqlite/sqlite_wakeups.h"
#include "sqlite/sqlite_writer.h"

namespace clawguard::sqlite {
namespace {

using wake::AwaitBit;
using wake::kDone;
using wake::kSynced;
using wake::Post;
using wake::WakeAll;
using wake::Wakes;

// SameFile says whether |path| names the file open as |fd|.
bool SameFile(int fd, const std::string& path) {
  struct stat at_path {};
  struct stat held {};
  return ::stat(path.c_str(), &at_path) == 0 && ::fstat(fd, &held) == 0 &&
         at_path.st_dev == held.st_dev && at_path.st_ino == held.st_ino;
}

// FlushFailed is the poison: see "Fail closed" in the header.
Status FlushFailed(const std::string& db_path, const std::string& file, int err) {
  return Status(
      Reason::kStoreUnavailable,
      "SQLite store '" + db_path +
          "': the database file could not be flushed to disk (fdatasync of '" + file +
          "': " + std::generic_category().message(err) +
          "); this store refuses every write until the process restarts (after a failed flush the "
          "OS "
          "may have dropped the unwritten data, so a retried flush could falsely succeed)");
}

}  // namespace

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
  MutexLock lock(mu_);
  for (;;) {
    // Every kStealCheck it also checks that no held fiber holds the leader role.
    mu_.WaitFor(flusher_cv_, kStealCheck,
                [this]() CLAWGUARD_REQUIRES(mu_) { return flush_requested_ || flusher_stop_; });
    if (flusher_stop_) return;
    StealFromHeldFiberLocked();
    if (!flush_requested_) continue;
    flush_requested_ = false;
    if (syncing_) continue;  // that flush's end wakes the waiters; any it did not cover ask again
    if (poisoned_ || !WalOpenLocked()) {
      WakeSyncWaiters();  // they see the poison (a durable op commits FULL while no WAL is open)
      continue;
    }
    LeadSync();
  }
}

int64_t SqliteWriter::syncs() const {
  MutexLock lock(mu_);
  return syncs_;
}

void SqliteWriter::SetSyncForTesting(SyncFn sync) {
  MutexLock lock(mu_);
  sync_ = std::move(sync);
}

Status SqliteWriter::SetSynchronous(bool full) {
  // synchronous is per connection and applies to the next COMMIT; set it only when it changes.
  if (normal_sync_ != full) return Status::Ok();
  CLAWGUARD_RETURN_IF_ERROR(
      db_->Exec(full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL"));
  normal_sync_ = !full;
  return Status::Ok();
}

bool SqliteWriter::WalOpenLocked() {
  // The WAL exists once this connection has written in WAL mode; until then a durable batch
  // commits with FULL, and the next one tries again.
  if (!wal_fd_.valid() && !wal_file_.empty())
    wal_fd_.Reset(::open(wal_file_.c_str(), O_RDONLY | O_CLOEXEC));
  return wal_fd_.valid();
}

Status SqliteWriter::AwaitSync(Pending& mine) {
  MutexLock lock(mu_);
  while (true) {
    if (synced_seq_ >= mine.seq) return mine.result;  // a flush that succeeded covered it
    if (poisoned_) {
      // No flush will start: release the waiters a batch leader registered for this one to lead.
      if (!syncing_) WakeSyncWaiters();
      return *poisoned_;
    }
    if (!syncing_) {
      if (mine.fiber == nullptr || !flusher_on_) {
        LeadSync();
        continue;
      }
      RequestFlushLocked();  // a fiber waits for the flusher (see LeadBatch)
    }
    // That flush may have started before our commit: check again after it.
    sync_waiters_.push_back(&mine);
    lock.Unlock();
    AwaitBit(mine.signal, kSynced);
    lock.Lock();
  }
}

void SqliteWriter::LeadSync() {
  syncing_ = true;
  const int64_t target = commits_;  // every batch up to here has committed: the flush covers it
  const SyncFn sync = sync_;
  const int fd = wal_fd_.get();
  CLAWGUARD_CHECK(fd >= 0);  // a batch with a durable op commits NORMAL only once the WAL is open
  Status flushed;
  WithoutLock([&] { flushed = FlushWal(sync, fd); });
  syncing_ = false;
  ++syncs_;
  if (flushed.ok()) {
    synced_seq_ = std::max(synced_seq_, target);
  } else {
    poisoned_ = std::move(flushed);
  }
  WakeSyncWaiters();
}

void SqliteWriter::WakeSyncWaiters() {
  Wakes wakes;
  // kDone too: a waiter registered by its batch's leader still sleeps in AwaitDone.
  for (Pending* p : sync_waiters_) Post(p->signal, p->fiber, kSynced | kDone, wakes);
  sync_waiters_.clear();
  if (!wakes.empty()) WithoutLock([&] { WakeAll(wakes); });
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
    MutexLock lock(mu_);
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
