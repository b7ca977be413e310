// host_app.cpp — the running host (see host_app.h): start, stop and what a stop leaves to plugin
// threads still running, the background loop, readiness and the two listeners' handlers. Create
// and its steps are host_app_create.cpp; which packages load, host_app_plugins.cpp.
#include "host/app/host_app.h"

#include <nlohmann/json.hpp>

#include "clawguard/json_dump.h"
#include "host/app/audit_sink.h"
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
  HostStores stores;                          // the DLQ among them
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
  static Mutex* mu = new Mutex;
  static auto* graveyard = new std::vector<std::unique_ptr<Abandoned>>;
  MutexLock lock(*mu);
  graveyard->push_back(std::move(a));
}
}  // namespace

HostApp::~HostApp() {
  Stop();
  const bool plugin_threads = dispatcher_ != nullptr && dispatcher_->running_threads() > 0;
  const int64_t deliveries = pipeline_ != nullptr ? pipeline_->deliveries_unfinished() : 0;
  if (plugin_threads || deliveries > 0 || workers_abandoned_) {
    if (deliveries > 0 && !plugin_threads) {
      Audit(DumpJson({{"event", "deliveries_abandoned"},
                      {"deliveries", deliveries},
                      {"detail",
                       "deliveries still run after shutdown: the pipeline, stores, ERP sender, "
                       "breakers and metrics they use are leaked on purpose; their rows stay "
                       "claimed until the claim ends"}}));
    }
    if (plugin_threads) {
      Audit(
          DumpJson({{"event", "plugin_threads_abandoned"},
                    {"threads", dispatcher_->running_threads()},
                    {"detail",
                     "plugin threads still run after shutdown: their plugins, stores, ERP sender, "
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
    return;
  }
  fault_metrics_->store(nullptr);  // metrics_ is freed with this HostApp
}

void HostApp::Audit(const std::string& line) {
  if (audit_) audit_->Write(line);
}

Status HostApp::ReopenLogs() {
  Status s = audit_->Reopen();
  if (s.ok()) {
    Audit(DumpJson({{"event", "audit_log_reopened"}}));
  } else {
    Audit(DumpJson(
        {{"event", "audit_log_reopen_failed"}, {"level", "error"}, {"detail", s.message()}}));
  }
  return s;
}

Status HostApp::Start() {
  {
    MutexLock lock(stop_mu_);
    if (started_ || stopping_) return Status(Reason::kInternal, "host: already started or stopped");
    started_ = true;
  }
  CLAWGUARD_RETURN_IF_ERROR(main_->Start());
  CLAWGUARD_RETURN_IF_ERROR(admin_->Start());
  // The workers that wait on peers (outbox, DLQ replays, reconciler) before the loop that posts
  // them.
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
    MutexLock lock(stop_mu_);
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
    const int abandoned =
        ops_loop_->StopWorkers(config_->plugins.handler_timeout + config_->erp.timeout);
    if (abandoned > 0) {
      workers_abandoned_ = true;
      Audit(DumpJson(
          {{"event", "background_workers_abandoned"},
           {"workers", abandoned},
           {"detail",
            "background workers still in an ERP call or a plugin after shutdown: what they use is "
            "leaked on purpose; their outbox rows stay claimed until the claim ends"}}));
    }
  }
  if (dispatcher_ != nullptr && config_ != nullptr) {
    // A plugin that timed out may still run; give it (and an ERP call it is in) time to return.
    (void)dispatcher_->WaitIdle(config_->plugins.handler_timeout + config_->erp.timeout);
  }
  // Sandboxed plugins: their workers end here, before anything their deliveries used is freed
  // (no fault is reported for them).
  for (const LoadedPlugin& p : plugins_) {
    if (std::shared_ptr<PluginWorker> w = WorkerOf(p)) w->Stop();
  }
  if (pipeline_ != nullptr && config_ != nullptr) {
    // A delivery answered at the pipeline's deadline may still run: in an ERP call, in its
    // outcome write, or (in process) in its plugin. Its task returns soon once its worker is gone;
    // the destructor keeps what a task still running then uses.
    (void)pipeline_->WaitDeliveriesFinished(config_->plugins.handler_timeout +
                                            config_->erp.timeout);
  }
}

void HostApp::BackgroundLoop() {
  // Every kOpsLoopPeriodMs: operations generation (≤ 1 s, ARCHITECTURE.md "Operator commands"),
  // capability pauses, work posted to the background workers (DLQ replays, outbox retries,
  // reconciler) and, less often, gauges (HostOpsLoop::Tick). Nothing here waits on a peer.
  MutexLock lock(stop_mu_);
  while (!stopping_) {
    lock.Unlock();
    ops_loop_->Tick();
    if (on_tick_) on_tick_();
    lock.Lock();
    stop_mu_.WaitFor(stop_cv_, std::chrono::milliseconds(kOpsLoopPeriodMs),
                     [this]() CLAWGUARD_REQUIRES(stop_mu_) { return stopping_; });
  }
}

uint16_t HostApp::main_port() const { return main_->port(); }
uint16_t HostApp::admin_port() const { return admin_->port(); }

std::string HostApp::ReadyJson() const {
  nlohmann::json plugins = nlohmann::json::array();
  for (const LoadedPlugin& p : plugins_) {
    const Verdict& v = p.verdict();
    nlohmann::json entry = {{"name", v.name},
                            {"version", v.version},
                            {"sha256", v.sha256},
                            {"publisher", v.publisher},
                            {"isolation", "none"}};
    // A sandboxed plugin says how its worker is: serving, or failed after a crash loop (its
    // routes answer 503 plugin_unavailable until the host restarts).
    if (std::shared_ptr<PluginWorker> w = WorkerOf(p)) {
      entry["isolation"] = "sandbox";
      entry["state"] = w->failed() ? "failed" : "serving";
      entry["worker_faults"] = w->faults();
    }
    plugins.push_back(std::move(entry));
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
                   {"fd_limit",
                    {{"soft", fd_limit_.soft},
                     {"hard", fd_limit_.hard},
                     {"soft_before", fd_limit_.soft_before}}},
                   {"background", ops_loop_->StatusJson()}});
}

std::variant<HttpResponse, Deferred> HostApp::FrontMain(const HttpRequest& request) const {
  if (request.method == "GET") {
    const std::string path = PathOf(request.target);
    if (path == "/healthz") return JsonAnswer(200, R"({"status":"ok"})");
    if (path == "/readyz") {
      // Still ready while it sheds idle connections (signed webhooks get in), and says so.
      if (!ready_.load()) return JsonAnswer(503, R"({"ready":false})");
      return main_->connection_stats().shedding
                 ? JsonAnswer(200, R"({"ready":true,"shedding":true})")
                 : JsonAnswer(200, R"({"ready":true})");
    }
  }
  // Refusals and replays from memory are answered here, on the I/O thread; a claim goes to a
  // handler thread with what Front learnt (the request is authenticated once).
  std::variant<WebhookPipeline::Handled, WebhookPipeline::Admitted> front =
      pipeline_->Front(request);
  if (auto* h = std::get_if<WebhookPipeline::Handled>(&front)) return std::move(h->response);
  const WebhookPipeline* pipeline = pipeline_.get();
  Deferred later;
  later.start = [pipeline, admitted = std::get<WebhookPipeline::Admitted>(std::move(front))](
                    HttpRequest r, Responder respond) {
    pipeline->FinishAsync(std::move(r), admitted, std::move(respond));
  };
  return later;
}

HttpResponse HostApp::HandleAdmin(const HttpRequest& request) const {
  // Every path here is behind the bearer token (RequireBearerToken wraps this handler).
  const std::string path = PathOf(request.target);
  if (request.method == "GET" && path == "/readyz")
    return JsonAnswer(ready_.load() ? 200 : 503, ReadyJson());
  if (path == "/metrics") return metrics_->ServeMetrics(request);
  if (path == "/ops") return ops_page_(request);
  return JsonAnswer(404, R"({"error":"not_found"})");
}

}  // namespace clawguard::host
