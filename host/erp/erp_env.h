// erp_env.h — what every ERP gateway and the retry worker of a host share (ErpEnv): the outbox,
// the sender, the clock, the retry policy (host.yaml erp.retry) and the optional failure-handling
// parts (DLQ, endpoint breaker, capability pauses, metrics). ARCHITECTURE.md "Host request
// pipeline" steps 5–6 and "Dead-letter triage".
#ifndef CLAWGUARD_HOST_ERP_ERP_ENV_H_
#define CLAWGUARD_HOST_ERP_ERP_ENV_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/clock.h"
#include "clawguard/error.h"
#include "clawguard/store/outbox.h"
#include "host/erp/capability.h"
#include "host/erp/erp_client.h"
#include "host/http/http_types.h"

namespace clawguard {
class Dlq;
class IdempotencyStore;
}  // namespace clawguard

namespace clawguard::host {

class CapabilityPauses;
class EndpointBreaker;
class HostMetrics;

// ErpSender sends one ERP call and returns its answer (any status) or a Status when no answer
// came (timeout, connection, TLS; ErpFailureOf tells which). Implementations add the ERP
// credentials. Thread-safe.
class ErpSender {
 public:
  virtual ~ErpSender() = default;
  virtual Result<ErpReply> Send(std::string_view method, std::string_view path,
                                const HttpHeaders& headers, std::string_view body) = 0;
};

// MakeErpSender wraps the real ErpClient (which adds Authorization from erp.auth).
std::unique_ptr<ErpSender> MakeErpSender(std::unique_ptr<ErpClient> client);

// AuditFn receives one JSON object per line (never a secret). May be empty (then dropped).
using AuditFn = std::function<void(const std::string& json_line)>;

// ErpRetryPolicy is host.yaml erp.retry. Backoff after send n (1-based) is base·2^(n-1) capped at
// max, then jittered: d × (1 + u·j) for u uniform in [−1, 1] and j = jitter_percent / 100. After
// |attempts| sends without a final answer (5xx, 408, 425, timeouts, connection errors) the row is
// dead. An ERP 429 waits max(Retry-After, floor_429), jittered upwards only (never earlier than
// the ERP asked).
struct ErpRetryPolicy {
  std::chrono::milliseconds base{1000};
  std::chrono::milliseconds max{600'000};
  int attempts = 8;
  int jitter_percent = 0;  // 0..100
  std::chrono::milliseconds floor_429{60'000};

  // BackoffMs is the un-jittered delay after send number |attempt| (1-based).
  int64_t BackoffMs(int64_t attempt) const;
  // JitteredMs spreads |delay_ms| by ±jitter_percent with |u01| uniform in [0, 1] (0.5: no
  // change); at least 1.
  int64_t JitteredMs(int64_t delay_ms, double u01) const;
  // CooldownMs is the wait after an ERP 429: max(|retry_after_ms|, floor_429) lengthened by up to
  // jitter_percent (|u01| in [0, 1]; 0: exactly the maximum). |retry_after_ms| < 0: none given.
  int64_t CooldownMs(int64_t retry_after_ms, double u01) const;
  // Check: kConfigInvalid unless attempts ≥ 1, jitter 0..100 and floor_429 ≥ 0 (a base or max
  // under 1 ms counts as 1 ms).
  Status Check() const;
};

// kSendClaimMarginMs is what a send's claim on its outbox row adds to erp.timeout (the client's
// whole deadline for one call, name resolution included): room for the claim's write before the
// send starts and the outcome's write after it ends. Until then no other worker or host may send
// the row (store/outbox.h).
inline constexpr int64_t kSendClaimMarginMs = 5'000;

// NewSendOwner returns a name unique to one send, "send:<hostname>:<pid>:<boot>:<n>" (<boot> is
// random per process, so a restarted process with the same pid never reuses an owner; <n>
// counts the process's sends). Thread-safe.
std::string NewSendOwner();

// ErpPluginCaps names a loaded plugin and its manifest capabilities, so the retry worker can find
// the plugin of an outbox row (which stores no plugin name: the plugin p is the one with
// ErpCallKey(row.event_key, p, row.call_index) == row.idempotency_key) and the row's endpoint
// (the capability string CapabilitySet::Match returns) — in the version loaded NOW, which may not
// be the version that made the call (host/erp/erp_send.h: a call it no longer declares is revoked).
struct ErpPluginCaps {
  std::string plugin;
  CapabilitySet capabilities;
  std::string version;  // the loaded version, for messages ("" when unknown)
};

// ErpEnv is what every gateway of a host shares; everything pointed to must outlive the gateways
// and the worker. outbox, sender and clock are required; every other part is optional (null or
// empty = that part is off).
struct ErpEnv {
  Outbox* outbox = nullptr;
  ErpSender* sender = nullptr;
  const Clock* clock = nullptr;
  ErpRetryPolicy retry;
  // erp.timeout: the sender's deadline for one call. A send owns its row until send_timeout +
  // kSendClaimMarginMs after it started (SendClaimMs).
  std::chrono::milliseconds send_timeout{5'000};
  AuditFn audit;
  // DLQ entries (cooldown, transient_exhausted, auth, not_found, conflict, capability_revoked),
  // their resolution, and capability pauses on ERP 401/403.
  Dlq* dlq = nullptr;
  // Per-endpoint circuit breaker (host.yaml breaker.erp): open → the call is not sent.
  EndpointBreaker* endpoint_breaker = nullptr;
  // erp_calls_total{endpoint,outcome} for every send, denial, hold, pause and breaker refusal.
  const HostMetrics* metrics = nullptr;
  // The in-memory mirror of the store's capability pauses (paused → the call is not sent).
  CapabilityPauses* pauses = nullptr;
  // The loaded plugins (the retry worker's way from a row to its plugin and endpoint). Required
  // by the retry worker: a row that no loaded plugin's capability allows is never resent.
  std::shared_ptr<const std::vector<ErpPluginCaps>> plugins;
  // The idempotency records: names the plugin of a revoked row that no loaded plugin made (its
  // DLQ entry needs one). Optional (without it such an entry names the plugin "(not loaded)").
  IdempotencyStore* records = nullptr;
  // Random source for jitter: uniform in [0, 1]; empty → a thread-safe PRNG seeded from
  // std::random_device. Tests inject a fixed one. Must be thread-safe.
  std::function<double()> uniform01;
};

// SendClaimMs is how long one send owns its outbox row: send_timeout + kSendClaimMarginMs.
int64_t SendClaimMs(const ErpEnv& env);

// DrawUniform01 returns |env|.uniform01() clamped to [0, 1], or the default PRNG's draw.
double DrawUniform01(const ErpEnv& env);

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_ERP_ERP_ENV_H_
