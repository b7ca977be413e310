// store/outbox.h — the ERP call outbox (interface; engines in store/sqlite and
// store/postgresql). ARCHITECTURE.md "Host request pipeline" step 5.
//
// One row per (event key, call index i), written before the call is sent. Append is fenced by
// the idempotency record of the event key: the row's fencing token must equal the record's
// (a stale worker whose lease was taken over is refused). A re-run plugin's call i meets its
// existing row: same method, path and body → kExisting (answered from the row); otherwise
// kMismatch (the event is dead-lettered by the caller).
//
// Life of a row: pending (or held, for a level-3 intent, until ConfirmHeld) → sent (one Claim per
// send) → answered (a final ERP answer) or dead (retries spent, or a mismatch). A row the gateway
// sends at once is appended already sent and claimed (attempts 1): the append records the call
// and its first send in one write, and only resends go through Claim. The row is the retry
// queue: Defer moves its next attempt without counting one (paused capability, open breaker),
// Release ends a send that got no final answer (the ERP asked to wait, or no answer came), and
// Revive puts a dead or answered row back in the queue when an operator replays its call-level
// DLQ entry (host/erp/erp_send.h has the triage).
//
// One send at a time per row, on every engine and across hosts: a send OWNS its row from its
// Claim (or its sent Append) until its answer is stored (MarkAnswered / NoteAnswer), it is
// released (Release) or dead (MarkDead), or its claim ends. The owner is a string unique to that
// one send; the claim's end is the row's next_attempt_ms, at least the ERP timeout plus a margin
// after the send started, so the row is not due — DuePending does not list it and no other Claim
// can take it — while its send may still be in flight. Every write a send makes after the
// answer names its owner and is refused (kNotFound, nothing changed) unless the row is still
// sent and still that send's: the first real answer wins, and a late one (a send whose claim
// ran out while another send took the row) changes nothing.
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
inline constexpr OutboxState kAllOutboxStates[] = {OutboxState::kPending, OutboxState::kSent,
                                                   OutboxState::kAnswered, OutboxState::kDead,
                                                   OutboxState::kHeld};
// OutboxStateFromName is the inverse of OutboxStateName; nullopt for any other text (engines
// read the stored state column with it).
inline std::optional<OutboxState> OutboxStateFromName(std::string_view name) {
  for (OutboxState s : kAllOutboxStates) {
    if (OutboxStateName(s) == name) return s;
  }
  return std::nullopt;
}

struct OutboxRow {
  std::string event_key;  // 64 lowercase hex
  int64_t fencing_token =
      0;                   // the claim's token when written (updated when a takeover re-meets it)
  int64_t call_index = 0;  // i, from 0 within one delivery
  std::string method;
  std::string path;
  std::string body;
  std::string body_sha256;  // lowercase hex of body
  OutboxState state = OutboxState::kPending;
  int reply_status = 0;  // answered: the ERP's status
  std::string reply_body;
  int64_t attempts = 0;
  // When the row is next due; while a send owns it (claimed_by not empty), the end of its claim.
  int64_t next_attempt_ms = 0;
  std::string idempotency_key;  // ErpCallKey(event_key, plugin, i)
  // The owner of the send that holds (or last held) the row; "" when none has since it was
  // appended pending, released, answered, revived or confirmed.
  std::string claimed_by;
};

struct OutboxAppend {
  enum class Kind { kAppended, kExisting, kMismatch, kFenced };
  Kind kind = Kind::kAppended;
  OutboxRow row;  // kAppended: the row written; kExisting/kMismatch: the row already there
};

// CheckNewOutboxRow is the check every engine's Append makes first: kInternal unless |row| is
// pending or held with no claim, or sent with one (see Append).
inline Status CheckNewOutboxRow(const OutboxRow& row) {
  const bool sent = row.state == OutboxState::kSent;
  if (!sent && row.state != OutboxState::kPending && row.state != OutboxState::kHeld) {
    return Status(Reason::kInternal, "outbox: a new row must be pending, sent or held, not " +
                                         std::string(OutboxStateName(row.state)));
  }
  if (sent == row.claimed_by.empty()) {
    return Status(Reason::kInternal,
                  sent ? "outbox: a row appended sent must name the send that owns it"
                       : "outbox: only a row appended sent may be owned by a send");
  }
  return Status::Ok();
}

// Outbox is thread-safe in every engine; each call is its own transaction. Store failures are
// kStoreUnavailable; a Mark* on a missing row is kNotFound.
class Outbox {
 public:
  virtual ~Outbox() = default;

  // Append writes |row| unless fenced or already there (see above). The new row has no reply,
  // |row.state| and |row.next_attempt_ms| as given, and attempts 0 — except a kSent row, which
  // has attempts 1: it records the gateway's first send in the same write that records the call,
  // claimed by |row.claimed_by| until |row.next_attempt_ms| (the gateway passes now + the ERP
  // timeout + a margin), as Claim would have. Allowed: kPending (a call not sent now: due at
  // |row.next_attempt_ms|) and kHeld (a level-3 intent), both with an empty claimed_by; kSent
  // with a non-empty one. Anything else is kInternal. kAppended's row is the row as stored (its
  // attempts included); kExisting and kMismatch keep the existing row's state, attempts and claim,
  // whatever |row| asked for (a re-run plugin's call never takes a row over from its send).
  virtual Result<OutboxAppend> Append(const OutboxRow& row) = 0;
  virtual Result<std::optional<OutboxRow>> Get(const std::string& event_key,
                                               int64_t call_index) = 0;
  // Claim takes the row for one send by |owner| (unique to that send, not empty), atomically: if
  // it is pending or sent and due at |now_ms| (next_attempt_ms ≤ now_ms: no send owns it, or its
  // claim ran out), it becomes sent, attempts + 1, claimed_by |owner|, next_attempt_ms |until_ms|,
  // and the row as claimed is returned. nullopt when it is not (another send owns it, it is
  // answered, dead, held, or not due yet) or does not exist: nothing changed, nothing may be sent.
  virtual Result<std::optional<OutboxRow>> Claim(const std::string& event_key, int64_t call_index,
                                                 int64_t now_ms, const std::string& owner,
                                                 int64_t until_ms) = 0;
  // MarkAnswered stores the ERP's answer to |owner|'s send (state answered, claim cleared): only
  // while the row is sent and claimed by |owner|, else kNotFound and nothing changes.
  virtual Status MarkAnswered(const std::string& event_key, int64_t call_index,
                              const std::string& owner, int reply_status,
                              const std::string& reply_body) = 0;
  // NoteAnswer is MarkAnswered for a caller that does not need its result (the gateway and the
  // retry worker: a lost answer is fetched again by a resend with the same Idempotency-Key). An
  // engine may apply it after returning, in order with its later writes: every later write to the
  // same store sees it, and a later durable write makes it durable; until then a read may still
  // see the row sent. Guarded like MarkAnswered. The default applies it at once.
  virtual void NoteAnswer(const std::string& event_key, int64_t call_index,
                          const std::string& owner, int reply_status,
                          const std::string& reply_body) {
    (void)MarkAnswered(event_key, call_index, owner, reply_status, reply_body);
  }
  // Release ends |owner|'s send without a final answer: the row stays sent (attempts unchanged),
  // no longer claimed, due at |next_attempt_ms| (the backoff after a failure, or when the ERP
  // asked to be asked again: 429, an in-progress 409, 401/403). Only while the row is sent and
  // claimed by |owner|, else kNotFound and nothing changes.
  virtual Status Release(const std::string& event_key, int64_t call_index, const std::string& owner,
                         int64_t next_attempt_ms) = 0;
  // MarkDead moves the row to dead (dead-lettered; never sent again unless Revive'd). With an
  // |owner| (retries spent): only while the row is sent and claimed by it, else kNotFound. With an
  // empty |owner| (a mismatch: the recorded call must never be sent again): whatever its state
  // and claim — a send still in flight then finds the row dead and its answer changes nothing.
  virtual Status MarkDead(const std::string& event_key, int64_t call_index,
                          const std::string& owner) = 0;
  // Defer gives a pending or sent row that is due at |now_ms| (no send owns it) a new next attempt
  // at |next_attempt_ms| WITHOUT counting an attempt (state and attempts unchanged): the call was
  // not sent because its capability is paused or its endpoint's breaker is open. A row owned by a
  // send, any other state, or no row is kNotFound (nothing changed).
  virtual Status Defer(const std::string& event_key, int64_t call_index, int64_t now_ms,
                       int64_t next_attempt_ms) = 0;
  // Revive turns a dead or answered row pending again: due at |now_ms|, attempts 0, reply and
  // claim cleared (an operator's `dlq replay` of a call-level entry). Returns true if it changed
  // the row; a pending, sent or held row is left as it is (false). No row is kNotFound.
  virtual Result<bool> Revive(const std::string& event_key, int64_t call_index, int64_t now_ms) = 0;
  // ConfirmHeld turns every held row of |event_key| pending and due at |now_ms| (an operator
  // confirmed the intents: `clawguard idem confirm`); returns how many rows changed (0 if none).
  virtual Result<int64_t> ConfirmHeld(const std::string& event_key, int64_t now_ms) = 0;
  // ListEvent returns every row of |event_key|, by call index (operators: `idem show`).
  virtual Result<std::vector<OutboxRow>> ListEvent(const std::string& event_key) = 0;
  // DuePending returns up to |limit| rows pending or sent (never held, answered or dead) whose
  // next attempt is ≤ |now_ms| (so none a live send owns), oldest first. A read: several workers
  // may list the same row; each must Claim it before sending, and only one Claim wins.
  virtual Result<std::vector<OutboxRow>> DuePending(int64_t now_ms, int64_t limit) = 0;
};

}  // namespace clawguard

#endif  // CLAWGUARD_STORE_OUTBOX_H_
