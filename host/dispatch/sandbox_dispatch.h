// sandbox_dispatch.h — SandboxDispatcher: the host's Dispatcher (dispatch_context.h) when plugins
// run in worker processes (`plugins.isolation: sandbox`; ARCHITECTURE.md "Plugin workers").
//
// Per delivery it sends the same request a cg_request shows in process (method, path, body, the
// event key, and as headers only webhook-id and webhook-timestamp) to the plugin's worker
// (PluginWorker::Begin) and then serves that delivery's frames on the calling thread (or fiber)
// until kDone, everything checked as the in-process host API checks it:
//   - kErpCall → ErpGateway::Call on host-owned copies (capabilities, outbox, fencing — the
//     worker holds no credential and no socket), its result sent back as kErpReply;
//   - kRespond → exactly once, the answer rule (AnswerProblem), a content type of at most 256
//     bytes without CR/LF — as RespondFn (host_api.cpp);
//   - kLog → an audit line (PluginLogLine); at most kMaxLogsPerDelivery per delivery, then one
//     plugin_log_dropped line;
//   - kDone → the outcome, as the in-process dispatcher decides it (kAnswered, kFailed,
//     kDeadLettered, erp_pending).
// No host thread ever runs plugin code, so nothing here is abandoned: at handler_timeout the
// worker is killed (every delivery on it ends) and the outcome is kTimedOut with plugin_stopped —
// at the deadline, or, when the host is inside the delivery's ERP call then, as that call returns
// (it is the host's, bounded by erp.timeout; with fibers the pipeline's answer deadline answers
// the platform meanwhile);
// a worker that dies meanwhile gives kUnavailable; the lease is renewed every lease/3 while the
// delivery runs, and a lost lease abandons the delivery (its later ERP calls are answered
// CG_FENCED) with kFailed. DispatchContext::on_abandon is not used. Thread-safe; immutable after
// Create.
#ifndef CLAWGUARD_HOST_DISPATCH_SANDBOX_DISPATCH_H_
#define CLAWGUARD_HOST_DISPATCH_SANDBOX_DISPATCH_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "clawguard/error.h"
#include "host/dispatch/dispatch_context.h"
#include "host/dispatch/plugin_dispatch.h"
#include "host/dispatch/plugin_worker.h"
#include "host/erp/capability.h"

namespace clawguard::host {

inline constexpr int kMaxLogsPerDelivery = 100;

struct SandboxTarget {
  std::string name;
  std::shared_ptr<PluginWorker> worker;
  std::vector<std::string> erp_capabilities;  // the signed manifest's capabilities.erp
};

class SandboxDispatcher : public std::enable_shared_from_this<SandboxDispatcher> {
 public:
  // Create compiles each target's capabilities (kManifestInvalid) and refuses duplicates, missing
  // workers and non-positive timeouts (kConfigInvalid).
  static Result<std::shared_ptr<SandboxDispatcher>> Create(DispatchOptions options,
                                                           std::vector<SandboxTarget> targets);

  DispatchReport DispatchDetailed(const DispatchContext& ctx) const;
  PluginOutcome Dispatch(const DispatchContext& ctx) const { return DispatchDetailed(ctx).outcome; }
  Dispatcher AsDispatcher() const;

 private:
  struct Entry {
    std::shared_ptr<PluginWorker> worker;
    CapabilitySet capabilities;
  };
  SandboxDispatcher(DispatchOptions options, std::map<std::string, Entry> entries)
      : options_(std::move(options)), entries_(std::move(entries)) {}
  DispatchReport Run(const DispatchContext& ctx) const;

  const DispatchOptions options_;
  const std::map<std::string, Entry> entries_;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_DISPATCH_SANDBOX_DISPATCH_H_
