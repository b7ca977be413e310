// host_app.cpp — stores, loader, plugins, routes, failure handling, listeners and the background
// loop (see host_app.h).
#include "host/app/host_app.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include <fcntl.h>

#include "clawguard/json_dump.h"
#include "clawguard/limits.h"
#include "host/http/admin_auth.h"
#include "host/http/fd_budget.h"
#include "host/observe/json_log.h"
#include "host/observe/ops_page.h"
#include "loader/audit_log.h"
#include "runtime/thread_name.h"

namespace clawguard::host {
namespace {

HttpResponse JsonAnswer(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.headers.Set("Content-Type", "application/json");
  r.body = std::move(body);
  return r;
}

std::string PathOf(const std::string& target) { return target.substr(0, target.find('?')); }

}  // namespace

// AuditSink appends JSON lines to log.audit (or stderr), each one first re-rendered through the
// host's redaction rules (JsonLogger::RedactJsonLine: secret field names, host.yaml log.redact,
// value shapes, and the host's own secrets — admin token, erp.auth, every route secret, raw and
// base64). A line that is not a JSON object is written as an "unparseable_log_line" event.
// Thread-safe; closed when the last owner (the HostApp or a plugin thread's ErpEnv copy) lets go.
class HostApp::AuditSink {
 public:
  // Create: kConfigInvalid when log.audit cannot be opened for appending or log.redact is invalid.
  static Result<std::shared_ptr<AuditSink>> Create(const HostConfig& c) {
    JsonLogger::Options options;
    options.redact = c.log.redact;
    const auto known = [&options](const SecretBytes& s) {
      // Whatever its length: host.yaml refuses short secrets, and a leak is worse than a scrubbed word.
      if (!s.empty()) options.known_secrets.push_back(s.Clone());
    };
    known(c.admin.token);
    known(c.erp.auth);
    // erp.auth is a whole header value ("Bearer <token>"): the credential after the scheme too.
    const std::string_view auth = InsecureSecretAccess::View(c.erp.auth);
    if (const size_t space = auth.find(' '); space != std::string_view::npos) {
      const SecretBytes credential(auth.substr(space + 1));
      known(credential);
    }
    for (const auto& [route, secrets] : c.webhooks.routes) {
      known(secrets.current);
      if (secrets.previous) known(*secrets.previous);
    }
    // The redactor never writes (its sink is unused) nor reads its clock; the process clock keeps
    // it valid for as long as an abandoned plugin thread may hold the sink.
    CLAWGUARD_ASSIGN_OR_RETURN(
        std::unique_ptr<JsonLogger> redactor,
        JsonLogger::Create(std::move(options), [](std::string_view) {}, SystemClock::Instance()));
    std::FILE* file = nullptr;
    if (!c.log.audit.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(std::filesystem::path(c.log.audit).parent_path(), ec);
      // O_NONBLOCK and a regular file only: a FIFO at log.audit must not hang the start.
      Result<UniqueFd> fd = OpenRegularFileNonBlocking(c.log.audit, O_WRONLY | O_APPEND | O_CREAT, "audit log");
      if (!fd.ok()) return Status(Reason::kConfigInvalid, c.source + ": log.audit: " + fd.error().message());
      file = ::fdopen(fd->get(), "a");
      if (file == nullptr) {
        return Status(Reason::kConfigInvalid, c.source + ": log.audit: cannot open " + c.log.audit + " for appending");
      }
      (void)fd->Release();  // owned by |file| now
    }
    return std::shared_ptr<AuditSink>(new AuditSink(std::move(redactor), file));
  }
  ~AuditSink() {
    if (file_ != nullptr) std::fclose(file_);
  }
  AuditSink(const AuditSink&) = delete;
  AuditSink& operator=(const AuditSink&) = delete;
  void Write(const std::string& line) {
    const std::string clean = redactor_->RedactJsonLine(line);
    std::lock_guard lock(mu_);
    std::FILE* f = file_ != nullptr ? file_ : stderr;
    std::fputs(clean.c_str(), f);
    std::fputc('\n', f);
    std::fflush(f);
  }

 private:
  AuditSink(std::unique_ptr<JsonLogger> redactor, std::FILE* file) : redactor_(std::move(redactor)), file_(file) {}
  const std::unique_ptr<const JsonLogger> redactor_;
  std::mutex mu_;
  std::FILE* const file_;
};

namespace {
// Abandoned holds what a still-running plugin thread may touch, once its HostApp is gone.
struct Abandoned {
  // A background worker still in its item (HostOpsLoop::StopWorkers gave up on it) runs the
  // loop's passes: the loop, the observer, the retry worker and the reconciler.
  std::unique_ptr<HostOpsLoop> ops_loop;
  std::unique_ptr<HostObserver> observer;
  std::unique_ptr<RetryWorker> retry;
  std::unique_ptr<Reconciler> reconciler;
  std::unique_ptr<WebhookPipeline> pipeline;  // destroyed first (it uses what follows)
  std::unique_ptr<fiber::Carriers> carriers;  // a hung plugin's fiber never returns to its carrier
  HostStores stores;  // the DLQ among them
  std::unique_ptr<ErpSender> sender;
  std::unique_ptr<Loader> loader;
  std::vector<LoadedPlugin> plugins;
  std::shared_ptr<PluginDispatcher> dispatcher;
  std::unique_ptr<HostMetrics> metrics;
  std::unique_ptr<KeyBreaker> key_breaker;
  std::unique_ptr<EndpointBreaker> endpoint_breaker;
  std::unique_ptr<RateLimiter> limiter;
  std::unique_ptr<CapabilityPauses> pauses;
  std::unique_ptr<RetentionAdvisor> advisor;
};
// Graveyard is never freed (and stays reachable, so leak checkers do not report it).
void Bury(std::unique_ptr<Abandoned> a) {
  static std::mutex* mu = new std::mutex;
  static auto* graveyard = new std::vector<std::unique_ptr<Abandoned>>;
  std::lock_guard lock(*mu);
  graveyard->push_back(std::move(a));
}
}  // namespace

HostApp::~HostApp() {
  Stop();
  const bool plugin_threads = dispatcher_ != nullptr && dispatcher_->running_threads() > 0;
  if (plugin_threads || workers_abandoned_) {
    if (plugin_threads) {
      Audit(DumpJson({{"event", "plugin_threads_abandoned"},
                  {"threads", dispatcher_->running_threads()},
                  {"detail", "plugin threads still run after shutdown: their plugins, stores, ERP sender, "
                             "breakers, metrics and capability pauses are leaked on purpose"}}));
    }
    auto a = std::make_unique<Abandoned>();
    if (workers_abandoned_) {
      a->ops_loop = std::move(ops_loop_);
      a->observer = std::move(observer_);
      a->retry = std::move(retry_);
      a->reconciler = std::move(reconciler_);
    } else {
      // The objects that use these (observer, loop) go first; the plugin threads only reach what
      // is kept here (the pipeline whose Dispatch they run in, their ErpEnv copy and cg_call).
      ops_loop_.reset();
      observer_.reset();
    }
    // A plugin thread of FinishAsync runs inside the pipeline's Dispatch until its plugin returns.
    a->pipeline = std::move(pipeline_);
    a->carriers = std::move(carriers_);
    a->stores = std::move(stores_);
    a->sender = std::move(sender_);
    a->loader = std::move(loader_);
    a->plugins = std::move(plugins_);
    a->dispatcher = dispatcher_;
    a->metrics = std::move(metrics_);
    a->key_breaker = std::move(key_breaker_);
    a->endpoint_breaker = std::move(endpoint_breaker_);
    a->limiter = std::move(limiter_);
    a->pauses = std::move(pauses_);
    a->advisor = std::move(advisor_);
    Bury(std::move(a));
  }
}

void HostApp::Audit(const std::string& line) {
  if (audit_) audit_->Write(line);
}

Result<std::unique_ptr<HostApp>> HostApp::Create(const std::shared_ptr<const HostConfig>& config, const Clock& clock,
                                                 const StoreFactory& open_store) {
  if (config == nullptr || !open_store) return Status(Reason::kInternal, "host: no configuration or store factory");
  std::unique_ptr<HostApp> app(new HostApp());
  app->config_ = config;
  app->clock_ = &clock;
  const HostConfig& c = *config;
  CLAWGUARD_ASSIGN_OR_RETURN(app->audit_, AuditSink::Create(c));
  // Descriptors first: the listener's bound depends on them (host/http/fd_budget.h).
  app->fd_limit_ = RaiseFdLimit();
  const uint64_t configured =
      c.listen.max_connections > 0 ? c.listen.max_connections : limits::kDefaultMaxConnections;
  CLAWGUARD_ASSIGN_OR_RETURN(app->max_connections_,
                             ListenerBudget(configured, app->fd_limit_.soft, static_cast<uint64_t>(c.listen.handlers)));
  app->Audit(DumpJson({{"event", "fd_limit"},
                   {"soft_before", app->fd_limit_.soft_before},
                   {"soft", app->fd_limit_.soft},
                   {"hard", app->fd_limit_.hard},
                   {"reserved", FdsReserved(static_cast<uint64_t>(c.listen.handlers))},
                   {"max_connections", app->max_connections_},
                   {"max_connections_configured", configured}}));
  // The sink, not the app: an abandoned plugin thread may log after the app is gone.
  const AuditFn audit = [sink = app->audit_](const std::string& line) { sink->Write(line); };

  CLAWGUARD_ASSIGN_OR_RETURN(app->stores_, open_store(c.store, clock));
  if (!app->stores_.idempotency || !app->stores_.outbox || !app->stores_.ledger || !app->stores_.dlq) {
    return Status(Reason::kStoreUnavailable,
                  "host: the store factory returned an incomplete store (idempotency, outbox, ledger and DLQ are "
                  "all required)");
  }
  // Replays of completed records are answered from memory (dropped on every new operations
  // generation): the hot path of a retry storm never reaches the store.
  {
    CLAWGUARD_ASSIGN_OR_RETURN(std::unique_ptr<CachingIdempotencyStore> cached,
                               CachingIdempotencyStore::Create(std::move(app->stores_.idempotency)));
    app->cache_ = cached.get();
    app->stores_.idempotency = std::move(cached);
  }

  ErpClientOptions erp_options;
  erp_options.base_url = c.erp.base_url;
  erp_options.timeout = c.erp.timeout;
  erp_options.ca_file = c.erp.ca;
  erp_options.auth = c.erp.auth.Clone();
  erp_options.keep_alive = c.erp.keep_alive;
  CLAWGUARD_ASSIGN_OR_RETURN(std::unique_ptr<ErpClient> client, ErpClient::Create(std::move(erp_options)));
  app->sender_ = MakeErpSender(std::move(client));

  LoaderOptions lo;
  lo.trust_policy_path = c.plugins.trust;
  lo.allowlist_path = c.plugins.allowlist;
  lo.ledger = app->stores_.ledger.get();
  lo.clock = &clock;
  if (!c.log.audit.empty()) lo.audit_log_path = c.log.audit;
  if (!c.log.anchor.empty()) lo.anchor_path = c.log.anchor;
  lo.host_api = HostApi();
  CLAWGUARD_ASSIGN_OR_RETURN(app->loader_, Loader::Create(std::move(lo)));
  CLAWGUARD_RETURN_IF_ERROR(app->LoadPlugins(c));

  // Routes: host.yaml routes × loaded manifests' webhooks.
  std::vector<PipelineRoute> routes;
  std::vector<std::pair<std::string, std::string>> route_names;
  for (const LoadedPlugin& p : app->plugins_) {
    const Manifest& m = p.manifest();
    for (const WebhookRouteSpec& w : m.webhooks) {
      const auto secrets = c.webhooks.routes.find(m.name + "/" + w.route);
      if (secrets == c.webhooks.routes.end()) {
        app->Audit(DumpJson({{"event", "route_unconfigured"}, {"plugin", m.name}, {"route", w.route},
                         {"detail", "no secret in host.yaml webhooks.routes: the route answers 404"}}));
        continue;
      }
      CLAWGUARD_ASSIGN_OR_RETURN(WebhookVerifier verifier, MakeVerifier(secrets->second, c.webhooks.tolerance, clock));
      routes.push_back(PipelineRoute{m.name, w.route, w.level, w.business_key, std::move(verifier)});
      route_names.emplace_back(m.name, w.route);
    }
  }
  CLAWGUARD_RETURN_IF_ERROR(app->CreateGuards(c, route_names));

  // Dispatch targets and the ERP environment every gateway and the retry worker share.
  std::vector<DispatchTarget> targets;
  auto caps = std::make_shared<std::vector<ErpPluginCaps>>();
  for (const LoadedPlugin& p : app->plugins_) {
    const Manifest& m = p.manifest();
    targets.push_back(DispatchTarget{m.name, p.plugin(), m.erp_capabilities});
    CLAWGUARD_ASSIGN_OR_RETURN(CapabilitySet set, CapabilitySet::Create(m.erp_capabilities));
    caps->push_back(ErpPluginCaps{m.name, std::move(set), m.version});
  }
  ErpEnv env;
  env.outbox = app->stores_.outbox.get();
  env.sender = app->sender_.get();
  env.clock = &clock;
  env.retry.base = c.erp.retry.base;
  env.retry.max = c.erp.retry.max;
  env.retry.attempts = c.erp.retry.attempts;
  env.retry.jitter_percent = c.erp.retry.jitter_percent;
  env.retry.floor_429 = c.erp.retry.floor_429;
  env.send_timeout = c.erp.timeout;  // a send owns its outbox row this long plus a margin
  env.audit = audit;
  env.dlq = app->stores_.dlq.get();
  env.endpoint_breaker = app->endpoint_breaker_.get();
  env.metrics = app->metrics_.get();
  env.pauses = app->pauses_.get();
  env.plugins = std::move(caps);
  env.records = app->stores_.idempotency.get();  // names the plugin of a row no loaded plugin made
  CLAWGUARD_ASSIGN_OR_RETURN(app->retry_, RetryWorker::Create(env));

  DispatchOptions dopts;
  dopts.handler_timeout = c.plugins.handler_timeout;
  dopts.lease = c.idempotency.lease;
  dopts.erp = env;
  CLAWGUARD_ASSIGN_OR_RETURN(app->dispatcher_, PluginDispatcher::Create(std::move(dopts), std::move(targets)));
  PipelineGuards guards;
  guards.limiter = app->limiter_.get();
  guards.key_breaker = app->key_breaker_.get();
  guards.dlq = app->stores_.dlq.get();
  guards.metrics = app->metrics_.get();
  guards.advisor = app->advisor_.get();
  guards.clock = &clock;
  guards.audit = audit;
  if (c.listen.fibers) {
    try {
      app->carriers_ = std::make_unique<fiber::Carriers>(c.listen.carriers, "cg-carrier");
    } catch (const std::exception& e) {
      return Status(Reason::kInternal, std::string("host: cannot start the carrier threads (listen.execution: fibers): ") +
                                           e.what());
    }
  }
  CLAWGUARD_ASSIGN_OR_RETURN(
      app->pipeline_,
      WebhookPipeline::Create(PipelineOptions{c.listen.max_body, c.listen.max_headers, c.idempotency.lease,
                                              c.listen.handlers, app->carriers_.get(),
                                              c.plugins.handler_timeout + std::chrono::seconds(1)},
                              std::move(routes), *app->stores_.idempotency, app->dispatcher_->AsDispatcher(),
                              std::move(guards)));

  CLAWGUARD_RETURN_IF_ERROR(app->CreateObserver());
  OpsLoopDeps deps;
  deps.idempotency = app->stores_.idempotency.get();
  deps.dlq = app->stores_.dlq.get();
  deps.retry = app->retry_.get();
  deps.pipeline = app->pipeline_.get();
  deps.pauses = app->pauses_.get();
  deps.advisor = app->advisor_.get();
  deps.observer = app->observer_.get();
  deps.clock = &clock;
  deps.audit = audit;
  deps.owner = ReplayOwner();
  deps.retention_ms = c.idempotency.retention.count();
  ReconcilerOptions ro;
  // Stuck = untouched for two leases (a live worker renews every lease/3).
  ro.stuck_for = std::max<std::chrono::milliseconds>(2 * c.idempotency.lease, std::chrono::seconds(10));
  ro.retention = c.idempotency.retention;
  ro.tombstone_ttl = c.idempotency.tombstones;
  const WebhookPipeline* pipeline = app->pipeline_.get();
  CLAWGUARD_ASSIGN_OR_RETURN(
      app->reconciler_,
      Reconciler::Create(*app->stores_.idempotency, *app->stores_.dlq, clock, ro, [pipeline](const IdempotencyRecord& r) {
        return pipeline->Redeliver(r.plugin, r.route, r.key, DlqRequest{r.webhook_id, r.request_content_type, r.request_body})
            .done;
      }));
  deps.reconciler = app->reconciler_.get();
  deps.cache = app->cache_;
  deps.metrics = app->metrics_.get();
  deps.plugin_threads = [dispatcher = app->dispatcher_.get()] { return dispatcher->running_threads(); };
  CLAWGUARD_ASSIGN_OR_RETURN(app->ops_loop_, HostOpsLoop::Create(std::move(deps)));
  HostObserver* observer = app->observer_.get();
  app->ops_page_ = MakeOpsHandler([observer] { return observer->Snapshot(); });

  HostApp* raw = app.get();
  ServerOptions main_options;
  main_options.address = c.listen.address;
  main_options.max_body = c.listen.max_body;
  main_options.max_headers = c.listen.max_headers;
  main_options.workers = std::max(1, c.listen.workers);
  // Deliveries run on the pipeline's own threads (FinishAsync, bounded by listen.handlers); the
  // server's handler pool serves nothing here (FrontMain answers or starts, never defers a run).
  main_options.handler_threads = 1;
  main_options.max_connections = app->max_connections_;
  main_options.max_connections_per_peer = std::min<uint64_t>(
      app->max_connections_,
      c.listen.max_connections_per_peer > 0 ? c.listen.max_connections_per_peer : limits::kDefaultMaxConnectionsPerPeer);
  if (c.listen.tls) main_options.tls = ServerTls{c.listen.tls->cert, c.listen.tls->key};
  CLAWGUARD_ASSIGN_OR_RETURN(app->main_,
                             HttpServer::CreateWithFront(std::move(main_options),
                                                FrontHandler([raw](const HttpRequest& r) { return raw->FrontMain(r); })));
  CLAWGUARD_ASSIGN_OR_RETURN(Handler admin_handler,
                             RequireBearerToken(c.admin.token.Clone(),
                                                [raw](const HttpRequest& r) { return raw->HandleAdmin(r); }));
  ServerOptions admin_options;
  admin_options.address = c.admin.address;
  admin_options.workers = 1;
  admin_options.max_connections = limits::kAdminMaxConnections;
  admin_options.max_connections_per_peer = limits::kAdminMaxConnections;
  if (c.admin.tls) admin_options.tls = ServerTls{c.admin.tls->cert, c.admin.tls->key};
  CLAWGUARD_ASSIGN_OR_RETURN(app->admin_, HttpServer::Create(std::move(admin_options), std::move(admin_handler)));
  return app;
}

Status HostApp::CreateGuards(const HostConfig& c, const std::vector<std::pair<std::string, std::string>>& routes) {
  CLAWGUARD_ASSIGN_OR_RETURN(metrics_, HostMetrics::Create(MetricsNamesFor(routes, plugins_)));
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
    fixed.plugins.push_back(OpsPlugin{v.name, v.version, v.publisher, v.sha256, /*loaded=*/true, "", ""});
  }
  for (const RefusedPackage& r : refused_) {
    const std::string name = r.name.empty() ? std::filesystem::path(r.package).filename().string() : r.name;
    fixed.plugins.push_back(OpsPlugin{name, r.version, r.publisher, r.sha256, /*loaded=*/false, r.reason, r.detail});
  }
  fixed.leaves = leaves_;
  fixed.endpoints = MetricsNamesFor({}, plugins_).endpoints;
  HostObserver::Sources sources{metrics_.get(), endpoint_breaker_.get(), key_breaker_.get(), stores_.dlq.get(),
                                clock_};
  CLAWGUARD_ASSIGN_OR_RETURN(observer_, HostObserver::Create(sources, std::move(fixed)));

  // Start-up metrics: refusals by loader reason ("superseded" is not a refusal), leaf expiry (the
  // earliest of a plugin's signers), ledger rows, and the gauges' first values.
  for (const RefusedPackage& r : refused_) {
    if (std::optional<Reason> reason = ReasonFromName(r.reason)) metrics_->RecordPluginLoadRefusal(*reason);
  }
  std::map<std::string, int64_t> earliest;
  for (const OpsLeaf& l : leaves_) {
    auto [it, inserted] = earliest.try_emplace(l.plugin, l.not_after);
    if (!inserted) it->second = std::min(it->second, l.not_after);
  }
  for (const auto& [plugin, not_after] : earliest) metrics_->SetCertificateExpiry(plugin, not_after);
  if (Result<LedgerCheckpoint> head = stores_.ledger->Head(); head.ok()) metrics_->SetLedgerRows(head->count);
  if (Status s = observer_->PublishGauges(); !s.ok()) {
    Audit(DumpJson({{"event", "metrics_gauges_error"}, {"detail", s.message()}}));
  }
  return Status::Ok();
}

Status HostApp::Start() {
  {
    std::lock_guard lock(stop_mu_);
    if (started_ || stopping_) return Status(Reason::kInternal, "host: already started or stopped");
    started_ = true;
  }
  CLAWGUARD_RETURN_IF_ERROR(main_->Start());
  CLAWGUARD_RETURN_IF_ERROR(admin_->Start());
  // The workers that wait on peers (outbox, DLQ replays, reconciler) before the loop that posts them.
  CLAWGUARD_RETURN_IF_ERROR(ops_loop_->StartWorkers());
  background_thread_ = std::thread([this] {
    NameThisThread("cg-background");
    BackgroundLoop();
  });
  ready_.store(true);
  return Status();
}

void HostApp::Stop() {
  {
    std::lock_guard lock(stop_mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  ready_.store(false);
  stop_cv_.notify_all();
  if (main_) main_->Stop();
  if (admin_) admin_->Stop();
  if (background_thread_.joinable()) background_thread_.join();
  if (ops_loop_ != nullptr && config_ != nullptr) {
    // A worker's item ends by itself within erp.timeout (a send) or handler_timeout + erp.timeout
    // (a re-drive runs the plugin); one still running then is abandoned, its send's row still
    // owned by its claim (a later send carries the same Idempotency-Key).
    const int abandoned = ops_loop_->StopWorkers(config_->plugins.handler_timeout + config_->erp.timeout);
    if (abandoned > 0) {
      workers_abandoned_ = true;
      Audit(DumpJson({{"event", "background_workers_abandoned"},
                  {"workers", abandoned},
                  {"detail", "background workers still in an ERP call or a plugin after shutdown: what they use is "
                             "leaked on purpose; their outbox rows stay claimed until the claim ends"}}));
    }
  }
  if (dispatcher_ != nullptr && config_ != nullptr) {
    // A plugin that timed out may still run; give it (and an ERP call it is in) time to return.
    (void)dispatcher_->WaitIdle(config_->plugins.handler_timeout + config_->erp.timeout);
  }
}

void HostApp::BackgroundLoop() {
  // Every kOpsLoopPeriodMs: operations generation (≤ 1 s, ARCHITECTURE.md "Operator commands"),
  // capability pauses, work posted to the background workers (DLQ replays, outbox retries,
  // reconciler) and, less often, gauges (HostOpsLoop::Tick). Nothing here waits on a peer.
  std::unique_lock lock(stop_mu_);
  while (!stopping_) {
    lock.unlock();
    ops_loop_->Tick();
    lock.lock();
    stop_cv_.wait_for(lock, std::chrono::milliseconds(kOpsLoopPeriodMs), [this] { return stopping_; });
  }
}

uint16_t HostApp::main_port() const { return main_->port(); }
uint16_t HostApp::admin_port() const { return admin_->port(); }

std::string HostApp::ReadyJson() const {
  nlohmann::json plugins = nlohmann::json::array();
  for (const LoadedPlugin& p : plugins_) {
    const Verdict& v = p.verdict();
    plugins.push_back({{"name", v.name}, {"version", v.version}, {"sha256", v.sha256}, {"publisher", v.publisher}});
  }
  nlohmann::json refused = nlohmann::json::array();
  for (const RefusedPackage& r : refused_) {
    refused.push_back({{"package", r.package}, {"reason", r.reason}, {"detail", r.detail}});
  }
  const ConnectionStats conns = main_->connection_stats();
  return DumpJson({{"ready", ready_.load()},
               {"mode", loader_->mode()},
               {"plugins", plugins},
               {"refused", refused},
               {"ledger_anchor", LedgerAnchorStatusToJson(loader_->ledger_anchor())},
               {"shedding", conns.shedding},
               {"connections",
                {{"open", conns.open},
                 {"max", conns.max_connections},
                 {"max_per_peer", conns.max_connections_per_peer},
                 {"peers", conns.peers},
                 {"shed_total", conns.shed_total},
                 {"refused_total", conns.refused_total}}},
               {"fd_limit", {{"soft", fd_limit_.soft}, {"hard", fd_limit_.hard}, {"soft_before", fd_limit_.soft_before}}},
               {"background", ops_loop_->StatusJson()}});
}

std::variant<HttpResponse, Deferred> HostApp::FrontMain(const HttpRequest& request) const {
  if (request.method == "GET") {
    const std::string path = PathOf(request.target);
    if (path == "/healthz") return JsonAnswer(200, R"({"status":"ok"})");
    if (path == "/readyz") {
      // Still ready while it sheds idle connections (signed webhooks get in), and says so.
      if (!ready_.load()) return JsonAnswer(503, R"({"ready":false})");
      return main_->connection_stats().shedding ? JsonAnswer(200, R"({"ready":true,"shedding":true})")
                                                : JsonAnswer(200, R"({"ready":true})");
    }
  }
  // Refusals and replays from memory are answered here, on the I/O thread; a claim goes to a
  // handler thread with what Front learnt (the request is authenticated once).
  std::variant<WebhookPipeline::Handled, WebhookPipeline::Admitted> front = pipeline_->Front(request);
  if (auto* h = std::get_if<WebhookPipeline::Handled>(&front)) return std::move(h->response);
  const WebhookPipeline* pipeline = pipeline_.get();
  Deferred later;
  later.start = [pipeline, admitted = std::get<WebhookPipeline::Admitted>(std::move(front))](HttpRequest r,
                                                                                           Responder respond) {
    pipeline->FinishAsync(std::move(r), admitted, std::move(respond));
  };
  return later;
}

HttpResponse HostApp::HandleAdmin(const HttpRequest& request) const {
  // Every path here is behind the bearer token (RequireBearerToken wraps this handler).
  const std::string path = PathOf(request.target);
  if (request.method == "GET" && path == "/readyz") return JsonAnswer(ready_.load() ? 200 : 503, ReadyJson());
  if (path == "/metrics") return metrics_->ServeMetrics(request);
  if (path == "/ops") return ops_page_(request);
  return JsonAnswer(404, R"({"error":"not_found"})");
}

}  // namespace clawguard::host
