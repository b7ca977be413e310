// webhook_pipeline.h — the Request → Response gate of `POST /webhooks/{plugin}/{route}`, up to
// plugin dispatch (ARCHITECTURE.md "Host request pipeline" steps 1–4 and the outcome table).
//
// Stages, in order, each a refusal with its problem type:
//   1. header and body size limits → 413; not POST /webhooks/{plugin}/{route} of a known route → 404;
//   2. Standard Webhooks authentication (WebhookVerifier) → 400 header_conflict / 401; nothing is
//      stored for a request that fails here;
//   3. business key (ExtractBusinessKey) → 400; event key and fingerprint (DeriveEventKey);
//   4. one atomic claim (IdempotencyStore::Claim): 422 / replay of the stored answer with
//      `Idempotent-Replayed: true` / 409 + Retry-After / claimed → the injected Dispatcher runs;
//   5. the outcome is stored per the table: 2xx and 4xx except 408, 409, 425, 429 are stored;
//      level 3 answers 202 and stores it; other answers and plugin failures release the key
//      (retryable); a timed-out plugin's lease is left to expire (not renewed, not released);
//      a dead-lettered event (outbox mismatch) stores and answers 202 with kDeadLetteredBody —
//      never the plugin's own answer — so the platform stops retrying and operators take over.
// Immutable after Create; Handle is thread-safe if the store and the dispatcher are.
#ifndef CLAWGUARD_HOST_WEBHOOK_PIPELINE_H_
#define CLAWGUARD_HOST_WEBHOOK_PIPELINE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/clock.h"
#include "clawguard/error.h"
#include "clawguard/store/idempotency_store.h"
#include "host/host_config.h"
#include "host/http_types.h"
#include "host/webhook_auth.h"

namespace clawguard::host {

inline constexpr std::string_view kWebhookPathPrefix = "/webhooks/";
inline constexpr std::string_view kReplayedHeader = "Idempotent-Replayed";
inline constexpr std::string_view kXIdempotencyKeyHeader = "X-Idempotency-Key";

// DeadLetteredBody is the stored 202 answer of a dead-lettered event of class |dlq_class|.
std::string DeadLetteredBody(std::string_view dlq_class);

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
  };
  Kind kind = Kind::kFailed;
  int status = 0;
  std::string content_type;
  std::string body;
  std::string detail;            // why it failed (audited; never a secret)
  std::string dead_letter_class;  // kDeadLettered: the DLQ class ("mismatch")

  static PluginOutcome Answered(int status, std::string content_type, std::string body) {
    return PluginOutcome{Kind::kAnswered, status, std::move(content_type), std::move(body), {}, {}};
  }
  static PluginOutcome Failed(std::string detail) {
    return PluginOutcome{Kind::kFailed, 0, {}, {}, std::move(detail), {}};
  }
  static PluginOutcome TimedOut(std::string detail) {
    return PluginOutcome{Kind::kTimedOut, 0, {}, {}, std::move(detail), {}};
  }
  static PluginOutcome DeadLettered(std::string dlq_class, std::string detail) {
    return PluginOutcome{Kind::kDeadLettered, 0, {}, {}, std::move(detail), std::move(dlq_class)};
  }
};

// DispatchContext is one claimed delivery, valid during the dispatcher call.
struct DispatchContext {
  std::string_view plugin;
  std::string_view route;
  int level = 2;                  // 3: ERP calls are held as intents
  std::string_view event_key;     // 64 lowercase hex (cg_request.idempotency_key)
  int64_t fencing_token = 0;      // carried by every outbox write of this delivery
  std::string_view webhook_id;
  const HttpRequest* request = nullptr;
  // renew_lease extends the lease by the configured lease; false once fenced (stop at once).
  std::function<bool()> renew_lease;
};

using Dispatcher = std::function<PluginOutcome(const DispatchContext&)>;

// WebhookOutcome labels what Handle did (metrics: webhook_requests_total{outcome}).
enum class WebhookOutcome {
  kTooLarge, kNotFound, kAuthFailed, kKeyMissing, kFingerprintMismatch, kReplayed, kInProgress,
  kStoreUnavailable, kProcessed, kNotStored, kPluginFailed, kPluginTimeout, kFenced, kDeadLettered,
};
std::string_view WebhookOutcomeName(WebhookOutcome o);

// PipelineRoute is one plugin/route the gate accepts.
struct PipelineRoute {
  std::string plugin;
  std::string route;
  int level = 2;                              // 1, 2 or 3
  std::optional<std::string> business_key;    // RFC 6901 pointer; required for level 1
  WebhookVerifier verifier;
};

struct PipelineOptions {
  uint64_t max_body = 0;
  uint64_t max_headers = 0;
  std::chrono::milliseconds lease{0};
};

// MakeVerifier builds a route's verifier from host.yaml secrets (keys are cloned).
Result<WebhookVerifier> MakeVerifier(const RouteSecrets& secrets, std::chrono::milliseconds tolerance,
                                     const Clock& clock);

class WebhookPipeline {
 public:
  // Create validates the routes (level 1..3, level 1 needs a business_key, no duplicates) and
  // options (limits and lease > 0). kConfigInvalid otherwise. |store| must outlive the pipeline.
  static Result<std::unique_ptr<WebhookPipeline>> Create(PipelineOptions options, std::vector<PipelineRoute> routes,
                                                         IdempotencyStore& store, Dispatcher dispatcher);

  struct Handled {
    HttpResponse response;
    WebhookOutcome outcome;
  };
  // Handle runs the gate on one request. Never throws; every refusal is problem+json.
  Handled HandleDetailed(const HttpRequest& request) const;
  HttpResponse Handle(const HttpRequest& request) const { return HandleDetailed(request).response; }

  // IsStorableStatus: 2xx, or 4xx except 408, 409, 425 and 429.
  static bool IsStorableStatus(int status);

 private:
  WebhookPipeline(PipelineOptions options, std::map<std::string, PipelineRoute> routes, IdempotencyStore& store,
                  Dispatcher dispatcher)
      : options_(options), routes_(std::move(routes)), store_(store), dispatcher_(std::move(dispatcher)) {}
  Handled Dispatch(const PipelineRoute& route, const HttpRequest& request, const std::string& key,
                   int64_t token, const std::string& webhook_id) const;

  const PipelineOptions options_;
  const std::map<std::string, PipelineRoute> routes_;  // "plugin/route"
  IdempotencyStore& store_;
  const Dispatcher dispatcher_;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_WEBHOOK_PIPELINE_H_
