// webhook_pipeline.cpp — size limits, routing, authentication, idempotency gate, outcome storage.
#include "host/webhook_pipeline.h"

#include <algorithm>

#include "clawguard/limits.h"
#include "host/business_key.h"
#include "host/idempotency_key.h"
#include "host/problem.h"

namespace clawguard::host {
namespace {

constexpr std::string_view kHeldBody = R"({"status":"held","detail":"ERP calls are held until an operator confirms them"})";
constexpr size_t kMaxRecordedXIdempotencyKey = 256;

using Handled = WebhookPipeline::Handled;

Handled Refuse(WebhookOutcome outcome, Reason reason, std::string_view detail,
               std::optional<int64_t> retry_after_s = std::nullopt) {
  return Handled{ProblemResponse(reason, detail, retry_after_s), outcome};
}

int64_t CeilSeconds(int64_t ms) { return std::max<int64_t>(1, (ms + 999) / 1000); }

HttpResponse Answer(int status, const std::string& content_type, const std::string& body) {
  HttpResponse r;
  r.status = status;
  if (!content_type.empty()) r.headers.Set("Content-Type", content_type);
  r.body = body;
  return r;
}

}  // namespace

std::string_view WebhookOutcomeName(WebhookOutcome o) {
  switch (o) {
    case WebhookOutcome::kTooLarge: return "too_large";
    case WebhookOutcome::kNotFound: return "not_found";
    case WebhookOutcome::kAuthFailed: return "auth_failed";
    case WebhookOutcome::kKeyMissing: return "key_missing";
    case WebhookOutcome::kFingerprintMismatch: return "fingerprint_mismatch";
    case WebhookOutcome::kReplayed: return "replayed";
    case WebhookOutcome::kInProgress: return "in_progress";
    case WebhookOutcome::kStoreUnavailable: return "store_unavailable";
    case WebhookOutcome::kProcessed: return "processed";
    case WebhookOutcome::kNotStored: return "not_stored";
    case WebhookOutcome::kPluginFailed: return "plugin_failed";
    case WebhookOutcome::kPluginTimeout: return "plugin_timeout";
    case WebhookOutcome::kFenced: return "fenced";
    case WebhookOutcome::kDeadLettered: return "dead_lettered";
  }
  return "unknown";
}

std::string DeadLetteredBody(std::string_view dlq_class) {
  // dlq_class is one of the fixed DLQ class names (no quoting needed).
  return R"({"status":"dead_lettered","class":")" + std::string(dlq_class) +
         R"(","detail":"the event was dead-lettered for operator review; it will not be processed again"})";
}

Result<WebhookVerifier> MakeVerifier(const RouteSecrets& secrets, std::chrono::milliseconds tolerance,
                                     const Clock& clock) {
  std::optional<SecretBytes> previous;
  if (secrets.previous) previous = secrets.previous->Clone();
  return WebhookVerifier::Create(secrets.current.Clone(), std::move(previous), secrets.previous_until, tolerance,
                                 clock);
}

bool WebhookPipeline::IsStorableStatus(int status) {
  if (status >= 200 && status <= 299) return true;
  if (status >= 400 && status <= 499) return status != 408 && status != 409 && status != 425 && status != 429;
  return false;
}

Result<std::unique_ptr<WebhookPipeline>> WebhookPipeline::Create(PipelineOptions options,
                                                                 std::vector<PipelineRoute> routes,
                                                                 IdempotencyStore& store, Dispatcher dispatcher) {
  if (options.max_body == 0 || options.max_headers == 0 || options.lease.count() <= 0) {
    return Status(Reason::kConfigInvalid, "webhook pipeline: max_body, max_headers and lease must be > 0");
  }
  if (!dispatcher) return Status(Reason::kConfigInvalid, "webhook pipeline: no dispatcher");
  std::map<std::string, PipelineRoute> table;
  for (PipelineRoute& r : routes) {
    const std::string name = r.plugin + "/" + r.route;
    if (r.plugin.empty() || r.route.empty() || r.plugin.find('/') != std::string::npos ||
        r.route.find('/') != std::string::npos) {
      return Status(Reason::kConfigInvalid, "webhook route '" + name + "': plugin and route must be non-empty, no '/'");
    }
    if (r.level < 1 || r.level > 3) {
      return Status(Reason::kConfigInvalid, "webhook route '" + name + "': level must be 1, 2 or 3");
    }
    if (r.level == 1 && !r.business_key) {
      return Status(Reason::kConfigInvalid, "webhook route '" + name + "': level 1 needs a business_key");
    }
    if (!table.emplace(name, std::move(r)).second) {
      return Status(Reason::kConfigInvalid, "webhook route '" + name + "' is listed twice");
    }
  }
  return std::unique_ptr<WebhookPipeline>(
      new WebhookPipeline(options, std::move(table), store, std::move(dispatcher)));
}

WebhookPipeline::Handled WebhookPipeline::HandleDetailed(const HttpRequest& request) const {
  // 1. Limits, then routing (no echo of the unknown names).
  if (request.headers.ByteSize() > options_.max_headers) {
    return Refuse(WebhookOutcome::kTooLarge, Reason::kRequestTooLarge,
                  "headers exceed " + std::to_string(options_.max_headers) + " bytes");
  }
  if (request.body.size() > options_.max_body) {
    return Refuse(WebhookOutcome::kTooLarge, Reason::kRequestTooLarge,
                  "body exceeds " + std::to_string(options_.max_body) + " bytes");
  }
  const std::string_view target = request.target;
  if (request.method != "POST" || target.substr(0, kWebhookPathPrefix.size()) != kWebhookPathPrefix) {
    return Refuse(WebhookOutcome::kNotFound, Reason::kNotFound, "webhooks are POST /webhooks/{plugin}/{route}");
  }
  const auto it = routes_.find(std::string(target.substr(kWebhookPathPrefix.size())));
  if (it == routes_.end()) {
    return Refuse(WebhookOutcome::kNotFound, Reason::kNotFound, "no webhook route is configured for this path");
  }
  const PipelineRoute& route = it->second;

  // 2. Authentication: nothing is stored for a request that fails here.
  auto verified = route.verifier.Verify(request.headers, request.body);
  if (!verified.ok()) {
    const Status& s = verified.error();
    return Refuse(WebhookOutcome::kAuthFailed, s.reason(), s.message());
  }

  // 3. Business key, event key and fingerprint.
  std::string business;
  if (route.business_key) {
    auto bv = ExtractBusinessKey(request.body, *route.business_key);
    if (!bv.ok()) return Refuse(WebhookOutcome::kKeyMissing, bv.error().reason(), bv.error().message());
    business = std::move(bv).value();
  }
  const EventKey ek = DeriveEventKey(route.level, route.plugin, route.route, verified->id, business, request.body);

  // 4. One atomic claim.
  ClaimMeta meta{route.plugin, route.route, route.level, verified->id, {}};
  if (auto x = request.headers.Get(kXIdempotencyKeyHeader)) {
    meta.x_idempotency_key = std::string(x->substr(0, kMaxRecordedXIdempotencyKey));  // recorded, never keyed on
  }
  auto claim = store_.Claim(ek.key, ek.fingerprint, meta, options_.lease.count());
  if (!claim.ok()) {
    return Refuse(WebhookOutcome::kStoreUnavailable, Reason::kStoreUnavailable, "the idempotency store is unavailable",
                  /*retry_after_s=*/1);
  }
  switch (claim->kind) {
    case ClaimOutcome::Kind::kFingerprintMismatch:
      return Refuse(WebhookOutcome::kFingerprintMismatch, Reason::kFingerprintMismatch,
                    "this idempotency key was first used with another request; the stored record is unchanged");
    case ClaimOutcome::Kind::kCompleted: {
      HttpResponse r = Answer(claim->record.status, claim->record.content_type, claim->record.body);
      r.headers.Set(kReplayedHeader, "true");
      return Handled{std::move(r), WebhookOutcome::kReplayed};
    }
    case ClaimOutcome::Kind::kInProgress:
      return Refuse(WebhookOutcome::kInProgress, Reason::kInProgress, "this event is being processed; retry later",
                    CeilSeconds(claim->retry_after_ms));
    case ClaimOutcome::Kind::kClaimed:
      break;
  }
  return Dispatch(route, request, ek.key, claim->fencing_token, verified->id);
}

WebhookPipeline::Handled WebhookPipeline::Dispatch(const PipelineRoute& route, const HttpRequest& request,
                                                   const std::string& key, int64_t token,
                                                   const std::string& webhook_id) const {
  DispatchContext ctx;
  ctx.plugin = route.plugin;
  ctx.route = route.route;
  ctx.level = route.level;
  ctx.event_key = key;
  ctx.fencing_token = token;
  ctx.webhook_id = webhook_id;
  ctx.request = &request;
  ctx.renew_lease = [this, &key, token]() {
    auto r = store_.Renew(key, token, options_.lease.count());
    return r.ok() && *r == FencedWrite::kApplied;
  };
  const PluginOutcome out = dispatcher_(ctx);

  const auto release = [&]() { (void)store_.Release(key, token); };  // best effort: the lease expires anyway
  switch (out.kind) {
    case PluginOutcome::Kind::kFailed:
      release();
      return Refuse(WebhookOutcome::kPluginFailed, Reason::kPluginFailed, "the plugin failed; the event may be retried");
    case PluginOutcome::Kind::kTimedOut:
      // Not released: the hung plugin may still run; its lease expires and is never renewed.
      return Refuse(WebhookOutcome::kPluginTimeout, Reason::kPluginTimeout, "the plugin timed out; retry later",
                    CeilSeconds(options_.lease.count()));
    case PluginOutcome::Kind::kDeadLettered:
    case PluginOutcome::Kind::kAnswered:
      break;
  }

  const bool dead = out.kind == PluginOutcome::Kind::kDeadLettered;
  int status = out.status;
  std::string content_type = out.content_type;
  std::string body = out.body;
  if (dead) {
    // Never the plugin's answer: it may have been built from a reply it should not have had.
    status = 202;
    content_type = "application/json";
    body = DeadLetteredBody(out.dead_letter_class);
  } else if (route.level == 3) {
    status = 202;
    content_type = "application/json";
    body = std::string(kHeldBody);
  }
  if (!IsStorableStatus(status)) {
    release();
    return Handled{Answer(status, content_type, body), WebhookOutcome::kNotStored};
  }
  auto done = store_.Complete(key, token, status, content_type, body);
  if (!done.ok()) {
    // Not durable: never answer 2xx for an outcome the store did not keep.
    return Refuse(WebhookOutcome::kStoreUnavailable, Reason::kStoreUnavailable,
                  "the answer could not be stored; retry later", /*retry_after_s=*/1);
  }
  if (*done == FencedWrite::kFenced) {
    return Refuse(WebhookOutcome::kFenced, Reason::kInProgress,
                  "another worker took this event over; retry to get its answer", /*retry_after_s=*/1);
  }
  return Handled{Answer(status, content_type, body), dead ? WebhookOutcome::kDeadLettered : WebhookOutcome::kProcessed};
}

}  // namespace clawguard::host
