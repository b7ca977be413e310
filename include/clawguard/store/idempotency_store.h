// store/idempotency_store.h — the idempotency records of webhook deliveries (interface; engines
// in store/sqlite and store/postgresql). ARCHITECTURE.md "Host request pipeline" step 4.
//
// One record per event key. Claim is ONE atomic conditional write whose outcome is decided in
// this order: other fingerprint → kFingerprintMismatch (record untouched); completed → the stored
// answer; in progress with a live lease → kInProgress with the time left; otherwise (new, or the
// lease expired, or released) → kClaimed with the next fencing token. Every later write for the
// key carries that token and is refused (kFenced) if the record holds another one. Times come
// from the engine's Clock (in production the store's clock, so hosts agree).
#ifndef CLAWGUARD_STORE_IDEMPOTENCY_STORE_H_
#define CLAWGUARD_STORE_IDEMPOTENCY_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "clawguard/error.h"

namespace clawguard {

enum class IdemState { kInProgress, kCompleted };
inline std::string_view IdemStateName(IdemState s) { return s == IdemState::kCompleted ? "completed" : "in_progress"; }

struct IdempotencyRecord {
  std::string key;          // event key, 64 lowercase hex
  std::string plugin;
  std::string route;
  int level = 2;            // 1, 2 or 3
  std::string fingerprint;  // "" only after an operator Reset (then any fingerprint may claim)
  IdemState state = IdemState::kInProgress;
  int64_t lease_until_ms = 0;  // in_progress: the lease's end (0 = released)
  int64_t fencing_token = 0;   // 1 for the first claim, +1 for each takeover
  int status = 0;              // completed: the stored answer
  std::string content_type;
  std::string body;
  int64_t created_ms = 0;
  int64_t updated_ms = 0;
  std::string webhook_id;         // of the delivery that last claimed
  std::string x_idempotency_key;  // recorded for operators, never keyed on ("" if absent)
};

// ClaimMeta is what a claim records besides key and fingerprint.
struct ClaimMeta {
  std::string plugin;
  std::string route;
  int level = 2;
  std::string webhook_id;
  std::string x_idempotency_key;
};

struct ClaimOutcome {
  enum class Kind { kClaimed, kCompleted, kInProgress, kFingerprintMismatch };
  Kind kind = Kind::kClaimed;
  int64_t fencing_token = 0;    // kClaimed: the token this worker holds
  bool taken_over = false;      // kClaimed: an expired or released lease was taken over
  int64_t retry_after_ms = 0;   // kInProgress: time left on the live lease (≥ 1)
  IdempotencyRecord record;     // kCompleted: the stored answer; otherwise the record after the call
};

// FencedWrite is the result of a write that carries a fencing token.
enum class FencedWrite { kApplied, kFenced };

// IdempotencyStore is thread-safe in every engine; each call is its own transaction. Store
// failures are kStoreUnavailable.
class IdempotencyStore {
 public:
  virtual ~IdempotencyStore() = default;

  // Claim: see the file comment. |fingerprint| must not be empty; |lease_ms| > 0.
  virtual Result<ClaimOutcome> Claim(const std::string& key, const std::string& fingerprint, const ClaimMeta& meta,
                                     int64_t lease_ms) = 0;
  // Renew extends the lease to now + lease_ms if |token| still holds the in-progress record.
  virtual Result<FencedWrite> Renew(const std::string& key, int64_t token, int64_t lease_ms) = 0;
  // Complete stores the answer and marks the record completed if |token| still holds it in
  // progress; kFenced otherwise (a newer worker took over, or it is already completed).
  virtual Result<FencedWrite> Complete(const std::string& key, int64_t token, int status,
                                       const std::string& content_type, const std::string& body) = 0;
  // Release ends the lease at once (5xx, plugin failure): the key stays retryable and the next
  // claim takes it over with token + 1. The record keeps its fingerprint and token.
  virtual Result<FencedWrite> Release(const std::string& key, int64_t token) = 0;
  // Get returns the record, or nullopt.
  virtual Result<std::optional<IdempotencyRecord>> Get(const std::string& key) = 0;
  // Reset (operators: `clawguard idem reset`) clears the stored answer and fingerprint and ends
  // the lease, keeping the fencing token so tokens never go back; bumps the generation.
  // Returns false if there was no record.
  virtual Result<bool> Reset(const std::string& key) = 0;
  // Generation is the operations generation: operator writes bump it; hosts drop cached records
  // of an older generation.
  virtual Result<int64_t> Generation() = 0;
  virtual Result<int64_t> BumpGeneration() = 0;
};

}  // namespace clawguard

#endif  // CLAWGUARD_STORE_IDEMPOTENCY_STORE_H_
