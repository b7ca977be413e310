// erp_gateway.cpp — capability check, send gate, outbox-before-send, one send, retry worker.
#include "host/erp/erp_gateway.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "clawguard/json_dump.h"
#include "clawguard/limits.h"
#include "clawguard/sha256.h"
#include "host/erp/idempotency_key.h"
#include "host/observe/host_metrics.h"

namespace clawguard::host {
namespace {

void Emit(const ErpEnv& env, const nlohmann::json& j) {
  // Plugin-chosen paths may hold invalid UTF-8: replace rather than throw.
  if (env.audit) env.audit(DumpJson(j));
}

void Metric(const ErpEnv& env, std::string_view endpoint, ErpCallOutcome outcome) {
  if (env.metrics != nullptr) env.metrics->RecordErpCall(endpoint, outcome);
}

Status CheckEnv(const ErpEnv& env, std::string_view who) {
  if (env.outbox == nullptr || env.sender == nullptr || env.clock == nullptr) {
    return Status(Reason::kInternal, std::string(who) + ": outbox, sender and clock are required");
  }
  if (env.send_timeout.count() <= 0) {
    return Status(Reason::kConfigInvalid, std::string(who) + ": erp.timeout must be positive");
  }
  return env.retry.Check();
}

}  // namespace

Result<std::unique_ptr<ErpGateway>> ErpGateway::Create(const ErpEnv& env,
                                                       const CapabilitySet& capabilities,
                                                       ErpDelivery delivery) {
  const Status env_ok = CheckEnv(env, "erp gateway");
  if (!env_ok.ok()) return Status(Reason::kInternal, env_ok.message());
  if (delivery.plugin.empty() || delivery.event_key.empty() || delivery.level < 1 ||
      delivery.level > 3) {
    return Status(Reason::kInternal,
                  "erp gateway: delivery needs a plugin, an event key and a level 1..3");
  }
  return std::unique_ptr<ErpGateway>(new ErpGateway(env, capabilities, std::move(delivery)));
}

void ErpGateway::Audit(std::string_view event, std::string_view method, std::string_view path,
                       int64_t index, std::string_view detail) const {
  // A method or path past what any capability can match is shown cut (the refusal says why).
  nlohmann::json j = {{"event", event},
                      {"plugin", delivery_.plugin},
                      {"event_key", delivery_.event_key},
                      {"method", method.substr(0, limits::kMaxErpMethodLength)},
                      {"path", path.substr(0, limits::kMaxErpPathLength)},
                      {"detail", detail}};
  if (index >= 0) j["call_index"] = index;
  Emit(env_, j);
}

void ErpGateway::AuditDenied(std::string_view method, std::string_view path,
                             std::string_view detail) {
  ++denied_audits_;
  if (denied_audits_ <= kMaxDeniedAuditsPerDelivery) {
    Audit("erp_call_denied", method, path, -1, detail);
  } else if (denied_audits_ == kMaxDeniedAuditsPerDelivery + 1) {
    Audit("erp_call_denied_dropped", method, path, -1,
          "more than " + std::to_string(kMaxDeniedAuditsPerDelivery) +
              " refused ERP calls in one delivery: the rest are counted, not audited");
  }
}

int64_t ErpGateway::PendingIn(int64_t due_ms) const {
  return std::max<int64_t>(due_ms - env_.clock->NowMillis(), 1);
}

int ErpGateway::Reply(int status, std::string body, cg_bytes* reply) {
  replies_.push_back(std::move(body));
  if (reply != nullptr) *reply = cg_bytes{replies_.back().data(), replies_.back().size()};
  return status;
}

int ErpGateway::Call(std::string_view method, std::string_view path, std::string_view body,
                     cg_bytes* reply) {
  if (reply != nullptr) *reply = cg_bytes{nullptr, 0};
  if (latched_ != 0) return latched_;
  outcome_.pending_in_ms = 0;  // describes the last call only
  if (outcome_.calls >= kMaxErpCallsPerDelivery) {
    ++outcome_.denied;
    Metric(env_, "", ErpCallOutcome::kDenied);
    AuditDenied(
        method, path,
        "more than " + std::to_string(kMaxErpCallsPerDelivery) + " ERP calls in one delivery");
    return CG_DENIED;
  }
  if (body.size() > limits::kMaxErpRequestBody) {
    ++outcome_.denied;
    Metric(env_, "", ErpCallOutcome::kDenied);
    AuditDenied(method, path,
                "a body of " + std::to_string(body.size()) + " bytes; at most " +
                    std::to_string(limits::kMaxErpRequestBody) + " are sent");
    return CG_DENIED;
  }
  if (body_bytes_ + body.size() > kMaxErpBodyBytesPerDelivery) {
    ++outcome_.denied;
    Metric(env_, "", ErpCallOutcome::kDenied);
    AuditDenied(method, path,
                "more than " + std::to_string(kMaxErpBodyBytesPerDelivery) +
                    " bytes of ERP request bodies in one delivery");
    return CG_DENIED;
  }

  // 1. The exact method and path that would be sent; nothing else is ever sent.
  const std::optional<std::string_view> capability = caps_.Match(method, path);
  if (!capability) {
    ++outcome_.denied;
    Metric(env_, "", ErpCallOutcome::kDenied);  // no endpoint: counted under _unknown
    AuditDenied(method, path,
                path.size() > limits::kMaxErpPathLength
                    ? "a path of " + std::to_string(path.size()) + " bytes; at most " +
                          std::to_string(limits::kMaxErpPathLength) + " are matched"
                    : std::string("not in the manifest's capabilities"));
    return CG_DENIED;
  }
  const ErpCallTarget target{delivery_.plugin, std::string(*capability), ""};

  // 2.–3. Call index, key, and the outbox row before any send.
  const int64_t index = outcome_.calls++;
  body_bytes_ += body.size();
  OutboxRow row;
  row.event_key = delivery_.event_key;
  row.fencing_token = delivery_.fencing_token;
  row.call_index = index;
  row.method = std::string(method);
  row.path = std::string(path);
  row.body = std::string(body);
  row.body_sha256 = Sha256Hex(body);
  row.idempotency_key =
      ErpCallKey(delivery_.event_key, delivery_.plugin, static_cast<uint32_t>(index));
  // A level-3 row is an intent, held until confirmed. Any other row first passes the send gate:
  // allowed → appended already sent and owned by this send (attempts 1: the append records this
  // send, no Claim), not due until the ERP timeout plus a margin, so no worker or other host sends
  // it while this send is in flight; refused → appended pending, due when the pause or the breaker
  // may let it through. An allowed gate followed by no send (existing or fenced row) needs no
  // release of its breaker permit (CheckSendGate).
  SendGate gate;
  if (delivery_.level == 3) {
    row.state = OutboxState::kHeld;
    row.next_attempt_ms = kHeldIntentMs;
  } else {
    gate = CheckSendGate(env_, target);
    if (gate.allowed) {
      row.state = OutboxState::kSent;
      row.claimed_by = NewSendOwner();
      row.next_attempt_ms = gate.now_ms + SendClaimMs(env_);
    } else {
      row.state = OutboxState::kPending;
      row.next_attempt_ms = gate.defer_to_ms;
    }
  }
  Result<OutboxAppend> appended = env_.outbox->Append(row);
  if (!appended.ok()) {
    Audit("erp_call_unavailable", method, path, index, appended.error().message());
    return CG_UNAVAILABLE;
  }
  switch (appended->kind) {
    case OutboxAppend::Kind::kFenced:
      outcome_.fenced = true;
      latched_ = CG_FENCED;
      Audit("erp_call_fenced", method, path, index, "a newer worker holds this event");
      return CG_FENCED;
    case OutboxAppend::Kind::kMismatch:
      outcome_.dead_lettered = true;
      outcome_.dead_letter_reason = "mismatch";
      latched_ = CG_MISMATCH;
      // Whatever its state or claim: the recorded call must never be sent again (a send still in
      // flight then finds the row dead, and its answer changes nothing).
      (void)env_.outbox->MarkDead(delivery_.event_key, index, /*owner=*/"");
      Audit("erp_call_mismatch", method, path, index,
            "differs from the recorded call " + appended->row.method + " " + appended->row.path +
                "; the event is dead-lettered");
      return CG_MISMATCH;
    case OutboxAppend::Kind::kExisting:
      switch (appended->row.state) {
        case OutboxState::kAnswered:
          return Reply(appended->row.reply_status, appended->row.reply_body, reply);
        case OutboxState::kPending:
        case OutboxState::kSent:
          outcome_.pending_in_ms = PendingIn(appended->row.next_attempt_ms);
          return CG_DEFERRED;
        case OutboxState::kHeld: ++outcome_.held; return CG_HELD;
        case OutboxState::kDead: return CG_UNAVAILABLE;
      }
      return CG_UNAVAILABLE;
    case OutboxAppend::Kind::kAppended: break;
  }

  // 4. Level 3: an intent, parked until confirmed.
  if (delivery_.level == 3) {
    ++outcome_.held;
    Metric(env_, target.endpoint, ErpCallOutcome::kHeld);
    return CG_HELD;
  }

  // 5. One send, or none when the gate refused (the row was appended due when the pause or the
  // breaker may let it through); the worker retries whatever is not final.
  if (!gate.allowed) {
    CountNotSent(env_, target, gate);
    outcome_.pending_in_ms = PendingIn(gate.defer_to_ms);
    return CG_UNAVAILABLE;
  }
  ErpReply answer;
  switch (SendMarkedRow(env_, appended->row, target, gate, &answer)) {
    case SendResult::kAnswered: return Reply(answer.status, std::move(answer.body), reply);
    case SendResult::kRetryLater:
      // Released to the retry worker, due after the first backoff (erp_send.h).
      outcome_.pending_in_ms =
          std::max<int64_t>({env_.retry.BackoffMs(1), env_.send_timeout.count(), 1});
      return CG_UNAVAILABLE;
    case SendResult::kDead:
    case SendResult::kNotSent:
    case SendResult::kBusy:
    case SendResult::kRevoked: return CG_UNAVAILABLE;
  }
  return CG_UNAVAILABLE;
}

Result<std::unique_ptr<RetryWorker>> RetryWorker::Create(ErpEnv env) {
  CLAWGUARD_RETURN_IF_ERROR(CheckEnv(env, "retry worker"));
  if (env.plugins == nullptr) {
    // Without the loaded plugins no resend could be matched against a capability: refuse to run.
    return Status(Reason::kInternal, "retry worker: the loaded plugins' capabilities are required");
  }
  return std::unique_ptr<RetryWorker>(new RetryWorker(std::move(env)));
}

Result<RetryWorker::DrainStats> RetryWorker::DrainPending(int64_t now_ms, int64_t limit,
                                                          const std::atomic<bool>* stop) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::vector<OutboxRow> due, env_.outbox->DuePending(now_ms, limit));
  DrainStats stats;
  for (const OutboxRow& row : due) {
    if (stop != nullptr && stop->load()) break;
    switch (SendOutboxRow(env_, row, ResolveCallTarget(env_, row), now_ms, nullptr)) {
      case SendResult::kAnswered: ++stats.answered; break;
      case SendResult::kRetryLater: ++stats.retry_later; break;
      case SendResult::kDead: ++stats.dead; break;
      case SendResult::kNotSent: ++stats.not_sent; break;
      case SendResult::kBusy: ++stats.busy; break;
      case SendResult::kRevoked: ++stats.revoked; break;
    }
  }
  return stats;
}

Result<int64_t> RetryWorker::Confirm(const std::string& event_key) {
  return env_.outbox->ConfirmHeld(event_key, env_.clock->NowMillis());
}

Result<CallReplay> RetryWorker::ReplayCall(const DlqEntry& e) {
  if (e.call_index < 0) {
    return Status(Reason::kUsage,
                  "dlq entry " + std::to_string(e.id) +
                      " is event-level (no call index): replay it as an event, not a call");
  }
  CLAWGUARD_ASSIGN_OR_RETURN(std::optional<OutboxRow> row,
                             env_.outbox->Get(e.event_key, e.call_index));
  if (!row) {
    return Status(Reason::kNotFound,
                  "no outbox row " + e.event_key + "/" + std::to_string(e.call_index));
  }
  // A replay is a resend: the call must still be allowed by the plugin version loaded now.
  const ErpCallTarget target = ResolveCallTarget(env_, *row);
  if (CallRevoked(target)) {
    RecordRevokedCall(env_, *row, target, "dlq_replay");
    return CallReplay::kRevoked;
  }
  CLAWGUARD_ASSIGN_OR_RETURN(
      bool revived, env_.outbox->Revive(e.event_key, e.call_index, env_.clock->NowMillis()));
  if (revived) {
    Emit(env_, {{"event", "erp_call_revived"},
                {"dlq_id", e.id},
                {"dlq_class", DlqClassName(e.klass)},
                {"event_key", e.event_key},
                {"call_index", e.call_index}});
    return CallReplay::kQueued;
  }
  // Not revived: it is pending, sent or held. Read again to tell which (a row that was pending
  // and has been answered or dead-lettered since was the worker's to send: kQueued too).
  CLAWGUARD_ASSIGN_OR_RETURN(row, env_.outbox->Get(e.event_key, e.call_index));
  if (!row) {
    return Status(Reason::kNotFound,
                  "no outbox row " + e.event_key + "/" + std::to_string(e.call_index));
  }
  return row->state == OutboxState::kHeld ? CallReplay::kHeld : CallReplay::kQueued;
}

}  // namespace clawguard::host
