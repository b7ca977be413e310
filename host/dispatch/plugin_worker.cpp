// plugin_worker.cpp — see plugin_worker.h.
// Over 500 lines on purpose: the process record, its reader and writer threads, the sessions and
// the worker's life cycle share one lock order (PluginWorker::mu_, then Process::mu, then
// Session::mu_), which is checked most easily in one file.
#include "host/dispatch/plugin_worker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>

#include <nlohmann/json.hpp>

#include "clawguard/json_dump.h"
#include "clawguard/plugin.h"
#include "host/sandbox/lockdown.h"
#include "host/sandbox/worker_spawn.h"
#include "runtime/fiber.h"
#include "runtime/thread_name.h"

namespace clawguard::host {

using sandbox::Frame;
using sandbox::FrameType;
using SteadyClock = std::chrono::steady_clock;

namespace {

Status Unavailable(std::string m) { return Status(Reason::kPluginUnavailable, std::move(m)); }

constexpr int64_t kStartPollMs = 50;  // how often a start checks whether its worker died

int PidfdSignal(int pidfd, int sig) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}

std::string SignalName(int sig) {
  const char* n = ::sigabbrev_np(sig);
  return n != nullptr ? std::string("SIG") + n : "signal " + std::to_string(sig);
}

std::string OomDetail(const sandbox::WorkerCgroup& cgroup) {
  return "the kernel ended the worker at its memory cgroup's limit of " +
         std::to_string(cgroup.limit()) + " bytes (its pages and page tables together)";
}

}  // namespace

// Process is one worker process and the two threads that serve its channel.
struct PluginWorker::Process {
  // The worker's memory cgroup, if any: declared first so that it is removed last, after the
  // threads are joined and the process reaped.
  std::unique_ptr<sandbox::WorkerCgroup> cgroup;
  std::weak_ptr<PluginWorker> owner;
  std::string plugin, version;
  sandbox::SpawnedProcess proc;
  UniqueFd channel;
  // The worker's seccomp listener (lockdown.h), taken from the supervisor socket at start.
  UniqueFd supervisor, listener;
  // Each type bounded by what an honest worker sends of it, from the header on: a frame announced
  // larger is refused before its payload is held.
  sandbox::FrameDecoder decoder{sandbox::kMaxWorkerFrame,
                                {FrameType::kReady, FrameType::kInitFailed, FrameType::kErpCall,
                                 FrameType::kRespond, FrameType::kLog, FrameType::kDone},
                                &sandbox::MaxWorkerPayload};
  std::thread reader, writer;

  Mutex mu;
  std::condition_variable send_cv;
  // A frame waiting for the writer; |reply_for|: the delivery whose ERP answer it is, or 0.
  struct Queued {
    std::string bytes;
    uint64_t reply_for = 0;
  };
  std::deque<Queued> queue CLAWGUARD_GUARDED_BY(mu);
  uint64_t queued_bytes CLAWGUARD_GUARDED_BY(mu) = 0;
  // Deliveries' ERP answers still in |queue| (not yet begun on the channel). An honest worker
  // makes a delivery's next ERP call only after it has read the last one's answer whole, so an ERP
  // call of a delivery with one here comes from plugin code writing the channel itself while the
  // worker does not read: without this rule each such call would queue another answer.
  std::map<uint64_t, int> replies_queued CLAWGUARD_GUARDED_BY(mu);
  uint64_t max_queued_bytes = kMaxQueuedBytes;
  std::atomic<uint64_t> inbox_total{0};           // every session's inbox_bytes_ together
  std::atomic<bool> reaped{false};                // dead, and its fault (if any) counted
  bool writing CLAWGUARD_GUARDED_BY(mu) = false;  // a frame is being written (writer or a caller)
  bool dead CLAWGUARD_GUARDED_BY(mu) = false;
  std::string dead_cause CLAWGUARD_GUARDED_BY(mu);
  std::map<uint64_t, Session*> sessions CLAWGUARD_GUARDED_BY(mu);
  // Deliveries the host gave up on whose kDone has not come, with what each sent since.
  struct AfterAbandon {
    uint32_t frames = 0;
    uint32_t calls = 0;  // ERP calls, each answered CG_FENCED
  };
  std::map<uint64_t, AfterAbandon> abandoned CLAWGUARD_GUARDED_BY(mu);
  uint64_t highest_id CLAWGUARD_GUARDED_BY(mu) = 0;
  std::string kill_cause CLAWGUARD_GUARDED_BY(mu), kill_detail CLAWGUARD_GUARDED_BY(mu);
  bool shutting_down CLAWGUARD_GUARDED_BY(mu) = false;
  // The first forbidden call the kernel reported: the worker was killed for it.
  std::optional<sandbox::RefusedCall> refused CLAWGUARD_GUARDED_BY(mu);

  ~Process() {
    Kill("shutdown", "the host stopped the worker");
    // The last owner is never one of these two threads (they hold no reference), but a join of
    // oneself would throw: detach then.
    for (std::thread* t : {&reader, &writer}) {
      if (!t->joinable()) continue;
      if (t->get_id() == std::this_thread::get_id()) {
        t->detach();
      } else {
        t->join();
      }
    }
  }

  // A worker the host kills for what it did (a forbidden call, a protocol violation, a full queue)
  // is trusted no further: its frames not yet read — ERP calls among them — are dropped, not
  // carried out. Those of a worker that crashed, exited, ran out of memory or time stay readable
  // (an answer sent before a crash is still that delivery's answer).
  static bool IsViolation(const std::string& cause) {
    return cause == "seccomp" || cause == "protocol" || cause == "queue";
  }
  void DropUnread() CLAWGUARD_REQUIRES(mu) {
    for (auto& [id, s] : sessions) {
      MutexLock slock(s->mu_);
      inbox_total -= s->inbox_bytes_;
      s->inbox_bytes_ = 0;
      s->inbox_.clear();
    }
  }

  void Kill(const std::string& cause, const std::string& detail) {
    {
      MutexLock lock(mu);
      if (kill_cause.empty()) {
        kill_cause = cause;
        kill_detail = detail;
      }
      if (cause == "shutdown") shutting_down = true;
      if (IsViolation(cause)) DropUnread();
    }
    if (proc.pidfd.valid()) (void)PidfdSignal(proc.pidfd.get(), SIGKILL);
  }

  // TakeListener takes the listener from the supervisor socket once it is there; a worker that
  // sends anything else is killed. False when it is not there yet.
  bool TakeListener() {
    if (listener.valid()) return true;
    Result<UniqueFd> l = sandbox::ReceiveListener(supervisor.get());
    if (!l.ok()) {
      supervisor.Reset();
      Kill("protocol", l.error().message());
      return false;
    }
    if (!l->valid()) return false;
    listener = std::move(l).value();
    supervisor.Reset();
    return true;
  }

  // OnReport reads the kernel's report of a forbidden call (poll said the listener is readable)
  // and kills the worker for it. The call is held until then and never runs.
  void OnReport() {
    Result<sandbox::RefusedCall> call = sandbox::ReadRefusedCall(listener.get());
    sandbox::RefusedCall c;
    std::string detail = "the worker made a system call its sandbox forbids";
    if (call.ok()) {
      c = *call;
      detail += ": " + c.Describe();
    } else {
      detail += " (" + call.error().message() + ")";
    }
    {
      MutexLock lock(mu);
      if (!refused) refused = c;
    }
    Kill("seccomp", detail);
  }

  // ReadPendingReport reads a report already on the listener, without waiting: called before a
  // kill, which would withdraw it.
  void ReadPendingReport() {
    if (!listener.valid()) return;
    pollfd l{listener.get(), POLLIN, 0};
    if (::poll(&l, 1, 0) > 0 && (l.revents & POLLIN) != 0) OnReport();
  }

  // Queue adds a frame for the writer; false (and the worker killed when it does not read) if it
  // cannot be sent.
  bool Queue(std::string frame, uint64_t reply_for = 0) {
    {
      MutexLock lock(mu);
      if (dead) return false;
      // A second answer for a delivery whose last one has not left the queue: the call it answers
      // came from plugin code writing the channel (see replies_queued).
      if (reply_for != 0 && replies_queued.count(reply_for) != 0) {
        lock.Unlock();
        Kill("protocol",
             "an ERP call before the last one's answer was sent (the worker reads each answer "
             "before its next call)");
        return false;
      }
      // With nothing queued and no write under way the caller writes the frame itself, without
      // blocking (a hand-off to the writer thread costs two context switches per frame); what
      // the socket does not take goes to the head of the queue, ahead of frames queued meanwhile.
      if (!writing && queue.empty()) {
        writing = true;
        lock.Unlock();
        ssize_t w = -1;
        do {
          w = ::send(channel.get(), frame.data(), frame.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        } while (w < 0 && errno == EINTR);
        const int err = errno;
        lock.Lock();
        writing = false;
        // The writer waits only while frames are queued (queued meanwhile, behind this one).
        if (!queue.empty()) send_cv.notify_all();
        if (w == static_cast<ssize_t>(frame.size())) return true;
        if (w < 0 && err != EAGAIN && err != EWOULDBLOCK) {
          lock.Unlock();
          Kill("exit", "the worker's channel closed");
          return false;
        }
        if (dead) return false;
        frame.erase(0, w > 0 ? static_cast<size_t>(w) : 0);
        queued_bytes += frame.size() + kQueuedFrameOverhead;
        if (reply_for != 0) ++replies_queued[reply_for];
        queue.push_front(Queued{std::move(frame), reply_for});
        send_cv.notify_one();
        return true;
      }
      // Each frame costs its bytes plus the queue's own bookkeeping: a flood of tiny frames is
      // bounded by what it costs, not by its payload.
      const uint64_t cost = frame.size() + kQueuedFrameOverhead;
      if (queued_bytes + cost <= max_queued_bytes) {
        queued_bytes += cost;
        if (reply_for != 0) ++replies_queued[reply_for];
        queue.push_back(Queued{std::move(frame), reply_for});
        send_cv.notify_one();
        return true;
      }
    }
    Kill("queue", "the worker stopped reading its channel");
    return false;
  }

  // Push hands |f| to |s|; false when the delivery already holds kMaxInboxBytes or
  // kMaxInboxFrames of unread frames, or the worker's deliveries together kMaxWorkerInboxBytes (a
  // worker that floods while the host waits on the ERP).
  bool Push(Session& s, Frame f) {
    {
      MutexLock lock(s.mu_);
      const uint64_t cost = f.payload.size() + kQueuedFrameOverhead;
      if (s.inbox_bytes_ + cost > kMaxInboxBytes || s.inbox_.size() >= kMaxInboxFrames ||
          inbox_total.load() + cost > kMaxWorkerInboxBytes) {
        return false;
      }
      s.inbox_bytes_ += cost;
      inbox_total += cost;
      s.inbox_.push_back(std::move(f));
    }
    const uint64_t one = 1;
    (void)::write(s.wake_.get(), &one, sizeof(one));
    return true;
  }

  // Route hands a frame to its delivery (mu held by the caller is not needed: it takes it).
  void Route(Frame f) {
    Session* s = nullptr;
    {
      MutexLock lock(mu);
      // Once the host has killed the worker, what it still reads of it goes nowhere.
      if (!kill_cause.empty()) return;
      if (f.type == FrameType::kReady || f.type == FrameType::kInitFailed || f.id == 0 ||
          f.id > highest_id) {
        lock.Unlock();
        Kill("protocol", "a frame for no delivery the host sent");
        return;
      }
      // Each frame's size for its type was checked by the decoder, from the header on.
      if (f.type == FrameType::kErpCall && replies_queued.count(f.id) != 0) {
        lock.Unlock();
        Kill("protocol",
             "an ERP call before the last one's answer was sent (the worker reads each answer "
             "before its next call)");
        return;
      }
      auto it = sessions.find(f.id);
      auto gave_up = abandoned.find(f.id);
      if (it != sessions.end() && gave_up == abandoned.end()) {
        s = it->second;
        if (f.type == FrameType::kRespond) {
          if (s->answered_ && f.payload.size() > sandbox::MaxLaterRespondPayload()) {
            lock.Unlock();
            Kill("protocol", "a later answer of a delivery with a body (the worker sends none)");
            return;
          }
          s->answered_ = true;
        }
        if (Push(*s, std::move(f))) return;
        lock.Unlock();
        Kill("protocol", "unread frames exceed what the host holds for a delivery or a worker");
        return;
      }
      // A frame for a delivery that ended (its kDone came, or the host killed the worker over
      // it): an honest worker sends none, and each would cost the host a read and a route, a
      // call one an answer too.
      if (gave_up == abandoned.end()) {
        lock.Unlock();
        Kill("protocol", "a frame for a delivery that has ended");
        return;
      }
      if (f.type == FrameType::kDone) {
        abandoned.erase(gave_up);
        return;
      }
      // One the host gave up on (a lost lease): its thread may go on, its frames dropped and
      // each ERP call answered CG_FENCED once the last was read. An honest plugin stops calling
      // once fenced; a flood is bounded here.
      ++gave_up->second.frames;
      if (f.type == FrameType::kErpCall) ++gave_up->second.calls;
      if (gave_up->second.calls > kMaxFencedErpCalls ||
          gave_up->second.frames > kMaxFramesAfterAbandon) {
        lock.Unlock();
        Kill("protocol", "more than " + std::to_string(kMaxFencedErpCalls) + " ERP calls or " +
                             std::to_string(kMaxFramesAfterAbandon) +
                             " frames for a delivery the host gave up on");
        return;
      }
      if (f.type != FrameType::kErpCall) return;  // dropped
    }
    (void)Queue(sandbox::EncodeFrame(FrameType::kErpReply, f.id,
                                     sandbox::ErpReplyMsg{CG_FENCED, {}}.Encode()),
                f.id);
  }

  void WriterLoop() {
    NameThisThread("cg-wk-send");
    for (;;) {
      std::string frame;
      {
        MutexLock lock(mu);
        mu.Wait(send_cv,
                [&]() CLAWGUARD_REQUIRES(mu) { return dead || (!queue.empty() && !writing); });
        if (dead) return;
        Queued next = std::move(queue.front());
        queue.pop_front();
        frame = std::move(next.bytes);
        queued_bytes -= frame.size() + kQueuedFrameOverhead;
        // Counted out before the write begins: the worker cannot have read it whole before.
        if (next.reply_for != 0) {
          auto it = replies_queued.find(next.reply_for);
          if (it != replies_queued.end() && --it->second <= 0) replies_queued.erase(it);
        }
        writing = true;
      }
      const bool written = sandbox::WriteAll(channel.get(), frame);
      {
        MutexLock lock(mu);
        writing = false;
      }
      if (!written) {
        Kill("exit", "the worker's channel closed");
        return;
      }
    }
  }

  void ReaderLoop() {
    NameThisThread("cg-wk-recv");
    std::vector<char> buf(256 * 1024);
    bool listener_open = true;
    for (;;) {
      // The listener first: a held call is reported before the frames sent around it are read.
      pollfd fds[4] = {{listener_open ? listener.get() : -1, POLLIN, 0},
                       {supervisor.valid() ? supervisor.get() : -1, POLLIN, 0},
                       {channel.get(), POLLIN, 0},
                       {proc.pidfd.get(), POLLIN, 0}};
      if (::poll(fds, 4, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if ((fds[0].revents & POLLIN) != 0) {
        OnReport();
        continue;
      }
      // POLLHUP: no task uses the filter any more (the worker is gone); the pidfd says so too.
      if ((fds[0].revents & (POLLHUP | POLLERR | POLLNVAL)) != 0) listener_open = false;
      if (fds[1].revents != 0) {
        // Start took the listener before kReady: this is a worker that sent it twice, or closed
        // the socket (its end is closed once sent), after which nothing is read from it again.
        if (!listener.valid()) {
          listener_open = TakeListener();
        } else {
          supervisor.Reset();
        }
        continue;
      }
      if ((fds[2].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        const ssize_t n = ::recv(channel.get(), buf.data(), buf.size(), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        decoder.Feed(std::string_view(buf.data(), static_cast<size_t>(n)));
        while (std::optional<Frame> f = decoder.Next()) Route(std::move(*f));
        if (!decoder.error().empty()) {
          Kill("protocol", decoder.error());
          break;
        }
        continue;
      }
      if ((fds[3].revents & POLLIN) != 0) break;
    }
    Reap();
  }

  // Reap ends the process (if it still runs), collects how it ended and tells everyone.
  void Reap() {
    // A report that came with the channel's end (the plugin closed it, or exited, right after a
    // forbidden call) is read before the kill withdraws it.
    ReadPendingReport();
    (void)PidfdSignal(proc.pidfd.get(), SIGKILL);
    siginfo_t info{};
    while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(proc.pidfd.get()), &info,
                    WEXITED) != 0 &&
           errno == EINTR) {
    }
    WorkerFault fault;
    fault.plugin = plugin;
    fault.version = version;
    bool shutdown = false;
    {
      MutexLock lock(mu);
      shutdown = shutting_down;
      if (info.si_code == CLD_EXITED) {
        fault.cause = "exit";
        fault.detail = "the worker exited with status " + std::to_string(info.si_status);
      } else {
        fault.signal = info.si_status;
        fault.cause = "crash";
        fault.detail = "the worker was killed by " + SignalName(info.si_status);
      }
      // The host's reason (timeout, protocol, queue, a closed channel) names the death only if the
      // host's SIGKILL ended the worker. One that ended on its own first (a crash, an exit) is
      // reported as that.
      if (!kill_cause.empty() && info.si_code == CLD_KILLED && info.si_status == SIGKILL) {
        fault.cause = kill_cause;
        fault.detail = kill_detail;
      }
      // The kernel's OOM kill at the worker cgroup's limit: the worker held more memory than
      // memory_limit, page tables included. The closed channel the host saw first is its effect.
      if (info.si_code == CLD_KILLED && info.si_status == SIGKILL && cgroup != nullptr &&
          cgroup->OomKills() > 0) {
        fault.cause = "memory";
        fault.detail = OomDetail(*cgroup);
      }
      // SIGSYS: a filter that kills outranked the sandbox's (the service manager's, for a call it
      // refuses or another architecture); the call did not run either.
      if (fault.signal == SIGSYS) {
        fault.cause = "seccomp";
        fault.detail = "the worker was killed by SIGSYS (a seccomp filter around the host's)";
      }
      // A forbidden call is named whatever else happened: the plugin must not hide it behind the
      // failed send, the crash or the exit it may have arranged around it.
      if (refused) {
        fault.cause = "seccomp";
        if (!refused->withdrawn) fault.syscall = refused->nr;
        fault.detail = "the worker made a system call its sandbox forbids: " + refused->Describe();
      }
      dead = true;
      dead_cause = fault.cause + ": " + fault.detail;
      queue.clear();  // nothing more is sent: what a flood queued is freed now
      queued_bytes = 0;
      replies_queued.clear();
      if (IsViolation(fault.cause)) DropUnread();
      for (auto& [id, s] : sessions) {
        {
          MutexLock slock(s->mu_);
          s->gone_ = true;
          s->gone_cause_ = dead_cause;
        }
        const uint64_t one = 1;
        (void)::write(s->wake_.get(), &one, sizeof(one));
      }
    }
    send_cv.notify_all();
    (void)::shutdown(channel.get(), SHUT_RDWR);
    if (!shutdown) {
      if (std::shared_ptr<PluginWorker> w = owner.lock()) w->OnFault(fault);
    }
    // Until now a Begin that found this worker dead answered "restarting" instead of starting
    // the next one before the fault (and its backoff) was counted.
    reaped = true;
  }
};

PluginWorker::Session::Session(std::shared_ptr<Process> process, uint64_t id)
    : process_(std::move(process)), id_(id), wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

PluginWorker::Session::~Session() {
  MutexLock lock(process_->mu);
  process_->sessions.erase(id_);
  MutexLock slock(mu_);
  process_->inbox_total -= inbox_bytes_;
}

std::optional<Frame> PluginWorker::Session::Next(std::chrono::milliseconds timeout) {
  const auto deadline = SteadyClock::now() + timeout;
  for (;;) {
    {
      MutexLock lock(mu_);
      if (!inbox_.empty()) {
        Frame f = std::move(inbox_.front());
        inbox_.pop_front();
        inbox_bytes_ -= f.payload.size() + kQueuedFrameOverhead;
        process_->inbox_total -= f.payload.size() + kQueuedFrameOverhead;
        return f;
      }
      if (gone_) return std::nullopt;
    }
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now()).count();
    if (left <= 0) return std::nullopt;
    (void)fiber::WaitFd(wake_.get(), POLLIN, static_cast<int>(std::min<int64_t>(left, 60'000)));
    uint64_t v = 0;
    (void)::read(wake_.get(), &v, sizeof(v));
  }
}

bool PluginWorker::Session::gone() const {
  MutexLock lock(mu_);
  return gone_;
}

std::string PluginWorker::Session::gone_cause() const {
  MutexLock lock(mu_);
  return gone_cause_;
}

bool PluginWorker::Session::Send(FrameType type, std::string_view payload) {
  return process_->Queue(sandbox::EncodeFrame(type, id_, payload),
                         type == FrameType::kErpReply ? id_ : 0);
}

void PluginWorker::Session::Abandon() {
  int pending_calls = 0;
  {
    MutexLock lock(process_->mu);
    process_->abandoned.emplace(id_, Process::AfterAbandon{});
    // Frames already routed here are not looked at again; an ERP call among them still waits.
    MutexLock slock(mu_);
    for (const Frame& f : inbox_) {
      if (f.type == FrameType::kErpCall) ++pending_calls;
      if (f.type == FrameType::kDone) process_->abandoned.erase(id_);
    }
    inbox_.clear();
    process_->inbox_total -= inbox_bytes_;
    inbox_bytes_ = 0;
  }
  for (int i = 0; i < pending_calls; ++i) {
    (void)process_->Queue(sandbox::EncodeFrame(FrameType::kErpReply, id_,
                                               sandbox::ErpReplyMsg{CG_FENCED, {}}.Encode()),
                          id_);
  }
}

void PluginWorker::Session::KillWorker(const std::string& cause, const std::string& detail) {
  process_->Kill(cause, detail);
}

Result<std::shared_ptr<PluginWorker>> PluginWorker::Start(WorkerOptions options, std::string plugin,
                                                          std::string version, int64_t abi,
                                                          UniqueFd memfd) {
  std::shared_ptr<PluginWorker> w(new PluginWorker(std::move(options), std::move(plugin),
                                                   std::move(version), abi, std::move(memfd)));
  auto first = w->Spawn();
  if (!first.ok()) {
    if (first.error().reason() == Reason::kPluginUnavailable)
      return Status(Reason::kLoadFailed, first.error().message());
    return first.error();
  }
  MutexLock lock(w->mu_);
  w->current_ = std::move(first).value();
  return w;
}

PluginWorker::~PluginWorker() {
  std::shared_ptr<Process> p;
  {
    MutexLock lock(mu_);
    p = std::move(current_);
  }
  // ~Process kills the worker and joins its threads once the last Session let it go.
}

Result<std::shared_ptr<PluginWorker::Process>> PluginWorker::Spawn(
    std::optional<sandbox::RefusedCall>* refused, bool* out_of_memory) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return Status(Reason::kInternal, std::string("worker: socketpair: ") + std::strerror(errno));
  UniqueFd host_end(sv[0]), worker_end(sv[1]);
  // The supervisor socket: the worker sends its seccomp listener over it before any plugin code
  // runs, then closes its end.
  int fp[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fp) != 0)
    return Status(Reason::kInternal,
                  std::string("worker: socketpair (supervisor): ") + std::strerror(errno));
  UniqueFd supervisor(fp[0]), supervisor_worker_end(fp[1]);
  // The worker gets the library read-only: with the seals, nothing can change the bytes checked.
  UniqueFd library(
      ::open(("/proc/self/fd/" + std::to_string(memfd_.get())).c_str(), O_RDONLY | O_CLOEXEC));
  if (!library.valid())
    return Status(Reason::kInternal, std::string("worker: cannot reopen the library's memfd: ") +
                                         std::strerror(errno));
  std::unique_ptr<sandbox::WorkerCgroup> cgroup;
  if (options_.cgroups != nullptr && options_.memory_limit > 0) {
    CLAWGUARD_ASSIGN_OR_RETURN(cgroup, options_.cgroups->Create(options_.memory_limit));
  }
  sandbox::SpawnRequest req;
  req.executable = options_.executable;
  if (cgroup != nullptr) req.cgroup_procs = cgroup->procs();
  req.argv = {options_.executable,
              "--plugin",
              plugin_,
              "--abi",
              std::to_string(abi_),
              "--memory-limit",
              std::to_string(options_.memory_limit),
              "--max-threads",
              std::to_string(options_.max_threads)};
  req.fds = {worker_end.get(), library.get(), supervisor_worker_end.get()};
  req.namespaces = options_.namespaces;
  CLAWGUARD_ASSIGN_OR_RETURN(sandbox::SpawnedProcess spawned, sandbox::SpawnWorker(req));
  worker_end.Reset();
  library.Reset();
  supervisor_worker_end.Reset();

  auto p = std::make_shared<Process>();
  p->cgroup = std::move(cgroup);
  p->owner = weak_from_this();
  p->plugin = plugin_;
  p->version = version_;
  p->proc = std::move(spawned);
  p->channel = std::move(host_end);
  p->supervisor = std::move(supervisor);
  p->max_queued_bytes = options_.max_queued_bytes;
  // Stop kills a worker still starting (its init may hang up to start_timeout).
  {
    MutexLock lock(mu_);
    starting_ = p;
    if (stopped_) p->Kill("shutdown", "the host is stopping");
  }
  struct ClearStarting {
    PluginWorker* w;
    ~ClearStarting() {
      MutexLock lock(w->mu_);
      w->starting_.reset();
    }
  } clear_starting{this};

  // Wait for kReady or kInitFailed.
  const auto deadline = SteadyClock::now() + options_.start_timeout;
  std::vector<char> buf(64 * 1024);
  std::optional<Frame> first;
  std::string failure;
  while (!first) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now()).count();
    if (left <= 0) {
      failure = "the worker was not ready within " +
                std::to_string(options_.start_timeout.count()) + " ms";
      break;
    }
    // A restart runs on a delivery's thread or fiber: the wait parks a fiber (fiber::WaitFd)
    // instead of blocking its carrier, in slices, checking the process between them.
    const int r = fiber::WaitFd(p->channel.get(), POLLIN,
                                static_cast<int>(std::min<int64_t>(left, kStartPollMs)));
    if (r < 0 && errno != EINTR) {
      failure = std::string("waiting for the worker failed: ") + std::strerror(errno);
      break;
    }
    pollfd fds[4] = {{p->listener.valid() ? p->listener.get() : -1, POLLIN, 0},
                     {p->supervisor.valid() ? p->supervisor.get() : -1, POLLIN, 0},
                     {p->channel.get(), POLLIN, 0},
                     {p->proc.pidfd.get(), POLLIN, 0}};
    if (::poll(fds, 4, 0) <= 0) continue;
    if ((fds[0].revents & POLLIN) != 0) {
      p->OnReport();
      failure = "the worker made a system call its sandbox forbids";
      break;
    }
    if (fds[1].revents != 0 && !p->listener.valid()) {
      if (!p->TakeListener() && !p->supervisor.valid()) {
        failure = "the worker did not hand over its seccomp listener";
        break;
      }
      continue;
    }
    if ((fds[2].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      const ssize_t n = ::recv(p->channel.get(), buf.data(), buf.size(), MSG_DONTWAIT);
      if (n > 0) {
        p->decoder.Feed(std::string_view(buf.data(), static_cast<size_t>(n)));
        first = p->decoder.Next();
        if (!first && !p->decoder.error().empty()) failure = "protocol: " + p->decoder.error();
        if (!failure.empty()) break;
        continue;
      }
      if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        failure = "the worker ended before it was ready";
        break;
      }
      continue;
    }
    if ((fds[3].revents & POLLIN) != 0) {
      failure = "the worker ended before it was ready";
      break;
    }
  }
  const auto refuse = [&](Reason reason, const std::string& why) -> Status {
    // Reap it here: no threads run yet. A forbidden call says more than "ended": a report already
    // there is read before the kill withdraws it (init may write kInitFailed and then make one).
    if (p->listener.valid() || (p->supervisor.valid() && p->TakeListener())) {
      p->ReadPendingReport();
    }
    p->Kill("start", why);
    siginfo_t info{};
    (void)::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(p->proc.pidfd.get()), &info,
                   WEXITED);
    std::string msg = "plugin worker: " + why;
    MutexLock lock(p->mu);
    if (p->refused && refused != nullptr) *refused = p->refused;
    if (p->refused) {
      msg += " (its sandbox refused " + p->refused->Describe() + ")";
    } else if (info.si_code == CLD_KILLED && info.si_status == SIGKILL && p->cgroup != nullptr &&
               p->cgroup->OomKills() > 0) {
      msg += " (" + OomDetail(*p->cgroup) + ")";
      if (out_of_memory != nullptr) *out_of_memory = true;
    } else if (info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED) {
      msg += " (killed by " + SignalName(info.si_status) + ")";
    }
    p->dead = true;
    p->shutting_down = true;
    return Status(reason, msg);
  };
  if (!first) return refuse(Reason::kLoadFailed, failure);
  if (first->type == FrameType::kInitFailed) {
    std::optional<sandbox::InitFailedMsg> m = sandbox::InitFailedMsg::Decode(first->payload);
    if (!m) return refuse(Reason::kLoadFailed, "a malformed kInitFailed frame");
    // Only the two codes a load may end with are taken from the worker.
    const Reason reason = m->reason == "abi_mismatch" ? Reason::kAbiMismatch : Reason::kLoadFailed;
    return refuse(reason, m->detail);
  }
  std::optional<sandbox::ReadyMsg> ready;
  if (first->type == FrameType::kReady && first->id == 0)
    ready = sandbox::ReadyMsg::Decode(first->payload);
  if (!ready) return refuse(Reason::kLoadFailed, "the worker's first frame was not kReady");
  // Sent before the plugin was loaded, so before kReady: a worker without it is not confined.
  if (!p->TakeListener())
    return refuse(Reason::kLoadFailed, "the worker did not hand over its seccomp listener");
  if (ready->abi != CLAWGUARD_PLUGIN_ABI || static_cast<int64_t>(ready->abi) != abi_)
    return refuse(Reason::kAbiMismatch, "the plugin reports abi " + std::to_string(ready->abi));
  if ((ready->flags & ~CG_PLUGIN_SERIAL) != 0)
    return refuse(Reason::kLoadFailed,
                  "the plugin sets unknown flag bits " + std::to_string(ready->flags));
  flags_ = ready->flags;
  Process* raw = p.get();
  p->reader = std::thread([raw] { raw->ReaderLoop(); });
  p->writer = std::thread([raw] { raw->WriterLoop(); });
  if (options_.audit) {
    options_.audit(DumpJson({{"event", "plugin_worker_started"},
                             {"plugin", plugin_},
                             {"version", version_},
                             {"pid", p->proc.pid},
                             {"namespaces", p->proc.namespaces}}));
  }
  return p;
}

void PluginWorker::OnFault(const WorkerFault& fault) {
  if (options_.audit) {
    nlohmann::json j = {{"event", "plugin_worker_fault"},
                        {"plugin", fault.plugin},
                        {"version", fault.version},
                        {"cause", fault.cause},
                        {"detail", fault.detail}};
    if (fault.signal != 0) j["signal"] = fault.signal;
    if (fault.syscall) j["syscall"] = *fault.syscall;
    options_.audit(DumpJson(j));
  }
  if (options_.on_fault) options_.on_fault(fault);
  bool now_failed = false;
  {
    MutexLock lock(mu_);
    ++faults_;
    const auto now = SteadyClock::now();
    recent_faults_.push_back(now);
    while (!recent_faults_.empty() && now - recent_faults_.front() > options_.fault_window)
      recent_faults_.pop_front();
    const int n = static_cast<int>(recent_faults_.size());
    auto backoff = options_.backoff_base * (int64_t{1} << std::min(n - 1, 20));
    restart_at_ = now + std::min<std::chrono::milliseconds>(backoff, options_.backoff_max);
    if (n >= options_.max_faults && !failed_) {
      failed_ = true;
      now_failed = true;
    }
  }
  if (now_failed && options_.audit) {
    options_.audit(
        DumpJson({{"event", "plugin_failed"},
                  {"plugin", plugin_},
                  {"version", version_},
                  {"detail", std::to_string(options_.max_faults) + " worker faults within " +
                                 std::to_string(options_.fault_window.count()) +
                                 " ms: the plugin's routes answer 503 until the host restarts"}}));
  }
}

Result<std::unique_ptr<PluginWorker::Session>> PluginWorker::Begin(
    const sandbox::DeliverMsg& delivery) {
  std::shared_ptr<Process> p;
  uint64_t id = 0;
  bool restart = false;
  {
    MutexLock lock(mu_);
    if (stopped_) return Unavailable("the host is stopping");
    if (failed_) return Unavailable("the plugin failed (its worker crashed repeatedly)");
    bool live = false;
    if (current_ != nullptr) {
      MutexLock plock(current_->mu);
      live = !current_->dead;
    }
    if (!live && current_ != nullptr && !current_->reaped.load()) {
      return Unavailable("the plugin's worker is restarting");
    }
    if (!live) {
      // One delivery restarts the worker, without holding mu_ (a restart waits for the plugin's
      // init, up to start_timeout); the others are answered at once meanwhile.
      const auto now = SteadyClock::now();
      if (restarting_) return Unavailable("the plugin's worker is restarting");
      if (now < restart_at_) {
        return Unavailable(
            "the plugin's worker is restarting (in " +
            std::to_string(
                std::chrono::ceil<std::chrono::milliseconds>(restart_at_ - now).count()) +
            " ms)");
      }
      restarting_ = true;
      restart = true;
    } else {
      p = current_;
      id = next_id_++;
    }
  }
  if (restart) {
    std::optional<sandbox::RefusedCall> refused;
    bool out_of_memory = false;
    auto next = Spawn(&refused, &out_of_memory);
    if (!next.ok()) {
      {
        MutexLock lock(mu_);
        restarting_ = false;
        // Stop killed the worker being started: no fault, the host is going.
        if (stopped_) return Unavailable("the host is stopping");
      }
      // A worker that cannot start again counts as a fault: a plugin whose init now fails or
      // hangs ends failed, as one that crashes does.
      WorkerFault fault;
      fault.plugin = plugin_;
      fault.version = version_;
      fault.cause = "start";
      fault.detail = next.error().message();
      // A forbidden call in the new worker's constructors or init is a seccomp fault, and the
      // kernel's OOM kill at its cgroup's limit a memory fault, as they are while serving: alerts
      // on those causes see them.
      if (out_of_memory) fault.cause = "memory";
      if (refused) {
        fault.cause = "seccomp";
        if (!refused->withdrawn) fault.syscall = refused->nr;
      }
      OnFault(fault);
      return Unavailable("the plugin's worker did not restart: " + next.error().message());
    }
    // The worker replaced is freed after mu_ is released: its destructor joins its reader thread,
    // which may be waiting for mu_ to count that worker's fault.
    std::shared_ptr<Process> replaced;
    MutexLock lock(mu_);
    restarting_ = false;
    if (stopped_) return Unavailable("the host is stopping");
    replaced = std::move(current_);
    current_ = std::move(next).value();
    p = current_;
    id = next_id_++;
  }
  std::unique_ptr<Session> s(new Session(p, id));
  if (!s->wake_.valid()) return Unavailable("no eventfd for the delivery");
  {
    MutexLock lock(p->mu);
    if (p->dead) return Unavailable("the plugin's worker stopped");
    p->sessions.emplace(id, s.get());
    p->highest_id = std::max(p->highest_id, id);
  }
  if (!s->Send(FrameType::kDeliver, delivery.Encode()))
    return Unavailable("the plugin's worker stopped");
  return s;
}

void PluginWorker::Stop() {
  std::shared_ptr<Process> p;
  {
    MutexLock lock(mu_);
    stopped_ = true;
    p = std::move(current_);
    if (starting_ != nullptr) starting_->Kill("shutdown", "the host is stopping");
  }
  if (p == nullptr) return;
  // The plugin's shutdown() runs in its worker (kShutdown), bounded: then it is killed.
  {
    MutexLock lock(p->mu);
    p->shutting_down = true;
  }
  if (p->Queue(sandbox::EncodeFrame(FrameType::kShutdown, 0, ""))) {
    pollfd exited{p->proc.pidfd.get(), POLLIN, 0};
    (void)::poll(&exited, 1, static_cast<int>(kShutdownGrace.count()));
  }
  p->Kill("shutdown", "the host stopped the worker");
  if (p->reader.joinable()) p->reader.join();
  if (p->writer.joinable()) p->writer.join();
}

bool PluginWorker::failed() const {
  MutexLock lock(mu_);
  return failed_;
}

pid_t PluginWorker::pid() const {
  MutexLock lock(mu_);
  return current_ != nullptr ? current_->proc.pid : -1;
}

std::vector<std::string> PluginWorker::namespaces() const {
  MutexLock lock(mu_);
  return current_ != nullptr ? current_->proc.namespaces : std::vector<std::string>{};
}

int64_t PluginWorker::faults() const {
  MutexLock lock(mu_);
  return faults_;
}

}  // namespace clawguard::host
