// record_cache.cpp — completed records answered from memory, dropped on a new generation.
#include "host/intake/record_cache.h"

namespace clawguard::host {

Result<std::unique_ptr<CachingIdempotencyStore>> CachingIdempotencyStore::Create(
    std::unique_ptr<IdempotencyStore> inner, RecordCacheOptions options) {
  if (inner == nullptr) return Status(Reason::kInternal, "record cache: no store to wrap");
  if (options.max_entries == 0 || options.max_bytes == 0 || options.ttl.count() <= 0) {
    return Status(Reason::kConfigInvalid,
                  "record cache: max_entries, max_bytes and ttl must be > 0");
  }
  return std::unique_ptr<CachingIdempotencyStore>(
      new CachingIdempotencyStore(std::move(inner), std::move(options)));
}

std::optional<ClaimOutcome> CachingIdempotencyStore::Lookup(const std::string& key,
                                                            const std::string& fingerprint) const {
  ReaderMutexLock lock(mu_);
  const auto it = entries_.find(key);
  if (it == entries_.end() || it->second.expires <= Now()) return std::nullopt;
  ClaimOutcome out;
  // The engine's order: another fingerprint first (record untouched), then the stored answer.
  out.kind = it->second.record.fingerprint == fingerprint
                 ? ClaimOutcome::Kind::kCompleted
                 : ClaimOutcome::Kind::kFingerprintMismatch;
  out.fencing_token = it->second.record.fencing_token;
  out.record = it->second.record;
  return out;
}

std::optional<ClaimOutcome> CachingIdempotencyStore::ClaimFromMemory(
    const std::string& key, const std::string& fingerprint) {
  std::optional<ClaimOutcome> out = Lookup(key, fingerprint);
  // A miss is not counted here: the caller goes on to Claim, which counts the lookup once.
  if (out) {
    lookups_.fetch_add(1, std::memory_order_relaxed);
    hits_.fetch_add(1, std::memory_order_relaxed);
  }
  return out;
}

Result<ClaimOutcome> CachingIdempotencyStore::Claim(const std::string& key,
                                                    const std::string& fingerprint,
                                                    const ClaimMeta& meta, int64_t lease_ms) {
  lookups_.fetch_add(1, std::memory_order_relaxed);
  if (std::optional<ClaimOutcome> cached = Lookup(key, fingerprint)) {
    hits_.fetch_add(1, std::memory_order_relaxed);
    return *std::move(cached);
  }
  CLAWGUARD_ASSIGN_OR_RETURN(ClaimOutcome out, inner_->Claim(key, fingerprint, meta, lease_ms));
  if (out.kind == ClaimOutcome::Kind::kCompleted && !out.record.fingerprint.empty())
    Insert(out.record);
  return out;
}

void CachingIdempotencyStore::Insert(const IdempotencyRecord& record) {
  IdempotencyRecord kept;  // only what a replay needs: no stored request, no operator fields
  kept.key = record.key;
  kept.plugin = record.plugin;
  kept.route = record.route;
  kept.level = record.level;
  kept.fingerprint = record.fingerprint;
  kept.state = IdemState::kCompleted;
  kept.fencing_token = record.fencing_token;
  kept.status = record.status;
  kept.content_type = record.content_type;
  kept.body = record.body;
  kept.created_ms = record.created_ms;
  kept.updated_ms = record.updated_ms;
  const uint64_t bytes = kept.key.size() + kept.fingerprint.size() + kept.content_type.size() +
                         kept.body.size() + kept.plugin.size() + kept.route.size() + 128;
  if (bytes > options_.max_bytes) return;
  WriterMutexLock lock(mu_);
  const auto now = Now();
  if (const auto it = entries_.find(record.key); it != entries_.end()) {
    if (it->second.expires > now) return;  // live: a completed record is final, nothing to change
    bytes_ -= it->second.bytes;            // expired: replaced by what the engine just answered
    entries_.erase(it);
  }
  while (!order_.empty() &&
         (entries_.size() >= options_.max_entries || bytes_ + bytes > options_.max_bytes)) {
    EvictFrontLocked();
  }
  const uint64_t serial = ++next_serial_;
  entries_.emplace(record.key, Entry{std::move(kept), now + options_.ttl, bytes, serial});
  order_.emplace_back(record.key, serial);
  bytes_ += bytes;
  if (order_.size() > 2 * entries_.size() + 1024) {  // refreshes and erasures left stale elements
    std::erase_if(order_,
                  [this](const std::pair<std::string, uint64_t>& o) CLAWGUARD_REQUIRES(mu_) {
                    const auto it = entries_.find(o.first);
                    return it == entries_.end() || it->second.serial != o.second;
                  });
  }
}

void CachingIdempotencyStore::EvictFrontLocked() {
  const auto& [key, serial] = order_.front();
  const auto it = entries_.find(key);
  if (it != entries_.end() && it->second.serial == serial) {
    bytes_ -= it->second.bytes;
    entries_.erase(it);
  }
  order_.pop_front();
}

void CachingIdempotencyStore::EraseLocked(const std::string& key) {
  const auto it = entries_.find(key);
  if (it == entries_.end()) return;
  bytes_ -= it->second.bytes;
  entries_.erase(it);
}

void CachingIdempotencyStore::Clear() {
  WriterMutexLock lock(mu_);
  entries_.clear();
  order_.clear();
  bytes_ = 0;
}

void CachingIdempotencyStore::ObserveGeneration(int64_t generation) {
  {
    ReaderMutexLock lock(mu_);
    if (generation_ && *generation_ == generation) return;
  }
  WriterMutexLock lock(mu_);
  if (generation_ && *generation_ == generation) return;
  // A new operations generation: an operator changed something (reset, confirm, …) — possibly on
  // another host. Every cached record is of an older generation: drop them all.
  entries_.clear();
  order_.clear();
  bytes_ = 0;
  generation_ = generation;
}

Result<bool> CachingIdempotencyStore::Reset(const std::string& key) {
  {
    WriterMutexLock lock(mu_);
    EraseLocked(key);
  }
  CLAWGUARD_ASSIGN_OR_RETURN(bool reset, inner_->Reset(key));
  WriterMutexLock lock(mu_);
  EraseLocked(key);  // a replay may have refilled it meanwhile
  return reset;
}

Result<int64_t> CachingIdempotencyStore::Generation() {
  CLAWGUARD_ASSIGN_OR_RETURN(int64_t g, inner_->Generation());
  ObserveGeneration(g);
  return g;
}

Result<int64_t> CachingIdempotencyStore::BumpGeneration() {
  CLAWGUARD_ASSIGN_OR_RETURN(int64_t g, inner_->BumpGeneration());
  ObserveGeneration(g);
  return g;
}

Result<int64_t> CachingIdempotencyStore::Purge(int64_t completed_before_ms,
                                               int64_t tombstone_until_ms, int64_t limit) {
  CLAWGUARD_ASSIGN_OR_RETURN(int64_t purged,
                             inner_->Purge(completed_before_ms, tombstone_until_ms, limit));
  if (purged > 0) Clear();  // purged records are tombstones now: never answer them from memory
  return purged;
}

Result<bool> CachingIdempotencyStore::ClearTombstone(const std::string& key) {
  CLAWGUARD_ASSIGN_OR_RETURN(bool cleared, inner_->ClearTombstone(key));
  WriterMutexLock lock(mu_);
  EraseLocked(key);
  return cleared;
}

uint64_t CachingIdempotencyStore::hits() const { return hits_.load(std::memory_order_relaxed); }
uint64_t CachingIdempotencyStore::lookups() const {
  return lookups_.load(std::memory_order_relaxed);
}
size_t CachingIdempotencyStore::size() const {
  ReaderMutexLock lock(mu_);
  return entries_.size();
}

}  // namespace clawguard::host
