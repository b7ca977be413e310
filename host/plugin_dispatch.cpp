// plugin_dispatch.cpp — cg_call, the static host API table, and one delivery on a worker thread.
#include "host/plugin_dispatch.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>

namespace {
constexpr size_t kMaxContentType = 256;
constexpr size_t kMaxLogMessage = 2048;
}  // namespace

// cg_call is one delivery's context (plugin.h declares it opaque). Shared by the dispatcher and
// the plugin's worker thread, which may outlive the dispatch after a timeout.
struct cg_call {
  // Host-owned request buffers, valid while the call lives.
  std::string plugin, route, method, path, body, key;
  std::vector<std::string> names, values;
  std::vector<cg_bytes> name_bytes, value_bytes;
  cg_request request{};

  clawguard::host::AuditFn audit;
  std::unique_ptr<clawguard::host::ErpGateway> gateway;
  std::mutex erp_mu;  // serialises erp_call per cg_call
  std::atomic<bool> abandoned{false};

  std::mutex mu;  // guards what follows
  std::condition_variable done_cv;
  bool finished = false;
  int rc = 0;
  int responds = 0;
  bool bad_respond = false;
  int status = 0;
  std::string content_type, answer;
  clawguard::host::GatewayOutcome erp;
};

namespace clawguard::host {
namespace {

int ErpCallFn(cg_call* call, const char* method, const char* path, cg_bytes body, cg_bytes* reply) {
  if (reply != nullptr) *reply = cg_bytes{nullptr, 0};
  if (call == nullptr) return CG_UNAVAILABLE;
  if (call->abandoned.load()) return CG_FENCED;
  if (method == nullptr || path == nullptr || (body.data == nullptr && body.len != 0)) return CG_DENIED;
  std::lock_guard lock(call->erp_mu);
  if (call->abandoned.load()) return CG_FENCED;
  return call->gateway->Call(method, path, std::string_view(body.data == nullptr ? "" : body.data, body.len),
                             reply);
}

void RespondFn(cg_call* call, int status, const char* content_type, cg_bytes body) {
  if (call == nullptr) return;
  std::lock_guard lock(call->mu);
  if (call->abandoned.load() || call->finished) return;  // ignored: too late
  if (++call->responds > 1) return;
  const std::string_view ct = content_type == nullptr ? std::string_view() : std::string_view(content_type);
  // A header value with CR/LF would split the stored answer's headers.
  if ((body.data == nullptr && body.len != 0) || ct.size() > kMaxContentType ||
      ct.find_first_of("\r\n") != std::string_view::npos) {
    call->bad_respond = true;
    return;
  }
  call->status = status;
  call->content_type = std::string(ct);
  call->answer = body.data == nullptr ? std::string() : std::string(body.data, body.len);
}

void LogFn(cg_call* call, int level, const char* message) {
  if (call == nullptr || message == nullptr || !call->audit) return;
  std::string text(message, strnlen(message, kMaxLogMessage));
  nlohmann::json j = {{"event", "plugin_log"}, {"plugin", call->plugin}, {"level", level}, {"message", text}};
  call->audit(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

const cg_host_api kHostApi = {CLAWGUARD_PLUGIN_ABI, &ErpCallFn, &RespondFn, &LogFn};

// Audited returns |report| after writing its failure (if any) to the audit sink.
DispatchReport Audited(const AuditFn& audit, const DispatchContext& ctx, DispatchReport report) {
  if (audit && report.outcome.kind != PluginOutcome::Kind::kAnswered) {
    const char* event = "plugin_failed";
    if (report.outcome.kind == PluginOutcome::Kind::kTimedOut) event = "plugin_timeout";
    if (report.outcome.kind == PluginOutcome::Kind::kDeadLettered) event = "event_dead_lettered";
    nlohmann::json j = {{"event", event},
                        {"plugin", ctx.plugin},
                        {"route", ctx.route},
                        {"event_key", ctx.event_key},
                        {"detail", report.outcome.detail}};
    if (!report.outcome.dead_letter_class.empty()) j["dlq_class"] = report.outcome.dead_letter_class;
    audit(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  return report;
}

std::shared_ptr<cg_call> MakeCall(const DispatchContext& ctx) {
  auto call = std::make_shared<cg_call>();
  call->plugin = std::string(ctx.plugin);
  call->route = std::string(ctx.route);
  call->key = std::string(ctx.event_key);
  if (ctx.request != nullptr) {
    call->method = ctx.request->method;
    call->path = ctx.request->target;
    call->body = ctx.request->body;
    for (const auto& [n, v] : ctx.request->headers) {
      call->names.push_back(n);
      call->values.push_back(v);
    }
  }
  for (size_t i = 0; i < call->names.size(); ++i) {
    call->name_bytes.push_back(cg_bytes{call->names[i].data(), call->names[i].size()});
    call->value_bytes.push_back(cg_bytes{call->values[i].data(), call->values[i].size()});
  }
  call->request.method = cg_bytes{call->method.data(), call->method.size()};
  call->request.path = cg_bytes{call->path.data(), call->path.size()};
  call->request.body = cg_bytes{call->body.data(), call->body.size()};
  call->request.idempotency_key = cg_bytes{call->key.data(), call->key.size()};
  call->request.header_names = call->name_bytes.data();
  call->request.header_values = call->value_bytes.data();
  call->request.header_count = call->name_bytes.size();
  return call;
}

}  // namespace

const cg_host_api* HostApi() { return &kHostApi; }

Result<std::shared_ptr<PluginDispatcher>> PluginDispatcher::Create(DispatchOptions options,
                                                                   std::vector<DispatchTarget> targets) {
  if (options.handler_timeout.count() <= 0 || options.lease.count() <= 0) {
    return Status(Reason::kConfigInvalid, "plugin dispatch: handler_timeout and lease must be > 0");
  }
  if (options.erp.outbox == nullptr || options.erp.sender == nullptr || options.erp.clock == nullptr) {
    return Status(Reason::kConfigInvalid, "plugin dispatch: the ERP outbox, sender and clock are required");
  }
  std::map<std::string, Entry> entries;
  for (DispatchTarget& t : targets) {
    if (t.plugin == nullptr || t.plugin->handle_webhook == nullptr || t.name.empty()) {
      return Status(Reason::kConfigInvalid, "plugin dispatch: target '" + t.name + "' has no handle_webhook");
    }
    CLAWGUARD_ASSIGN_OR_RETURN(CapabilitySet caps, CapabilitySet::Create(t.erp_capabilities));
    std::shared_ptr<std::mutex> serial;
    if ((t.plugin->flags & CG_PLUGIN_SERIAL) != 0) serial = std::make_shared<std::mutex>();
    if (!entries.emplace(t.name, Entry{t.plugin, std::move(caps), std::move(serial)}).second) {
      return Status(Reason::kConfigInvalid, "plugin dispatch: plugin '" + t.name + "' is listed twice");
    }
  }
  return std::shared_ptr<PluginDispatcher>(new PluginDispatcher(std::move(options), std::move(entries)));
}

Dispatcher PluginDispatcher::AsDispatcher() const {
  std::shared_ptr<const PluginDispatcher> self = shared_from_this();
  return [self](const DispatchContext& ctx) { return self->Dispatch(ctx); };
}

int64_t PluginDispatcher::running_threads() const {
  std::lock_guard lock(threads_->mu);
  return threads_->running;
}

bool PluginDispatcher::WaitIdle(std::chrono::milliseconds bound) const {
  std::unique_lock lock(threads_->mu);
  return threads_->idle.wait_for(lock, bound, [this] { return threads_->running == 0; });
}

DispatchReport PluginDispatcher::DispatchDetailed(const DispatchContext& ctx) const {
  return Audited(options_.erp.audit, ctx, Run(ctx));
}

DispatchReport PluginDispatcher::Run(const DispatchContext& ctx) const {
  const auto it = entries_.find(std::string(ctx.plugin));
  if (it == entries_.end()) return {PluginOutcome::Failed("no plugin is loaded under this name"), {}};
  const Entry& entry = it->second;

  std::shared_ptr<cg_call> call = MakeCall(ctx);
  call->audit = options_.erp.audit;
  auto gw = ErpGateway::Create(options_.erp, entry.capabilities,
                               ErpDelivery{call->plugin, call->key, ctx.fencing_token, ctx.level});
  if (!gw.ok()) return {PluginOutcome::Failed(gw.error().message()), {}};
  call->gateway = std::move(gw).value();

  // The thread keeps the dispatcher (its options and capabilities) and the call alive.
  std::shared_ptr<const PluginDispatcher> self = shared_from_this();
  std::shared_ptr<ThreadCount> threads = threads_;
  {
    std::lock_guard count(threads->mu);
    ++threads->running;
  }
  const auto finished = [threads]() {
    std::lock_guard count(threads->mu);
    if (--threads->running == 0) threads->idle.notify_all();
  };
  try {
    spare_threads_.Run([self, call, &entry, finished]() {
      int rc = -1;
      {
        std::unique_lock<std::mutex> serial;
        if (entry.serial) serial = std::unique_lock<std::mutex>(*entry.serial);
        try {
          rc = entry.plugin->handle_webhook(call.get(), call->route.c_str(), &call->request);
        } catch (...) {
          rc = -1;  // a C++ plugin must not throw across the C ABI
        }
      }
      GatewayOutcome erp;
      {
        std::lock_guard erp_lock(call->erp_mu);
        erp = call->gateway->outcome();
      }
      {
        std::lock_guard lock(call->mu);
        call->finished = true;
        call->rc = rc;
        call->erp = std::move(erp);
      }
      call->done_cv.notify_all();  // after unlocking: the waiter need not block on call->mu again
      finished();  // the last touch of anything but |call| and |self| (shared, freed with the task)
    });
  } catch (const std::exception&) {
    finished();
    return {PluginOutcome::Failed("could not start the plugin's thread"), {}};
  }

  using SteadyClock = std::chrono::steady_clock;
  const auto deadline = SteadyClock::now() + options_.handler_timeout;
  const auto renew_every = std::max(std::chrono::milliseconds(1), options_.lease / 3);
  std::unique_lock lock(call->mu);
  while (!call->finished) {
    const auto slice = std::min(deadline, SteadyClock::now() + renew_every);
    call->done_cv.wait_until(lock, slice, [&] { return call->finished; });
    if (call->finished) break;
    if (SteadyClock::now() >= deadline) {
      call->abandoned.store(true);
      return {PluginOutcome::TimedOut("the plugin did not return within handler_timeout"), {}};
    }
    lock.unlock();
    const bool held = !ctx.renew_lease || ctx.renew_lease();
    lock.lock();
    if (!held && !call->finished) {
      call->abandoned.store(true);
      return {PluginOutcome::Failed("the lease was taken over while the plugin ran"), {}};
    }
  }

  DispatchReport report;
  report.erp = call->erp;
  if (call->erp.dead_lettered) {
    report.outcome = PluginOutcome::DeadLettered(call->erp.dead_letter_reason,
                                                 "event dead-lettered: " + call->erp.dead_letter_reason);
  } else if (call->rc != 0) {
    report.outcome = PluginOutcome::Failed("handle_webhook returned " + std::to_string(call->rc));
  } else if (call->responds != 1) {
    report.outcome = PluginOutcome::Failed("respond() was called " + std::to_string(call->responds) +
                                           " times; exactly once is required");
  } else if (call->bad_respond || call->status < 100 || call->status > 599) {
    report.outcome = PluginOutcome::Failed("respond() got an invalid status, content type or body");
  } else {
    report.outcome = PluginOutcome::Answered(call->status, call->content_type, call->answer);
  }
  return report;
}

}  // namespace clawguard::host
