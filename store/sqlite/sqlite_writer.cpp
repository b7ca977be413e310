// sqlite_writer.cpp — leader/follower group commit on one connection per database file.
#include "sqlite/sqlite_writer.h"

#include <filesystem>
#include <map>

namespace clawguard::sqlite {
namespace {

std::string CanonicalPath(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : p.string();
}

}  // namespace

Result<std::shared_ptr<SqliteWriter>> SqliteWriter::ForPath(const std::string& path) {
  static std::mutex* registry_mu = new std::mutex;
  static auto* registry = new std::map<std::string, std::weak_ptr<SqliteWriter>>;
  std::lock_guard lock(*registry_mu);
  const std::string key = CanonicalPath(path);
  if (auto it = registry->find(key); it != registry->end()) {
    if (std::shared_ptr<SqliteWriter> w = it->second.lock()) return w;
  }
  CLAWGUARD_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path));
  std::shared_ptr<SqliteWriter> w(new SqliteWriter(std::move(db)));
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

int64_t SqliteWriter::queued() const {
  std::lock_guard lock(mu_);
  return static_cast<int64_t>(queue_.size());
}

Status SqliteWriter::Write(const Op& op, Durability durability) {
  Pending mine;
  mine.op = &op;
  mine.durability = durability;
  std::unique_lock lock(mu_);
  queue_.push_back(&mine);
  while (!mine.done) {
    if (leading_) {
      cv_.wait(lock);
      continue;
    }
    // Lead: take everything queued so far (this op included) into one transaction.
    leading_ = true;
    std::vector<Pending*> batch;
    batch.swap(queue_);
    lock.unlock();
    const bool lazy = RunBatch(batch);
    lock.lock();
    ++commits_;
    if (lazy) ++lazy_commits_;
    for (Pending* p : batch) p->done = true;
    leading_ = false;
    cv_.notify_all();
  }
  return mine.result;
}

bool SqliteWriter::RunBatch(const std::vector<Pending*>& batch) {
  SqliteDb& db = *db_;
  bool lazy = true;
  for (const Pending* p : batch) lazy = lazy && p->durability == Durability::kLazy;
  // synchronous is per connection and applies to the next COMMIT; set it only when it changes.
  if (lazy != normal_sync_) {
    if (Status s = db.Exec(lazy ? "PRAGMA synchronous=NORMAL" : "PRAGMA synchronous=FULL"); !s.ok()) {
      if (!lazy) {
        // A durable op must not commit unsynced: fail the batch rather than risk it.
        for (Pending* p : batch) p->result = s;
        return false;
      }
      lazy = false;  // NORMAL was not set: the connection is still FULL, which is only safer
    } else {
      normal_sync_ = lazy;
    }
  }
  if (Status begin = db.Exec("BEGIN IMMEDIATE"); !begin.ok()) {
    for (Pending* p : batch) p->result = begin;
    return false;
  }
  for (Pending* p : batch) {
    if (Status s = db.Exec("SAVEPOINT op"); !s.ok()) {
      p->result = s;
      continue;
    }
    p->result = (*p->op)(db);
    if (!p->result.ok()) (void)db.Exec("ROLLBACK TO op");
    if (Status s = db.Exec("RELEASE op"); !s.ok() && p->result.ok()) p->result = s;
  }
  if (Status commit = db.Exec("COMMIT"); !commit.ok()) {
    (void)db.Exec("ROLLBACK");
    for (Pending* p : batch) p->result = commit;
    return false;
  }
  return lazy;
}

}  // namespace clawguard::sqlite
