// pipeline_guards.cpp — DLQ writes, breaker bookkeeping, audit lines and retention observations
// of the webhook pipeline.
#include "host/intake/pipeline_guards.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "clawguard/json_dump.h"

namespace clawguard::host {

int64_t InProgressRetryAfterSeconds(int64_t lease_left_ms) {
  const int64_t ms = std::min(lease_left_ms, kMaxInProgressRetryAfterMs);
  return std::max<int64_t>(1, (ms + 999) / 1000);
}

DlqRequest StoredRequest(std::string_view webhook_id, const HttpRequest& request) {
  DlqRequest r;
  r.webhook_id = std::string(webhook_id);
  if (auto ct = request.headers.Get("Content-Type"))
    r.content_type = std::string(ct->substr(0, kMaxDlqContentType));
  r.body = request.body;
  return r;
}

void AuditEvent(const PipelineGuards& g, std::string_view event,
                std::initializer_list<std::pair<std::string_view, std::string_view>> fields) {
  if (!g.audit) return;
  nlohmann::json j;
  j["event"] = std::string(event);
  for (const auto& [name, value] : fields) j[std::string(name)] = std::string(value);
  // replace: a plugin's detail may carry bytes that are not UTF-8.
  g.audit(DumpJson(j));
}

void AddDeadLetter(const PipelineGuards& g, DlqClass klass, const GuardEvent& ev,
                   std::string detail, std::optional<DlqRequest> request) {
  if (g.dlq == nullptr) return;
  DlqNewEntry e;
  e.klass = klass;
  e.event_key = std::string(ev.event_key);
  e.plugin = std::string(ev.plugin);
  e.route = std::string(ev.route);
  e.call_index = kDlqEventLevel;
  e.detail = std::move(detail);
  e.request = std::move(request);
  auto added = g.dlq->Add(e);
  if (!added.ok()) {
    AuditEvent(g, "dlq_write_failed",
               {{"plugin", ev.plugin},
                {"route", ev.route},
                {"event_key", ev.event_key},
                {"class", DlqClassName(klass)},
                {"detail", added.error().message()}});
  }
}

void RecordKeyFailure(const PipelineGuards& g, const GuardEvent& ev, const HttpRequest& request,
                      std::string_view webhook_id, std::string_view why) {
  if (g.key_breaker == nullptr) return;
  const KeyBreaker::Failure f = g.key_breaker->RecordFailure(ev.event_key);
  if (!f.opened_now) return;
  const std::string detail = "per-key breaker opened (" + std::string(why) +
                             "); deliveries are refused with 503 breaker_open for " +
                             std::to_string(RetryAfterSeconds(f.retry_after_ms)) +
                             " s; replay the stored request once the plugin is repaired";
  AuditEvent(g, "breaker_opened",
             {{"plugin", ev.plugin},
              {"route", ev.route},
              {"event_key", ev.event_key},
              {"detail", detail}});
  AddDeadLetter(g, DlqClass::kBreaker, ev, detail, StoredRequest(webhook_id, request));
}

void RecordKeySuccess(const PipelineGuards& g, std::string_view event_key) {
  if (g.key_breaker != nullptr) g.key_breaker->RecordSuccess(event_key);
}

void ObserveRedelivery(const PipelineGuards& g, int64_t first_delivery_ms) {
  if (g.advisor == nullptr || g.clock == nullptr || first_delivery_ms <= 0) return;
  g.advisor->Observe(g.clock->NowMillis() - first_delivery_ms);
}

}  // namespace clawguard::host
