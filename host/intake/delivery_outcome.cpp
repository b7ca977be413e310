// delivery_outcome.cpp — stage 6 onwards of WebhookPipeline: the claim, the dispatch, and the
// outcome stored and answered per the status table (webhook_pipeline.h), with the key breaker's
// bookkeeping and the DLQ entries of the outcomes.
#include <algorithm>
#include <optional>

#include "host/http/problem.h"
#include "host/intake/webhook_pipeline.h"

namespace clawguard::host {
namespace {

constexpr std::string_view kHeldBody =
    R"({"status":"held","detail":"ERP calls are held until an operator confirms them"})";
constexpr size_t kMaxRecordedXIdempotencyKey = 256;

// kMaxErpPendingRetryAfterS caps erp_pending's Retry-After (a paused capability is due only
// when an operator resumes it: platforms still get an answer to come back to).
constexpr int64_t kMaxErpPendingRetryAfterS = 300;

// kPluginUnavailableRetryAfterS: a plugin whose worker stopped is restarted after a backoff of
// at least 100 ms; a second is what platforms honour.
constexpr int64_t kPluginUnavailableRetryAfterS = 1;

int64_t CeilSeconds(int64_t ms) { return std::max<int64_t>(1, (ms + 999) / 1000); }

HttpResponse Answer(int status, const std::string& content_type, const std::string& body) {
  HttpResponse r;
  r.status = status;
  if (!content_type.empty()) r.headers.Set("Content-Type", content_type);
  r.body = body;
  return r;
}

}  // namespace

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
    meta.x_idempotency_key =
        std::string(x->substr(0, kMaxRecordedXIdempotencyKey));  // recorded, never keyed on
  }
  // The authenticated request, kept by the store until Complete so a reconciler can re-run a
  // stuck event (the store keeps it only within the DLQ's bounds).
  if (auto ct = request.headers.Get("Content-Type")) meta.request_content_type = std::string(*ct);
  meta.request_body = request.body;
  auto claim = store_.Claim(d.key, d.fingerprint, meta, options_.lease.count());
  if (!claim.ok()) {
    return Refuse(WebhookOutcome::kStoreUnavailable, Reason::kStoreUnavailable,
                  "the idempotency store is unavailable",
                  /*retry_after_s=*/1);
  }
  const GuardEvent ev{route.plugin, route.route, d.key};
  if (std::optional<Handled> h = Answered(*claim)) return *std::move(h);
  switch (claim->kind) {
    case ClaimOutcome::Kind::kFingerprintMismatch:
    case ClaimOutcome::Kind::kCompleted: break;  // answered above
    case ClaimOutcome::Kind::kInProgress:
      ObserveRedelivery(guards_, claim->record.created_ms);
      return Refuse(WebhookOutcome::kInProgress, Reason::kInProgress,
                    "this event is being processed; retry later",
                    InProgressRetryAfterSeconds(claim->retry_after_ms));
    case ClaimOutcome::Kind::kTombstone:
      // The record's time, when the engine keeps it with the tombstone, is the gap that beat the
      // retention: exactly what the advisor must see.
      ObserveRedelivery(guards_, claim->record.created_ms);
      if (d.from_platform) {  // a redelivery comes from the DLQ already
        AddDeadLetter(guards_, DlqClass::kManualReview, ev,
                      "a delivery arrived after this event's idempotency record expired (only its "
                      "tombstone is "
                      "left); it was not run. Check whether the event was applied, then drop the "
                      "entry, or run "
                      "`clawguard idem reset` and replay it",
                      StoredRequest(d.webhook_id, request));
      }
      return Refuse(WebhookOutcome::kExpiredKeySeen, Reason::kExpiredKeySeen,
                    "this event was completed and its record expired; it goes to manual review");
    case ClaimOutcome::Kind::kClaimed: break;
  }
  if (claim->taken_over && guards_.metrics != nullptr) guards_.metrics->RecordLeaseTakeover();
  d.token = claim->fencing_token;
  return Dispatch(d);
}

WebhookPipeline::Handled WebhookPipeline::GaveUp(const Delivery& d,
                                                 const PluginOutcome& out) const {
  const GuardEvent ev{d.route.plugin, d.route.route, d.key};
  const auto failure = [&](std::string_view why) {
    if (d.from_platform) RecordKeyFailure(guards_, ev, d.request, d.webhook_id, why);
  };
  if (out.kind == PluginOutcome::Kind::kUnavailable) {
    // The plugin does not run this delivery (its worker stopped): the lease is released so the
    // platform's retry runs it again at once, exactly once.
    (void)store_.Release(d.key, d.token);
    // Counted only when a worker ran it and died: an event that met a restarting worker (another
    // event's crash) is not poison, and three quick retries must not dead-letter it.
    if (!out.never_ran) failure("plugin unavailable: " + out.detail);
    return Refuse(WebhookOutcome::kPluginUnavailable, Reason::kPluginUnavailable,
                  "the plugin is unavailable; retry later", kPluginUnavailableRetryAfterS);
  }
  if (out.kind == PluginOutcome::Kind::kTimedOut && out.plugin_stopped) {
    (void)store_.Release(d.key, d.token);  // its worker was killed: nothing runs it any more
    failure("plugin timed out: " + out.detail);
    return Refuse(WebhookOutcome::kPluginTimeout, Reason::kPluginTimeout,
                  "the plugin timed out; retry later", kPluginUnavailableRetryAfterS);
  }
  if (out.kind == PluginOutcome::Kind::kTimedOut) {
    // Not released: the hung plugin may still run; its lease expires and is never renewed.
    failure("plugin timed out: " + out.detail);
    return Refuse(WebhookOutcome::kPluginTimeout, Reason::kPluginTimeout,
                  "the plugin timed out; retry later", CeilSeconds(options_.lease.count()));
  }
  (void)store_.Release(d.key, d.token);  // best effort: the lease expires anyway
  if (out.erp_pending_in_ms > 0) {
    // The plugin stopped, as plugin.h asks, on an ERP call the outbox owns: the event is not
    // poison (the per-key breaker does not count it) and is answered from the row once the host
    // has finished the call. Until then a retry meets the same row.
    return Refuse(
        WebhookOutcome::kErpPending, Reason::kErpPending,
        "an ERP call of this event is in flight or queued; the host finishes it; retry later",
        std::min<int64_t>(CeilSeconds(out.erp_pending_in_ms), kMaxErpPendingRetryAfterS));
  }
  failure("plugin failed: " + out.detail);
  return Refuse(WebhookOutcome::kPluginFailed, Reason::kPluginFailed,
                "the plugin failed; the event may be retried");
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
  const auto release = [&]() {
    (void)store_.Release(key, token);
  };  // best effort: the lease expires anyway
  switch (out.kind) {
    case PluginOutcome::Kind::kFailed:
    case PluginOutcome::Kind::kTimedOut:
    case PluginOutcome::Kind::kUnavailable: return GaveUp(d, out);
    case PluginOutcome::Kind::kDeadLettered:
      // Written whether or not the 202 below can be stored: the outbox row is dead already.
      AddDeadLetter(
          guards_, DlqClassFromName(out.dead_letter_class).value_or(DlqClass::kMismatch), ev,
          out.detail +
              "; the host cannot replay this event: repair the plugin, then `clawguard idem "
              "reset` the key so the next delivery runs it again",
          /*request=*/std::nullopt);
      break;
    case PluginOutcome::Kind::kAnswered: break;
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
                  "another worker took this event over; retry to get its answer",
                  /*retry_after_s=*/1);
  }
  if (d.from_platform) RecordKeySuccess(guards_, key);
  return Handled{Answer(status, content_type, body),
                 dead ? WebhookOutcome::kDeadLettered : WebhookOutcome::kProcessed};
}

}  // namespace clawguard::host
