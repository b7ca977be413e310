// erp_gateway.cpp — capability check, outbox-before-send, one send, retry worker.
#include "host/erp_gateway.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "clawguard/sha256.h"
#include "host/idempotency_key.h"

namespace clawguard::host {
namespace {

constexpr std::string_view kIdempotencyKeyHeader = "Idempotency-Key";

class ClientSender final : public ErpSender {
 public:
  explicit ClientSender(std::unique_ptr<ErpClient> client) : client_(std::move(client)) {}
  Result<ErpReply> Send(std::string_view method, std::string_view path, const HttpHeaders& headers,
                        std::string_view body) override {
    return client_->Send(method, path, headers, body);
  }

 private:
  const std::unique_ptr<ErpClient> client_;
};

// IsFinalAnswer: 2xx and 4xx are the ERP's decision, except 408, 425 and 429, which ask for a
// retry (like 5xx).
bool IsFinalAnswer(int status) {
  if (status >= 200 && status <= 299) return true;
  if (status >= 400 && status <= 499) return status != 408 && status != 425 && status != 429;
  return false;
}

std::string JsonLine(const nlohmann::json& j) {
  // Plugin-chosen paths may hold invalid UTF-8: replace rather than throw.
  return j.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

void Emit(const ErpEnv& env, const nlohmann::json& j) {
  if (env.audit) env.audit(JsonLine(j));
}

}  // namespace

int64_t ErpRetryPolicy::BackoffMs(int64_t attempt) const {
  const int64_t cap = std::max<int64_t>(1, max.count());
  int64_t d = std::max<int64_t>(1, base.count());
  for (int64_t n = 1; n < attempt && d < cap; ++n) d *= 2;
  return std::min(d, cap);
}

std::unique_ptr<ErpSender> MakeErpSender(std::unique_ptr<ErpClient> client) {
  CLAWGUARD_CHECK(client != nullptr);
  return std::make_unique<ClientSender>(std::move(client));
}

SendResult SendOutboxRow(const ErpEnv& env, const OutboxRow& row, ErpReply* reply) {
  const int64_t attempt = row.attempts + 1;
  const int64_t now = env.clock->NowMillis();
  if (!env.outbox->MarkSent(row.event_key, row.call_index, now + env.retry.BackoffMs(attempt)).ok()) {
    return SendResult::kRetryLater;  // not sent; still due
  }
  HttpHeaders headers;
  headers.Set(kIdempotencyKeyHeader, row.idempotency_key);
  if (!row.body.empty()) headers.Set("Content-Type", "application/json");
  Result<ErpReply> r = env.sender->Send(row.method, row.path, headers, row.body);
  if (r.ok() && IsFinalAnswer(r->status)) {
    // If storing the answer fails the row stays sent: a resend carries the same key and the ERP
    // replays its answer, so the effect still happens once.
    (void)env.outbox->MarkAnswered(row.event_key, row.call_index, r->status, r->body);
    if (reply != nullptr) *reply = std::move(r).value();
    return SendResult::kAnswered;
  }
  const std::string why = r.ok() ? "status " + std::to_string(r->status) : r.error().message();
  const bool spent = attempt >= env.retry.attempts;
  Emit(env, {{"event", spent ? "erp_call_dead" : "erp_call_retry"},
             {"event_key", row.event_key},
             {"call_index", row.call_index},
             {"method", row.method},
             {"path", row.path},
             {"attempt", attempt},
             {"detail", why}});
  if (spent) {
    (void)env.outbox->MarkDead(row.event_key, row.call_index);
    return SendResult::kDead;
  }
  return SendResult::kRetryLater;
}

Result<std::unique_ptr<ErpGateway>> ErpGateway::Create(const ErpEnv& env, const CapabilitySet& capabilities,
                                                       ErpDelivery delivery) {
  if (env.outbox == nullptr || env.sender == nullptr || env.clock == nullptr) {
    return Status(Reason::kInternal, "erp gateway: outbox, sender and clock are required");
  }
  if (delivery.plugin.empty() || delivery.event_key.empty() || delivery.level < 1 || delivery.level > 3) {
    return Status(Reason::kInternal, "erp gateway: delivery needs a plugin, an event key and a level 1..3");
  }
  return std::unique_ptr<ErpGateway>(new ErpGateway(env, capabilities, std::move(delivery)));
}

void ErpGateway::Audit(std::string_view event, std::string_view method, std::string_view path, int64_t index,
                       std::string_view detail) const {
  nlohmann::json j = {{"event", event},
                      {"plugin", delivery_.plugin},
                      {"event_key", delivery_.event_key},
                      {"method", method},
                      {"path", path},
                      {"detail", detail}};
  if (index >= 0) j["call_index"] = index;
  Emit(env_, j);
}

int ErpGateway::Reply(int status, std::string body, cg_bytes* reply) {
  replies_.push_back(std::move(body));
  if (reply != nullptr) *reply = cg_bytes{replies_.back().data(), replies_.back().size()};
  return status;
}

int ErpGateway::Call(std::string_view method, std::string_view path, std::string_view body, cg_bytes* reply) {
  if (reply != nullptr) *reply = cg_bytes{nullptr, 0};
  if (latched_ != 0) return latched_;

  // 1. The exact method and path that would be sent; nothing else is ever sent.
  if (!caps_.Match(method, path)) {
    ++outcome_.denied;
    Audit("erp_call_denied", method, path, -1, "not in the manifest's capabilities");
    return CG_DENIED;
  }

  // 2.–3. Call index, key, and the outbox row before any send.
  const int64_t index = outcome_.calls++;
  OutboxRow row;
  row.event_key = delivery_.event_key;
  row.fencing_token = delivery_.fencing_token;
  row.call_index = index;
  row.method = std::string(method);
  row.path = std::string(path);
  row.body = std::string(body);
  row.body_sha256 = Sha256Hex(body);
  row.idempotency_key = ErpCallKey(delivery_.event_key, delivery_.plugin, static_cast<uint32_t>(index));
  // A level-3 row is an intent, held until confirmed. Any other row is sent by this gateway at
  // once: it is first due after the first backoff, so the retry worker does not send it too.
  row.state = delivery_.level == 3 ? OutboxState::kHeld : OutboxState::kPending;
  row.next_attempt_ms = delivery_.level == 3 ? kHeldIntentMs : env_.clock->NowMillis() + env_.retry.BackoffMs(1);
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
      (void)env_.outbox->MarkDead(delivery_.event_key, index);
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
          return CG_DEFERRED;
        case OutboxState::kHeld:
          ++outcome_.held;
          return CG_HELD;
        case OutboxState::kDead:
          return CG_UNAVAILABLE;
      }
      return CG_UNAVAILABLE;
    case OutboxAppend::Kind::kAppended:
      break;
  }

  // 4. Level 3: an intent, parked until confirmed.
  if (delivery_.level == 3) {
    ++outcome_.held;
    return CG_HELD;
  }

  // 5. One send; the worker retries whatever is not finally answered.
  ErpReply answer;
  switch (SendOutboxRow(env_, appended->row, &answer)) {
    case SendResult::kAnswered:
      return Reply(answer.status, std::move(answer.body), reply);
    case SendResult::kRetryLater:
    case SendResult::kDead:
      return CG_UNAVAILABLE;
  }
  return CG_UNAVAILABLE;
}

Result<std::unique_ptr<RetryWorker>> RetryWorker::Create(ErpEnv env) {
  if (env.outbox == nullptr || env.sender == nullptr || env.clock == nullptr) {
    return Status(Reason::kInternal, "retry worker: outbox, sender and clock are required");
  }
  if (env.retry.attempts < 1) return Status(Reason::kConfigInvalid, "erp.retry.attempts must be ≥ 1");
  return std::unique_ptr<RetryWorker>(new RetryWorker(std::move(env)));
}

Result<RetryWorker::DrainStats> RetryWorker::DrainPending(int64_t now_ms, int64_t limit) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::vector<OutboxRow> due, env_.outbox->DuePending(now_ms, limit));
  DrainStats stats;
  for (const OutboxRow& row : due) {
    switch (SendOutboxRow(env_, row, nullptr)) {
      case SendResult::kAnswered: ++stats.answered; break;
      case SendResult::kRetryLater: ++stats.retry_later; break;
      case SendResult::kDead: ++stats.dead; break;
    }
  }
  return stats;
}

Result<int64_t> RetryWorker::Confirm(const std::string& event_key) {
  return env_.outbox->ConfirmHeld(event_key, env_.clock->NowMillis());
}

}  // namespace clawguard::host
