// store/outbox.h — the ERP call outbox (interface; engines in store/sqlite and
// store/postgresql). ARCHITECTURE.md "Host request pipeline" step 5.
//
// One row per (event key, call index i), written before the call is sent. Append is fenced by
// the idempotency record of the event key: the row's fencing token must equal the record's
// (a stale worker whose lease was taken over is refused). A re-run plugin's call i meets its
// existing row: same method, path and body → kExisting (answered from the row); otherwise
// kMismatch (the event is dead-lettered by the caller).
//
// Life of a row: pending (or held, for a level-3 intent, until ConfirmHeld) → sent (MarkSent per
// send attempt) → answered (a final ERP answer) or dead (retries spent, or a mismatch). A row the
// gateway sends at once is appended already sent (attempts 1): the append records the call and its
// first send attempt in one write, and only resends go through MarkSent. The row is
// the retry queue: Defer moves its next attempt without counting one (paused capability, open
// breaker, ERP 429 / 401 / 403), and Revive puts a dead or answered row back in the queue when an
// operator replays its call-level DLQ entry (host/erp_send.h has the triage).
#ifndef CLAWGUARD_STORE_OUTBOX_H_
#define CLAWGUARD_STORE_OUTBOX_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/error.h"

namespace clawguard {

// kHeld is a level-3 intent: written, never due, sent only after an operator confirms it
// (ConfirmHeld turns it pending).
enum class OutboxState { kPending, kSent, kAnswered, kDead, kHeld };
inline std::string_view OutboxStateName(OutboxState s) {
  switch (s) {
    case OutboxState::kPending: return "pending";
    case OutboxState::kSent: return "sent";
    case OutboxState::kAnswered: return "answered";
    case OutboxState::kDead: return "dead";
    case OutboxState::kHeld: return "held";
  }
  return "pending";
}
inline constexpr OutboxState kAllOutboxStates[] = {OutboxState::kPending, OutboxState::kSent, OutboxState::kAnswered,
                                                   OutboxState::kDead, OutboxState::kHeld};
// OutboxStateFromName is the inverse of OutboxStateName; nullopt for any other text (engines
// read the stored state column with it).
inline std::optional<OutboxState> OutboxStateFromName(std::string_view name) {
  for (OutboxState s : kAllOutboxStates) {
    if (OutboxStateName(s) == name) return s;
  }
  return std::nullopt;
}

struct OutboxRow {
  std::string event_key;       // 64 lowercase hex
  int64_t fencing_token = 0;   // the claim's token when written (updated when a takeover re-meets it)
  int64_t call_index = 0;      // i, from 0 within one delivery
  std::string method;
  std::string path;
  std::string body;
  std::string body_sha256;     // lowercase hex of body
  OutboxState state = OutboxState::kPending;
  int reply_status = 0;        // answered: the ERP's status
  std::string reply_body;
  int64_t attempts = 0;
  int64_t next_attempt_ms = 0;
  std::string idempotency_key;  // ErpCallKey(event_key, plugin, i)
};

struct OutboxAppend {
  enum class Kind { kAppended, kExisting, kMismatch, kFenced };
  Kind kind = Kind::kAppended;
  OutboxRow row;  // kAppended: the row written; kExisting/kMismatch: the row already there
};

// Outbox is thread-safe in every engine; each call is its own transaction. Store failures are
// kStoreUnavailable; a Mark* on a missing row is kNotFound.
class Outbox {
 public:
  virtual ~Outbox() = default;

  // Append writes |row| unless fenced or already there (see above). The new row has no reply,
  // |row.state| and |row.next_attempt_ms| as given, and attempts 0 — except a kSent row, which
  // has attempts 1: it records the gateway's first send attempt in the same write that records
  // the call, as MarkSent would have (the gateway passes now + the jittered first backoff, so
  // the retry worker does not send it at the same time). Allowed states: kPending (a call not
  // sent now: due at |row.next_attempt_ms|), kSent, kHeld (a level-3 intent); anything else is
  // kInternal. kAppended's row is the row as stored (its attempts included); kExisting and
  // kMismatch keep the existing row's state and attempts, whatever |row.state| asked for.
  virtual Result<OutboxAppend> Append(const OutboxRow& row) = 0;
  virtual Result<std::optional<OutboxRow>> Get(const std::string& event_key, int64_t call_index) = 0;
  // MarkSent records one send attempt: attempts + 1, state sent, next attempt at |next_attempt_ms|
  // (when to retry if no answer arrives).
  virtual Status MarkSent(const std::string& event_key, int64_t call_index, int64_t next_attempt_ms) = 0;
  // MarkAnswered stores the ERP's answer (state answered).
  virtual Status MarkAnswered(const std::string& event_key, int64_t call_index, int reply_status,
                              const std::string& reply_body) = 0;
  // NoteAnswer is MarkAnswered for a caller that does not need its result (the gateway and the
  // retry worker: a lost answer is fetched again by a resend with the same Idempotency-Key). An
  // engine may apply it after returning, in order with its later writes: every later write to the
  // same store sees it, and a later durable write makes it durable; until then a read may still
  // see the row sent. The default applies it at once.
  virtual void NoteAnswer(const std::string& event_key, int64_t call_index, int reply_status,
                          const std::string& reply_body) {
    (void)MarkAnswered(event_key, call_index, reply_status, reply_body);
  }
  // MarkDead moves the row to dead (dead-lettered; never sent again unless Revive'd).
  virtual Status MarkDead(const std::string& event_key, int64_t call_index) = 0;
  // Defer gives a pending or sent row a new next attempt at |next_attempt_ms| WITHOUT counting an
  // attempt (state and attempts unchanged): the call was not sent because its capability is
  // paused or its endpoint's breaker is open, or the ERP asked to wait (429 cool-down, 401/403).
  // Any other state, or no row, is kNotFound.
  virtual Status Defer(const std::string& event_key, int64_t call_index, int64_t next_attempt_ms) = 0;
  // Revive turns a dead or answered row pending again: due at |now_ms|, attempts 0, reply
  // cleared (an operator's `dlq replay` of a call-level entry). Returns true if it changed the
  // row; a pending, sent or held row is left as it is (false). No row is kNotFound.
  virtual Result<bool> Revive(const std::string& event_key, int64_t call_index, int64_t now_ms) = 0;
  // ConfirmHeld turns every held row of |event_key| pending and due at |now_ms| (an operator
  // confirmed the intents: `clawguard idem confirm`); returns how many rows changed (0 if none).
  virtual Result<int64_t> ConfirmHeld(const std::string& event_key, int64_t now_ms) = 0;
  // ListEvent returns every row of |event_key|, by call index (operators: `idem show`).
  virtual Result<std::vector<OutboxRow>> ListEvent(const std::string& event_key) = 0;
  // DuePending returns up to |limit| rows pending or sent (never held, answered or dead) whose next attempt is ≤ |now_ms|,
  // oldest first.
  virtual Result<std::vector<OutboxRow>> DuePending(int64_t now_ms, int64_t limit) = 0;
};

}  // namespace clawguard

#endif  // CLAWGUARD_STORE_OUTBOX_H_
