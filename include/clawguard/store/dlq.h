// store/dlq.h — the dead-letter queue, capability pauses and the operator-actions record
// (interface; engines in store/sqlite and store/postgresql). ARCHITECTURE.md "Host request
// pipeline" step 6 (the DLQ classes) and "Commands" (`dlq`, `capability`).
//
// An entry is one failed event (or one failed ERP call of an event) that needs a person or a
// later retry. Add de-duplicates: at most one *unresolved* entry (state open, replay_requested or
// replaying) exists per (event key, class) — a storm of rejected retries makes one entry whose
// `occurrences` grows, not one entry per retry. Operators request a replay or drop an entry; a
// running host claims requested (or due) replays with a lease, replays them with the event's
// original keys and records the result. Claiming is safe with several hosts: each due entry is
// leased to one claimer (PostgreSQL: `FOR UPDATE SKIP LOCKED`; SQLite: BEGIN IMMEDIATE).
//
// Operator writes (RequestReplay, Drop, Pause, Resume) record who did what in the same
// transaction as the change (the operator-actions record); RecordOperatorAction lets other
// commands (`idem reset|confirm`) add theirs. Times come from the engine's Clock.
//
// Sizes are bounded: detail ≤ kMaxDlqDetail bytes (longer is cut, marked "…[truncated]"); a
// stored request body ≤ kMaxDlqRequestBody bytes (a longer one is not stored: the entry gets
// request_omitted and cannot be replayed by the host — the platform's own retries still carry
// the event); reasons and actors ≤ kMaxDlqDetail; List returns at most kMaxDlqList entries.
#ifndef CLAWGUARD_STORE_DLQ_H_
#define CLAWGUARD_STORE_DLQ_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/error.h"

namespace clawguard {

inline constexpr uint64_t kMaxDlqDetail = 2048;                 // detail, drop reason, pause reason
inline constexpr uint64_t kMaxDlqRequestBody = 1024ull * 1024;  // = listen.max_body's default
inline constexpr uint64_t kMaxDlqContentType = 256;
inline constexpr int64_t kMaxDlqList = 1000;   // entries per List / ClaimReplays
inline constexpr int64_t kDlqEventLevel = -1;  // call_index of an event-level entry

// DlqClass is the DLQ class of ARCHITECTURE.md's status table.
enum class DlqClass {
  kBreaker,             // per-key breaker opened (event-level; request stored)
  kUnconfirmed,         // level-3 intents expired unconfirmed
  kCooldown,            // ERP 429: waits for its Retry-After, then retried (call-level)
  kTransientExhausted,  // ERP 5xx / timeout with the retries spent
  kAuth,                // ERP 401/403: the capability is paused
  kNotFound,            // ERP 404: discarded with a repair ticket
  kConflict,            // ERP 409: reconcile before any retry
  kMismatch,            // a re-run plugin's call differs from its outbox row
  kManualReview,        // tombstone hit after retention (event-level; request stored)
  kCapabilityRevoked,   // a retry found no capability of the plugin version loaded now for its call
                        // (the plugin was replaced by a version without it, or removed): never sent
};
inline constexpr std::array<DlqClass, 10> kAllDlqClasses = {
    DlqClass::kBreaker,      DlqClass::kUnconfirmed,
    DlqClass::kCooldown,     DlqClass::kTransientExhausted,
    DlqClass::kAuth,         DlqClass::kNotFound,
    DlqClass::kConflict,     DlqClass::kMismatch,
    DlqClass::kManualReview, DlqClass::kCapabilityRevoked};
// DlqClassName returns the stable snake_case name ("transient_exhausted").
inline std::string_view DlqClassName(DlqClass c) {
  switch (c) {
    case DlqClass::kBreaker: return "breaker";
    case DlqClass::kUnconfirmed: return "unconfirmed";
    case DlqClass::kCooldown: return "cooldown";
    case DlqClass::kTransientExhausted: return "transient_exhausted";
    case DlqClass::kAuth: return "auth";
    case DlqClass::kNotFound: return "not_found";
    case DlqClass::kConflict: return "conflict";
    case DlqClass::kMismatch: return "mismatch";
    case DlqClass::kManualReview: return "manual_review";
    case DlqClass::kCapabilityRevoked: return "capability_revoked";
  }
  return "manual_review";
}
inline std::optional<DlqClass> DlqClassFromName(std::string_view name) {
  for (DlqClass c : kAllDlqClasses) {
    if (DlqClassName(c) == name) return c;
  }
  return std::nullopt;
}

enum class DlqState { kOpen, kReplayRequested, kReplaying, kReplayed, kDropped };
inline constexpr std::array<DlqState, 5> kAllDlqStates = {
    DlqState::kOpen, DlqState::kReplayRequested, DlqState::kReplaying, DlqState::kReplayed,
    DlqState::kDropped};
// DlqStateName returns "open", "replay_requested", "replaying", "replayed" or "dropped".
inline std::string_view DlqStateName(DlqState s) {
  switch (s) {
    case DlqState::kOpen: return "open";
    case DlqState::kReplayRequested: return "replay_requested";
    case DlqState::kReplaying: return "replaying";
    case DlqState::kReplayed: return "replayed";
    case DlqState::kDropped: return "dropped";
  }
  return "open";
}
inline std::optional<DlqState> DlqStateFromName(std::string_view name) {
  for (DlqState s : kAllDlqStates) {
    if (DlqStateName(s) == name) return s;
  }
  return std::nullopt;
}
// DlqStateUnresolved: open, replay_requested or replaying (counted, de-duplicated against).
inline bool DlqStateUnresolved(DlqState s) {
  return s == DlqState::kOpen || s == DlqState::kReplayRequested || s == DlqState::kReplaying;
}

// DlqRequest is the authenticated delivery needed to re-run an event (event-level classes).
struct DlqRequest {
  std::string webhook_id;
  std::string content_type;
  std::string body;
};

// DlqNewEntry is what Add records.
struct DlqNewEntry {
  DlqClass klass = DlqClass::kTransientExhausted;
  std::string event_key;  // 64 lowercase hex
  std::string plugin;
  std::string route;
  int64_t call_index = kDlqEventLevel;  // i of the failed ERP call, or kDlqEventLevel
  std::string endpoint;                 // the manifest capability string ("" if none)
  int erp_status = 0;                   // the ERP's answer (0: none / timeout)
  std::string detail;                   // for a person; NEVER a secret
  std::optional<DlqRequest> request;    // event-level classes
  int64_t next_attempt_ms = 0;          // > 0: the host replays it by itself when due (cooldown)
};

struct DlqEntry {
  int64_t id = 0;
  DlqClass klass = DlqClass::kTransientExhausted;
  std::string event_key, plugin, route;
  int64_t call_index = kDlqEventLevel;
  std::string endpoint;
  int erp_status = 0;
  std::string detail;
  bool has_request = false;           // a request is stored (List does not load it)
  bool request_omitted = false;       // the body was over kMaxDlqRequestBody: not stored
  std::optional<DlqRequest> request;  // loaded by Get and ClaimReplays
  DlqState state = DlqState::kOpen;
  int64_t occurrences = 1;  // Adds folded into this entry
  int64_t attempts = 0;     // replay claims so far (the claim's fence)
  int64_t next_attempt_ms = 0;
  int64_t lease_until_ms = 0;  // replaying: the claim's lease
  std::string claimed_by;      // replaying: the claimer
  std::string resolution;      // replayed / dropped: why (drop reason, replay result)
  int64_t created_ms = 0;
  int64_t updated_ms = 0;
};

struct DlqAdded {
  int64_t id = 0;
  bool created = false;  // false: folded into the unresolved entry of the same key and class
};

struct DlqFilter {
  std::optional<DlqClass> klass;
  std::optional<DlqState> state;  // nullopt: every state
  int64_t limit = 100;            // 1..kMaxDlqList
  bool newest_first = true;
};

// DlqAge buckets an unresolved entry's age (now − created): < 1 h, < 24 h, older.
enum class DlqAge { kUnderHour, kUnderDay, kOlder };
inline constexpr std::array<DlqAge, 3> kAllDlqAges = {DlqAge::kUnderHour, DlqAge::kUnderDay,
                                                      DlqAge::kOlder};
inline constexpr int64_t kDlqHourMs = 3'600'000;
// DlqAgeName returns "lt_1h", "lt_24h" or "older" (metric labels, `dlq list --json`).
inline std::string_view DlqAgeName(DlqAge a) {
  return a == DlqAge::kUnderHour ? "lt_1h" : a == DlqAge::kUnderDay ? "lt_24h" : "older";
}
// DlqAgeOf buckets an age in milliseconds.
inline DlqAge DlqAgeOf(int64_t age_ms) {
  return age_ms < kDlqHourMs        ? DlqAge::kUnderHour
         : age_ms < 24 * kDlqHourMs ? DlqAge::kUnderDay
                                    : DlqAge::kOlder;
}

struct DlqCount {
  DlqClass klass;
  DlqAge age;
  int64_t count = 0;
};

struct CapabilityPause {
  std::string plugin;
  std::string capability;  // "POST /orders/{id}/fulfil"
  std::string reason;
  std::string actor;
  int64_t since_ms = 0;
};

struct OperatorAction {
  int64_t id = 0;
  int64_t time_ms = 0;
  std::string actor;   // "cli:alice", "host"
  std::string action;  // "dlq.replay", "dlq.drop", "capability.pause", "idem.reset", …
  std::string target;  // entry id, "plugin POST /x", event key
  std::string detail;
};

// Dlq is thread-safe in every engine; each call is its own transaction. Store failures are
// kStoreUnavailable; an unknown id, or an entry whose state does not allow the change, is
// kNotFound (the message says which).
class Dlq {
 public:
  virtual ~Dlq() = default;

  // Add records |e| or folds it into the unresolved entry of the same (event key, class):
  // occurrences + 1, detail/erp_status/endpoint refreshed, a missing request filled in.
  virtual Result<DlqAdded> Add(const DlqNewEntry& e) = 0;
  // Get returns the entry with its stored request, or nullopt.
  virtual Result<std::optional<DlqEntry>> Get(int64_t id) = 0;
  // List returns entries matching |f| by created time (request not loaded). limit outside
  // 1..kMaxDlqList is kUsage.
  virtual Result<std::vector<DlqEntry>> List(const DlqFilter& f) = 0;
  // CountUnresolved counts unresolved entries by class and age bucket (zero rows omitted).
  virtual Result<std::vector<DlqCount>> CountUnresolved() = 0;

  // RequestReplay (operators) moves an open entry to replay_requested. kNotFound for an unknown
  // id, an entry not open, or an event-level entry without a stored request.
  virtual Status RequestReplay(int64_t id, const std::string& actor) = 0;
  // Drop (operators) moves an unresolved entry (not one leased by a live replay) to dropped,
  // keeping |reason| as its resolution.
  virtual Status Drop(int64_t id, const std::string& reason, const std::string& actor) = 0;
  // ClaimReplays (hosts) leases up to |limit| entries that are replay_requested, open with a
  // due next_attempt_ms (> 0 and ≤ now), or replaying with an expired lease: each becomes
  // replaying, attempts + 1, lease until now + |lease_ms|, claimed_by |owner|. Returned with
  // their requests, oldest first. A claim is held by (id, attempts).
  virtual Result<std::vector<DlqEntry>> ClaimReplays(const std::string& owner, int64_t limit,
                                                     int64_t lease_ms) = 0;
  // MarkReplayed (hosts) ends the claim (id, |attempt|): succeeded → replayed with |detail| as
  // resolution; failed → open again with |detail| and |next_attempt_ms| (0: wait for an
  // operator). Returns false (nothing written) if the claim is no longer held.
  virtual Result<bool> MarkReplayed(int64_t id, int64_t attempt, bool succeeded,
                                    const std::string& detail, int64_t next_attempt_ms) = 0;

  // Resolve (hosts) marks the unresolved entry of (|event_key|, |klass|) replayed with |detail|
  // as resolution — e.g. a cooldown entry once the outbox retry of its call succeeded. Returns
  // false if there is none.
  virtual Result<bool> Resolve(const std::string& event_key, DlqClass klass,
                               const std::string& detail) = 0;

  // Pause marks |capability| of |plugin| paused (ERP 401/403 or an operator); false if it already
  // was (reason kept). Resume lifts it; false if it was not paused. Both are audited.
  virtual Result<bool> Pause(const std::string& plugin, const std::string& capability,
                             const std::string& reason, const std::string& actor) = 0;
  virtual Result<bool> Resume(const std::string& plugin, const std::string& capability,
                              const std::string& actor) = 0;
  virtual Result<bool> IsPaused(const std::string& plugin, const std::string& capability) = 0;
  virtual Result<std::vector<CapabilityPause>> ListPauses() = 0;

  // RecordOperatorAction appends to the operator-actions record; ListOperatorActions returns the
  // newest |limit| (1..kMaxDlqList), newest first.
  virtual Status RecordOperatorAction(const std::string& actor, const std::string& action,
                                      const std::string& target, const std::string& detail) = 0;
  virtual Result<std::vector<OperatorAction>> ListOperatorActions(int64_t limit) = 0;
};

// TruncateDlqText cuts |text| to at most |max| bytes (on a UTF-8 boundary), marking the cut
// "…[truncated]". Engines apply it to detail, reasons and actors.
inline std::string TruncateDlqText(std::string_view text, uint64_t max = kMaxDlqDetail) {
  if (text.size() <= max) return std::string(text);
  constexpr std::string_view kMark = "\xE2\x80\xA6[truncated]";  // "…[truncated]"
  if (max <= kMark.size()) return std::string();
  size_t cut = max - kMark.size();
  // Back off continuation bytes (10xxxxxx) so a multi-byte character is never split.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + std::string(kMark);
}

}  // namespace clawguard

#endif  // CLAWGUARD_STORE_DLQ_H_
