// host_app.h — HostApp: the running ClawGuard host assembled from host.yaml (ARCHITECTURE.md
// "Host request pipeline", host.yaml in "Policies").
//
// Create, in order (every failure is a Status; nothing is listening yet):
//   - the stores through the injected StoreFactory (sqlite:PATH; postgresql:// is
//     kStoreUnavailable in this version) — idempotency records, outbox and ledger;
//   - the ERP client (erp.base_url, timeout, ca, auth) and the Loader (trust, allowlist, ledger,
//     audit log, the static host API);
//   - every `*.claw` in plugins.dir is verified; refused ones are reported (one JSON line on
//     stderr; the loader audits its verdict) and never loaded — their routes answer 404; of
//     several verified versions of one name only the highest is loaded (the others are
//     reported as "superseded");
//   - routes: host.yaml webhooks.routes × the loaded manifests' webhooks;
//   - the main listener (POST /webhooks/{plugin}/{route}, GET /healthz, GET /readyz) and the
//     admin listener behind its bearer token (GET /readyz: the detailed JSON of ReadyJson()).
// Start starts both listeners and the RetryWorker thread; Stop is graceful and idempotent: after
// the listeners and the worker stopped it waits up to handler_timeout + erp.timeout for plugin
// threads that are still running (a timed-out plugin cannot be cancelled).
// WARNING: if one is still running when the HostApp is destroyed, the objects it may touch — the
// plugins' code, the stores, the ERP sender, the loader and the dispatcher — are leaked on
// purpose (kept reachable, never freed) and this is audited ("plugin_threads_abandoned"): a leak
// at shutdown instead of a use-after-free. The audit sink is shared with those threads.
// Thread-safe after Create; Start/Stop from the owning thread.
#ifndef CLAWGUARD_HOST_HOST_APP_H_
#define CLAWGUARD_HOST_HOST_APP_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "clawguard/clock.h"
#include "clawguard/error.h"
#include "clawguard/loader.h"
#include "clawguard/store/idempotency_store.h"
#include "clawguard/store/ledger.h"
#include "clawguard/store/outbox.h"
#include "host/erp_gateway.h"
#include "host/host_config.h"
#include "host/http_server.h"
#include "host/plugin_dispatch.h"
#include "host/webhook_pipeline.h"

namespace clawguard::host {

// HostStores are the engines one store URL opens. All three are required.
struct HostStores {
  std::unique_ptr<IdempotencyStore> idempotency;
  std::unique_ptr<Outbox> outbox;
  std::unique_ptr<Ledger> ledger;
};

// StoreFactory opens |url| (host.yaml `store:`). kStoreUnavailable when it cannot.
// (It is injected because clawguard_host does not link an engine yet; the CLI passes SQLite.)
using StoreFactory = std::function<Result<HostStores>(const std::string& url, const Clock& clock)>;

// RefusedPackage is a package that was not loaded, and why (a loader reason code or "superseded").
struct RefusedPackage {
  std::string package;
  std::string reason;
  std::string detail;
};

class HostApp {
 public:
  // Create: see the file comment. |clock| must outlive the app. Reasons: kConfigInvalid,
  // kStoreUnavailable, kInternal (a listener cannot bind).
  static Result<std::unique_ptr<HostApp>> Create(std::shared_ptr<const HostConfig> config, const Clock& clock,
                                                 const StoreFactory& open_store);
  ~HostApp();
  HostApp(const HostApp&) = delete;
  HostApp& operator=(const HostApp&) = delete;

  Status Start();
  void Stop();

  uint16_t main_port() const;
  uint16_t admin_port() const;
  // ReadyJson is the admin /readyz body: {ready, mode, plugins:[{name, version, sha256,
  // publisher}], refused:[{package, reason, detail}]}.
  std::string ReadyJson() const;
  const std::vector<RefusedPackage>& refused() const { return refused_; }
  RetryWorker& retry_worker() { return *retry_; }

 private:
  HostApp() = default;
  Status LoadPlugins(const HostConfig& config);
  HttpResponse HandleMain(const HttpRequest& request) const;
  HttpResponse HandleAdmin(const HttpRequest& request) const;
  void RetryLoop();
  void Audit(const std::string& line);

  class AuditSink;  // log.audit (or stderr); shared with plugin threads through ErpEnv::audit

  std::shared_ptr<const HostConfig> config_;
  const Clock* clock_ = nullptr;
  std::shared_ptr<AuditSink> audit_;
  HostStores stores_;
  std::unique_ptr<ErpSender> sender_;
  std::unique_ptr<Loader> loader_;
  std::vector<LoadedPlugin> plugins_;
  std::vector<RefusedPackage> refused_;
  std::unique_ptr<RetryWorker> retry_;
  std::shared_ptr<PluginDispatcher> dispatcher_;
  std::unique_ptr<WebhookPipeline> pipeline_;
  std::unique_ptr<HttpServer> main_, admin_;
  std::atomic<bool> ready_{false};
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  bool started_ = false;
  std::thread retry_thread_;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_HOST_APP_H_
