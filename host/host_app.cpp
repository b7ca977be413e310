// host_app.cpp — stores, loader, plugins, routes, listeners and the retry worker.
#include "host/host_app.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include "clawguard/semver.h"
#include "host/admin_auth.h"

namespace clawguard::host {
namespace {

constexpr std::chrono::milliseconds kRetryPoll{200};
constexpr int64_t kDrainBatch = 100;

std::string Dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

HttpResponse JsonAnswer(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.headers.Set("Content-Type", "application/json");
  r.body = std::move(body);
  return r;
}

std::string PathOf(const std::string& target) { return target.substr(0, target.find('?')); }

struct Candidate {
  std::string path;
  Verdict verdict;
  SemVer version;
};

}  // namespace

// AuditSink appends JSON lines to log.audit (or stderr). Thread-safe; closed when the last owner
// (the HostApp or a plugin thread's ErpEnv copy) lets go.
class HostApp::AuditSink {
 public:
  explicit AuditSink(std::FILE* file) : file_(file) {}
  ~AuditSink() {
    if (file_ != nullptr) std::fclose(file_);
  }
  AuditSink(const AuditSink&) = delete;
  AuditSink& operator=(const AuditSink&) = delete;
  void Write(const std::string& line) {
    std::lock_guard lock(mu_);
    std::FILE* f = file_ != nullptr ? file_ : stderr;
    std::fputs(line.c_str(), f);
    std::fputc('\n', f);
    std::fflush(f);
  }

 private:
  std::mutex mu_;
  std::FILE* const file_;
};

namespace {
// Abandoned holds what a still-running plugin thread may touch, once its HostApp is gone.
struct Abandoned {
  HostStores stores;
  std::unique_ptr<ErpSender> sender;
  std::unique_ptr<Loader> loader;
  std::vector<LoadedPlugin> plugins;
  std::shared_ptr<PluginDispatcher> dispatcher;
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
  if (dispatcher_ != nullptr && dispatcher_->running_threads() > 0) {
    Audit(Dump({{"event", "plugin_threads_abandoned"},
                {"threads", dispatcher_->running_threads()},
                {"detail", "plugin threads still run after shutdown: their plugins, stores and ERP sender are "
                           "leaked on purpose"}}));
    auto a = std::make_unique<Abandoned>();
    a->stores = std::move(stores_);
    a->sender = std::move(sender_);
    a->loader = std::move(loader_);
    a->plugins = std::move(plugins_);
    a->dispatcher = dispatcher_;
    Bury(std::move(a));
  }
}

void HostApp::Audit(const std::string& line) {
  if (audit_) audit_->Write(line);
}

Result<std::unique_ptr<HostApp>> HostApp::Create(std::shared_ptr<const HostConfig> config, const Clock& clock,
                                                 const StoreFactory& open_store) {
  if (config == nullptr || !open_store) return Status(Reason::kInternal, "host: no configuration or store factory");
  std::unique_ptr<HostApp> app(new HostApp());
  app->config_ = config;
  app->clock_ = &clock;
  const HostConfig& c = *config;
  std::FILE* audit_file = nullptr;
  if (!c.log.audit.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(c.log.audit).parent_path(), ec);
    audit_file = std::fopen(c.log.audit.c_str(), "a");
    if (audit_file == nullptr) {
      return Status(Reason::kConfigInvalid, c.source + ": log.audit: cannot open " + c.log.audit + " for appending");
    }
  }
  app->audit_ = std::make_shared<AuditSink>(audit_file);

  CLAWGUARD_ASSIGN_OR_RETURN(app->stores_, open_store(c.store, clock));
  if (!app->stores_.idempotency || !app->stores_.outbox || !app->stores_.ledger) {
    return Status(Reason::kStoreUnavailable, "host: the store factory returned an incomplete store");
  }

  ErpClientOptions erp_options;
  erp_options.base_url = c.erp.base_url;
  erp_options.timeout = c.erp.timeout;
  erp_options.ca_file = c.erp.ca;
  erp_options.auth = c.erp.auth.Clone();
  CLAWGUARD_ASSIGN_OR_RETURN(std::unique_ptr<ErpClient> client, ErpClient::Create(std::move(erp_options)));
  app->sender_ = MakeErpSender(std::move(client));

  ErpEnv env;
  env.outbox = app->stores_.outbox.get();
  env.sender = app->sender_.get();
  env.clock = &clock;
  env.retry = ErpRetryPolicy{c.erp.retry.base, c.erp.retry.max, c.erp.retry.attempts};
  HostApp* raw = app.get();
  // The sink, not the app: an abandoned plugin thread may log after the app is gone.
  env.audit = [sink = app->audit_](const std::string& line) { sink->Write(line); };
  CLAWGUARD_ASSIGN_OR_RETURN(app->retry_, RetryWorker::Create(env));

  LoaderOptions lo;
  lo.trust_policy_path = c.plugins.trust;
  lo.allowlist_path = c.plugins.allowlist;
  lo.ledger = app->stores_.ledger.get();
  lo.clock = &clock;
  if (!c.log.audit.empty()) lo.audit_log_path = c.log.audit;
  lo.host_api = HostApi();
  CLAWGUARD_ASSIGN_OR_RETURN(app->loader_, Loader::Create(std::move(lo)));
  CLAWGUARD_RETURN_IF_ERROR(app->LoadPlugins(c));

  // Dispatch targets and routes: host.yaml routes × loaded manifests' webhooks.
  std::vector<DispatchTarget> targets;
  std::vector<PipelineRoute> routes;
  for (const LoadedPlugin& p : app->plugins_) {
    const Manifest& m = p.manifest();
    targets.push_back(DispatchTarget{m.name, p.plugin(), m.erp_capabilities});
    for (const WebhookRouteSpec& w : m.webhooks) {
      const auto secrets = c.webhooks.routes.find(m.name + "/" + w.route);
      if (secrets == c.webhooks.routes.end()) {
        app->Audit(Dump({{"event", "route_unconfigured"}, {"plugin", m.name}, {"route", w.route},
                         {"detail", "no secret in host.yaml webhooks.routes: the route answers 404"}}));
        continue;
      }
      CLAWGUARD_ASSIGN_OR_RETURN(WebhookVerifier verifier, MakeVerifier(secrets->second, c.webhooks.tolerance, clock));
      routes.push_back(PipelineRoute{m.name, w.route, w.level, w.business_key, std::move(verifier)});
    }
  }
  DispatchOptions dopts;
  dopts.handler_timeout = c.plugins.handler_timeout;
  dopts.lease = c.idempotency.lease;
  dopts.erp = env;
  CLAWGUARD_ASSIGN_OR_RETURN(app->dispatcher_, PluginDispatcher::Create(std::move(dopts), std::move(targets)));
  CLAWGUARD_ASSIGN_OR_RETURN(
      app->pipeline_,
      WebhookPipeline::Create(PipelineOptions{c.listen.max_body, c.listen.max_headers, c.idempotency.lease},
                              std::move(routes), *app->stores_.idempotency, app->dispatcher_->AsDispatcher()));

  ServerOptions main_options;
  main_options.address = c.listen.address;
  main_options.max_body = c.listen.max_body;
  main_options.max_headers = c.listen.max_headers;
  main_options.workers = std::max(1, c.listen.workers);
  if (c.listen.tls) main_options.tls = ServerTls{c.listen.tls->cert, c.listen.tls->key};
  CLAWGUARD_ASSIGN_OR_RETURN(app->main_, HttpServer::Create(std::move(main_options), [raw](const HttpRequest& r) {
                               return raw->HandleMain(r);
                             }));
  CLAWGUARD_ASSIGN_OR_RETURN(Handler admin_handler,
                             RequireBearerToken(c.admin.token.Clone(),
                                                [raw](const HttpRequest& r) { return raw->HandleAdmin(r); }));
  ServerOptions admin_options;
  admin_options.address = c.admin.address;
  admin_options.workers = 1;
  if (c.admin.tls) admin_options.tls = ServerTls{c.admin.tls->cert, c.admin.tls->key};
  CLAWGUARD_ASSIGN_OR_RETURN(app->admin_, HttpServer::Create(std::move(admin_options), std::move(admin_handler)));
  return app;
}

Status HostApp::LoadPlugins(const HostConfig& c) {
  std::vector<std::string> packages;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(c.plugins.dir, ec)) {
    if (e.path().extension() == ".claw" && e.is_regular_file(ec)) packages.push_back(e.path().string());
  }
  if (ec) return Status(Reason::kConfigInvalid, c.source + ": plugins.dir: cannot read " + c.plugins.dir);
  std::sort(packages.begin(), packages.end());

  const auto refuse = [this](std::string package, std::string reason, std::string detail) {
    Audit(Dump({{"event", "plugin_refused"}, {"package", package}, {"reason", reason}, {"detail", detail}}));
    refused_.push_back(RefusedPackage{std::move(package), std::move(reason), std::move(detail)});
  };
  std::map<std::string, Candidate> best;  // by signed name: the highest version
  for (const std::string& path : packages) {
    Result<Verdict> v = loader_->Verify(path);
    if (!v.ok()) {
      refuse(path, std::string(ReasonName(v.error().reason())), v.error().message());
      continue;
    }
    if (v->verdict == VerdictKind::kRefused) {
      refuse(path, std::string(ReasonName(v->reason)), v->detail);
      continue;
    }
    std::optional<SemVer> version = ParseSemVer(v->version);
    if (!version) {
      refuse(path, "manifest_invalid", "version '" + v->version + "' is not SemVer");
      continue;
    }
    Candidate cand{path, *v, *version};
    auto [it, inserted] = best.try_emplace(v->name, cand);
    if (inserted) continue;
    const bool higher = CompareSemVer(cand.version, it->second.version) > 0;
    const Candidate& loser = higher ? it->second : cand;
    const std::string winner = higher ? cand.verdict.version : it->second.verdict.version;
    refuse(loser.path, "superseded", "version " + winner + " of " + v->name + " is loaded instead");
    if (higher) it->second = cand;
  }
  for (auto& [name, cand] : best) {
    Result<LoadedPlugin> loaded = loader_->Load(cand.path);
    if (!loaded.ok()) {
      refuse(cand.path, std::string(ReasonName(loaded.error().reason())), loaded.error().message());
      continue;
    }
    plugins_.push_back(std::move(loaded).value());
  }
  return Status();
}

Status HostApp::Start() {
  {
    std::lock_guard lock(stop_mu_);
    if (started_ || stopping_) return Status(Reason::kInternal, "host: already started or stopped");
    started_ = true;
  }
  CLAWGUARD_RETURN_IF_ERROR(main_->Start());
  CLAWGUARD_RETURN_IF_ERROR(admin_->Start());
  retry_thread_ = std::thread([this] { RetryLoop(); });
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
  if (retry_thread_.joinable()) retry_thread_.join();
  if (dispatcher_ != nullptr && config_ != nullptr) {
    // A plugin that timed out may still run; give it (and an ERP call it is in) time to return.
    (void)dispatcher_->WaitIdle(config_->plugins.handler_timeout + config_->erp.timeout);
  }
}

void HostApp::RetryLoop() {
  // The operations generation is polled every kRetryPoll (≤ 1 s, ARCHITECTURE.md "Operator
  // commands"). This host keeps no record cache, so there is nothing to drop; a change is audited
  // and the outbox is drained at once (an `idem confirm` made intents due).
  std::optional<int64_t> generation;
  std::unique_lock lock(stop_mu_);
  while (!stopping_) {
    lock.unlock();
    if (auto g = stores_.idempotency->Generation(); g.ok()) {
      if (generation && *g != *generation) Audit(Dump({{"event", "operations_generation"}, {"generation", *g}}));
      generation = *g;
    }
    auto drained = retry_->DrainPending(clock_->NowMillis(), kDrainBatch);
    if (!drained.ok()) Audit(Dump({{"event", "retry_worker_error"}, {"detail", drained.error().message()}}));
    lock.lock();
    stop_cv_.wait_for(lock, kRetryPoll, [this] { return stopping_; });
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
  return Dump({{"ready", ready_.load()}, {"mode", loader_->mode()}, {"plugins", plugins}, {"refused", refused}});
}

HttpResponse HostApp::HandleMain(const HttpRequest& request) const {
  const std::string path = PathOf(request.target);
  if (request.method == "GET" && path == "/healthz") return JsonAnswer(200, R"({"status":"ok"})");
  if (request.method == "GET" && path == "/readyz") {
    return ready_.load() ? JsonAnswer(200, R"({"ready":true})") : JsonAnswer(503, R"({"ready":false})");
  }
  return pipeline_->Handle(request);
}

HttpResponse HostApp::HandleAdmin(const HttpRequest& request) const {
  const std::string path = PathOf(request.target);
  if (request.method == "GET" && path == "/readyz") return JsonAnswer(ready_.load() ? 200 : 503, ReadyJson());
  return JsonAnswer(404, R"({"error":"not_found"})");
}

}  // namespace clawguard::host
