// plugin_dispatch.h — PluginDispatcher: the host's Dispatcher (dispatch_context.h). It runs one
// claimed delivery through a plugin's handle_webhook (ARCHITECTURE.md "Plugin ABI" and step 5).
//
// Per delivery it builds a cg_call (opaque to plugins; defined in plugin_call.h) holding host-owned
// copies of the request (method, path, body, idempotency_key = the event key, and as headers only
// the authenticated ones: webhook-id and, when the request has it, webhook-timestamp) and an
// ErpGateway. The plugin is given a handle for it, not its address: a tagged number looked up by
// every host API call and retired when handle_webhook returns, so a call made with it later (from
// a thread the plugin kept) finds nothing — erp_call returns CG_FENCED, respond and log are
// dropped — and touches no freed memory. Then it runs handle_webhook in one of two ways:
//   - handed off (no DispatchContext::on_abandon: DLQ replays, tests): on a thread of its own (a
//     spare one that an earlier delivery left, if any: runtime/spare_threads.h) while the caller
//     waits at most handler_timeout, renewing the lease (DispatchContext::renew_lease) every
//     lease/3 meanwhile;
//   - inline (on_abandon set: the host's webhook deliveries, WebhookPipeline::FinishAsync): on the
//     calling thread, which is then not woken by another one (two context switches fewer per
//     delivery). A watchdog thread (one per dispatcher, started by the first inline dispatch)
//     sleeps until the earliest deadline or renewal among the inline deliveries and hands what is
//     due to a spare task thread: renew the lease every lease/3, or give up — at handler_timeout,
//     or when a renewal finds the lease taken over — by marking the cg_call abandoned, auditing it
//     and calling on_abandon(outcome) (the caller answers from there) while the plugin may still
//     run. The dispatch returns that outcome with |abandoned| set when the plugin returns, never
//     while a renewal or on_abandon for it runs, and none starts after it returned.
// Results, as PluginOutcome:
//   - handle_webhook returned 0 after exactly one respond() → kAnswered (its status, type, body);
//   - an ERP call refused CG_MISMATCH (the plugin changed its calls on a re-run: the event is
//     dead-lettered, class "mismatch") → kDeadLettered, whatever the plugin returned or answered;
//   - non-zero return, zero or two+ respond() calls, an answer that breaks the answer rule
//     (AnswerProblem, host/http/responder.h: status 200..599, no body with 204/205/304; the audited
//     detail says which), a bad content type, or a lost lease → kFailed (500 plugin_failed,
//     retryable, audited);
//   - no return within handler_timeout → kTimedOut (503 plugin_timeout); inline, given to
//     on_abandon at that moment (and a lost lease there as kFailed).
// WARNING: a C function cannot be cancelled. A timed-out plugin's thread (inline: the caller's
// thread) keeps running until it returns; its cg_call is marked abandoned, so its later erp_call
// gets CG_FENCED (nothing is written or sent) and its respond() is ignored. Its lease is not
// renewed any more. The thread keeps the dispatcher and its cg_call alive (shared ownership) and
// calls the ErpEnv's audit function (make it own what it writes to), but it may still be inside an
// ERP call (outbox, sender) and it runs the plugin's code: whoever owns those must not free them
// while running_threads() > 0 — HostApp waits for WaitIdle up to a bound, then leaks them on
// purpose. CG_PLUGIN_SERIAL → one mutex per plugin around handle_webhook (held by a hung plugin
// too). erp_call is serialised per cg_call. The host API table (HostApi()) is static. Immutable
// after Create; Dispatch is thread-safe.
#ifndef CLAWGUARD_HOST_DISPATCH_PLUGIN_DISPATCH_H_
#define CLAWGUARD_HOST_DISPATCH_PLUGIN_DISPATCH_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "clawguard/error.h"
#include "clawguard/plugin.h"
#include "core/mutex.h"
#include "host/dispatch/dispatch_context.h"
#include "host/erp/capability.h"
#include "host/erp/erp_gateway.h"
#include "runtime/spare_threads.h"

namespace clawguard::host {

// HostApi returns the static host table given to every plugin's init.
const cg_host_api* HostApi();

// PluginLogLine is the audit line of a plugin's log call (|message| already cut at its limit):
//   {"event":"plugin_log","level":<level>,"message":"<message>","plugin":"<plugin>"}
// the members in nlohmann::json's (sorted) order and escaped as its dump escapes them. ASCII text
// is rendered directly; text with other bytes goes through nlohmann (which replaces invalid UTF-8).
std::string PluginLogLine(std::string_view plugin, int level, std::string_view message);

// DispatchTarget is one loaded plugin. |plugin| is borrowed and must outlive the dispatcher.
struct DispatchTarget {
  std::string name;
  const cg_plugin* plugin = nullptr;
  std::vector<std::string> erp_capabilities;  // the signed manifest's capabilities.erp
};

struct DispatchOptions {
  std::chrono::milliseconds handler_timeout{10'000};
  std::chrono::milliseconds lease{30'000};  // renewals every lease/3
  ErpEnv erp;                               // shared by every delivery's gateway
};

// DispatchReport is a dispatch's outcome plus what its ERP calls did.
struct DispatchReport {
  PluginOutcome outcome;
  GatewayOutcome erp;  // as of the plugin's return (empty after a timeout)
};

class PluginDispatcher : public std::enable_shared_from_this<PluginDispatcher> {
 public:
  // Create compiles each target's capabilities (kManifestInvalid), refuses duplicates, null
  // plugins and non-positive timeouts (kConfigInvalid).
  static Result<std::shared_ptr<PluginDispatcher>> Create(DispatchOptions options,
                                                          std::vector<DispatchTarget> targets);

  ~PluginDispatcher();

  // Dispatch runs one delivery (see the file comment). An unknown plugin is kFailed.
  DispatchReport DispatchDetailed(const DispatchContext& ctx) const;
  PluginOutcome Dispatch(const DispatchContext& ctx) const { return DispatchDetailed(ctx).outcome; }

  // AsDispatcher returns the std::function the pipeline holds (it keeps this object alive).
  Dispatcher AsDispatcher() const;

  // running_threads is how many plugin threads (answered or abandoned; inline: callers' threads
  // inside Dispatch) have not finished yet.
  int64_t running_threads() const;
  // WaitIdle waits up to |bound| until running_threads() is 0; true if it is.
  bool WaitIdle(std::chrono::milliseconds bound) const;

 private:
  struct Entry {
    const cg_plugin* plugin = nullptr;
    CapabilitySet capabilities;
    // Set for CG_PLUGIN_SERIAL. A plain std::mutex: it guards no data, it only serialises
    // handle_webhook, and RunPlugin takes it only when it is set (or polls it on a fiber).
    std::shared_ptr<std::mutex> serial;
  };
  // ThreadCount counts live plugin threads; shared with them (they may outlive a dispatch).
  struct ThreadCount {
    Mutex mu;
    std::condition_variable idle;
    int64_t running CLAWGUARD_GUARDED_BY(mu) = 0;
  };
  struct Watchdog;
  PluginDispatcher(DispatchOptions options, std::map<std::string, Entry> entries)
      : options_(std::move(options)), entries_(std::move(entries)) {}
  DispatchReport Run(const DispatchContext& ctx) const;

  const DispatchOptions options_;
  const std::map<std::string, Entry> entries_;
  const std::shared_ptr<ThreadCount> threads_ = std::make_shared<ThreadCount>();
  // Each delivery runs on a thread of its own (a hung plugin keeps only its own), reused from an
  // earlier delivery when one is spare.
  mutable runtime::SpareThreads spare_threads_{std::chrono::seconds(10), "cg-plugin"};
  // Started by the first inline dispatch (DispatchContext::on_abandon); its thread keeps it.
  mutable std::once_flag watchdog_once_;
  mutable std::shared_ptr<Watchdog> watchdog_;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_DISPATCH_PLUGIN_DISPATCH_H_
