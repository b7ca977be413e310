// plugin_worker.h — PluginWorker: the host's side of one plugin's worker process
// (ARCHITECTURE.md "Plugin workers"; the worker itself: host/sandbox/worker_serve.h).
//
// Start makes the worker: a socketpair for the channel (host/sandbox/worker_protocol.h), one for
// the supervisor socket (the worker sends its seccomp listener over it before any plugin code
// runs; a worker that says kReady without having sent it is refused), a read-only descriptor of
// the library's sealed memfd, and
// SpawnWorker (host/sandbox/worker_spawn.h: new namespaces, an empty environment, only those
// descriptors). It waits up to start_timeout for kReady (init returned 0) — kInitFailed, a death
// or silence is a refused load (kLoadFailed; kAbiMismatch when the worker says so) — then runs two
// threads: a reader that routes each frame to its delivery's Session and watches the process
// (pidfd) and its listener, and a writer that sends what the host queued (a worker that stops
// reading cannot block a host thread: past kMaxQueuedBytes it is killed).
//
// Faults. A worker that dies — a crash, an exit, a kill by the host (a forbidden call the kernel
// reported on the listener, handler_timeout, a protocol violation, a full queue) — is reaped, its
// cause audited ({"event":"plugin_worker_fault","plugin","version","cause","signal","syscall",
// "detail"}; a forbidden call is cause "seccomp" also when it ended a restart) and passed to
// on_fault (the metric), and every Session on it ends "gone". The next Begin starts a new worker
// once the backoff has passed (backoff_base doubling up to backoff_max); max_faults faults within
// fault_window mark the plugin failed: Begin refuses until the host restarts (a crash loop). A
// worker's frames are the plugin's: the reader checks their framing and the Session's owner (the
// sandbox dispatcher) checks their content.
#ifndef CLAWGUARD_HOST_DISPATCH_PLUGIN_WORKER_H_
#define CLAWGUARD_HOST_DISPATCH_PLUGIN_WORKER_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "clawguard/error.h"
#include "clawguard/unique_fd.h"
#include "core/mutex.h"
#include "host/erp/erp_env.h"
#include "host/sandbox/lockdown.h"
#include "host/sandbox/worker_cgroup.h"
#include "host/sandbox/worker_protocol.h"

namespace clawguard::host {

// WorkerFault is one worker death, as audited.
struct WorkerFault {
  std::string plugin, version;
  // "crash", "seccomp", "memory", "exit", "timeout", "protocol", "queue", "start"
  std::string cause;
  int signal = 0;              // the signal that ended it, 0 if it exited
  std::optional<int> syscall;  // seccomp: the refused call's number (the kernel's report)
  std::string detail;
};

struct WorkerOptions {
  std::string executable;     // the clawguard-worker binary
  uint64_t memory_limit = 0;  // RLIMIT_AS of the worker; 0: none
  // When set, each worker runs in a memory cgroup of its own limited to memory_limit, which also
  // counts the kernel memory (page tables) RLIMIT_AS does not: the kernel's OOM kill there is
  // cause "memory".
  std::shared_ptr<sandbox::WorkerCgroups> cgroups;
  uint64_t max_threads = 0;  // the worker's threads, its main thread included; 0: no bound
  bool namespaces = true;
  std::chrono::milliseconds start_timeout{10'000};
  int max_faults = 5;  // within fault_window: the plugin is failed
  std::chrono::milliseconds fault_window{60'000};
  std::chrono::milliseconds backoff_base{100};
  std::chrono::milliseconds backoff_max{30'000};
  AuditFn audit;
  std::function<void(const WorkerFault&)> on_fault;
  // What the host queues for a worker that does not read its channel before it is killed
  // (PluginWorker::kMaxQueuedBytes; tests lower it).
  uint64_t max_queued_bytes = 256ull << 20;
};

class PluginWorker : public std::enable_shared_from_this<PluginWorker> {
 public:
  static constexpr uint64_t kMaxQueuedBytes = 256ull << 20;  // WorkerOptions' default
  // What one delivery may have routed to it and not yet read: its owner reads a frame at a time
  // and answers an ERP call before the next, so a plugin that floods meanwhile is a violation.
  static constexpr uint64_t kMaxInboxBytes = 2 * sandbox::kMaxWorkerFrame;
  static constexpr size_t kMaxInboxFrames = 4096;
  // What all deliveries of one worker may hold unread together: without it, a worker flooding
  // every delivery that waits on the ERP would hold handlers × kMaxInboxBytes of host memory.
  static constexpr uint64_t kMaxWorkerInboxBytes = 4 * sandbox::kMaxWorkerFrame;
  static constexpr uint64_t kQueuedFrameOverhead = 128;  // a frame's bookkeeping, counted with it
  // ERP calls answered CG_FENCED for one delivery the host gave up on (a lost lease) before the
  // worker is killed: an honest plugin stops calling once fenced.
  static constexpr uint32_t kMaxFencedErpCalls = 256;
  // Frames of any kind for one delivery the host gave up on before the worker is killed.
  static constexpr uint32_t kMaxFramesAfterAbandon = 65536;
  // How long Stop lets the plugin's shutdown() run before the worker is killed.
  static constexpr std::chrono::milliseconds kShutdownGrace{2000};

  struct Process;
  // Session is one delivery on a worker process.
  class Session {
   public:
    ~Session();
    // Next waits up to |timeout| for the delivery's next frame. std::nullopt: timed out, or the
    // worker is gone (gone() says so, with its cause in gone_cause()).
    std::optional<sandbox::Frame> Next(std::chrono::milliseconds timeout);
    bool gone() const;
    std::string gone_cause() const;
    // Send queues a frame for this delivery; false if the worker is gone.
    bool Send(sandbox::FrameType type, std::string_view payload);
    // Abandon: the host stopped following this delivery; its later erp_calls are answered
    // CG_FENCED, its other frames dropped.
    void Abandon();
    // KillWorker ends the worker process (and with it every delivery on it) for |cause|.
    void KillWorker(const std::string& cause, const std::string& detail);
    uint64_t id() const { return id_; }

   private:
    friend class PluginWorker;
    friend struct Process;
    Session(std::shared_ptr<Process> process, uint64_t id);
    std::shared_ptr<Process> process_;
    uint64_t id_;
    UniqueFd wake_;  // eventfd: a frame arrived or the worker went
    mutable Mutex mu_;
    std::deque<sandbox::Frame> inbox_ CLAWGUARD_GUARDED_BY(mu_);
    uint64_t inbox_bytes_ CLAWGUARD_GUARDED_BY(mu_) = 0;
    bool gone_ CLAWGUARD_GUARDED_BY(mu_) = false;
    std::string gone_cause_ CLAWGUARD_GUARDED_BY(mu_);
    // A kRespond was routed to it (by the reader, under the process's lock).
    bool answered_ = false;
  };

  // Start starts the first worker process and waits for it to be ready (see the file comment).
  // |memfd| is the library's sealed memfd (kept for restarts).
  static Result<std::shared_ptr<PluginWorker>> Start(WorkerOptions options, std::string plugin,
                                                     std::string version, int64_t abi,
                                                     UniqueFd memfd);
  ~PluginWorker();
  PluginWorker(const PluginWorker&) = delete;
  PluginWorker& operator=(const PluginWorker&) = delete;

  // Begin sends |delivery| to the worker (starting a new one when the last died and its backoff
  // passed). Refusals: kPluginUnavailable with why (failed, backing off, the restart failed).
  Result<std::unique_ptr<Session>> Begin(const sandbox::DeliverMsg& delivery);

  // Stop ends the worker process for good (host shutdown: no fault is reported): it asks the
  // worker to run the plugin's shutdown() and exit, kills it after kShutdownGrace, and waits for
  // its threads; Begin refuses from then on.
  void Stop();

  const std::string& plugin() const { return plugin_; }
  uint32_t flags() const { return flags_; }
  bool failed() const;
  pid_t pid() const;                            // the current process, -1 when none
  std::vector<std::string> namespaces() const;  // what the current process got
  int64_t faults() const;                       // worker deaths so far

 private:
  PluginWorker(WorkerOptions options, std::string plugin, std::string version, int64_t abi,
               UniqueFd memfd)
      : options_(std::move(options)),
        plugin_(std::move(plugin)),
        version_(std::move(version)),
        abi_(abi),
        memfd_(std::move(memfd)) {}
  // Spawn starts a worker and waits for kReady; a forbidden call that refused the start is put in
  // |refused| as well as in the error, and the kernel's OOM kill in its cgroup sets
  // |out_of_memory|.
  Result<std::shared_ptr<Process>> Spawn(std::optional<sandbox::RefusedCall>* refused = nullptr,
                                         bool* out_of_memory = nullptr);
  void OnFault(const WorkerFault& fault);

  const WorkerOptions options_;
  const std::string plugin_, version_;
  const int64_t abi_;
  const UniqueFd memfd_;
  uint32_t flags_ = 0;  // set by Start from the first kReady

  mutable Mutex mu_;
  std::shared_ptr<Process> current_ CLAWGUARD_GUARDED_BY(mu_);
  uint64_t next_id_ CLAWGUARD_GUARDED_BY(mu_) = 1;
  std::deque<std::chrono::steady_clock::time_point> recent_faults_ CLAWGUARD_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point restart_at_ CLAWGUARD_GUARDED_BY(mu_);
  int consecutive_faults_ CLAWGUARD_GUARDED_BY(mu_) = 0;
  int64_t faults_ CLAWGUARD_GUARDED_BY(mu_) = 0;
  bool failed_ CLAWGUARD_GUARDED_BY(mu_) = false;
  bool stopped_ CLAWGUARD_GUARDED_BY(mu_) = false;
  bool restarting_ CLAWGUARD_GUARDED_BY(mu_) = false;  // a Begin is starting the next worker
  std::shared_ptr<Process> starting_ CLAWGUARD_GUARDED_BY(mu_);  // that worker, until ready
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_DISPATCH_PLUGIN_WORKER_H_
