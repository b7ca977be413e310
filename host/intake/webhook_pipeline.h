// webhook_pipeline.h — the Request → Response gate of `POST /webhooks/{plugin}/{route}`, up to
// plugin dispatch (ARCHITECTURE.md "Host request pipeline" steps 1–4, 6 and the status table).
//
// Stages, in order, each a refusal with its problem type:
//   1. header and body size limits → 413; not POST /webhooks/{plugin}/{route} of a known route →
//   404;
//   2. Standard Webhooks authentication (WebhookVerifier) → 400 header_conflict / 401 (counted in
//      webhook_signature_failures_total); nothing is stored for a request that fails here;
//   3. the per-plugin rate limit (guards.limiter) → 429 rate_limited + Retry-After, nothing stored;
//   4. business key (ExtractBusinessKey) → 400; event key and fingerprint (DeriveEventKey);
//   5. the per-key breaker (guards.key_breaker) → 503 breaker_open + Retry-After = the cool-down
//      left; nothing stored, the plugin does not run;
//   6. one atomic claim (IdempotencyStore::Claim): 422 / replay of the stored answer with
//      `Idempotent-Replayed: true` / 409 in_progress + Retry-After (the lease left, capped at 2 s)
//      / 409 expired_key_seen on a tombstone (one DLQ entry manual_review with the request) /
//      claimed → the injected Dispatcher runs;
//   7. an answer that breaks the answer rule (AnswerProblem, host/http/responder.h) is a plugin
//   failure,
//      never stored; the outcome is stored per the table: 2xx and 4xx except 408, 409, 425, 429 are
//      stored; level 3 answers 202 and stores it; other answers and plugin failures release the key
//      (retryable); a timed-out plugin's lease is left to expire (not renewed, not released);
//      a dead-lettered event (outbox mismatch) stores and answers 202 with kDeadLetteredBody —
//      never the plugin's own answer — so the platform stops retrying and operators take over
//      (one DLQ entry mismatch, without the request: `idem reset` after a repair re-runs it).
//      A failed or timed-out plugin and a non-storable answer count as failures of the key's
//      breaker; the failure that opens it writes ONE DLQ entry breaker with the request and
//      audits breaker_opened. A stored outcome resets the key's failures.
// Later deliveries of a key feed the retention advisor (now − the record's first delivery).
// Metrics (guards.metrics) count every request by outcome; DLQ write failures are audited and
// never change an answer. Redeliver re-runs a stored, once-authenticated request for the DLQ
// replay worker (no signature check, no rate limit, no breaker).
// Immutable after Create; Handle and Redeliver are thread-safe if the store, the dispatcher and
// the guards are.
#ifndef CLAWGUARD_HOST_INTAKE_WEBHOOK_PIPELINE_H_
#define CLAWGUARD_HOST_INTAKE_WEBHOOK_PIPELINE_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "clawguard/clock.h"
#include "clawguard/error.h"
#include "clawguard/limits.h"
#include "clawguard/store/idempotency_store.h"
#include "host/dispatch/dispatch_context.h"
#include "host/http/answer_deadlines.h"
#include "host/http/http_types.h"
#include "host/http/responder.h"
#include "host/intake/delivery_runner.h"
#include "host/intake/pipeline_guards.h"
#include "host/intake/webhook_auth.h"
#include "host/observe/metrics.h"

namespace clawguard::host {

inline constexpr std::string_view kWebhookPathPrefix = "/webhooks/";
inline constexpr std::string_view kReplayedHeader = "Idempotent-Replayed";
inline constexpr std::string_view kXIdempotencyKeyHeader = "X-Idempotency-Key";

// DeadLetteredBody is the stored 202 answer of a dead-lettered event of class |dlq_class|.
std::string DeadLetteredBody(std::string_view dlq_class);

// PipelineRoute is one plugin/route the gate accepts.
struct PipelineRoute {
  std::string plugin;
  std::string route;
  int level = 2;                            // 1, 2 or 3
  std::optional<std::string> business_key;  // RFC 6901 pointer; required for level 1
  WebhookVerifier verifier;
};

struct PipelineOptions {
  uint64_t max_body = 0;
  uint64_t max_headers = 0;
  std::chrono::milliseconds lease{0};
  // FinishAsync: deliveries running at once (host.yaml listen.handlers); 0: kDefaultHandlerThreads.
  int64_t max_in_flight = 0;
  // FinishAsync: run deliveries as fibers on these carriers (listen.execution: fibers); nullptr:
  // a thread each. Must outlive the pipeline's deliveries.
  fiber::Carriers* carriers = nullptr;
  // With carriers: a delivery not answered this long after it was admitted is answered 503 by
  // a safety net (host/http/answer_deadlines.h); HostApp sets handler_timeout + 1 s. 0: none.
  std::chrono::milliseconds answer_deadline{0};
};

// MakeVerifier builds a route's verifier from host.yaml secrets (keys are cloned).
Result<WebhookVerifier> MakeVerifier(const RouteSecrets& secrets,
                                     std::chrono::milliseconds tolerance, const Clock& clock);

// RedeliverResult is what WebhookPipeline::Redeliver did.
struct RedeliverResult {
  bool done = false;   // the event now has a stored answer (this run's or an earlier one)
  std::string detail;  // what happened, for the DLQ entry's resolution (never a secret)
};

class WebhookPipeline {
 public:
  // Create validates the routes (level 1..3, level 1 needs a business_key, no duplicates) and
  // options (limits and lease > 0). kConfigInvalid otherwise. |store| and every non-null member
  // of |guards| must outlive the pipeline.
  static Result<std::unique_ptr<WebhookPipeline>> Create(PipelineOptions options,
                                                         std::vector<PipelineRoute> routes,
                                                         IdempotencyStore& store,
                                                         Dispatcher dispatcher,
                                                         PipelineGuards guards = {});

  struct Handled {
    HttpResponse response;
    WebhookOutcome outcome;
  };
  // Handle runs the gate on one request (Front, then Finish if admitted). Never throws; every
  // refusal is problem+json.
  Handled HandleDetailed(const HttpRequest& request) const;
  HttpResponse Handle(const HttpRequest& request) const { return HandleDetailed(request).response; }

  // Admitted is a request that passed stages 1–5 and needs the store: a claim, which may block.
  struct Admitted {
    const PipelineRoute* route = nullptr;
    std::string webhook_id;
    std::string key;
    std::string fingerprint;
    std::chrono::steady_clock::time_point start;
  };
  // Front runs stages 1–5 and answers what needs no store round trip: every refusal of those
  // stages, and the replay (or 422) of a completed record the store holds in memory
  // (IdempotencyStore::ClaimFromMemory). It never blocks on the store, the disk or a plugin, so
  // the server may run it on an I/O thread. An answer is counted in the metrics; an Admitted
  // request goes to Finish (which counts it).
  std::variant<Handled, Admitted> Front(const HttpRequest& request) const;
  // Finish runs stage 6 onwards for a request Front admitted (store claim, plugin, outcome).
  // |request| must be the request Front admitted.
  Handled Finish(const HttpRequest& request, const Admitted& admitted) const;
  // FinishAsync is Finish without a thread hop to the plugin: it returns at once (it never
  // blocks; an I/O thread may call it) and runs the delivery — claim, plugin, outcome — on a
  // thread of the pipeline's DeliveryRunner (at most options.max_in_flight at once, the rest
  // queued), the plugin on that same thread (DispatchContext::on_abandon). The answer goes to
  // |respond| when the delivery ends — or, if the dispatcher's watchdog gives up on the plugin
  // (handler_timeout, lost lease), from the watchdog at that moment, with the same answer and
  // stored state as Finish would give (503 plugin_timeout / 500 plugin_failed), while the plugin's
  // thread is left to the plugin; its slot in max_in_flight is freed then. WARNING: such a thread
  // still runs inside this pipeline's Dispatch until the plugin returns: the pipeline must outlive
  // it (HostApp keeps it with the other objects a plugin thread may reach). If no thread can be
  // started, the request is answered 500 `internal` with Retry-After: 1 and nothing is claimed.
  void FinishAsync(HttpRequest request, Admitted admitted, Responder respond) const;
  // FinishAsync's deliveries holding a slot now, and waiting for one (gauges).
  int64_t deliveries_in_flight() const { return runner_.active(); }
  int64_t deliveries_queued() const { return runner_.queued(); }
  // Deliveries whose task has not returned yet (one answered early still runs in its plugin or its
  // outcome write); the owner waits for none before it frees what they use.
  int64_t deliveries_unfinished() const { return runner_.unfinished(); }
  bool WaitDeliveriesFinished(std::chrono::milliseconds bound) const {
    return runner_.WaitFinished(bound);
  }

  using RedeliverResult = ::clawguard::host::RedeliverResult;
  // Redeliver re-runs the event |event_key| of |plugin|/|route| from its stored request (a DLQ
  // replay; the host's replay worker and reconciler call it). WARNING: the signature is NOT
  // checked again — |request| was authenticated when it was first delivered and its timestamp
  // is old by now; only requests the pipeline itself stored may be passed here. As an integrity
  // check the event key is derived again from the route, webhook-id, business key and body and
  // the replay is refused if it differs from |event_key|. Then the claim decides: completed →
  // done ("already completed", nothing runs); in progress, another fingerprint or a tombstone →
  // not done; claimed → the plugin runs and its outcome is stored as for a delivery (done when
  // stored). No rate limit and no key breaker (an operator asked for it); metrics count it.
  RedeliverResult Redeliver(const std::string& plugin, const std::string& route,
                            const std::string& event_key, const DlqRequest& request) const;

  // IsStorableStatus: 2xx, or 4xx except 408, 409, 425 and 429.
  static bool IsStorableStatus(int status);

  // Not copyable or movable: series_ is keyed by the addresses of routes_' elements.
  WebhookPipeline(const WebhookPipeline&) = delete;
  WebhookPipeline& operator=(const WebhookPipeline&) = delete;

 private:
  WebhookPipeline(PipelineOptions options, std::map<std::string, PipelineRoute, std::less<>> routes,
                  IdempotencyStore& store, Dispatcher dispatcher, PipelineGuards guards)
      : options_(options),
        routes_(std::move(routes)),
        store_(store),
        dispatcher_(std::move(dispatcher)),
        guards_(std::move(guards)),
        series_(ResolveSeries(routes_, guards_)),
        runner_(options.max_in_flight > 0 ? options.max_in_flight
                                          : static_cast<int64_t>(limits::kDefaultHandlerThreads),
                "cg-delivery", options.carriers) {
    if (options.carriers != nullptr && options.answer_deadline.count() > 0) {
      deadlines_ = std::make_unique<AnswerDeadlines>(
          [this](const Responder& respond, bool started) { AnswerLate(respond, started); });
    }
  }
  // Refuse is a problem+json answer with its metrics outcome.
  static Handled Refuse(WebhookOutcome outcome, Reason reason, std::string_view detail,
                        std::optional<int64_t> retry_after_s = std::nullopt);
  // AnswerLate is the safety net's answer (see PipelineOptions::answer_deadline).
  void AnswerLate(const Responder& respond, bool started) const;
  // Gate runs stages 1–5 and the in-memory claim; |route| is set once the path names a known route.
  std::variant<Handled, Admitted> Gate(const HttpRequest& request,
                                       const PipelineRoute*& route) const;
  // Answered turns a completed (or mismatching) claim into its answer: the stored answer with
  // Idempotent-Replayed (moved out of |claim|), or 422. nullopt for any other claim outcome.
  std::optional<Handled> Answered(ClaimOutcome& claim) const;
  using AnswerNow = std::function<void(Handled)>;
  // Delivery is one event from stage 6 on: what the claim, the dispatch and the failure path
  // share. It refers to the caller's request and strings, which outlive the call.
  struct Delivery {
    const PipelineRoute& route;
    const HttpRequest& request;
    const std::string& webhook_id;
    const std::string& key;
    const std::string& fingerprint;
    // from_platform: a platform's delivery — outcomes count in the key breaker, a tombstone hit
    // is dead-lettered; false for Redeliver (the event comes from the DLQ, an operator asked).
    bool from_platform = true;
    // answer_now, when set, runs the plugin inline and receives the answer of a delivery the
    // dispatcher gave up on (DispatchContext::on_abandon); the Handled returned then is not an
    // answer.
    const AnswerNow* answer_now = nullptr;
    int64_t token = 0;  // the fencing token of the claim (set once claimed)
  };
  // ClaimAndDispatch runs stage 6 and dispatches a claimed event.
  Handled ClaimAndDispatch(Delivery d) const;
  Handled Dispatch(const Delivery& d) const;
  // GaveUp stores and answers a failed or timed-out plugin run (releases or keeps the lease,
  // counts the key's failure).
  Handled GaveUp(const Delivery& d, const PluginOutcome& out) const;
  // Count records |h| in the metrics (labels "_unknown" when |route| is null).
  void Count(const PipelineRoute* route, const Handled& h,
             std::chrono::steady_clock::time_point start) const;

  const PipelineOptions options_;
  const std::map<std::string, PipelineRoute, std::less<>> routes_;  // "plugin/route"
  IdempotencyStore& store_;
  const Dispatcher dispatcher_;
  const PipelineGuards guards_;
  // RouteSeries: a route's metric series, resolved once (Count then touches only atomics).
  struct RouteSeries {
    std::array<Counter, static_cast<size_t>(WebhookOutcome::kExpiredKeySeen) + 1> requests;
    Counter duplicates;
    Histogram duration;
  };
  static std::unordered_map<const PipelineRoute*, RouteSeries> ResolveSeries(
      const std::map<std::string, PipelineRoute, std::less<>>& routes,
      const PipelineGuards& guards);
  const std::unordered_map<const PipelineRoute*, RouteSeries> series_;  // empty without metrics
  mutable DeliveryRunner runner_;                                       // FinishAsync's threads
  std::unique_ptr<AnswerDeadlines> deadlines_;  // with carriers only; destroyed first
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_INTAKE_WEBHOOK_PIPELINE_H_
