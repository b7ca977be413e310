// plugin_dispatch.cpp — PluginDispatcher: one delivery, handed off to a thread of its own or run
// inline under the watchdog (dispatch_watchdog.h); the host API table is in host_api.cpp.
#include "host/dispatch/plugin_dispatch.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <map>
#include <optional>
#include <thread>

#include "clawguard/json_dump.h"
#include "clawguard/limits.h"
#include "host/dispatch/call_handles.h"
#include "host/dispatch/dispatch_watchdog.h"
#include "host/dispatch/plugin_call.h"
#include "host/http/responder.h"
#include "runtime/fiber.h"
#include "runtime/thread_name.h"

namespace clawguard::host {

// Audited returns |report| after writing its failure (if any) to the audit sink.
DispatchReport Audited(const AuditFn& audit, const DispatchContext& ctx, DispatchReport report) {
  // An abandoned outcome was audited by the watchdog when it gave up.
  if (audit && report.outcome.kind != PluginOutcome::Kind::kAnswered && !report.outcome.abandoned) {
    const char* event = "plugin_failed";
    if (report.outcome.kind == PluginOutcome::Kind::kTimedOut) event = "plugin_timeout";
    if (report.outcome.kind == PluginOutcome::Kind::kUnavailable) event = "plugin_unavailable";
    if (report.outcome.erp_pending_in_ms > 0) event = "erp_pending";  // stopped as plugin.h asks
    if (report.outcome.kind == PluginOutcome::Kind::kDeadLettered) event = "event_dead_lettered";
    nlohmann::json j = {{"event", event},
                        {"plugin", ctx.plugin},
                        {"route", ctx.route},
                        {"event_key", ctx.event_key},
                        {"detail", report.outcome.detail}};
    if (!report.outcome.dead_letter_class.empty())
      j["dlq_class"] = report.outcome.dead_letter_class;
    audit(DumpJson(j));
  }
  return report;
}

DispatchReport ReportFor(FinishedCall call) {
  DispatchReport report;
  report.erp = call.erp;
  if (call.erp.dead_lettered) {
    report.outcome = PluginOutcome::DeadLettered(
        call.erp.dead_letter_reason, "event dead-lettered: " + call.erp.dead_letter_reason);
  } else if (call.rc != 0) {
    report.outcome = PluginOutcome::Failed("handle_webhook returned " + std::to_string(call.rc));
    // Stopped on an ERP call the outbox still owns (plugin.h: return at once): not a failure of
    // the plugin; the host finishes the call and a later delivery is answered from its row.
    report.outcome.erp_pending_in_ms = call.erp.pending_in_ms;
    if (call.erp.pending_in_ms != 0)
      report.outcome.detail += " after an ERP call the outbox still owns";
  } else if (call.responds != 1) {
    report.outcome = PluginOutcome::Failed("respond() was called " + std::to_string(call.responds) +
                                           " times; exactly once is required");
  } else if (!call.respond_problem.empty()) {
    report.outcome = PluginOutcome::Failed(std::move(call.respond_problem));
  } else {
    report.outcome =
        PluginOutcome::Answered(call.status, std::move(call.content_type), std::move(call.answer));
  }
  return report;
}

namespace {

std::shared_ptr<cg_call> MakeCall(const DispatchContext& ctx) {
  auto call = std::make_shared<cg_call>();
  call->plugin = std::string(ctx.plugin);
  call->route = std::string(ctx.route);
  call->key = std::string(ctx.event_key);
  // Only what the signature authenticated is shown as headers (plugin.h, cg_request): the id and
  // the timestamp, under their Standard Webhooks names. Other request headers are the sender's
  // word, unsigned — a replay with a changed Content-Type or X-Idempotency-Key still verifies.
  call->names.push_back("webhook-id");
  call->values.push_back(std::string(ctx.webhook_id));
  if (ctx.request != nullptr) {
    call->method = ctx.request->method;
    call->path = ctx.request->target;
    call->body = ctx.request->body;
    std::optional<std::string_view> ts = ctx.request->headers.Get("webhook-timestamp");
    if (!ts)
      ts = ctx.request->headers.Get("svix-timestamp");  // byte-equal when both came (checked)
    if (ts) {
      call->names.push_back("webhook-timestamp");
      call->values.push_back(std::string(*ts));
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

// RunPlugin runs handle_webhook for |call| on the calling thread (under the plugin's serial
// mutex if it has one), then records its result in |call| and wakes a waiter.
void RunPlugin(const cg_plugin* plugin, std::mutex* serial_mu, cg_call& call) {
  int rc = -1;
  {
    std::unique_lock<std::mutex> serial;
    if (serial_mu != nullptr) {
      if (fiber::Current() == nullptr) {
        serial = std::unique_lock<std::mutex>(*serial_mu);
      } else {
        // On a fiber the holder may be a fiber of this same carrier, parked in an ERP call:
        // blocking here would never let it finish. Poll instead (CG_PLUGIN_SERIAL is rare).
        while (!serial_mu->try_lock()) fiber::SleepFor(std::chrono::microseconds(200));
        serial = std::unique_lock<std::mutex>(*serial_mu, std::adopt_lock);
      }
    }
    // Given up on while waiting for the serial mutex: nothing it did would count.
    if (!call.abandoned.load()) {
      try {
        rc = plugin->handle_webhook(call.handle, call.route.c_str(), &call.request);
      } catch (...) {
        rc = -1;  // a C++ plugin must not throw across the C ABI
      }
    }
  }
  {
    MutexLock lock(call.mu);  // a respond() from a kept thread is ignored from here on
    call.closed.store(true);
  }
  GatewayOutcome erp;
  {
    // Waits for an erp_call a kept thread is in; any later one sees |closed| and sends nothing.
    MutexLock erp_lock(call.erp_mu);
    erp = call.gateway->outcome();
  }
  {
    MutexLock lock(call.mu);
    call.finished = true;
    call.rc = rc;
    call.erp = std::move(erp);
  }
  CallHandles::Global().Retire(call.handle);  // the plugin's pointer names nothing any more
  call.done_cv.notify_all();  // after unlocking: the waiter need not block on call.mu again
}

// ReportOf turns a finished call into its report.
DispatchReport ReportOf(const cg_call& call) CLAWGUARD_REQUIRES(call.mu) {
  return ReportFor(FinishedCall{call.rc, call.responds, call.respond_problem, call.status,
                                call.content_type, call.answer, call.erp});
}

}  // namespace

PluginDispatcher::~PluginDispatcher() {
  if (watchdog_ != nullptr) watchdog_->Stop();
}

Result<std::shared_ptr<PluginDispatcher>> PluginDispatcher::Create(
    DispatchOptions options, std::vector<DispatchTarget> targets) {
  if (options.handler_timeout.count() <= 0 || options.lease.count() <= 0) {
    return Status(Reason::kConfigInvalid, "plugin dispatch: handler_timeout and lease must be > 0");
  }
  if (options.erp.outbox == nullptr || options.erp.sender == nullptr ||
      options.erp.clock == nullptr) {
    return Status(Reason::kConfigInvalid,
                  "plugin dispatch: the ERP outbox, sender and clock are required");
  }
  std::map<std::string, Entry> entries;
  for (DispatchTarget& t : targets) {
    if (t.plugin == nullptr || t.plugin->handle_webhook == nullptr || t.name.empty()) {
      return Status(Reason::kConfigInvalid,
                    "plugin dispatch: target '" + t.name + "' has no handle_webhook");
    }
    CLAWGUARD_ASSIGN_OR_RETURN(CapabilitySet caps, CapabilitySet::Create(t.erp_capabilities));
    std::shared_ptr<std::mutex> serial;
    if ((t.plugin->flags & CG_PLUGIN_SERIAL) != 0) serial = std::make_shared<std::mutex>();
    if (!entries.emplace(t.name, Entry{t.plugin, std::move(caps), std::move(serial)}).second) {
      return Status(Reason::kConfigInvalid,
                    "plugin dispatch: plugin '" + t.name + "' is listed twice");
    }
  }
  return std::shared_ptr<PluginDispatcher>(
      new PluginDispatcher(std::move(options), std::move(entries)));
}

Dispatcher PluginDispatcher::AsDispatcher() const {
  std::shared_ptr<const PluginDispatcher> self = shared_from_this();
  return [self](const DispatchContext& ctx) { return self->Dispatch(ctx); };
}

int64_t PluginDispatcher::running_threads() const {
  MutexLock lock(threads_->mu);
  return threads_->running;
}

bool PluginDispatcher::WaitIdle(std::chrono::milliseconds bound) const {
  MutexLock lock(threads_->mu);
  return threads_->mu.WaitFor(threads_->idle, bound, [this]() CLAWGUARD_REQUIRES(threads_->mu) {
    return threads_->running == 0;
  });
}

DispatchReport PluginDispatcher::DispatchDetailed(const DispatchContext& ctx) const {
  if (!ctx.on_abandon) return Audited(options_.erp.audit, ctx, Run(ctx));
  // Inline, the calling thread is the plugin's: it counts in running_threads until it is out of
  // the dispatcher, and keeps the dispatcher alive meanwhile — after a late return (the delivery
  // was answered long ago) it may be the last owner.
  std::shared_ptr<const PluginDispatcher> self = shared_from_this();
  {
    MutexLock count(threads_->mu);
    ++threads_->running;
  }
  DispatchReport report = Audited(options_.erp.audit, ctx, Run(ctx));
  {
    MutexLock count(threads_->mu);
    if (--threads_->running == 0) threads_->idle.notify_all();
  }
  return report;
}

DispatchReport PluginDispatcher::Run(const DispatchContext& ctx) const {
  const auto it = entries_.find(std::string(ctx.plugin));
  if (it == entries_.end())
    return {PluginOutcome::Failed("no plugin is loaded under this name"), {}};
  const Entry& entry = it->second;

  std::shared_ptr<cg_call> call = MakeCall(ctx);
  call->audit = options_.erp.audit;
  auto gw = ErpGateway::Create(options_.erp, entry.capabilities,
                               ErpDelivery{call->plugin, call->key, ctx.fencing_token, ctx.level});
  if (!gw.ok()) return {PluginOutcome::Failed(gw.error().message()), {}};
  call->gateway = std::move(gw).value();
  call->handle = CallHandles::Global().Add(call);  // retired by RunPlugin when the plugin returns
  if (call->handle == nullptr)
    return {PluginOutcome::Failed("no call handle: the CSPRNG failed"), {}};

  const cg_plugin* plugin = entry.plugin;
  std::mutex* serial = entry.serial.get();

  using SteadyClock = std::chrono::steady_clock;
  const auto deadline = SteadyClock::now() + options_.handler_timeout;
  const auto renew_every = std::max(std::chrono::milliseconds(1), options_.lease / 3);

  if (ctx.on_abandon) {
    // Inline: the plugin runs on this thread; the watchdog may give up on it (see DispatchContext).
    std::call_once(watchdog_once_, [&] {
      watchdog_ = std::make_shared<Watchdog>(renew_every, options_.erp.audit);
      watchdog_->Start();
    });
    auto watch = std::make_shared<Watchdog::Watch>();
    watch->call = call;
    watch->ctx = &ctx;
    watch->deadline = deadline;
    watch->next_renew = SteadyClock::now() + renew_every;
    watchdog_->Add(watch);
    RunPlugin(plugin, serial, *call);  // counted in running_threads by DispatchDetailed
    watchdog_->Finish(watch);
    if (call->abandoned.load()) return {watch->outcome, {}};
    MutexLock lock(call->mu);
    return ReportOf(*call);
  }

  // The thread keeps the dispatcher (its options and capabilities) and the call alive.
  std::shared_ptr<const PluginDispatcher> self = shared_from_this();
  std::shared_ptr<ThreadCount> threads = threads_;
  {
    MutexLock count(threads->mu);
    ++threads->running;
  }
  const auto finished = [threads]() {
    MutexLock count(threads->mu);
    if (--threads->running == 0) threads->idle.notify_all();
  };
  try {
    spare_threads_.Run([self, call, plugin, serial, finished]() {
      RunPlugin(plugin, serial, *call);
      finished();  // the last touch of anything but |call| and |self| (shared, freed with the task)
    });
  } catch (const std::exception&) {
    finished();
    CallHandles::Global().Retire(call->handle);
    return {PluginOutcome::Failed("could not start the plugin's thread"), {}};
  }

  MutexLock lock(call->mu);
  while (!call->finished) {
    const auto slice = std::min(deadline, SteadyClock::now() + renew_every);
    call->mu.WaitUntil(call->done_cv, slice,
                       [&]() CLAWGUARD_REQUIRES(call->mu) { return call->finished; });
    if (call->finished) break;
    if (SteadyClock::now() >= deadline) {
      call->abandoned.store(true);
      return {PluginOutcome::TimedOut(kTimedOutDetail), {}};
    }
    lock.Unlock();
    const bool held = !ctx.renew_lease || ctx.renew_lease();
    lock.Lock();
    if (!held && !call->finished) {
      call->abandoned.store(true);
      return {PluginOutcome::Failed(kLeaseLostDetail), {}};
    }
  }
  return ReportOf(*call);
}

}  // namespace clawguard::host
