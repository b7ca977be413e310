// dispatch_context.h — the contract between the webhook intake and whatever runs a claimed
// delivery: the delivery handed over (DispatchContext), what running it produced (PluginOutcome),
// and the function type the intake holds (Dispatcher). PluginDispatcher (plugin_dispatch.h) is the
// host's Dispatcher; tests pass their own.
#ifndef CLAWGUARD_HOST_DISPATCH_DISPATCH_CONTEXT_H_
#define CLAWGUARD_HOST_DISPATCH_DISPATCH_CONTEXT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "host/http/http_types.h"

namespace clawguard::host {

// PluginOutcome is what a dispatch produced.
struct PluginOutcome {
  enum class Kind {
    kAnswered,  // exactly one respond(): status, content type and body
    kFailed,    // non-zero return, no or two respond(): 500, retryable
    kTimedOut,  // exceeded handler_timeout: 503, lease left to expire
    // The event was dead-lettered while the plugin ran (an outbox mismatch: the plugin changed
    // its calls on a re-run). Whatever the plugin answered is dropped; the pipeline stores and
    // answers 202 with a dead_lettered body so the platform's retries stop (see Decisions).
    kDeadLettered,
    // The plugin cannot run it: its worker process stopped while it ran (a crash, a seccomp
    // kill, a protocol violation) or could not start, or the plugin is failed. 503
    // plugin_unavailable with Retry-After; the plugin is known not to run, so the lease is
    // released.
    kUnavailable,
  };
  Kind kind = Kind::kFailed;
  int status = 0;
  std::string content_type;
  std::string body;
  std::string detail;             // why it failed (audited; never a secret)
  std::string dead_letter_class;  // kDeadLettered: the DLQ class ("mismatch")
  // abandoned: the dispatcher gave up on the delivery while the plugin ran and handed this
  // outcome to DispatchContext::on_abandon, which answered it; the caller does nothing more.
  bool abandoned = false;
  // erp_pending_in_ms: kFailed right after an erp_call whose row the outbox still owns (in
  // flight, queued for the retry worker, or waiting for a pause or breaker): 503 erp_pending with
  // Retry-After until that row is due (GatewayOutcome::pending_in_ms); the per-key breaker does
  // not count it. 0: a plain failure.
  int64_t erp_pending_in_ms = 0;
  // plugin_stopped: the plugin is known not to run this delivery any more (its worker process
  // was killed at the timeout): a kTimedOut lease is released instead of left to expire.
  bool plugin_stopped = false;
  // never_ran (kUnavailable): no worker ran this delivery — it was restarting, the plugin is
  // failed, the host is stopping. Not a failure of the event: the per-key breaker does not count
  // it (a worker that died while running the delivery does count).
  bool never_ran = false;

  static PluginOutcome Answered(int status, std::string content_type, std::string body) {
    PluginOutcome o;
    o.kind = Kind::kAnswered;
    o.status = status;
    o.content_type = std::move(content_type);
    o.body = std::move(body);
    return o;
  }
  static PluginOutcome Failed(std::string detail) { return Of(Kind::kFailed, std::move(detail)); }
  static PluginOutcome TimedOut(std::string detail) {
    return Of(Kind::kTimedOut, std::move(detail));
  }
  static PluginOutcome Unavailable(std::string detail) {
    return Of(Kind::kUnavailable, std::move(detail));
  }
  static PluginOutcome DeadLettered(std::string dlq_class, std::string detail) {
    PluginOutcome o = Of(Kind::kDeadLettered, std::move(detail));
    o.dead_letter_class = std::move(dlq_class);
    return o;
  }

 private:
  static PluginOutcome Of(Kind kind, std::string detail) {
    PluginOutcome o;
    o.kind = kind;
    o.detail = std::move(detail);
    return o;
  }
};

// DispatchContext is one claimed delivery, valid during the dispatcher call.
struct DispatchContext {
  std::string_view plugin;
  std::string_view route;
  int level = 2;               // 3: ERP calls are held as intents
  std::string_view event_key;  // 64 lowercase hex (cg_request.idempotency_key)
  int64_t fencing_token = 0;   // carried by every outbox write of this delivery
  std::string_view webhook_id;
  const HttpRequest* request = nullptr;
  // renew_lease extends the lease by the configured lease; false once fenced (stop at once).
  std::function<bool()> renew_lease;
  // on_abandon, when set, lets the dispatcher run the plugin on the calling thread (no hand-off
  // to a thread of its own): a watchdog thread then enforces handler_timeout and renews the lease,
  // and when it gives up on the delivery (timed out, or the lease was taken over) it calls
  // on_abandon(outcome) on another thread while the plugin may still run — the caller answers
  // from there. The dispatch itself then returns that outcome with |abandoned| set when (if ever)
  // the plugin returns. Contract: renew_lease and on_abandon are never called after the dispatch
  // returned, and it does not return while either runs (so they may use the caller's frame).
  std::function<void(const PluginOutcome&)> on_abandon;
};

using Dispatcher = std::function<PluginOutcome(const DispatchContext&)>;

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_DISPATCH_DISPATCH_CONTEXT_H_
