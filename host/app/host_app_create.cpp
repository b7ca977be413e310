// host_app_create.cpp — HostApp::Create, the composition root, as named steps in the order their
// dependencies need: audit and descriptor budget, stores, the ERP sender, trusted plugins, routes,
// guards, dispatch, the pipeline, the observer, the background loop, the listeners (host_app.h).
#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

#include "clawguard/json_dump.h"
#include "clawguard/limits.h"
#include "host/app/audit_sink.h"
#include "host/app/host_app.h"
#include "host/http/admin_auth.h"
#include "host/http/fd_budget.h"
#include "host/observe/ops_page.h"

namespace clawguard::host {

Result<std::unique_ptr<HostApp>> HostApp::Create(const std::shared_ptr<const HostConfig>& config,
                                                 const Clock& clock,
                                                 const StoreFactory& open_store) {
  if (config == nullptr || !open_store)
    return Status(Reason::kInternal, "host: no configuration or store factory");
  std::unique_ptr<HostApp> app(new HostApp());
  app->config_ = config;
  app->clock_ = &clock;
  const HostConfig& c = *config;
  CLAWGUARD_RETURN_IF_ERROR(app->OpenAudit(c));
  // The sink, not the app: an abandoned plugin thread may log after the app is gone.
  const AuditFn audit = [sink = app->audit_](const std::string& line) { sink->Write(line); };
  CLAWGUARD_RETURN_IF_ERROR(app->OpenStores(c, open_store));
  CLAWGUARD_RETURN_IF_ERROR(app->CreateErpSender(c));
  CLAWGUARD_RETURN_IF_ERROR(app->LoadTrustedPlugins(c));
  CLAWGUARD_ASSIGN_OR_RETURN(RouteTable table, app->BuildRoutes(c));
  CLAWGUARD_RETURN_IF_ERROR(app->CreateGuards(c, table.names));
  CLAWGUARD_RETURN_IF_ERROR(app->CreateDispatch(c, audit));
  CLAWGUARD_RETURN_IF_ERROR(app->CreatePipeline(c, std::move(table.routes), audit));
  CLAWGUARD_RETURN_IF_ERROR(app->CreateObserver());
  CLAWGUARD_RETURN_IF_ERROR(app->CreateOpsLoop(c, audit));
  CLAWGUARD_RETURN_IF_ERROR(app->CreateListeners(c));
  return app;
}

Status HostApp::OpenAudit(const HostConfig& c) {
  CLAWGUARD_ASSIGN_OR_RETURN(audit_, AuditSink::Create(c));
  // Descriptors first: the listener's bound depends on them (host/http/fd_budget.h).
  fd_limit_ = RaiseFdLimit();
  const uint64_t configured =
      c.listen.max_connections > 0 ? c.listen.max_connections : limits::kDefaultMaxConnections;
  CLAWGUARD_ASSIGN_OR_RETURN(
      max_connections_,
      ListenerBudget(configured, fd_limit_.soft, static_cast<uint64_t>(c.listen.handlers)));
  Audit(DumpJson({{"event", "fd_limit"},
                  {"soft_before", fd_limit_.soft_before},
                  {"soft", fd_limit_.soft},
                  {"hard", fd_limit_.hard},
                  {"reserved", FdsReserved(static_cast<uint64_t>(c.listen.handlers))},
                  {"max_connections", max_connections_},
                  {"max_connections_configured", configured}}));
  return Status::Ok();
}

Status HostApp::OpenStores(const HostConfig& c, const StoreFactory& open_store) {
  CLAWGUARD_ASSIGN_OR_RETURN(stores_, open_store(c.store, *clock_));
  if (!stores_.idempotency || !stores_.outbox || !stores_.ledger || !stores_.dlq) {
    return Status(Reason::kStoreUnavailable,
                  "host: the store factory returned an incomplete store (idempotency, outbox, "
                  "ledger and DLQ are "
                  "all required)");
  }
  // Replays of completed records are answered from memory (dropped on every new operations
  // generation): the hot path of a retry storm never reaches the store.
  {
    CLAWGUARD_ASSIGN_OR_RETURN(std::unique_ptr<CachingIdempotencyStore> cached,
                               CachingIdempotencyStore::Create(std::move(stores_.idempotency)));
    cache_ = cached.get();
    stores_.idempotency = std::move(cached);
  }
  return Status::Ok();
}

ErpClientOptions HostApp::ErpOptions(const HostConfig& c) {
  ErpClientOptions erp_options;
  erp_options.base_url = c.erp.base_url;
  erp_options.timeout = c.erp.timeout;
  erp_options.ca_file = c.erp.ca;
  erp_options.auth = c.erp.auth.Clone();
  erp_options.keep_alive = c.erp.keep_alive;
  return erp_options;
}

Status HostApp::CreateErpSender(const HostConfig& c) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::unique_ptr<ErpClient> client, ErpClient::Create(ErpOptions(c)));
  sender_ = MakeErpSender(std::move(client));
  return Status::Ok();
}

Status HostApp::LoadTrustedPlugins(const HostConfig& c) {
  LoaderOptions lo;
  lo.trust_policy_path = c.plugins.trust;
  lo.allowlist_path = c.plugins.allowlist;
  lo.ledger = stores_.ledger.get();
  lo.clock = clock_;
  if (!c.log.audit.empty()) lo.audit_log_path = c.log.audit;
  if (!c.log.anchor.empty()) lo.anchor_path = c.log.anchor;
  lo.host_api = HostApi();
  if (c.plugins.sandbox) {
    CLAWGUARD_RETURN_IF_ERROR(PrepareSandbox(c));
    lo.opener = [this](const CheckedLibrary& library) { return OpenInWorker(library); };
  }
  CLAWGUARD_ASSIGN_OR_RETURN(loader_, Loader::Create(std::move(lo)));
  return LoadPlugins(c);
}

Result<HostApp::RouteTable> HostApp::BuildRoutes(const HostConfig& c) {
  // Routes: host.yaml routes × loaded manifests' webhooks.
  RouteTable table;
  for (const LoadedPlugin& p : plugins_) {
    const Manifest& m = p.manifest();
    for (const WebhookRouteSpec& w : m.webhooks) {
      const auto secrets = c.webhooks.routes.find(m.name + "/" + w.route);
      if (secrets == c.webhooks.routes.end()) {
        Audit(DumpJson(
            {{"event", "route_unconfigured"},
             {"plugin", m.name},
             {"route", w.route},
             {"detail", "no secret in host.yaml webhooks.routes: the route answers 404"}}));
        continue;
      }
      CLAWGUARD_ASSIGN_OR_RETURN(WebhookVerifier verifier,
                                 MakeVerifier(secrets->second, c.webhooks.tolerance, *clock_));
      table.routes.push_back(
          PipelineRoute{m.name, w.route, w.level, w.business_key, std::move(verifier)});
      table.names.emplace_back(m.name, w.route);
    }
  }
  return table;
}

Status HostApp::CreateDispatch(const HostConfig& c, const AuditFn& audit) {
  // Dispatch targets and the ERP environment every gateway and the retry worker share.
  std::vector<DispatchTarget> targets;
  std::vector<SandboxTarget> workers;
  auto caps = std::make_shared<std::vector<ErpPluginCaps>>();
  for (const LoadedPlugin& p : plugins_) {
    const Manifest& m = p.manifest();
    if (c.plugins.sandbox) {
      workers.push_back(SandboxTarget{m.name, WorkerOf(p), m.erp_capabilities});
    } else {
      targets.push_back(DispatchTarget{m.name, p.plugin(), m.erp_capabilities});
    }
    CLAWGUARD_ASSIGN_OR_RETURN(CapabilitySet set, CapabilitySet::Create(m.erp_capabilities));
    caps->push_back(ErpPluginCaps{m.name, std::move(set), m.version});
  }
  ErpEnv env;
  env.outbox = stores_.outbox.get();
  env.sender = sender_.get();
  env.clock = clock_;
  env.retry.base = c.erp.retry.base;
  env.retry.max = c.erp.retry.max;
  env.retry.attempts = c.erp.retry.attempts;
  env.retry.jitter_percent = c.erp.retry.jitter_percent;
  env.retry.floor_429 = c.erp.retry.floor_429;
  env.send_timeout = c.erp.timeout;  // a send owns its outbox row this long plus a margin
  env.audit = audit;
  env.dlq = stores_.dlq.get();
  env.endpoint_breaker = endpoint_breaker_.get();
  env.metrics = metrics_.get();
  env.pauses = pauses_.get();
  env.plugins = std::move(caps);
  env.records = stores_.idempotency.get();  // names the plugin of a row no loaded plugin made
  CLAWGUARD_ASSIGN_OR_RETURN(retry_, RetryWorker::Create(env));

  DispatchOptions dopts;
  dopts.handler_timeout = c.plugins.handler_timeout;
  dopts.lease = c.idempotency.lease;
  dopts.erp = env;
  if (c.plugins.sandbox) {
    CLAWGUARD_ASSIGN_OR_RETURN(sandbox_dispatcher_,
                               SandboxDispatcher::Create(std::move(dopts), std::move(workers)));
    return Status::Ok();
  }
  CLAWGUARD_ASSIGN_OR_RETURN(dispatcher_,
                             PluginDispatcher::Create(std::move(dopts), std::move(targets)));
  return Status::Ok();
}

Status HostApp::CreatePipeline(const HostConfig& c, std::vector<PipelineRoute> routes,
                               const AuditFn& audit) {
  PipelineGuards guards;
  guards.limiter = limiter_.get();
  guards.key_breaker = key_breaker_.get();
  guards.dlq = stores_.dlq.get();
  guards.metrics = metrics_.get();
  guards.advisor = advisor_.get();
  guards.clock = clock_;
  guards.audit = audit;
  if (c.listen.fibers) {
    try {
      carriers_ = std::make_unique<fiber::Carriers>(c.listen.carriers, "cg-carrier");
    } catch (const std::exception& e) {
      return Status(
          Reason::kInternal,
          std::string("host: cannot start the carrier threads (listen.execution: fibers): ") +
              e.what());
    }
  }
  CLAWGUARD_ASSIGN_OR_RETURN(
      pipeline_, WebhookPipeline::Create(
                     PipelineOptions{c.listen.max_body, c.listen.max_headers, c.idempotency.lease,
                                     c.listen.handlers, carriers_.get(),
                                     c.plugins.handler_timeout + std::chrono::seconds(1)},
                     std::move(routes), *stores_.idempotency,
                     sandbox_dispatcher_ != nullptr ? sandbox_dispatcher_->AsDispatcher()
                                                    : dispatcher_->AsDispatcher(),
                     std::move(guards)));
  return Status::Ok();
}

Status HostApp::CreateOpsLoop(const HostConfig& c, const AuditFn& audit) {
  OpsLoopDeps deps;
  deps.idempotency = stores_.idempotency.get();
  deps.dlq = stores_.dlq.get();
  deps.retry = retry_.get();
  deps.pipeline = pipeline_.get();
  deps.pauses = pauses_.get();
  deps.advisor = advisor_.get();
  deps.observer = observer_.get();
  deps.clock = clock_;
  deps.audit = audit;
  deps.owner = ReplayOwner();
  deps.retention_ms = c.idempotency.retention.count();
  ReconcilerOptions ro;
  // Stuck = untouched for two leases (a live worker renews every lease/3).
  ro.stuck_for =
      std::max<std::chrono::milliseconds>(2 * c.idempotency.lease, std::chrono::seconds(10));
  ro.retention = c.idempotency.retention;
  ro.tombstone_ttl = c.idempotency.tombstones;
  const WebhookPipeline* pipeline = pipeline_.get();
  CLAWGUARD_ASSIGN_OR_RETURN(
      reconciler_,
      Reconciler::Create(
          *stores_.idempotency, *stores_.dlq, *clock_, ro, [pipeline](const IdempotencyRecord& r) {
            return pipeline
                ->Redeliver(r.plugin, r.route, r.key,
                            DlqRequest{r.webhook_id, r.request_content_type, r.request_body})
                .done;
          }));
  deps.reconciler = reconciler_.get();
  deps.cache = cache_;
  deps.metrics = metrics_.get();
  // Sandboxed plugins run on no host thread.
  deps.plugin_threads = [dispatcher = dispatcher_.get()] {
    return dispatcher != nullptr ? dispatcher->running_threads() : 0;
  };
  CLAWGUARD_ASSIGN_OR_RETURN(ops_loop_, HostOpsLoop::Create(std::move(deps)));
  HostObserver* observer = observer_.get();
  // A sandboxed plugin's worker state and deaths as they are now.
  std::map<std::string, std::shared_ptr<PluginWorker>> workers;
  for (const LoadedPlugin& p : plugins_) {
    if (std::shared_ptr<PluginWorker> w = WorkerOf(p)) workers.emplace(p.verdict().name, w);
  }
  ops_page_ = MakeOpsHandler([observer, workers = std::move(workers)] {
    OpsSnapshot s = observer->Snapshot();
    for (OpsPlugin& p : s.plugins) {
      const auto it = p.loaded ? workers.find(p.name) : workers.end();
      if (it == workers.end()) continue;
      p.state = it->second->failed() ? "failed" : "serving";
      p.worker_faults = it->second->faults();
    }
    return s;
  });
  return Status::Ok();
}

Status HostApp::CreateListeners(const HostConfig& c) {
  HostApp* raw = this;
  ServerOptions main_options;
  main_options.address = c.listen.address;
  main_options.max_body = c.listen.max_body;
  main_options.max_headers = c.listen.max_headers;
  main_options.workers = std::max(1, c.listen.workers);
  // Deliveries run on the pipeline's own threads (FinishAsync, bounded by listen.handlers); the
  // server's handler pool serves nothing here (FrontMain answers or starts, never defers a run).
  main_options.handler_threads = 1;
  main_options.max_connections = max_connections_;
  main_options.max_connections_per_peer =
      std::min<uint64_t>(max_connections_, c.listen.max_connections_per_peer > 0
                                               ? c.listen.max_connections_per_peer
                                               : limits::kDefaultMaxConnectionsPerPeer);
  if (c.listen.tls) main_options.tls = ServerTls{c.listen.tls->cert, c.listen.tls->key};
  CLAWGUARD_ASSIGN_OR_RETURN(
      main_, HttpServer::CreateWithFront(
                 std::move(main_options),
                 FrontHandler([raw](const HttpRequest& r) { return raw->FrontMain(r); })));
  CLAWGUARD_ASSIGN_OR_RETURN(Handler admin_handler,
                             RequireBearerToken(c.admin.token.Clone(), [raw](const HttpRequest& r) {
                               return raw->HandleAdmin(r);
                             }));
  ServerOptions admin_options;
  admin_options.address = c.admin.address;
  admin_options.workers = 1;
  admin_options.max_connections = limits::kAdminMaxConnections;
  admin_options.max_connections_per_peer = limits::kAdminMaxConnections;
  if (c.admin.tls) admin_options.tls = ServerTls{c.admin.tls->cert, c.admin.tls->key};
  CLAWGUARD_ASSIGN_OR_RETURN(
      admin_, HttpServer::Create(std::move(admin_options), std::move(admin_handler)));
  return Status::Ok();
}

Status HostApp::CreateGuards(const HostConfig& c,
                             const std::vector<std::pair<std::string, std::string>>& routes) {
  CLAWGUARD_ASSIGN_OR_RETURN(metrics_, HostMetrics::Create(MetricsNamesFor(routes, plugins_)));
  fault_metrics_->store(metrics_.get());
  CLAWGUARD_ASSIGN_OR_RETURN(key_breaker_, KeyBreaker::Create(c.breaker_key, *clock_));
  CLAWGUARD_ASSIGN_OR_RETURN(endpoint_breaker_, EndpointBreaker::Create(c.breaker_erp, *clock_));
  if (c.webhooks.rate_limit.count > 0) {
    CLAWGUARD_ASSIGN_OR_RETURN(limiter_, RateLimiter::Create(c.webhooks.rate_limit, *clock_));
  }
  pauses_ = std::make_unique<CapabilityPauses>();
  // A pause written while no host ran (or by another host) holds from the first call on.
  CLAWGUARD_RETURN_IF_ERROR(pauses_->Refresh(*stores_.dlq));
  advisor_ = std::make_unique<RetentionAdvisor>();
  return Status::Ok();
}

Status HostApp::CreateObserver() {
  HostObserver::Fixed fixed;
  fixed.trust_mode = loader_->mode();
  for (const LoadedPlugin& p : plugins_) {
    const Verdict& v = p.verdict();
    fixed.plugins.push_back(OpsPlugin{v.name, v.version, v.publisher, v.sha256, /*loaded=*/true, "",
                                      "", WorkerOf(p) != nullptr ? "sandbox" : "none", "", 0});
  }
  for (const RefusedPackage& r : refused_) {
    const std::string name =
        r.name.empty() ? std::filesystem::path(r.package).filename().string() : r.name;
    fixed.plugins.push_back(OpsPlugin{name, r.version, r.publisher, r.sha256, /*loaded=*/false,
                                      r.reason, r.detail, "", "", 0});
  }
  fixed.leaves = leaves_;
  fixed.endpoints = MetricsNamesFor({}, plugins_).endpoints;
  HostObserver::Sources sources{metrics_.get(), endpoint_breaker_.get(), key_breaker_.get(),
                                stores_.dlq.get(), clock_};
  CLAWGUARD_ASSIGN_OR_RETURN(observer_, HostObserver::Create(sources, std::move(fixed)));

  // Start-up metrics: refusals by loader reason ("superseded" is not a refusal), leaf expiry (the
  // earliest of a plugin's signers), ledger rows, and the gauges' first values.
  for (const RefusedPackage& r : refused_) {
    if (std::optional<Reason> reason = ReasonFromName(r.reason))
      metrics_->RecordPluginLoadRefusal(*reason);
  }
  std::map<std::string, int64_t> earliest;
  for (const OpsLeaf& l : leaves_) {
    auto [it, inserted] = earliest.try_emplace(l.plugin, l.not_after);
    if (!inserted) it->second = std::min(it->second, l.not_after);
  }
  for (const auto& [plugin, not_after] : earliest)
    metrics_->SetCertificateExpiry(plugin, not_after);
  if (Result<LedgerCheckpoint> head = stores_.ledger->Head(); head.ok())
    metrics_->SetLedgerRows(head->count);
  if (Status s = observer_->PublishGauges(); !s.ok()) {
    Audit(DumpJson({{"event", "metrics_gauges_error"}, {"detail", s.message()}}));
  }
  return Status::Ok();
}

}  // namespace clawguard::host
