// plugin_dispatch.cpp — cg_call, the static host API table, and one delivery on a worker thread.
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
#include "host/http/responder.h"
#include "runtime/fiber.h"
#include "runtime/thread_name.h"

namespace {
constexpr size_t kMaxContentType = 256;
constexpr size_t kMaxLogMessage = 2048;
constexpr size_t kMaxMethodLength = 16;  // longer than any method a capability names
}  // namespace

// cg_call is one delivery's context (plugin.h declares it opaque). Shared by the dispatcher and
// the plugin's worker thread, which may outlive the dispatch after a timeout. The plugin never
// sees its address: it is given |handle| (see CallHandles).
struct cg_call {
  cg_call* handle = nullptr;  // what the plugin is given; retired when the delivery finishes

  // Host-owned request buffers, valid while the call lives.
  std::string plugin, route, method, path, body, key;
  std::vector<std::string> names, values;
  std::vector<cg_bytes> name_bytes, value_bytes;
  cg_request request{};

  clawguard::host::AuditFn audit;
  std::unique_ptr<clawguard::host::ErpGateway> gateway;
  std::mutex erp_mu;  // serialises erp_call per cg_call
  std::atomic<bool> abandoned{false};
  // closed: handle_webhook returned. Set under |mu|; erp_call checks it under |erp_mu|, which the
  // returning thread takes after setting it, so no ERP call starts once the delivery is over.
  std::atomic<bool> closed{false};

  std::mutex mu;  // guards what follows
  std::condition_variable done_cv;
  bool finished = false;
  int rc = 0;
  int responds = 0;
  std::string respond_problem;  // why the one respond() was refused (empty: it was valid)
  int status = 0;
  std::string content_type, answer;
  clawguard::host::GatewayOutcome erp;
};

namespace clawguard::host {
namespace {

// PluginString copies a NUL-terminated string out of plugin memory, reading at most |max| + 1
// bytes: a longer one comes back |max| + 1 bytes long, which no capability matches.
std::string PluginString(const char* s, size_t max) { return std::string(s, strnlen(s, max + 1)); }

int ErpCallFn(cg_call* handle, const char* method, const char* path, cg_bytes body, cg_bytes* reply) {
  if (reply != nullptr) *reply = cg_bytes{nullptr, 0};
  // The arguments are checked before the handle is looked up: a malformed call answers the same
  // for every handle, live or not.
  if (method == nullptr || path == nullptr || (body.data == nullptr && body.len != 0)) return CG_DENIED;
  // A finished (or unknown) delivery: nothing of it is touched, nothing is written or sent.
  const std::shared_ptr<cg_call> call = CallHandles::Global().Find(handle);
  if (call == nullptr || call->abandoned.load() || call->closed.load()) return CG_FENCED;
  std::lock_guard lock(call->erp_mu);
  if (call->abandoned.load() || call->closed.load()) return CG_FENCED;
  // Copied once, before anything looks at them: another plugin thread may rewrite these buffers
  // while the call runs, and the capability must be matched on exactly the bytes that are sent.
  // An over-long body is not copied; the gateway refuses it by its length alone.
  const std::string method_copy = PluginString(method, kMaxMethodLength);
  const std::string path_copy = PluginString(path, limits::kMaxErpPathLength);
  if (body.len > limits::kMaxErpRequestBody) {
    return call->gateway->Call(method_copy, path_copy, std::string_view(body.data, body.len), reply);
  }
  const std::string body_copy = body.len == 0 ? std::string() : std::string(body.data, body.len);
  return call->gateway->Call(method_copy, path_copy, body_copy, reply);
}

void RespondFn(cg_call* handle, int status, const char* content_type, cg_bytes body) {
  const std::shared_ptr<cg_call> call = CallHandles::Global().Find(handle);
  if (call == nullptr) return;
  std::lock_guard lock(call->mu);
  if (call->abandoned.load() || call->closed.load() || call->finished) return;  // ignored: too late
  if (++call->responds > 1) return;
  const std::string_view ct = content_type == nullptr ? std::string_view() : std::string_view(content_type);
  // A header value with CR/LF would split the stored answer's headers.
  if (body.data == nullptr && body.len != 0) {
    call->respond_problem = "respond() got a body of " + std::to_string(body.len) + " bytes at a null pointer";
    return;
  }
  if (ct.size() > kMaxContentType || ct.find_first_of("\r\n") != std::string_view::npos) {
    call->respond_problem = "respond() got a content type over " + std::to_string(kMaxContentType) +
                            " bytes or with CR/LF";
    return;
  }
  // The one answer rule (host/http/responder.h): what is stored must be what every replay can serve.
  if (std::optional<std::string> problem = AnswerProblem(status, body.len)) {
    call->respond_problem = "respond() refused: " + *problem;
    return;
  }
  call->status = status;
  call->content_type = std::string(ct);
  call->answer = body.data == nullptr ? std::string() : std::string(body.data, body.len);
}

// AppendAsciiJson appends |s| as nlohmann's dump (ensure_ascii off) renders an ASCII string;
// false (and |out| partly written) when |s| has a byte past ASCII.
bool AppendAsciiJson(std::string& out, std::string_view s) {
  out.push_back('"');
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x80) return false;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xf]);
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
  return true;
}

void LogFn(cg_call* handle, int level, const char* message) {
  if (message == nullptr) return;
  const std::shared_ptr<cg_call> call = CallHandles::Global().Find(handle);  // dropped once the plugin returned
  if (call == nullptr || !call->audit) return;
  call->audit(PluginLogLine(call->plugin, level, std::string_view(message, strnlen(message, kMaxLogMessage))));
}

const cg_host_api kHostApi = {CLAWGUARD_PLUGIN_ABI, &ErpCallFn, &RespondFn, &LogFn};

}  // namespace

std::string PluginLogLine(std::string_view plugin, int level, std::string_view message) {
  std::string line = "{\"event\":\"plugin_log\",\"level\":" + std::to_string(level) + ",\"message\":";
  if (AppendAsciiJson(line, message)) {
    line += ",\"plugin\":";
    if (AppendAsciiJson(line, plugin)) {
      line.push_back('}');
      return line;
    }
  }
  const nlohmann::json j = {
      {"event", "plugin_log"}, {"plugin", plugin}, {"level", level}, {"message", message}};
  return DumpJson(j);
}

namespace {

// Audited returns |report| after writing its failure (if any) to the audit sink.
DispatchReport Audited(const AuditFn& audit, const DispatchContext& ctx, DispatchReport report) {
  // An abandoned outcome was audited by the watchdog when it gave up.
  if (audit && report.outcome.kind != PluginOutcome::Kind::kAnswered && !report.outcome.abandoned) {
    const char* event = "plugin_failed";
    if (report.outcome.kind == PluginOutcome::Kind::kTimedOut) event = "plugin_timeout";
    if (report.outcome.erp_pending_in_ms > 0) event = "erp_pending";  // stopped as plugin.h asks
    if (report.outcome.kind == PluginOutcome::Kind::kDeadLettered) event = "event_dead_lettered";
    nlohmann::json j = {{"event", event},
                        {"plugin", ctx.plugin},
                        {"route", ctx.route},
                        {"event_key", ctx.event_key},
                        {"detail", report.outcome.detail}};
    if (!report.outcome.dead_letter_class.empty()) j["dlq_class"] = report.outcome.dead_letter_class;
    audit(DumpJson(j));
  }
  return report;
}

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
    if (!ts) ts = ctx.request->headers.Get("svix-timestamp");  // byte-equal when both came (checked)
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
    std::lock_guard lock(call.mu);  // a respond() from a kept thread is ignored from here on
    call.closed.store(true);
  }
  GatewayOutcome erp;
  {
    // Waits for an erp_call a kept thread is in; any later one sees |closed| and sends nothing.
    std::lock_guard erp_lock(call.erp_mu);
    erp = call.gateway->outcome();
  }
  {
    std::lock_guard lock(call.mu);
    call.finished = true;
    call.rc = rc;
    call.erp = std::move(erp);
  }
  CallHandles::Global().Retire(call.handle);  // the plugin's pointer names nothing any more
  call.done_cv.notify_all();  // after unlocking: the waiter need not block on call.mu again
}

// ReportOf turns a finished call into its report. |call.mu| must be held.
DispatchReport ReportOf(const cg_call& call) {
  DispatchReport report;
  report.erp = call.erp;
  if (call.erp.dead_lettered) {
    report.outcome = PluginOutcome::DeadLettered(call.erp.dead_letter_reason,
                                                 "event dead-lettered: " + call.erp.dead_letter_reason);
  } else if (call.rc != 0) {
    report.outcome = PluginOutcome::Failed("handle_webhook returned " + std::to_string(call.rc));
    // Stopped on an ERP call the outbox still owns (plugin.h: return at once): not a failure of
    // the plugin; the host finishes the call and a later delivery is answered from its row.
    report.outcome.erp_pending_in_ms = call.erp.pending_in_ms;
    if (call.erp.pending_in_ms != 0) report.outcome.detail += " after an ERP call the outbox still owns";
  } else if (call.responds != 1) {
    report.outcome = PluginOutcome::Failed("respond() was called " + std::to_string(call.responds) +
                                           " times; exactly once is required");
  } else if (!call.respond_problem.empty()) {
    report.outcome = PluginOutcome::Failed(call.respond_problem);
  } else {
    report.outcome = PluginOutcome::Answered(call.status, call.content_type, call.answer);
  }
  return report;
}

constexpr const char* kTimedOutDetail = "the plugin did not return within handler_timeout";
constexpr const char* kLeaseLostDetail = "the lease was taken over while the plugin ran";

}  // namespace

// Watchdog enforces handler_timeout and renews the lease of the deliveries a dispatcher runs on
// their callers' threads (DispatchContext::on_abandon). One thread sleeps until the earliest
// deadline or renewal of the watched deliveries; what is due then runs as a task on a spare
// thread (a renewal is a store round trip, giving up calls the caller's on_abandon, which stores
// and answers), so one slow store call delays no other delivery's deadline. Deliveries start in
// time order with the same timeout, so a new watch is never earlier than the planned wake-up and
// adding one wakes nobody (except an idle watchdog); a finished delivery is just removed.
struct PluginDispatcher::Watchdog : std::enable_shared_from_this<PluginDispatcher::Watchdog> {
  using SteadyClock = std::chrono::steady_clock;
  struct Watch {
    std::shared_ptr<cg_call> call;
    const DispatchContext* ctx = nullptr;  // valid until Finish returns
    SteadyClock::time_point deadline;
    SteadyClock::time_point next_renew;
    // Guarded by Watchdog::mu:
    bool done = false;  // the plugin returned: no task is started any more
    int busy = 0;       // tasks running for this watch
    std::condition_variable idle;
    std::multimap<SteadyClock::time_point, std::shared_ptr<Watch>>::iterator where;
    bool queued = false;  // |where| is valid
    // Set by the task that gave up (before on_abandon; read after Finish).
    PluginOutcome outcome;
  };

  Watchdog(std::chrono::milliseconds renew_period, AuditFn audit_fn)
      : renew_every(renew_period), audit(std::move(audit_fn)) {}

  // Start runs the watchdog's thread; it keeps the watchdog alive until Stop.
  void Start() {
    std::thread([self = shared_from_this()] { self->Loop(); }).detach();
  }
  void Stop() {
    {
      std::lock_guard lock(mu);
      stopping = true;
    }
    cv.notify_all();
  }

  void Add(const std::shared_ptr<Watch>& w) {
    bool wake = false;
    {
      std::lock_guard lock(mu);
      const SteadyClock::time_point at = std::min(w->deadline, w->next_renew);
      Queue(w, at);
      wake = at < planned;
    }
    if (wake) cv.notify_one();
  }

  // Finish ends the watch: no task starts for it any more, and a running one is waited for.
  void Finish(const std::shared_ptr<Watch>& w) {
    std::unique_lock lock(mu);
    w->done = true;
    if (w->queued) {
      due.erase(w->where);
      w->queued = false;
    }
    if (fiber::Current() == nullptr) {
      w->idle.wait(lock, [&] { return w->busy == 0; });
      return;
    }
    // On a fiber: a renewal or give-up runs on a task thread for at most a store write; poll for
    // it rather than hold the carrier's other fibers in a condition variable.
    while (w->busy != 0) {
      lock.unlock();
      fiber::SleepFor(std::chrono::microseconds(200));
      lock.lock();
    }
  }

 private:
  void Queue(const std::shared_ptr<Watch>& w, SteadyClock::time_point at) {  // mu held
    w->where = due.emplace(at, w);
    w->queued = true;
  }

  void Loop() {
    NameThisThread("cg-watchdog");
    std::unique_lock lock(mu);
    while (!stopping) {
      if (due.empty()) {
        planned = SteadyClock::time_point::max();
        cv.wait(lock);
        continue;
      }
      planned = due.begin()->first;
      if (SteadyClock::now() < planned) {
        cv.wait_until(lock, planned);
        continue;
      }
      std::vector<std::shared_ptr<Watch>> ripe;
      const auto now = SteadyClock::now();
      while (!due.empty() && due.begin()->first <= now) {
        std::shared_ptr<Watch> w = due.begin()->second;
        due.erase(due.begin());
        w->queued = false;
        ++w->busy;
        ripe.push_back(std::move(w));
      }
      lock.unlock();
      for (auto& w : ripe) {
        try {
          tasks.Run([self = shared_from_this(), w] { self->Check(w); });
        } catch (...) {
          Check(w);  // no thread to spare: do it here
        }
      }
      lock.lock();
    }
  }

  // Check runs for a due watch: give up after the deadline, else renew the lease.
  void Check(const std::shared_ptr<Watch>& w) {
    const DispatchContext& ctx = *w->ctx;
    if (SteadyClock::now() >= w->deadline) {
      GiveUp(*w, PluginOutcome::TimedOut(kTimedOutDetail));
    } else if (ctx.renew_lease && !ctx.renew_lease()) {
      GiveUp(*w, PluginOutcome::Failed(kLeaseLostDetail));
    } else {
      bool wake = false;
      {
        std::lock_guard lock(mu);
        if (!w->done) {
          w->next_renew = SteadyClock::now() + renew_every;
          const SteadyClock::time_point at = std::min(w->deadline, w->next_renew);
          Queue(w, at);
          wake = at < planned;  // e.g. the watchdog went idle while this task ran
        }
      }
      if (wake) cv.notify_one();
    }
    std::lock_guard lock(mu);
    if (--w->busy == 0) w->idle.notify_all();
  }

  void GiveUp(Watch& w, PluginOutcome outcome) {
    {
      std::lock_guard lock(w.call->mu);
      if (w.call->finished) return;  // the plugin returned first: its result stands
      w.call->abandoned.store(true);
    }
    (void)Audited(audit, *w.ctx, DispatchReport{outcome, {}});
    outcome.abandoned = true;
    w.outcome = outcome;
    try {
      w.ctx->on_abandon(outcome);
    } catch (...) {
      // The caller's answer path must not throw; nothing more can be done here.
    }
  }

  const std::chrono::milliseconds renew_every;
  const AuditFn audit;
  runtime::SpareThreads tasks{std::chrono::seconds(10), "cg-watchdog"};
  std::mutex mu;
  std::condition_variable cv;
  std::multimap<SteadyClock::time_point, std::shared_ptr<Watch>> due;  // guarded by mu
  SteadyClock::time_point planned = SteadyClock::time_point::max();   // guarded by mu
  bool stopping = false;                                               // guarded by mu
};

PluginDispatcher::~PluginDispatcher() {
  if (watchdog_ != nullptr) watchdog_->Stop();
}

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
  if (!ctx.on_abandon) return Audited(options_.erp.audit, ctx, Run(ctx));
  // Inline, the calling thread is the plugin's: it counts in running_threads until it is out of
  // the dispatcher, and keeps the dispatcher alive meanwhile — after a late return (the delivery
  // was answered long ago) it may be the last owner.
  std::shared_ptr<const PluginDispatcher> self = shared_from_this();
  {
    std::lock_guard count(threads_->mu);
    ++threads_->running;
  }
  DispatchReport report = Audited(options_.erp.audit, ctx, Run(ctx));
  {
    std::lock_guard count(threads_->mu);
    if (--threads_->running == 0) threads_->idle.notify_all();
  }
  return report;
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
  call->handle = CallHandles::Global().Add(call);  // retired by RunPlugin when the plugin returns
  if (call->handle == nullptr) return {PluginOutcome::Failed("no call handle: the CSPRNG failed"), {}};

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
    std::lock_guard lock(call->mu);
    return ReportOf(*call);
  }

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
    spare_threads_.Run([self, call, plugin, serial, finished]() {
      RunPlugin(plugin, serial, *call);
      finished();  // the last touch of anything but |call| and |self| (shared, freed with the task)
    });
  } catch (const std::exception&) {
    finished();
    CallHandles::Global().Retire(call->handle);
    return {PluginOutcome::Failed("could not start the plugin's thread"), {}};
  }

  std::unique_lock lock(call->mu);
  while (!call->finished) {
    const auto slice = std::min(deadline, SteadyClock::now() + renew_every);
    call->done_cv.wait_until(lock, slice, [&] { return call->finished; });
    if (call->finished) break;
    if (SteadyClock::now() >= deadline) {
      call->abandoned.store(true);
      return {PluginOutcome::TimedOut(kTimedOutDetail), {}};
    }
    lock.unlock();
    const bool held = !ctx.renew_lease || ctx.renew_lease();
    lock.lock();
    if (!held && !call->finished) {
      call->abandoned.store(true);
      return {PluginOutcome::Failed(kLeaseLostDetail), {}};
    }
  }
  return ReportOf(*call);
}

}  // namespace clawguard::host
