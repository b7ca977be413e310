// webhook_pipeline.cpp — the gate: size limits, routing, authentication, rate limit, key breaker,
// the in-memory replay, and the hand-over of an admitted request (Finish, FinishAsync) with its
// metrics. Stage 6 onwards is in delivery_outcome.cpp, DLQ replays in redeliver.cpp.
#include "host/intake/webhook_pipeline.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>

#include "clawguard/limits.h"
#include "host/erp/idempotency_key.h"
#include "host/http/problem.h"
#include "host/intake/business_key.h"
#include "host/observe/host_metrics.h"

namespace clawguard::host {
namespace {

bool IsSignatureFailure(Reason r) {
  return r == Reason::kSignatureInvalid || r == Reason::kTimestampOutOfTolerance ||
         r == Reason::kHeaderConflict;
}

}  // namespace

WebhookPipeline::Handled WebhookPipeline::Refuse(WebhookOutcome outcome, Reason reason,
                                                 std::string_view detail,
                                                 std::optional<int64_t> retry_after_s) {
  return Handled{ProblemResponse(reason, detail, retry_after_s), outcome};
}

std::string DeadLetteredBody(std::string_view dlq_class) {
  // dlq_class is one of the fixed DLQ class names (no quoting needed).
  return R"({"status":"dead_lettered","class":")" + std::string(dlq_class) +
         R"(","detail":"the event was dead-lettered for operator review; it will not be processed again"})";
}

Result<WebhookVerifier> MakeVerifier(const RouteSecrets& secrets,
                                     std::chrono::milliseconds tolerance, const Clock& clock) {
  std::optional<SecretBytes> previous;
  if (secrets.previous) previous = secrets.previous->Clone();
  return WebhookVerifier::Create(secrets.current.Clone(), std::move(previous),
                                 secrets.previous_until, tolerance, clock);
}

bool WebhookPipeline::IsStorableStatus(int status) {
  if (status >= 200 && status <= 299) return true;
  if (status >= 400 && status <= 499)
    return status != 408 && status != 409 && status != 425 && status != 429;
  return false;
}

Result<std::unique_ptr<WebhookPipeline>> WebhookPipeline::Create(PipelineOptions options,
                                                                 std::vector<PipelineRoute> routes,
                                                                 IdempotencyStore& store,
                                                                 Dispatcher dispatcher,
                                                                 PipelineGuards guards) {
  if (options.max_body == 0 || options.max_headers == 0 || options.lease.count() <= 0) {
    return Status(Reason::kConfigInvalid,
                  "webhook pipeline: max_body, max_headers and lease must be > 0");
  }
  if (!dispatcher) return Status(Reason::kConfigInvalid, "webhook pipeline: no dispatcher");
  std::map<std::string, PipelineRoute, std::less<>> table;
  for (PipelineRoute& r : routes) {
    const std::string name = r.plugin + "/" + r.route;
    if (r.plugin.empty() || r.route.empty() || r.plugin.find('/') != std::string::npos ||
        r.route.find('/') != std::string::npos) {
      return Status(Reason::kConfigInvalid,
                    "webhook route '" + name + "': plugin and route must be non-empty, no '/'");
    }
    if (r.level < 1 || r.level > 3) {
      return Status(Reason::kConfigInvalid,
                    "webhook route '" + name + "': level must be 1, 2 or 3");
    }
    if (r.level == 1 && !r.business_key) {
      return Status(Reason::kConfigInvalid,
                    "webhook route '" + name + "': level 1 needs a business_key");
    }
    if (!table.emplace(name, std::move(r)).second) {
      return Status(Reason::kConfigInvalid, "webhook route '" + name + "' is listed twice");
    }
  }
  return std::unique_ptr<WebhookPipeline>(new WebhookPipeline(
      options, std::move(table), store, std::move(dispatcher), std::move(guards)));
}

WebhookPipeline::Handled WebhookPipeline::HandleDetailed(const HttpRequest& request) const {
  std::variant<Handled, Admitted> front = Front(request);
  if (Handled* h = std::get_if<Handled>(&front)) return std::move(*h);
  return Finish(request, std::get<Admitted>(front));
}

std::variant<WebhookPipeline::Handled, WebhookPipeline::Admitted> WebhookPipeline::Front(
    const HttpRequest& request) const {
  const auto start = std::chrono::steady_clock::now();
  const PipelineRoute* route = nullptr;
  std::variant<Handled, Admitted> gated = Gate(request, route);
  if (Handled* h = std::get_if<Handled>(&gated)) {
    Count(route, *h, start);
  } else {
    std::get<Admitted>(gated).start = start;
  }
  return gated;
}

WebhookPipeline::Handled WebhookPipeline::Finish(const HttpRequest& request,
                                                 const Admitted& admitted) const {
  const PipelineRoute& route = *admitted.route;
  Handled h = ClaimAndDispatch(
      Delivery{route, request, admitted.webhook_id, admitted.key, admitted.fingerprint});
  Count(&route, h, admitted.start);
  return h;
}

void WebhookPipeline::AnswerLate(const Responder& respond, bool started) const {
  if (guards_.audit) {
    guards_.audit(
        nlohmann::json{{"event", "delivery_answer_deadline"}, {"started", started}}.dump());
  }
  respond.Answer(ProblemResponse(Reason::kPluginTimeout,
                                 started ? "this delivery is still running after handler_timeout "
                                           "(its carrier thread is held by a plugin that "
                                           "does not return); retry later"
                                         : "this delivery could not start within handler_timeout "
                                           "(its carrier thread is held by a plugin that "
                                           "does not return); nothing was stored; retry later",
                                 /*retry_after_s=*/1));
}

void WebhookPipeline::FinishAsync(HttpRequest request, Admitted admitted, Responder respond) const {
  std::optional<AnswerDeadlines::Ticket> ticket;
  if (deadlines_ != nullptr)
    ticket = deadlines_->Arm(admitted.start + options_.answer_deadline, respond);
  auto task = [this, request = std::move(request), admitted = std::move(admitted), respond,
               ticket](const std::shared_ptr<DeliveryRunner::Slot>& slot) {
    // Cancelled by the safety net before it started: answered already, nothing claimed.
    if (ticket && !ticket->Start()) return;
    // Disarm before answering: once answered, the server may stop and the pipeline go.
    const auto disarm = [&] {
      if (ticket) deadlines_->Disarm(*ticket);
    };
    const PipelineRoute& route = *admitted.route;
    // Set on the watchdog's thread; read here after the dispatch returned, which it does only
    // after on_abandon has (DispatchContext), so the two are ordered.
    bool answered = false;
    const AnswerNow answer_now = [&](Handled h) {
      Count(&route, h, admitted.start);
      answered = true;
      slot->Release();  // this thread may stay in the plugin: later deliveries need not wait
      disarm();
      respond.Answer(std::move(h.response));
    };
    Handled h = ClaimAndDispatch(Delivery{route, request, admitted.webhook_id, admitted.key,
                                          admitted.fingerprint,
                                          /*from_platform=*/true, &answer_now});
    if (answered) return;
    Count(&route, h, admitted.start);
    disarm();
    respond.Answer(std::move(h.response));
  };
  try {
    runner_.Run(std::move(task));
  } catch (const std::exception&) {
    // No thread could be started (as before, when the plugin's thread could not be): nothing was
    // claimed; a 5xx with Retry-After, so the sender retries. Not the store's fault.
    if (ticket) deadlines_->Disarm(*ticket);
    respond.Answer(ProblemResponse(Reason::kInternal,
                                   "the host cannot take this delivery now; retry later",
                                   /*retry_after_s=*/1));
  }
}

std::optional<WebhookPipeline::Handled> WebhookPipeline::Answered(ClaimOutcome& claim) const {
  switch (claim.kind) {
    case ClaimOutcome::Kind::kFingerprintMismatch:
      ObserveRedelivery(guards_, claim.record.created_ms);
      return Refuse(WebhookOutcome::kFingerprintMismatch, Reason::kFingerprintMismatch,
                    "this idempotency key was first used with another request; the stored record "
                    "is unchanged");
    case ClaimOutcome::Kind::kCompleted: {
      ObserveRedelivery(guards_, claim.record.created_ms);
      HttpResponse r;
      r.status = claim.record.status;
      if (!claim.record.content_type.empty())
        r.headers.Add("Content-Type", std::move(claim.record.content_type));
      r.headers.Add(std::string(kReplayedHeader), "true");
      r.body = std::move(claim.record.body);
      return Handled{std::move(r), WebhookOutcome::kReplayed};
    }
    case ClaimOutcome::Kind::kInProgress:
    case ClaimOutcome::Kind::kTombstone:
    case ClaimOutcome::Kind::kClaimed: break;
  }
  return std::nullopt;
}

std::unordered_map<const PipelineRoute*, WebhookPipeline::RouteSeries>
WebhookPipeline::ResolveSeries(const std::map<std::string, PipelineRoute, std::less<>>& routes,
                               const PipelineGuards& guards) {
  std::unordered_map<const PipelineRoute*, RouteSeries> out;
  if (guards.metrics == nullptr) return out;
  for (const auto& [name, route] : routes) {
    RouteSeries& s = out[&route];
    for (size_t i = 0; i < s.requests.size(); ++i) {
      s.requests[i] = guards.metrics->WebhookCounter(
          route.plugin, route.route, WebhookOutcomeName(static_cast<WebhookOutcome>(i)));
    }
    s.duplicates = guards.metrics->DuplicateCounter(route.plugin, route.route);
    s.duration = guards.metrics->ProcessingHistogram(route.plugin, route.route);
  }
  return out;
}

void WebhookPipeline::Count(const PipelineRoute* route, const Handled& h,
                            std::chrono::steady_clock::time_point start) const {
  if (guards_.metrics == nullptr) return;
  const bool duplicate =
      h.outcome == WebhookOutcome::kReplayed || h.outcome == WebhookOutcome::kInProgress;
  if (route == nullptr) {
    guards_.metrics->RecordWebhook(kUnknownLabel, kUnknownLabel, WebhookOutcomeName(h.outcome));
    if (duplicate) guards_.metrics->RecordDuplicate(kUnknownLabel, kUnknownLabel);
    return;
  }
  const RouteSeries& s = series_.at(route);
  s.requests[static_cast<size_t>(h.outcome)].Inc();
  if (duplicate) s.duplicates.Inc();
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  s.duration.Observe(took.count());
}

std::variant<WebhookPipeline::Handled, WebhookPipeline::Admitted> WebhookPipeline::Gate(
    const HttpRequest& request, const PipelineRoute*& route_out) const {
  // Routing first only to label the metrics; the limits are still the first refusal.
  const std::string_view target = request.target;
  const bool webhook_path =
      request.method == "POST" && target.substr(0, kWebhookPathPrefix.size()) == kWebhookPathPrefix;
  const auto it =
      webhook_path ? routes_.find(target.substr(kWebhookPathPrefix.size())) : routes_.end();
  if (it != routes_.end()) route_out = &it->second;

  // 1. Limits, then routing (no echo of the unknown names).
  if (request.headers.ByteSize() > options_.max_headers) {
    return Refuse(WebhookOutcome::kTooLarge, Reason::kRequestTooLarge,
                  "headers exceed " + std::to_string(options_.max_headers) + " bytes");
  }
  if (request.body.size() > options_.max_body) {
    return Refuse(WebhookOutcome::kTooLarge, Reason::kRequestTooLarge,
                  "body exceeds " + std::to_string(options_.max_body) + " bytes");
  }
  if (!webhook_path) {
    return Refuse(WebhookOutcome::kNotFound, Reason::kNotFound,
                  "webhooks are POST /webhooks/{plugin}/{route}");
  }
  if (it == routes_.end()) {
    return Refuse(WebhookOutcome::kNotFound, Reason::kNotFound,
                  "no webhook route is configured for this path");
  }
  const PipelineRoute& route = it->second;

  // 2. Authentication: nothing is stored for a request that fails here.
  auto verified = route.verifier.Verify(request.headers, request.body);
  if (!verified.ok()) {
    const Status& s = verified.error();
    if (guards_.metrics != nullptr && IsSignatureFailure(s.reason()))
      guards_.metrics->RecordSignatureFailure(s.reason());
    return Refuse(WebhookOutcome::kAuthFailed, s.reason(), s.message());
  }

  // 3. Per-plugin rate limit (after authentication, so forged requests cannot drain a bucket).
  if (guards_.limiter != nullptr) {
    const RateLimiter::Decision d = guards_.limiter->Acquire(route.plugin);
    if (!d.allowed) {
      return Refuse(WebhookOutcome::kRateLimited, Reason::kRateLimited,
                    "this plugin's webhook rate limit is reached; retry later", d.retry_after_s);
    }
  }

  // 4. Business key, event key and fingerprint.
  std::string business;
  if (route.business_key) {
    auto bv = ExtractBusinessKey(request.body, *route.business_key);
    if (!bv.ok())
      return Refuse(WebhookOutcome::kKeyMissing, bv.error().reason(), bv.error().message());
    business = std::move(bv).value();
  }
  const EventKey ek =
      DeriveEventKey(route.level, route.plugin, route.route, verified->id, business, request.body);

  // 5. Per-key breaker: an event that keeps failing is not run again until its cool-down ends.
  if (guards_.key_breaker != nullptr) {
    const KeyBreaker::Admission a = guards_.key_breaker->Check(ek.key);
    if (!a.allowed) {
      return Refuse(WebhookOutcome::kBreakerOpen, Reason::kBreakerOpen,
                    "this event failed repeatedly and is paused; it was dead-lettered for "
                    "operators, retry later",
                    RetryAfterSeconds(a.retry_after_ms));
    }
  }
  // 6a. A completed record held in memory answers now, without a store round trip.
  if (std::optional<ClaimOutcome> known = store_.ClaimFromMemory(ek.key, ek.fingerprint)) {
    if (std::optional<Handled> h = Answered(*known)) return *std::move(h);
  }
  return Admitted{&route, verified->id, ek.key, ek.fingerprint, {}};
}

}  // namespace clawguard::host
