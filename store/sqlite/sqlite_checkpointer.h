// sqlite_checkpointer.h — SqliteWriter::Checkpointer: PASSIVE checkpoints on a connection of its
// own, off the commit path (sqlite_writer.h, StartCheckpointer).
#ifndef CLAWGUARD_STORE_SQLITE_SQLITE_CHECKPOINTER_H_
#define CLAWGUARD_STORE_SQLITE_SQLITE_CHECKPOINTER_H_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "core/mutex.h"
#include "runtime/thread_name.h"
#include "sqlite/sqlite_db.h"
#include "sqlite/sqlite_writer.h"

namespace clawguard::sqlite {

// Checkpointer runs PASSIVE checkpoints on its own connection when the writer's WAL hook asks.
class SqliteWriter::Checkpointer {
 public:
  explicit Checkpointer(std::unique_ptr<SqliteDb> db)
      : db_(std::move(db)), thread_([this] { Loop(); }) {}
  ~Checkpointer() {
    {
      MutexLock lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  void Request() {
    {
      MutexLock lock(mu_);
      requested_ = true;
    }
    cv_.notify_one();
  }
  int64_t runs() const {
    MutexLock lock(mu_);
    return runs_;
  }

 private:
  void Loop() {
    NameThisThread("cg-checkpoint");
    MutexLock lock(mu_);
    for (;;) {
      mu_.Wait(cv_, [this]() CLAWGUARD_REQUIRES(mu_) { return stop_ || requested_; });
      if (stop_) return;
      requested_ = false;
      lock.Unlock();
      // PASSIVE: copies what no reader still needs, never blocks the writer; a busy or failed
      // checkpoint is simply tried again at the next request (the WAL only grows meanwhile).
      int wal_pages = 0;
      int copied = 0;
      (void)sqlite3_wal_checkpoint_v2(db_->raw(), nullptr, SQLITE_CHECKPOINT_PASSIVE, &wal_pages,
                                      &copied);
      lock.Lock();
      ++runs_;
    }
  }

  const std::unique_ptr<SqliteDb> db_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  bool requested_ CLAWGUARD_GUARDED_BY(mu_) = false;
  bool stop_ CLAWGUARD_GUARDED_BY(mu_) = false;
  int64_t runs_ CLAWGUARD_GUARDED_BY(mu_) = 0;
  std::thread thread_;  // last: starts after the members above exist
};

}  // namespace clawguard::sqlite

#endif  // CLAWGUARD_STORE_SQLITE_SQLITE_CHECKPOINTER_H_
