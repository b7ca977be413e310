// record_cache.h — CachingIdempotencyStore: an IdempotencyStore decorator that answers deliveries
// of COMPLETED records from memory (ARCHITECTURE.md "Host request pipeline": "An in-process cache
// may hold completed records only, tagged with the operations generation, so it never answers
// differently from the store").
//
// What is cached: a record the engine returned as kCompleted from Claim (the first replay fills
// the cache; later replays of the key are answered without touching the store). A completed
// record is final until an operator `idem reset` (or a retention purge), and both go through the
// operations generation: every call of Generation() that sees a new value drops the whole cache
// (the host polls it every 200 ms), Reset and Purge in this process drop the key or the cache at
// once. Entries also expire after |ttl| (a bound on staleness when another host purges a key);
// the next replay of an expired entry reads the engine again and refreshes it.
// A cached record answers exactly what the engine answered: kCompleted with the stored status,
// Content-Type and body, or kFingerprintMismatch for another fingerprint (the record untouched).
// Everything else (claims, renewals, completion, release, …) goes to the engine unchanged.
//
// Bounded: at most |max_entries| records and |max_bytes| of stored answers; over a bound the
// oldest entries are evicted first. Thread-safe (a shared mutex: replays only read).
#ifndef CLAWGUARD_HOST_INTAKE_RECORD_CACHE_H_
#define CLAWGUARD_HOST_INTAKE_RECORD_CACHE_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "clawguard/error.h"
#include "clawguard/store/idempotency_store.h"
#include "core/mutex.h"

namespace clawguard::host {

struct RecordCacheOptions {
  size_t max_entries = 100'000;
  uint64_t max_bytes = 64ull * 1024 * 1024;  // stored answers (body, type, fingerprint, key)
  std::chrono::milliseconds ttl{60'000};
  // The time source of the TTL (tests); steady_clock::now when empty.
  std::function<std::chrono::steady_clock::time_point()> now;
};

class CachingIdempotencyStore final : public IdempotencyStore {
 public:
  // Create wraps |inner|; kConfigInvalid for a zero bound or TTL.
  static Result<std::unique_ptr<CachingIdempotencyStore>> Create(
      std::unique_ptr<IdempotencyStore> inner, RecordCacheOptions options = {});

  Result<ClaimOutcome> Claim(const std::string& key, const std::string& fingerprint,
                             const ClaimMeta& meta, int64_t lease_ms) override;
  std::optional<ClaimOutcome> ClaimFromMemory(const std::string& key,
                                              const std::string& fingerprint) override;
  Result<FencedWrite> Renew(const std::string& key, int64_t token, int64_t lease_ms) override {
    return inner_->Renew(key, token, lease_ms);
  }
  Result<FencedWrite> Complete(const std::string& key, int64_t token, int status,
                               const std::string& content_type, const std::string& body) override {
    return inner_->Complete(key, token, status, content_type, body);
  }
  Result<FencedWrite> Release(const std::string& key, int64_t token) override {
    return inner_->Release(key, token);
  }
  Result<std::optional<IdempotencyRecord>> Get(const std::string& key) override {
    return inner_->Get(key);
  }
  Result<bool> Reset(const std::string& key) override;
  Result<int64_t> Generation() override;
  Result<int64_t> BumpGeneration() override;
  Result<int64_t> Purge(int64_t completed_before_ms, int64_t tombstone_until_ms,
                        int64_t limit) override;
  Result<bool> ClearTombstone(const std::string& key) override;
  Result<std::vector<IdempotencyRecord>> ListStuck(int64_t now_ms, int64_t stuck_for_ms,
                                                   int64_t limit) override {
    return inner_->ListStuck(now_ms, stuck_for_ms, limit);
  }
  Result<int64_t> NoteReconcileAttempt(const std::string& key) override {
    return inner_->NoteReconcileAttempt(key);
  }

  // Statistics for the idempotency_cache_hit_ratio metric: claims answered from memory / all
  // claims.
  uint64_t hits() const;
  uint64_t lookups() const;
  size_t size() const;
  void Clear();

 private:
  struct Entry {
    IdempotencyRecord record;  // completed: key, fingerprint, status, content type, body
    std::chrono::steady_clock::time_point expires;
    uint64_t bytes = 0;
    uint64_t serial = 0;  // which order_ element is this entry's (older ones for its key are stale)
  };
  CachingIdempotencyStore(std::unique_ptr<IdempotencyStore> inner, RecordCacheOptions options)
      : inner_(std::move(inner)), options_(std::move(options)) {}
  void Insert(const IdempotencyRecord& record);
  // Lookup is the cache's answer for (key, fingerprint), or nullopt (absent or expired); uncounted.
  std::optional<ClaimOutcome> Lookup(const std::string& key, const std::string& fingerprint) const
      CLAWGUARD_EXCLUDES(mu_);
  void ObserveGeneration(int64_t generation) CLAWGUARD_EXCLUDES(mu_);
  void EraseLocked(const std::string& key) CLAWGUARD_REQUIRES(mu_);
  // EvictFrontLocked pops the oldest order_ element and erases its entry unless it is stale.
  void EvictFrontLocked() CLAWGUARD_REQUIRES(mu_);
  std::chrono::steady_clock::time_point Now() const {
    return options_.now ? options_.now() : std::chrono::steady_clock::now();
  }

  const std::unique_ptr<IdempotencyStore> inner_;
  const RecordCacheOptions options_;
  mutable SharedMutex mu_;
  std::unordered_map<std::string, Entry> entries_ CLAWGUARD_GUARDED_BY(mu_);
  // Insertion order, for eviction: (key, serial). An element whose serial is not its key's entry's
  // (erased, or refreshed since) is stale; compacted when stale ones outnumber the entries.
  std::deque<std::pair<std::string, uint64_t>> order_ CLAWGUARD_GUARDED_BY(mu_);
  uint64_t next_serial_ CLAWGUARD_GUARDED_BY(mu_) = 0;
  uint64_t bytes_ CLAWGUARD_GUARDED_BY(mu_) = 0;
  std::optional<int64_t> generation_ CLAWGUARD_GUARDED_BY(mu_);
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> lookups_{0};
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_INTAKE_RECORD_CACHE_H_
