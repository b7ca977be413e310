// plugin_call.h — internal to host/dispatch (no other room includes it): cg_call, one delivery's
// context that plugin.h declares opaque, shared by the host API table (host_api.cpp), the
// dispatcher and its watchdog (plugin_dispatch.cpp, dispatch_watchdog.h).
#ifndef CLAWGUARD_HOST_DISPATCH_PLUGIN_CALL_H_
#define CLAWGUARD_HOST_DISPATCH_PLUGIN_CALL_H_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/plugin.h"
#include "core/mutex.h"
#include "host/dispatch/plugin_dispatch.h"

namespace clawguard::host {

// Limits on what a plugin passes through the host API.
inline constexpr size_t kMaxContentType = 256;
inline constexpr size_t kMaxLogMessage = 2048;

inline constexpr const char* kTimedOutDetail = "the plugin did not return within handler_timeout";
inline constexpr const char* kLeaseLostDetail = "the lease was taken over while the plugin ran";

// Audited returns |report| after writing its failure (if any) to the audit sink.
DispatchReport Audited(const AuditFn& audit, const DispatchContext& ctx, DispatchReport report);

// RespondProblem says why an answer given to respond() is refused (nullopt: it is taken): a body
// at a null pointer, a content type over kMaxContentType bytes or with CR/LF, the answer rule.
std::optional<std::string> RespondProblem(int status, std::string_view content_type,
                                          bool body_is_null, size_t body_len);

// FinishedCall is what a delivery left when handle_webhook returned; ReportFor decides its
// outcome (the same rules in process and in a worker).
struct FinishedCall {
  int rc = 0;
  int responds = 0;
  std::string respond_problem;  // why the one respond() was refused; empty: it was taken
  int status = 0;
  std::string content_type, answer;
  GatewayOutcome erp;
};
DispatchReport ReportFor(FinishedCall call);

}  // namespace clawguard::host

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
  clawguard::Mutex erp_mu;  // serialises erp_call per cg_call
  std::unique_ptr<clawguard::host::ErpGateway> gateway CLAWGUARD_PT_GUARDED_BY(erp_mu);
  std::atomic<bool> abandoned{false};
  // closed: handle_webhook returned. Set under |mu|; erp_call checks it under |erp_mu|, which the
  // returning thread takes after setting it, so no ERP call starts once the delivery is over.
  std::atomic<bool> closed{false};

  clawguard::Mutex mu;  // guards what follows
  std::condition_variable done_cv;
  bool finished CLAWGUARD_GUARDED_BY(mu) = false;
  int rc CLAWGUARD_GUARDED_BY(mu) = 0;
  int responds CLAWGUARD_GUARDED_BY(mu) = 0;
  // Why the one respond() was refused (empty: it was valid).
  std::string respond_problem CLAWGUARD_GUARDED_BY(mu);
  int status CLAWGUARD_GUARDED_BY(mu) = 0;
  std::string content_type CLAWGUARD_GUARDED_BY(mu);
  std::string answer CLAWGUARD_GUARDED_BY(mu);
  clawguard::host::GatewayOutcome erp CLAWGUARD_GUARDED_BY(mu);
};

#endif  // CLAWGUARD_HOST_DISPATCH_PLUGIN_CALL_H_
