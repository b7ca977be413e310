// host_app.h — HostApp: the running ClawGuard host assembled from host.yaml (ARCHITECTURE.md
// "Host request pipeline", host.yaml in "Policies").
//
// Create, in order (every failure is a Status; nothing is listening yet):
//   - the stores through the injected StoreFactory (the CLI's factory opens sqlite:PATH and
//     postgresql:// URLs) — idempotency records, outbox, ledger and DLQ, all four required;
//   - the ERP client (erp.base_url, timeout, ca, auth) and the Loader (trust, allowlist, ledger,
//     audit log, the static host API);
//   - every `*.claw` in plugins.dir is verified; refused ones are audited (`plugin_refused` in
//     log.audit; the loader audits its verdict too) and counted in plugin_load_refusals_total,
//     and never loaded — their routes answer 404; of several verified versions of one name only
//     the highest is loaded (the others are reported as "superseded", not counted as refusals);
//   - routes: host.yaml webhooks.routes × the loaded manifests' webhooks;
//   - the failure-handling parts: HostMetrics (labels: those routes, the loaded plugins, their ERP
//     capability strings), the key and endpoint breakers (breaker.key, breaker.erp), the rate
//     limiter (webhooks.rate_limit, when a count is configured), the capability pauses (read from
//     the DLQ store at start), the retention advisor — given to the pipeline (PipelineGuards) and
//     to every ERP gateway and the retry worker (ErpEnv);
//   - RLIMIT_NOFILE raised to its hard limit and the main listener's connection bound set within
//     it (host/http/fd_budget.h; audited as "fd_limit"; kConfigInvalid when too few descriptors);
//   - the main listener (POST /webhooks/{plugin}/{route}, GET /healthz, GET /readyz) and the
//     admin listener, every path behind its bearer token: GET /readyz (the detailed JSON of
//     ReadyJson()), GET /metrics (Prometheus text), GET /ops (the operator page).
// Start starts both listeners, the background workers (outbox resends, DLQ replays, reconciler:
// one thread each) and the background thread, which runs HostOpsLoop::Tick every
// kOpsLoopPeriodMs (operations generation, capability pauses, posting the workers, gauges;
// host/app/host_ops_loop.h) and never waits on the ERP.
// Stop is graceful and idempotent: after the listeners and the background thread stopped it stops
// the workers, waiting up to handler_timeout + erp.timeout for their items, then waits as long
// for plugin threads that are still running (a timed-out plugin cannot be cancelled).
// WARNING: if one is still running when the HostApp is destroyed, the objects it may touch — the
// plugins' code, the stores (the DLQ among them), the ERP sender, the breakers, the metrics, the
// capability pauses, the loader and the dispatcher; for a background worker also the loop, the
// observer, the retry worker and the reconciler — are leaked on purpose (kept reachable, never
// freed) and this is audited ("plugin_threads_abandoned", "background_workers_abandoned"): a leak
// at shutdown instead of a use-after-free. The audit sink is shared with those threads.
// Thread-safe after Create; Start/Stop from the owning thread.
#ifndef CLAWGUARD_HOST_APP_HOST_APP_H_
#define CLAWGUARD_HOST_APP_HOST_APP_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "clawguard/clock.h"
#include "clawguard/error.h"
#include "clawguard/loader.h"
#include "clawguard/store/dlq.h"
#include "clawguard/store/idempotency_store.h"
#include "clawguard/store/ledger.h"
#include "clawguard/store/outbox.h"
#include "core/mutex.h"
#include "host/app/host_config.h"
#include "host/app/host_observe.h"
#include "host/app/host_ops_loop.h"
#include "host/dispatch/plugin_dispatch.h"
#include "host/dispatch/plugin_worker.h"
#include "host/dispatch/sandbox_dispatch.h"
#include "host/erp/erp_client.h"
#include "host/erp/erp_gateway.h"
#include "host/guard/breaker.h"
#include "host/guard/capability_pauses.h"
#include "host/guard/rate_limiter.h"
#include "host/guard/retention_advisor.h"
#include "host/http/fd_budget.h"
#include "host/http/http_server.h"
#include "host/intake/webhook_pipeline.h"
#include "host/observe/host_metrics.h"
#include "host/sandbox/isolation_probe.h"
#include "runtime/fiber.h"

namespace clawguard::host {

// HostStores are the engines one store URL opens. All four are required.
struct HostStores {
  std::unique_ptr<IdempotencyStore> idempotency;
  std::unique_ptr<Outbox> outbox;
  std::unique_ptr<Ledger> ledger;
  std::unique_ptr<Dlq> dlq;
};

// StoreFactory opens |url| (host.yaml `store:`). kStoreUnavailable when it cannot.
// (It is injected because clawguard_host links no engine; the CLI's factory opens SQLite and
// PostgreSQL.)
using StoreFactory = std::function<Result<HostStores>(const std::string& url, const Clock& clock)>;

// RefusedPackage is a package that was not loaded, and why (a loader reason code or "superseded").
// name, version, publisher and sha256 are what the verdict knew ("" when verification stopped
// before it learnt them).
struct RefusedPackage {
  std::string package;
  std::string reason;
  std::string detail;
  std::string name, version, publisher, sha256;
};

// WorkerOf is the worker of a plugin loaded with plugins.isolation: sandbox (nullptr otherwise).
std::shared_ptr<PluginWorker> WorkerOf(const LoadedPlugin& p);

class HostApp {
 public:
  // Create: see the file comment. |clock| must outlive the app. Reasons: kConfigInvalid,
  // kStoreUnavailable, kInternal (a listener cannot bind).
  static Result<std::unique_ptr<HostApp>> Create(const std::shared_ptr<const HostConfig>& config,
                                                 const Clock& clock,
                                                 const StoreFactory& open_store);
  ~HostApp();
  HostApp(const HostApp&) = delete;
  HostApp& operator=(const HostApp&) = delete;

  // CheckStartable runs the checks of a start that open nothing: with plugins.isolation: sandbox,
  // the kernel's isolation (fail closed) and the worker executable; the ERP client's settings
  // (URL, credential, CA). `clawguard host --check` runs it after loading the configuration.
  static Status CheckStartable(const HostConfig& config);

  Status Start();
  void Stop();
  // ReopenLogs opens log.audit again by its path (after logrotate moved it) and audits
  // "audit_log_reopened" — to the new file — or, when it cannot, "audit_log_reopen_failed" to the
  // file it keeps. Thread-safe.
  Status ReopenLogs();
  // OnTick: |beat| runs on the background loop's thread after each of its ticks, so a loop that
  // stops ticking stops it (the service manager's watchdog). Set before Start.
  void OnTick(std::function<void()> beat) { on_tick_ = std::move(beat); }

  uint16_t main_port() const;
  uint16_t admin_port() const;
  // ReadyJson is the admin /readyz body: {ready, mode, plugins:[{name, version, sha256,
  // publisher, isolation, and when sandboxed state ("serving" | "failed") and worker_faults}],
  // refused:[{package, reason, detail}], ledger_anchor, shedding, connections:{open, max,
  // max_per_peer, peers, shed_total, refused_total}, fd_limit:{soft, hard, soft_before},
  // background} (background: HostOpsLoop::StatusJson — the loop's ticks, the pauses in force, the
  // workers).
  std::string ReadyJson() const;
  const std::vector<RefusedPackage>& refused() const { return refused_; }
  RetryWorker& retry_worker() { return *retry_; }
  const HostMetrics& metrics() const { return *metrics_; }
  // SnapshotOps is the content of the admin /ops page now.
  OpsSnapshot SnapshotOps() const { return observer_->Snapshot(); }

 private:
  HostApp() = default;

  // Create's steps, in order (host_app_create.cpp). Each sets the members it names.
  // OpenAudit: audit_, the raised descriptor limit and the main listener's connection bound.
  Status OpenAudit(const HostConfig& config);
  // OpenStores: stores_ from |open_store|, the idempotency store behind the replay cache.
  Status OpenStores(const HostConfig& config, const StoreFactory& open_store);
  Status CreateErpSender(const HostConfig& config);
  // LoadTrustedPlugins: the loader (trust policy, allowlist, ledger) and LoadPlugins; with
  // plugins.isolation: sandbox, first the kernel check (fail closed) and the worker options, and
  // the loader's opener starts a worker per plugin (host_app_plugins.cpp).
  Status LoadTrustedPlugins(const HostConfig& config);
  Status PrepareSandbox(const HostConfig& config);
  // SandboxSupport: what the kernel offers, kConfigInvalid when it is not enough for a worker.
  static Result<sandbox::IsolationSupport> SandboxSupport(const HostConfig& config);
  // WorkerMemoryCgroups opens the workers' memory cgroups as plugins.memory_cgroup says: null (and
  // why in |unavailable|) when none are used, kConfigInvalid when required and not possible.
  static Result<std::shared_ptr<sandbox::WorkerCgroups>> WorkerMemoryCgroups(
      const HostConfig& config, std::string* unavailable);
  static ErpClientOptions ErpOptions(const HostConfig& config);
  Result<std::unique_ptr<PluginRuntime>> OpenInWorker(const CheckedLibrary& library);
  // RouteTable: host.yaml routes × loaded manifests' webhooks (a route without a secret is left
  // out, audited, and answers 404).
  struct RouteTable {
    std::vector<PipelineRoute> routes;
    std::vector<std::pair<std::string, std::string>> names;  // (plugin, route)
  };
  Result<RouteTable> BuildRoutes(const HostConfig& config);
  // CreateDispatch: the ERP environment, the retry worker and the plugin dispatcher.
  Status CreateDispatch(const HostConfig& config, const AuditFn& audit);
  // CreatePipeline: the carriers (listen.execution: fibers) and the webhook pipeline.
  Status CreatePipeline(const HostConfig& config, std::vector<PipelineRoute> routes,
                        const AuditFn& audit);
  // CreateOpsLoop: the reconciler, the background loop and the /ops page.
  Status CreateOpsLoop(const HostConfig& config, const AuditFn& audit);
  // CreateListeners: the main and admin HTTP servers (bound, not started).
  Status CreateListeners(const HostConfig& config);
  Status LoadPlugins(const HostConfig& config);
  // CreateGuards makes the metrics, breakers, limiter, pauses and advisor (after LoadPlugins).
  Status CreateGuards(const HostConfig& config,
                      const std::vector<std::pair<std::string, std::string>>& routes);
  // CreateObserver makes the /ops and gauge source and records the start-up metrics.
  Status CreateObserver();
  // FrontMain is the main listener's FrontHandler: health, readiness, and the webhook pipeline's
  // Front inline; a claim is deferred to a handler thread (WebhookPipeline::Finish).
  std::variant<HttpResponse, Deferred> FrontMain(const HttpRequest& request) const;
  HttpResponse HandleAdmin(const HttpRequest& request) const;
  void BackgroundLoop();
  void Audit(const std::string& line);

  class AuditSink;  // log.audit (or stderr); shared with plugin threads through ErpEnv::audit

  std::shared_ptr<const HostConfig> config_;
  std::function<void()> on_tick_;
  const Clock* clock_ = nullptr;
  std::shared_ptr<AuditSink> audit_;
  const CachingIdempotencyStore* cache_ = nullptr;  // stores_.idempotency, seen as the cache
  HostStores stores_;
  std::unique_ptr<ErpSender> sender_;
  std::unique_ptr<Loader> loader_;
  std::vector<LoadedPlugin> plugins_;
  std::vector<RefusedPackage> refused_;
  std::vector<OpsLeaf> leaves_;  // signing leaves of the loaded plugins
  // Failure handling; declared before their users so they are destroyed after them.
  std::unique_ptr<HostMetrics> metrics_;
  // What worker faults are counted in (metrics_ once made; null again when it is freed).
  std::shared_ptr<std::atomic<HostMetrics*>> fault_metrics_ =
      std::make_shared<std::atomic<HostMetrics*>>(nullptr);
  std::unique_ptr<KeyBreaker> key_breaker_;
  std::unique_ptr<EndpointBreaker> endpoint_breaker_;
  std::unique_ptr<RateLimiter> limiter_;  // null: no webhooks.rate_limit
  std::unique_ptr<CapabilityPauses> pauses_;
  std::unique_ptr<RetentionAdvisor> advisor_;
  std::unique_ptr<RetryWorker> retry_;
  std::shared_ptr<PluginDispatcher> dispatcher_;           // plugins.isolation: none
  std::shared_ptr<SandboxDispatcher> sandbox_dispatcher_;  // plugins.isolation: sandbox
  WorkerOptions worker_options_;                           // plugins.isolation: sandbox
  std::unique_ptr<fiber::Carriers> carriers_;  // listen.execution: fibers; outlives the pipeline
  std::unique_ptr<WebhookPipeline> pipeline_;
  std::unique_ptr<HostObserver> observer_;
  std::unique_ptr<Reconciler> reconciler_;
  std::unique_ptr<HostOpsLoop> ops_loop_;
  Handler ops_page_;
  std::unique_ptr<HttpServer> main_, admin_;
  FdLimit fd_limit_;  // RLIMIT_NOFILE as raised at Create
  uint64_t max_connections_ =
      0;  // the main listener's bound (listen.max_connections within fd_limit_)
  std::atomic<bool> ready_{false};
  Mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ CLAWGUARD_GUARDED_BY(stop_mu_) = false;
  bool started_ CLAWGUARD_GUARDED_BY(stop_mu_) = false;
  bool workers_abandoned_ = false;  // Stop gave up on a background worker (see the WARNING above)
  std::thread background_thread_;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_APP_HOST_APP_H_
