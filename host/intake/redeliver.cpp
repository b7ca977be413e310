// redeliver.cpp — WebhookPipeline::Redeliver: a DLQ replay of a stored, once-authenticated request.
#include <string>

#include "host/erp/idempotency_key.h"
#include "host/intake/business_key.h"
#include "host/intake/webhook_pipeline.h"

namespace clawguard::host {
namespace {

std::string PathOf(const PipelineRoute& route) {
  return std::string(kWebhookPathPrefix) + route.plugin + "/" + route.route;
}

}  // namespace

RedeliverResult WebhookPipeline::Redeliver(const std::string& plugin, const std::string& route_name,
                                           const std::string& event_key,
                                           const DlqRequest& stored) const {
  const auto start = std::chrono::steady_clock::now();
  const auto it = routes_.find(plugin + "/" + route_name);
  if (it == routes_.end()) {
    return {false, "no webhook route " + plugin + "/" + route_name + " is configured on this host"};
  }
  const PipelineRoute& route = it->second;
  // The request as the plugin sees it: the stored id, Content-Type and body (other headers of the
  // original delivery are not kept).
  HttpRequest request;
  request.method = "POST";
  request.target = PathOf(route);
  if (!stored.content_type.empty()) request.headers.Set("Content-Type", stored.content_type);
  request.headers.Set("webhook-id", stored.webhook_id);
  request.body = stored.body;

  std::string business;
  if (route.business_key) {
    auto bv = ExtractBusinessKey(request.body, *route.business_key);
    if (!bv.ok())
      return {false, "the stored request has no usable business key: " + bv.error().message()};
    business = std::move(bv).value();
  }
  const EventKey ek = DeriveEventKey(route.level, route.plugin, route.route, stored.webhook_id,
                                     business, request.body);
  if (ek.key != event_key) {
    return {false, "integrity check failed: the stored request derives event key " + ek.key +
                       ", expected " + event_key + "; not replayed"};
  }
  const Handled h = ClaimAndDispatch(
      Delivery{route, request, stored.webhook_id, ek.key, ek.fingerprint, /*from_platform=*/false});
  Count(&route, h, start);
  switch (h.outcome) {
    case WebhookOutcome::kReplayed:
      return {true, "already completed (status " + std::to_string(h.response.status) +
                        "); not run again"};
    case WebhookOutcome::kProcessed:
      return {true, "replayed: the plugin answered " + std::to_string(h.response.status) +
                        " and it was stored"};
    case WebhookOutcome::kDeadLettered:
      return {true,
              "replayed, but the event was dead-lettered again (outbox mismatch); see its mismatch "
              "entry"};
    case WebhookOutcome::kInProgress:
      return {false, "in progress elsewhere: another delivery holds the lease"};
    case WebhookOutcome::kFingerprintMismatch:
      return {false, "fingerprint mismatch: the key's record was made by another request"};
    case WebhookOutcome::kExpiredKeySeen:
      return {
          false,
          "tombstoned: the key's record expired after retention; use `clawguard idem reset` first"};
    case WebhookOutcome::kStoreUnavailable: return {false, "the idempotency store is unavailable"};
    case WebhookOutcome::kNotStored:
      return {false,
              "the plugin answered " + std::to_string(h.response.status) + ", which is not stored"};
    case WebhookOutcome::kPluginFailed: return {false, "the plugin failed"};
    case WebhookOutcome::kPluginTimeout: return {false, "the plugin timed out"};
    case WebhookOutcome::kPluginUnavailable:
      return {false, "the plugin's worker stopped or the plugin is failed"};
    case WebhookOutcome::kErpPending:
      return {false, "an ERP call of the event is still in flight or queued; the host finishes it"};
    case WebhookOutcome::kFenced:
      return {false, "another worker took the event over while the plugin ran"};
    case WebhookOutcome::kTooLarge:
    case WebhookOutcome::kNotFound:
    case WebhookOutcome::kAuthFailed:
    case WebhookOutcome::kKeyMissing:
    case WebhookOutcome::kRateLimited:
    case WebhookOutcome::kBreakerOpen: break;  // stages a redelivery skips
  }
  return {false, "unexpected outcome " + std::string(WebhookOutcomeName(h.outcome))};
}

}  // namespace clawguard::host
