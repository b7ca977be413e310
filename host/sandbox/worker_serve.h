// worker_serve.h — the plugin worker process (`clawguard-worker`; ARCHITECTURE.md "Plugin
// workers"): one plugin, confined before any of its code runs, serving deliveries for the host.
//
// The host starts it (worker_spawn.h) with fd 3 = its end of the channel (worker_protocol.h),
// fd 4 = the plugin library's sealed memfd, fd 5 = the supervisor socket (the worker hands its
// seccomp listener to the host over it, then closes it), an empty environment and
//   clawguard-worker --plugin NAME --abi N [--memory-limit BYTES]
// WorkerMain then, in order: opens /proc/self/maps (the load's mapping check reads it later);
// EnterLoadPhase (lockdown.h: fds, no_new_privs, rlimits, Landlock, seccomp stage 1);
// LoadFromSealedMemfd (loader/memfd_loader.h: the seals, dlopen, the identity checks, the ABI,
// init with the worker's host API table); EnterServePhase (a Landlock domain with no filesystem
// access: no open); kReady — or kInitFailed with the reason and exit 1.
//
// Serving: the main thread reads frames; each kDeliver runs handle_webhook on a thread of its own
// (one at a time under CG_PLUGIN_SERIAL) with a cg_call the plugin knows by a handle. The host API
// table forwards erp_call (kErpCall, then waits for its kErpReply), respond (kRespond) and log
// (kLog); kDone carries handle_webhook's result. The worker decides nothing the host relies on:
// the host checks every frame (capabilities, the answer rule, exactly one respond, log limits) as
// if the plugin had written it — it may have. EOF or a malformed frame from the host: exit.
#ifndef CLAWGUARD_HOST_SANDBOX_WORKER_SERVE_H_
#define CLAWGUARD_HOST_SANDBOX_WORKER_SERVE_H_

namespace clawguard::sandbox {

inline constexpr int kWorkerChannelFd = 3;
inline constexpr int kWorkerLibraryFd = 4;
inline constexpr int kWorkerSupervisorFd = 5;

int WorkerMain(int argc, char** argv);

}  // namespace clawguard::sandbox

#endif  // CLAWGUARD_HOST_SANDBOX_WORKER_SERVE_H_
