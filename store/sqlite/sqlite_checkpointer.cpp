// sqlite_checkpointer.cpp — the writer's side of checkpointing: the WAL hook that asks the
// Checkpointer, and the leader's own checkpoint that restarts the WAL (sqlite_writer.h).
#include "sqlite/sqlite_checkpointer.h"

namespace clawguard::sqlite {

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
  if (sqlite3_wal_checkpoint_v2(db_->raw(), nullptr, SQLITE_CHECKPOINT_PASSIVE, &wal_pages,
                                &copied) == SQLITE_OK &&
      copied == wal_pages) {
    wal_frames_ = 0;
    ++wal_restarts_;
  }
}

int64_t SqliteWriter::checkpoints() const {
  return checkpointer_ != nullptr ? checkpointer_->runs() : 0;
}

int64_t SqliteWriter::wal_restarts() const {
  MutexLock lock(mu_);  // the leader updates it before it takes mu_ back
  return wal_restarts_;
}

void SqliteWriter::SetWalRestartFramesForTesting(int frames) {
  MutexLock lock(mu_);
  wal_restart_frames_ = frames;
}

}  // namespace clawguard::sqlite
