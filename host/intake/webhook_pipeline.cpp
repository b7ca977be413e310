// webhook_pipeline.cpp — size limits, routing, authentication, rate limit, key breaker, idempotency
// gate, outcome storage and the DLQ entries of the outcomes; Redeliver (DLQ replays).
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

constexpr std::string_view kHeldBody = R"({"status":"held","detail":"ERP calls are held until an operator confirms them"})";
constexpr size_t kMaxRecordedXIdempotencyKey = 256;

using Handled = WebhookPipeline::Handled;

Handled Refuse(WebhookOutcome outcome, Reason reason, std::string_view detail,
               std::optional<int64_t> retry_after_s = std::nullopt) {
  return Handled{ProblemResponse(reason, detail, retry_after_s), outcome};
}

// kMaxErpPendingRetryAfterS caps erp_pending's Retry-After (a paused capability is due only
// when an operator resumes it: platforms still get an answer to come back to).
constexpr int64_t kMaxErpPendingRetryAfterS = 300;

int64_t CeilSeconds(int64_t ms) { return std::max<int64_t>(1, (ms + 999) / 1000); }

bool IsSignatureFailure(Reason r) {
  return r == Reason::kSignatureInvalid || r == Reason::kTimestampOutOfTolerance || r == Reason::kHeaderConflict;
}

std::string PathOf(const PipelineRoute& route) {
  return std::string(kWebhookPathPrefix) + route.plugin + "/" + route.route;
}

HttpResponse Answer(int status, const std::string& content_type, const std::string& body) {
  HttpResponse r;
  r.status = status;
  if (!content_type.empty()) r.headers.Set("Content-Type", content_type);
  r.body = body;
  return r;
}

}  // namespace

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
                                                                 IdempotencyStore& store, Dispatcher dispatcher,
                                                                 PipelineGuards guards) {
  if (options.max_body == 0 || options.max_headers == 0 || options.lease.count() <= 0) {
    return Status(Reason::kConfigInvalid, "webhook pipeline: max_body, max_headers and lease must be > 0");
  }
  if (!dispatcher) return Status(Reason::kConfigInvalid, "webhook pipeline: no dispatcher");
  std::map<std::string, PipelineRoute, std::less<>> table;
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
      new WebhookPipeline(options, std::move(table), store, std::move(dispatcher), std::move(guards)));
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

WebhookPipeline::Handled WebhookPipeline::Finish(const HttpRequest& request, const Admitted& admitted) const {
  const PipelineRoute& route = *admitted.route;
  Handled h = ClaimAndDispatch(Delivery{route, request, admitted.webhook_id, admitted.key, admitted.fingerprint});
  Count(&route, h, admitted.start);
  return h;
}

void WebhookPipeline::AnswerLate(const Responder& respond, bool started) const {
  if (guards_.audit) {
    guards_.audit(nlohmann::json{{"event", "delivery_answer_deadline"}, {"started", started}}.dump());
  }
  respond.Answer(ProblemResponse(
      Reason::kPluginTimeout,
      started ? "this delivery is still running after handler_timeout (its carrier thread is held by a plugin that "
                "does not return); retry later"
              : "this delivery could not start within handler_timeout (its carrier thread is held by a plugin that "
                "does not return); nothing was stored; retry later",
      /*retry_after_s=*/1));
}

void WebhookPipeline::FinishAsync(HttpRequest request, Admitted admitted, Responder respond) const {
  std::optional<AnswerDeadlines::Ticket> ticket;
  if (deadlines_ != nullptr) ticket = deadlines_->Arm(admitted.start + options_.answer_deadline, respond);
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
    Handled h = ClaimAndDispatch(Delivery{route, request, admitted.webhook_id, admitted.key, admitted.fingerprint,
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
    respond.Answer(ProblemResponse(Reason::kInternal, "the host cannot take this delivery now; retry later",
                                   /*retry_after_s=*/1));
  }
}

std::optional<WebhookPipeline::Handled> WebhookPipeline::Answered(ClaimOutcome& claim) const {
  switch (claim.kind) {
    case ClaimOutcome::Kind::kFingerprintMismatch:
      ObserveRedelivery(guards_, claim.record.created_ms);
      return Refuse(WebhookOutcome::kFingerprintMismatch, Reason::kFingerprintMismatch,
                    "this idempotency key was first used with another request; the stored record is unchanged");
    case ClaimOutcome::Kind::kCompleted: {
      ObserveRedelivery(guards_, claim.record.created_ms);
      HttpResponse r;
      r.status = claim.record.status;
      if (!claim.record.content_type.empty()) r.headers.Add("Content-Type", std::move(claim.record.content_type));
      r.headers.Add(std::string(kReplayedHeader), "true");
      r.body = std::move(claim.record.body);
      return Handled{std::move(r), WebhookOutcome::kReplayed};
    }
    case ClaimOutcome::Kind::kInProgress:
    case ClaimOutcome::Kind::kTombstone:
    case ClaimOutcome::Kind::kClaimed:
      break;
  }
  return std::nullopt;
}

std::unordered_map<const PipelineRoute*, WebhookPipeline::RouteSeries> WebhookPipeline::ResolveSeries(
    const std::map<std::string, PipelineRoute, std::less<>>& routes, const PipelineGuards& guards) {
  std::unordered_map<const PipelineRoute*, RouteSeries> out;
  if (guards.metrics == nullptr) return out;
  for (const auto& [name, route] : routes) {
    RouteSeries& s = out[&route];
    for (size_t i = 0; i < s.requests.size(); ++i) {
      s.requests[i] =
          guards.metrics->WebhookCounter(route.plugin, route.route, WebhookOutcomeName(static_cast<WebhookOutcome>(i)));
    }
    s.duplicates = guards.metrics->DuplicateCounter(route.plugin, route.route);
    s.duration = guards.metrics->ProcessingHistogram(route.plugin, route.route);
  }
  return out;
}

void WebhookPipeline::Count(const PipelineRoute* route, const Handled& h,
                            std::chrono::steady_clock::time_point start) const {
  if (guards_.metrics == nullptr) return;
  const bool duplicate = h.outcome == WebhookOutcome::kReplayed || h.outcome == WebhookOutcome::kInProgress;
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
    return Refuse(WebhookOutcome::kNotFound, Reason::kNotFound, "webhooks are POST /webhooks/{plugin}/{route}");
  }
  if (it == routes_.end()) {
    return Refuse(WebhookOutcome::kNotFound, Reason::kNotFound, "no webhook route is configured for this path");
  }
  const PipelineRoute& route = it->second;

  // 2. Authentication: nothing is stored for a request that fails here.
  auto verified = route.verifier.Verify(request.headers, request.body);
  if (!verified.ok()) {
    const Status& s = verified.error();
    if (guards_.metrics != nullptr && IsSignatureFailure(s.reason())) guards_.metrics->RecordSignatureFailure(s.reason());
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
    if (!bv.ok()) return Refuse(WebhookOutcome::kKeyMissing, bv.error().reason(), bv.error().message());
    business = std::move(bv).value();
  }
  const EventKey ek = DeriveEventKey(route.level, route.plugin, route.route, verified->id, business, request.body);

  // 5. Per-key breaker: an event that keeps failing is not run again until its cool-down ends.
  if (guards_.key_breaker != nullptr) {
    const KeyBreaker::Admission a = guards_.key_breaker->Check(ek.key);
    if (!a.allowed) {
      return Refuse(WebhookOutcome::kBreakerOpen, Reason::kBreakerOpen,
                    "this event failed repeatedly and is paused; it was dead-lettered for operators, retry later",
                    RetryAfterSeconds(a.retry_after_ms));
    }
  }
  // 6a. A completed record held in memory answers now, without a store round trip.
  if (std::optional<ClaimOutcome> known = store_.ClaimFromMemory(ek.key, ek.fingerprint)) {
    if (std::optional<Handled> h = Answered(*known)) return *std::move(h);
  }
  return Admitted{&route, verified->id, ek.key, ek.fingerprint, {}};
}

WebhookPipeline::Handled WebhookPipeline::ClaimAndDispatch(Delivery d) const {
  const PipelineRoute& route = d.route;
  const HttpRequest& request = d.request;
  // 6. One atomic claim.
  ClaimMeta meta;
  meta.plugin = route.plugin;
  meta.route = route.route;
  meta.level = route.level;
  meta.webhook_id = d.webhook_id;
  if (auto x = request.headers.Get(kXIdempotencyKeyHeader)) {
    meta.x_idempotency_key = std::string(x->substr(0, kMaxRecordedXIdempotencyKey));  // recorded, never keyed on
  }
  // The authenticated request, kept by the store until Complete so a reconciler can re-run a
  // stuck event (the store keeps it only within the DLQ's bounds).
  if (auto ct = request.headers.Get("Content-Type")) meta.request_content_type = std::string(*ct);
  meta.request_body = request.body;
  auto claim = store_.Claim(d.key, d.fingerprint, meta, options_.lease.count());
  if (!claim.ok()) {
    return Refuse(WebhookOutcome::kStoreUnavailable, Reason::kStoreUnavailable, "the idempotency store is unavailable",
                  /*retry_after_s=*/1);
  }
  const GuardEvent ev{route.plugin, route.route, d.key};
  if (std::optional<Handled> h = Answered(*claim)) return *std::move(h);
  switch (claim->kind) {
    case ClaimOutcome::Kind::kFingerprintMismatch:
    case ClaimOutcome::Kind::kCompleted:
      break;  // answered above
    case ClaimOutcome::Kind::kInProgress:
      ObserveRedelivery(guards_, claim->record.created_ms);
      return Refuse(WebhookOutcome::kInProgress, Reason::kInProgress, "this event is being processed; retry later",
                    InProgressRetryAfterSeconds(claim->retry_after_ms));
    case ClaimOutcome::Kind::kTombstone:
      // The record's time, when the engine keeps it with the tombstone, is the gap that beat the
      // retention: exactly what the advisor must see.
      ObserveRedelivery(guards_, claim->record.created_ms);
      if (d.from_platform) {  // a redelivery comes from the DLQ already
        AddDeadLetter(guards_, DlqClass::kManualReview, ev,
                      "a delivery arrived after this event's idempotency record expired (only its tombstone is "
                      "left); it was not run. Check whether the event was applied, then drop the entry, or run "
                      "`clawguard idem reset` and replay it",
                      StoredRequest(d.webhook_id, request));
      }
      return Refuse(WebhookOutcome::kExpiredKeySeen, Reason::kExpiredKeySeen,
                    "this event was completed and its record expired; it goes to manual review");
    case ClaimOutcome::Kind::kClaimed:
      break;
  }
  if (claim->taken_over && guards_.metrics != nullptr) guards_.metrics->RecordLeaseTakeover();
  d.token = claim->fencing_token;
  return Dispatch(d);
}

WebhookPipeline::Handled WebhookPipeline::GaveUp(const Delivery& d, const PluginOutcome& out) const {
  const GuardEvent ev{d.route.plugin, d.route.route, d.key};
  const auto failure = [&](std::string_view why) {
    if (d.from_platform) RecordKeyFailure(guards_, ev, d.request, d.webhook_id, why);
  };
  if (out.kind == PluginOutcome::Kind::kTimedOut) {
    // Not released: the hung plugin may still run; its lease expires and is never renewed.
    failure("plugin timed out: " + out.detail);
    return Refuse(WebhookOutcome::kPluginTimeout, Reason::kPluginTimeout, "the plugin timed out; retry later",
                  CeilSeconds(options_.lease.count()));
  }
  (void)store_.Release(d.key, d.token);  // best effort: the lease expires anyway
  if (out.erp_pending_in_ms > 0) {
    // The plugin stopped, as plugin.h asks, on an ERP call the outbox owns: the event is not
    // poison (the per-key breaker does not count it) and is answered from the row once the host
    // has finished the call. Until then a retry meets the same row.
    return Refuse(WebhookOutcome::kErpPending, Reason::kErpPending,
                  "an ERP call of this event is in flight or queued; the host finishes it; retry later",
                  std::min<int64_t>(CeilSeconds(out.erp_pending_in_ms), kMaxErpPendingRetryAfterS));
  }
  failure("plugin failed: " + out.detail);
  return Refuse(WebhookOutcome::kPluginFailed, Reason::kPluginFailed, "the plugin failed; the event may be retried");
}

WebhookPipeline::Handled WebhookPipeline::Dispatch(const Delivery& d) const {
  const PipelineRoute& route = d.route;
  const std::string& key = d.key;
  const int64_t token = d.token;
  DispatchContext ctx;
  ctx.plugin = route.plugin;
  ctx.route = route.route;
  ctx.level = route.level;
  ctx.event_key = key;
  ctx.fencing_token = token;
  ctx.webhook_id = d.webhook_id;
  ctx.request = &d.request;
  ctx.renew_lease = [this, &key, token]() {
    auto r = store_.Renew(key, token, options_.lease.count());
    return r.ok() && *r == FencedWrite::kApplied;
  };
  if (d.answer_now != nullptr) {
    ctx.on_abandon = [&](const PluginOutcome& gave_up) { (*d.answer_now)(GaveUp(d, gave_up)); };
  }
  PluginOutcome out = dispatcher_(ctx);
  // Given up on and answered by on_abandon; this thread is back from the plugin, late.
  if (out.abandoned) return Handled{HttpResponse{}, WebhookOutcome::kPluginTimeout};
  // The answer rule again (the dispatcher applies it at respond()): never store what the HTTP
  // layer cannot serve, first or replayed.
  if (out.kind == PluginOutcome::Kind::kAnswered) {
    if (std::optional<std::string> problem = AnswerProblem(out.status, out.body.size())) {
      out = PluginOutcome::Failed("the plugin's answer was refused: " + *problem);
    }
  }

  const GuardEvent ev{route.plugin, route.route, key};
  const auto failure = [&](std::string_view why) {
    if (d.from_platform) RecordKeyFailure(guards_, ev, d.request, d.webhook_id, why);
  };
  const auto release = [&]() { (void)store_.Release(key, token); };  // best effort: the lease expires anyway
  switch (out.kind) {
    case PluginOutcome::Kind::kFailed:
    case PluginOutcome::Kind::kTimedOut:
      return GaveUp(d, out);
    case PluginOutcome::Kind::kDeadLettered:
      // Written whether or not the 202 below can be stored: the outbox row is dead already.
      AddDeadLetter(guards_, DlqClassFromName(out.dead_letter_class).value_or(DlqClass::kMismatch), ev,
                    out.detail + "; the host cannot replay this event: repair the plugin, then `clawguard idem "
                                 "reset` the key so the next delivery runs it again",
                    /*request=*/std::nullopt);
      break;
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
    failure("plugin answered " + std::to_string(status) + ", which is not stored");
    return Handled{Answer(status, content_type, body), WebhookOutcome::kNotStored};
  }
  auto done = store_.Complete(key, token, status, content_type, body);
  if (!done.ok()) {
    // Not durable: never answer 2xx for an outcome the store did not keep. Not the plugin's fault:
    // not a breaker failure.
    return Refuse(WebhookOutcome::kStoreUnavailable, Reason::kStoreUnavailable,
                  "the answer could not be stored; retry later", /*retry_after_s=*/1);
  }
  if (*done == FencedWrite::kFenced) {
    return Refuse(WebhookOutcome::kFenced, Reason::kInProgress,
                  "another worker took this event over; retry to get its answer", /*retry_after_s=*/1);
  }
  if (d.from_platform) RecordKeySuccess(guards_, key);
  return Handled{Answer(status, content_type, body), dead ? WebhookOutcome::kDeadLettered : WebhookOutcome::kProcessed};
}

RedeliverResult WebhookPipeline::Redeliver(const std::string& plugin, const std::string& route_name,
                                           const std::string& event_key, const DlqRequest& stored) const {
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
    if (!bv.ok()) return {false, "the stored request has no usable business key: " + bv.error().message()};
    business = std::move(bv).value();
  }
  const EventKey ek = DeriveEventKey(route.level, route.plugin, route.route, stored.webhook_id, business, request.body);
  if (ek.key != event_key) {
    return {false, "integrity check failed: the stored request derives event key " + ek.key + ", expected " +
                       event_key + "; not replayed"};
  }
  const Handled h =
      ClaimAndDispatch(Delivery{route, request, stored.webhook_id, ek.key, ek.fingerprint, /*from_platform=*/false});
  Count(&route, h, start);
  switch (h.outcome) {
    case WebhookOutcome::kReplayed:
      return {true, "already completed (status " + std::to_string(h.response.status) + "); not run again"};
    case WebhookOutcome::kProcessed:
      return {true, "replayed: the plugin answered " + std::to_string(h.response.status) + " and it was stored"};
    case WebhookOutcome::kDeadLettered:
      return {true, "replayed, but the event was dead-lettered again (outbox mismatch); see its mismatch entry"};
    case WebhookOutcome::kInProgress:
      return {false, "in progress elsewhere: another delivery holds the lease"};
    case WebhookOutcome::kFingerprintMismatch:
      return {false, "fingerprint mismatch: the key's record was made by another request"};
    case WebhookOutcome::kExpiredKeySeen:
      return {false, "tombstoned: the key's record expired after retention; use `clawguard idem reset` first"};
    case WebhookOutcome::kStoreUnavailable:
      return {false, "the idempotency store is unavailable"};
    case WebhookOutcome::kNotStored:
      return {false, "the plugin answered " + std::to_string(h.response.status) + ", which is not stored"};
    case WebhookOutcome::kPluginFailed:
      return {false, "the plugin failed"};
    case WebhookOutcome::kPluginTimeout:
      return {false, "the plugin timed out"};
    case WebhookOutcome::kErpPending:
      return {false, "an ERP call of the event is still in flight or queued; the host finishes it"};
    case WebhookOutcome::kFenced:
      return {false, "another worker took the event over while the plugin ran"};
    case WebhookOutcome::kTooLarge:
    case WebhookOutcome::kNotFound:
    case WebhookOutcome::kAuthFailed:
    case WebhookOutcome::kKeyMissing:
    case WebhookOutcome::kRateLimited:
    case WebhookOutcome::kBreakerOpen:
      break;  // stages a redelivery skips
  }
  return {false, "unexpected outcome " + std::string(WebhookOutcomeName(h.outcome))};
}

}  // namespace clawguard::host
