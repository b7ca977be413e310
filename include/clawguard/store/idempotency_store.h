// store/idempotency_store.h — the idempotency records of webhook deliveries (interface; engines
// in store/sqlite and store/postgresql). ARCHITECTURE.md "Host request pipeline" step 4.
//
// One record per event key. Claim is ONE atomic conditional write whose outcome is decided in
// this order: other fingerprint → kFingerprintMismatch (record untouched); a live tombstone →
// kTombstone (nothing written); completed → the stored answer; in progress with a live lease →
// kInProgress with the time left; otherwise (new, the lease expired or released, or the
// tombstone's end passed) → kClaimed with the next fencing token. Every later write for the
// key carries that token and is refused (kFenced) if the record holds another one. Times come
// from the engine's Clock (in production the store's clock, so hosts agree).
//
// Retention: Purge turns completed records older than the retention into tombstones (key,
// fingerprint, stored status, until when) and deletes tombstones past their end. A claim of a
// tombstoned key is kTombstone (after the fingerprint check, like a record): the event was
// completed once and must not run again unless an operator clears the tombstone. Stuck records
// (in progress, lease ended, not completed) are listed for the host's reconciler with the request
// the first claim stored.
#ifndef CLAWGUARD_STORE_IDEMPOTENCY_STORE_H_
#define CLAWGUARD_STORE_IDEMPOTENCY_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/error.h"
#include "clawguard/store/dlq.h"

namespace clawguard {

enum class IdemState { kInProgress, kCompleted };
inline std::string_view IdemStateName(IdemState s) {
  return s == IdemState::kCompleted ? "completed" : "in_progress";
}

struct IdempotencyRecord {
  std::string key;  // event key, 64 lowercase hex
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
  // The request stored by the claim that found none stored (the first claim, or the first after
  // an operator Reset); Complete clears it, so completed records keep only their answer.
  bool has_request = false;
  std::string request_content_type;
  std::string request_body;
  int64_t reconcile_attempts = 0;  // NoteReconcileAttempt calls since the last Complete / Reset
  int64_t tombstone_until_ms = 0;  // kTombstone outcome only: the tombstone's end
};

// kMaxIdemBatch bounds Purge and ListStuck (rows per call).
inline constexpr int64_t kMaxIdemBatch = 1000;

// ClaimMeta is what a claim records besides key and fingerprint.
struct ClaimMeta {
  std::string plugin;
  std::string route;
  int level = 2;
  std::string webhook_id;
  std::string x_idempotency_key;
  // The authenticated request (stored only if no request is stored yet; see IdempotencyRecord).
  // Default member initializers, so aggregate initialisations that stop at x_idempotency_key
  // stay free of -Wmissing-field-initializers.
  std::string request_content_type{};
  std::string request_body{};
};

// IdemRequestStorable: a claim stores the request of |meta| (if none is stored yet) when it is
// not empty and within the DLQ's bounds (kMaxDlqRequestBody, kMaxDlqContentType), so a stored
// request always fits a DLQ entry; a larger one is not stored (has_request stays false).
inline bool IdemRequestStorable(const ClaimMeta& meta) {
  return (!meta.request_body.empty() || !meta.request_content_type.empty()) &&
         meta.request_body.size() <= kMaxDlqRequestBody &&
         meta.request_content_type.size() <= kMaxDlqContentType;
}

struct ClaimOutcome {
  // kTombstone: the key's record was purged after retention and only its tombstone is left (a
  // delivery that hits one goes to manual review, it never runs again).
  enum class Kind { kClaimed, kCompleted, kInProgress, kFingerprintMismatch, kTombstone };
  Kind kind = Kind::kClaimed;
  int64_t fencing_token = 0;   // kClaimed: the token this worker holds
  bool taken_over = false;     // kClaimed: an expired or released lease was taken over
  int64_t retry_after_ms = 0;  // kInProgress: time left on the live lease (≥ 1)
  IdempotencyRecord record;  // kCompleted: the stored answer; kTombstone: key, fingerprint, status
                             // and tombstone_until_ms; otherwise the record after the call
};

// FencedWrite is the result of a write that carries a fencing token.
enum class FencedWrite { kApplied, kFenced };

// IdempotencyStore is thread-safe in every engine; each call is its own transaction. Store
// failures are kStoreUnavailable.
class IdempotencyStore {
 public:
  virtual ~IdempotencyStore() = default;

  // Claim: see the file comment. |fingerprint| must not be empty; |lease_ms| > 0.
  virtual Result<ClaimOutcome> Claim(const std::string& key, const std::string& fingerprint,
                                     const ClaimMeta& meta, int64_t lease_ms) = 0;
  // Renew extends the lease to now + lease_ms if |token| still holds the in-progress record.
  virtual Result<FencedWrite> Renew(const std::string& key, int64_t token, int64_t lease_ms) = 0;
  // Complete stores the answer and marks the record completed if |token| still holds it in
  // progress; kFenced otherwise (a newer worker took over, or it is already completed). It
  // deletes the stored request and zeroes reconcile_attempts.
  virtual Result<FencedWrite> Complete(const std::string& key, int64_t token, int status,
                                       const std::string& content_type,
                                       const std::string& body) = 0;
  // Release ends the lease at once (5xx, plugin failure): the key stays retryable and the next
  // claim takes it over with token + 1. The record keeps its fingerprint and token.
  virtual Result<FencedWrite> Release(const std::string& key, int64_t token) = 0;
  // Get returns the record with its stored request, or nullopt (also for a tombstoned key).
  virtual Result<std::optional<IdempotencyRecord>> Get(const std::string& key) = 0;
  // Reset (operators: `clawguard idem reset`) clears the stored answer, stored request,
  // reconcile attempts and fingerprint and ends the lease, keeping the fencing token so tokens
  // never go back; bumps the generation. A tombstone becomes such a reset record too. Returns
  // false if there was no record or tombstone.
  virtual Result<bool> Reset(const std::string& key) = 0;
  // Generation is the operations generation: operator writes bump it; hosts drop cached records
  // of an older generation.
  virtual Result<int64_t> Generation() = 0;
  virtual Result<int64_t> BumpGeneration() = 0;

  // ClaimFromMemory answers a claim WITHOUT blocking (no store round trip, no disk) when the
  // answer is already final in memory: kCompleted or kFingerprintMismatch of a completed record
  // held by a cache (see host/intake/record_cache.h). nullopt means "ask Claim". Engines have no
  // memory of their own and keep the default. The host's I/O threads use it to answer replays
  // inline.
  virtual std::optional<ClaimOutcome> ClaimFromMemory(const std::string& key,
                                                      const std::string& fingerprint) {
    (void)key;
    (void)fingerprint;
    return std::nullopt;
  }

  // The calls below have a default that returns kInternal ("not supported by this engine") so
  // test doubles need not implement them; both engines override every one.

  // Purge turns up to |limit| (1..kMaxIdemBatch, else kUsage) completed records last updated
  // before |completed_before_ms| — oldest first, and only those with no outbox row still
  // pending, sent or held — into tombstones that live until |tombstone_until_ms|, deleting their
  // answers and outbox rows. It also deletes up to |limit| tombstones whose end is ≤ now.
  // Returns the number of records turned into tombstones.
  virtual Result<int64_t> Purge(int64_t completed_before_ms, int64_t tombstone_until_ms,
                                int64_t limit);
  // ClearTombstone (operators, before replaying a manual_review entry) turns the key's tombstone
  // into a reset record (see Reset): the next claim runs the event with the next token. Bumps the
  // generation. Returns false if the key has no tombstone.
  virtual Result<bool> ClearTombstone(const std::string& key);
  // ListStuck returns up to |limit| (1..kMaxIdemBatch, else kUsage) in-progress records, with
  // their stored requests, whose lease ended and that were last written at least |stuck_for_ms|
  // before |now_ms| (lease_until_ms ≤ now − stuck_for and updated_ms ≤ now − stuck_for; a
  // released lease is 0). Records an operator reset (empty fingerprint) wait for their next
  // delivery and are not listed. Order: fewest reconcile attempts first, then the longest stuck
  // (so records a reconciler gave up on never starve the others), then key.
  virtual Result<std::vector<IdempotencyRecord>> ListStuck(int64_t now_ms, int64_t stuck_for_ms,
                                                           int64_t limit);
  // NoteReconcileAttempt adds 1 to the record's reconcile_attempts and returns the new value;
  // kNotFound if the key has no record. It is a write (updated_ms = now), so ListStuck lists the
  // record again only |stuck_for| later: attempts on one record are spaced by stuck_for.
  virtual Result<int64_t> NoteReconcileAttempt(const std::string& key);
};

inline Result<int64_t> IdempotencyStore::Purge(int64_t, int64_t, int64_t) {
  return Status(Reason::kInternal, "this idempotency store engine has no Purge");
}
inline Result<bool> IdempotencyStore::ClearTombstone(const std::string&) {
  return Status(Reason::kInternal, "this idempotency store engine has no ClearTombstone");
}
inline Result<std::vector<IdempotencyRecord>> IdempotencyStore::ListStuck(int64_t, int64_t,
                                                                          int64_t) {
  return Status(Reason::kInternal, "this idempotency store engine has no ListStuck");
}
inline Result<int64_t> IdempotencyStore::NoteReconcileAttempt(const std::string&) {
  return Status(Reason::kInternal, "this idempotency store engine has no NoteReconcileAttempt");
}

}  // namespace clawguard

#endif  // CLAWGUARD_STORE_IDEMPOTENCY_STORE_H_
