// worker_spawn.cpp — see worker_spawn.h. Kernel references: kernel/fork.c (clone3, CLONE_PIDFD),
// kernel/user_namespace.c (new_idmap_permitted: an unprivileged writer may map exactly one id, its
// own effective one, and gid_map only after setgroups is "deny"), fs/exec.c (execve recomputes the
// capabilities: a non-root uid in the namespace keeps none).
#include "host/sandbox/worker_spawn.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>

namespace clawguard::sandbox {
namespace {

// The steps of the child, in order; the one that failed is what the child reports.
enum class Step : uint8_t {
  kWaitParent = 1,  // wait until the parent has placed it in its cgroup / written the id maps
  kOomScore,        // the kernel's first choice when memory runs out
  kSetgroups,       // write "deny" to /proc/self/setgroups
  kGidMap,          // write /proc/self/gid_map
  kUidMap,          // write /proc/self/uid_map
  kHostname,        // name the new UTS namespace
  kDropGroups,      // setgroups(0, NULL)
  kSetGid,          // setresgid to kWorkerInnerId
  kSetUid,          // setresuid to kWorkerInnerId
  kDupHigh,         // move the descriptors to keep above the target range
  kDupTarget,       // place them at 0, 1, 2 and 3..
  kCloseRange,      // close every other descriptor
  kAmbientCaps,     // clear the ambient capability set
  kSignals,         // reset dispositions and unblock every signal
  kParentDeath,     // SIGKILL when the spawning thread (which lives as long as the host) ends
  kSession,         // a session and process group of its own
  kExecve,
};

std::string_view StepName(uint8_t step) {
  switch (static_cast<Step>(step)) {
    case Step::kWaitParent: return "wait for the parent (cgroup, id maps)";
    case Step::kOomScore: return "write /proc/self/oom_score_adj";
    case Step::kSetgroups: return "write /proc/self/setgroups";
    case Step::kGidMap: return "write /proc/self/gid_map";
    case Step::kUidMap: return "write /proc/self/uid_map";
    case Step::kHostname: return "set the host name of the UTS namespace";
    case Step::kDropGroups: return "drop the supplementary groups";
    case Step::kSetGid: return "setresgid";
    case Step::kSetUid: return "setresuid";
    case Step::kDupHigh: return "duplicate the descriptors to pass";
    case Step::kDupTarget: return "place the descriptors at 0..2 and 3..";
    case Step::kCloseRange: return "close_range of the other descriptors";
    case Step::kAmbientCaps: return "clear ambient capabilities";
    case Step::kSignals: return "reset signal dispositions and mask";
    case Step::kParentDeath: return "set the parent-death signal";
    case Step::kSession: return "setsid";
    case Step::kExecve: return "execve";
  }
  return "unknown step";
}

// ChildError is what a failing child writes, in one write(2) (smaller than PIPE_BUF, so atomic).
struct ChildError {
  uint8_t step = 0;
  uint8_t pad[3] = {0, 0, 0};
  int32_t err = 0;
};
static_assert(sizeof(ChildError) == 8);

// The kernel's struct sigaction for rt_sigaction (not glibc's, whose mask is 128 bytes).
struct KernelSigaction {
  void (*handler)(int);
  unsigned long flags;
  void (*restorer)();
  uint64_t mask;
};

// The first 64 bytes of struct clone_args (CLONE_ARGS_SIZE_VER0), defined here because
// <linux/sched.h> redefines glibc's CLONE_* macros.
struct CloneArgs {
  uint64_t flags;
  uint64_t pidfd;
  uint64_t child_tid;
  uint64_t parent_tid;
  uint64_t exit_signal;
  uint64_t stack;
  uint64_t stack_size;
  uint64_t tls;
};
static_assert(sizeof(CloneArgs) == 64);

// ChildPlan is everything the child reads. It is filled in before the clone: the child only reads
// it (its copy of the parent's memory) and writes |temps|, its own scratch.
struct ChildPlan {
  int exe_fd = -1;  // O_PATH descriptor of the executable (execveat: no path walk as the worker)
  bool script = false;  // the executable starts with "#!": its descriptor must stay open
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const int* fds = nullptr;
  int* temps = nullptr;  // one per fd
  int nfds = 0;
  int devnull = -1;
  int err_fd = -1;
  bool map_ids = false;       // write its own maps (a host that is not root)
  int sync_fd = -1;           // >= 0: read one byte (the parent wrote the maps) before going on
  int sync_write_fd = -1;     // the parent's end, closed in the child
  bool set_hostname = false;  // a new UTS namespace: name it kWorkerHostName
  bool drop_ids = false;      // a root host: no groups, uid and gid kWorkerInnerId
  const char* uid_map = nullptr;
  size_t uid_map_len = 0;
  const char* gid_map = nullptr;
  size_t gid_map_len = 0;
};

// The child makes raw system calls only, through glibc's syscall(): no cancellation points, no
// allocation, no locks (async-signal-safe by construction). The errno it sets is the child's copy.
long Sys(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0) {
  long r = ::syscall(nr, a, b, c, d, e);
  return r < 0 ? -errno : r;
}

[[noreturn]] void ChildFail(int err_fd, Step step, long neg_errno) {
  ChildError e;
  e.step = static_cast<uint8_t>(step);
  e.err = static_cast<int32_t>(-neg_errno);
  (void)Sys(SYS_write, err_fd, reinterpret_cast<long>(&e), sizeof(e));
  Sys(SYS_exit_group, 127);
  __builtin_unreachable();
}

// WriteProcFile writes |len| bytes of |data| to |path| with one write.
long WriteProcFile(const char* path, const char* data, size_t len) {
  long fd = Sys(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return fd;
  long w = Sys(SYS_write, fd, reinterpret_cast<long>(data), static_cast<long>(len));
  (void)Sys(SYS_close, fd);
  if (w < 0) return w;
  return w == static_cast<long>(len) ? 0 : -EIO;
}

[[noreturn]] void RunChild(const ChildPlan& p) {
  int err_fd = p.err_fd;
  long r = 0;
  if (p.sync_fd >= 0) {
    (void)Sys(SYS_close, p.sync_write_fd);
    char go = 0;
    do {
      r = Sys(SYS_read, p.sync_fd, reinterpret_cast<long>(&go), 1);
    } while (r == -EINTR);
    if (r != 1) ChildFail(err_fd, Step::kWaitParent, r < 0 ? r : -EPIPE);
  }
  // When the kernel must end a process for memory (the machine's, the service's MemoryMax=), a
  // worker goes before the host: raising one's own score needs no privilege.
  if ((r = WriteProcFile("/proc/self/oom_score_adj", "1000", 4)) != 0) {
    ChildFail(err_fd, Step::kOomScore, r);
  }
  if (p.map_ids) {
    if ((r = WriteProcFile("/proc/self/setgroups", "deny", 4)) != 0) {
      ChildFail(err_fd, Step::kSetgroups, r);
    }
    if ((r = WriteProcFile("/proc/self/gid_map", p.gid_map, p.gid_map_len)) != 0) {
      ChildFail(err_fd, Step::kGidMap, r);
    }
    if ((r = WriteProcFile("/proc/self/uid_map", p.uid_map, p.uid_map_len)) != 0) {
      ChildFail(err_fd, Step::kUidMap, r);
    }
  }
  if (p.set_hostname) {
    if ((r = Sys(SYS_sethostname, reinterpret_cast<long>(kWorkerHostName),
                 sizeof(kWorkerHostName) - 1)) < 0) {
      ChildFail(err_fd, Step::kHostname, r);
    }
    if ((r = Sys(SYS_setdomainname, reinterpret_cast<long>(""), 0)) < 0) {
      ChildFail(err_fd, Step::kHostname, r);
    }
  }
  // A root host's worker leaves uid 0: no supplementary groups, gid then uid kWorkerInnerId (in
  // a user namespace the parent mapped it to the same id outside). Setting the uid last clears
  // the capabilities it had as root outside a user namespace; execve clears the rest.
  if (p.drop_ids) {
    if ((r = Sys(SYS_setgroups, 0, 0)) < 0) ChildFail(err_fd, Step::kDropGroups, r);
    if ((r = Sys(SYS_setresgid, kWorkerInnerId, kWorkerInnerId, kWorkerInnerId)) < 0) {
      ChildFail(err_fd, Step::kSetGid, r);
    }
    if ((r = Sys(SYS_setresuid, kWorkerInnerId, kWorkerInnerId, kWorkerInnerId)) < 0) {
      ChildFail(err_fd, Step::kSetUid, r);
    }
  }
  // Descriptors. Targets are 0..2 (/dev/null) and 3..3+n-1 (the request's); the error pipe goes
  // to 3+n. A source may sit anywhere, including on another source's target, so every descriptor
  // still needed is first duplicated to >= 3+n+1, where no target is; dup3 onto the targets
  // then cannot clobber a source, and leaves the targets without CLOEXEC.
  const int err_target = 3 + p.nfds;
  const int high = err_target + 1;
  r = Sys(SYS_fcntl, err_fd, F_DUPFD_CLOEXEC, high);
  if (r < 0) ChildFail(err_fd, Step::kDupHigh, r);
  err_fd = static_cast<int>(r);
  r = Sys(SYS_fcntl, p.devnull, F_DUPFD_CLOEXEC, high);
  if (r < 0) ChildFail(err_fd, Step::kDupHigh, r);
  const int devnull = static_cast<int>(r);
  r = Sys(SYS_fcntl, p.exe_fd, F_DUPFD_CLOEXEC, high);
  if (r < 0) ChildFail(err_fd, Step::kDupHigh, r);
  const int exe_temp = static_cast<int>(r);
  for (int i = 0; i < p.nfds; ++i) {
    r = Sys(SYS_fcntl, p.fds[i], F_DUPFD_CLOEXEC, high);
    if (r < 0) ChildFail(err_fd, Step::kDupHigh, r);
    p.temps[i] = static_cast<int>(r);
  }
  if ((r = Sys(SYS_dup3, err_fd, err_target, O_CLOEXEC)) < 0) {
    ChildFail(err_fd, Step::kDupTarget, r);
  }
  err_fd = err_target;
  for (int i = 0; i < p.nfds; ++i) {
    if ((r = Sys(SYS_dup3, p.temps[i], 3 + i, 0)) < 0) ChildFail(err_fd, Step::kDupTarget, r);
  }
  for (int std_fd = 0; std_fd <= 2; ++std_fd) {
    if ((r = Sys(SYS_dup3, devnull, std_fd, 0)) < 0) ChildFail(err_fd, Step::kDupTarget, r);
  }
  // The executable's descriptor goes to |high|, CLOEXEC so that execveat closes it — except for
  // a script, whose interpreter opens it as /dev/fd/N (the worker's lockdown closes it before any
  // plugin code runs); every other descriptor above is closed.
  const int exe_fd = high;
  const long exe_flags = p.script ? 0 : O_CLOEXEC;
  if (exe_temp != exe_fd) {
    if ((r = Sys(SYS_dup3, exe_temp, exe_fd, exe_flags)) < 0)
      ChildFail(err_fd, Step::kDupTarget, r);
  } else if ((r = Sys(SYS_fcntl, exe_fd, F_SETFD, p.script ? 0 : FD_CLOEXEC)) < 0) {
    ChildFail(err_fd, Step::kDupTarget, r);
  }
  if ((r = Sys(SYS_close_range, high + 1, ~0U, 0)) < 0) ChildFail(err_fd, Step::kCloseRange, r);
  // Ambient capabilities would survive execve even for a non-root uid.
  if ((r = Sys(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)) < 0 && r != -EINVAL) {
    ChildFail(err_fd, Step::kAmbientCaps, r);
  }
  // execve resets caught signals but keeps ignored ones and the mask: reset both. The parent
  // blocked every signal before the clone, so no host handler has run in the child.
  KernelSigaction dfl{};
  dfl.handler = SIG_DFL;
  for (int sig = 1; sig <= 64; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    r = Sys(SYS_rt_sigaction, sig, reinterpret_cast<long>(&dfl), 0, sizeof(uint64_t));
    if (r < 0) ChildFail(err_fd, Step::kSignals, r);
  }
  const uint64_t empty_mask = 0;
  r = Sys(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&empty_mask), 0,
          sizeof(uint64_t));
  if (r < 0) ChildFail(err_fd, Step::kSignals, r);
  // The worker must not outlive the host, whatever its plugin does to its own exit (a filter of
  // its own can make exit_group fail while a thread lives on). The lockdown refuses every prctl
  // but PR_SET_NAME/PR_GET_NAME, so the plugin cannot clear this; execve keeps it (the child's ids
  // do not change, its capabilities only shrink).
  if ((r = Sys(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0)) < 0) {
    ChildFail(err_fd, Step::kParentDeath, r);
  }
  // A session and process group of its own: signals for the host's terminal or process group
  // (Ctrl-C, kill -- -PGID) do not reach the worker, where a handler of the plugin's could catch
  // them while one of its forbidden calls waits for the host (lockdown.h).
  if ((r = Sys(SYS_setsid, 0, 0, 0, 0, 0)) < 0) ChildFail(err_fd, Step::kSession, r);
  // execveat of the descriptor the host opened: the worker, whatever its uid, needs no search
  // permission on the directories above the executable, and the file run is the one opened.
  r = Sys(SYS_execveat, exe_fd, reinterpret_cast<long>(""), reinterpret_cast<long>(p.argv),
          reinterpret_cast<long>(p.envp), AT_EMPTY_PATH);
  ChildFail(err_fd, Step::kExecve, r);
}

// CloneChild clones with |flags| | CLONE_PIDFD; returns the pid (0 in the child) or -errno.
long CloneChild(uint64_t flags, int* pidfd) {
  CloneArgs args{};
  args.flags = flags | CLONE_PIDFD;
  args.pidfd = reinterpret_cast<uint64_t>(pidfd);
  args.exit_signal = SIGCHLD;
  long r = Sys(SYS_clone3, reinterpret_cast<long>(&args), sizeof(args));
  // clone3 may be refused with ENOSYS by a container's seccomp profile: clone takes the same
  // flags (x86-64 order: flags, stack, parent_tid — where CLONE_PIDFD stores the pidfd — child_tid,
  // tls).
  if (r == -ENOSYS) {
    r = Sys(SYS_clone, static_cast<long>(flags | CLONE_PIDFD | SIGCHLD), 0,
            reinterpret_cast<long>(pidfd), 0, 0);
  }
  return r;
}

struct NamespaceSet {
  uint64_t flags;
  std::vector<std::string> names;
};

Status Internal(std::string m) { return Status(Reason::kInternal, std::move(m)); }
Status Errno(std::string_view what, int e) {
  return Internal("worker spawn: " + std::string(what) + " failed: " + std::strerror(e));
}

// BlockSignals blocks every signal of the calling thread for its scope.
class BlockSignals {
 public:
  BlockSignals() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old_);
  }
  ~BlockSignals() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  BlockSignals(const BlockSignals&) = delete;
  BlockSignals& operator=(const BlockSignals&) = delete;

 private:
  sigset_t old_{};
};

bool HasNul(const std::string& s) { return s.find('\0') != std::string::npos; }

// WriteMap writes |map| with one write: a child's /proc/<pid>/{uid,gid}_map, or its pid to a
// cgroup.procs file.
Status WriteMap(const std::string& path, const std::string& map) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return Errno("open " + path, errno);
  const ssize_t w = ::write(fd.get(), map.data(), map.size());
  if (w != static_cast<ssize_t>(map.size())) return Errno("write " + path, w < 0 ? errno : EIO);
  return Status::Ok();
}

void Reap(int pidfd) {
  siginfo_t info{};
  while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd), &info, WEXITED) != 0 &&
         errno == EINTR) {
  }
}

Result<SpawnedProcess> SpawnWorkerHere(const SpawnRequest& req) {
  if (req.executable.empty() || req.executable.front() != '/' || HasNul(req.executable)) {
    return Status(
        Reason::kConfigInvalid,
        "worker spawn: the executable must be an absolute path, got '" + req.executable + "'");
  }
  if (req.argv.empty()) return Status(Reason::kConfigInvalid, "worker spawn: argv is empty");
  for (const auto& a : req.argv) {
    if (HasNul(a)) return Status(Reason::kConfigInvalid, "worker spawn: an argument holds NUL");
  }
  for (int fd : req.fds) {
    if (fd < 0) {
      return Status(Reason::kConfigInvalid,
                    "worker spawn: descriptor " + std::to_string(fd) + " is not valid");
    }
  }
  if (req.fds.size() > 1000) {
    return Status(Reason::kConfigInvalid, "worker spawn: too many descriptors to pass");
  }

  // Everything the child touches is built here, before the clone.
  std::vector<char*> argv;
  argv.reserve(req.argv.size() + 1);
  for (const auto& a : req.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  char* envp[] = {nullptr};
  const std::string uid_map =
      std::to_string(kWorkerInnerId) + " " + std::to_string(::geteuid()) + " 1\n";
  const std::string gid_map =
      std::to_string(kWorkerInnerId) + " " + std::to_string(::getegid()) + " 1\n";
  std::vector<int> temps(req.fds.size(), -1);

  UniqueFd exe(::open(req.executable.c_str(), O_PATH | O_CLOEXEC));
  if (!exe.valid()) return Errno("open " + req.executable, errno);
  bool script = false;
  if (UniqueFd head(::open(req.executable.c_str(), O_RDONLY | O_CLOEXEC)); head.valid()) {
    char magic[2] = {};
    script = ::pread(head.get(), magic, 2, 0) == 2 && magic[0] == '#' && magic[1] == '!';
  }
  UniqueFd devnull(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!devnull.valid()) return Errno("open /dev/null", errno);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return Errno("pipe2", errno);
  UniqueFd err_r(pipe_fds[0]);
  UniqueFd err_w(pipe_fds[1]);
  // A root host writes the child's id maps itself (only a writer privileged outside may map an id
  // other than its own) while the child waits on this pipe.
  const bool root = ::geteuid() == 0;
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return Errno("pipe2", errno);
  UniqueFd sync_r(pipe_fds[0]);
  UniqueFd sync_w(pipe_fds[1]);
  const std::string root_map =
      std::to_string(kWorkerInnerId) + " " + std::to_string(kWorkerInnerId) + " 1\n";

  ChildPlan plan;
  plan.exe_fd = exe.get();
  plan.script = script;
  plan.argv = argv.data();
  plan.envp = envp;
  plan.fds = req.fds.data();
  plan.temps = temps.data();
  plan.nfds = static_cast<int>(req.fds.size());
  plan.devnull = devnull.get();
  plan.err_fd = err_w.get();
  plan.uid_map = uid_map.c_str();
  plan.uid_map_len = uid_map.size();
  plan.gid_map = gid_map.c_str();
  plan.gid_map_len = gid_map.size();

  // The ladder of namespace sets, strongest first. Without a user namespace the others need
  // CAP_SYS_ADMIN, which a root host has.
  std::vector<NamespaceSet> ladder;
  if (req.namespaces) {
    ladder.push_back(
        {CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWNS | CLONE_NEWUTS,
         {"user", "pid", "net", "ipc", "mnt", "uts"}});
    ladder.push_back({CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWNS | CLONE_NEWUTS,
                      {"pid", "net", "ipc", "mnt", "uts"}});
  }
  ladder.push_back({0, {}});

  SpawnedProcess out;
  int pidfd = -1;
  long pid = -1;
  std::string refusals;
  {
    BlockSignals blocked;
    for (const auto& set : ladder) {
      const bool userns = (set.flags & CLONE_NEWUSER) != 0;
      plan.map_ids = userns && !root;
      plan.sync_fd = (userns && root) || !req.cgroup_procs.empty() ? sync_r.get() : -1;
      plan.sync_write_fd = sync_w.get();
      plan.set_hostname = (set.flags & CLONE_NEWUTS) != 0;
      plan.drop_ids = root;
      pid = CloneChild(set.flags, &pidfd);
      if (pid == 0) RunChild(plan);  // never returns
      if (pid > 0) {
        out.namespaces = set.names;
        break;
      }
      const int e = static_cast<int>(-pid);
      if (e != EPERM && e != EINVAL && e != ENOSPC && e != EUSERS) break;
      refusals += std::string(refusals.empty() ? "" : "; ") + std::strerror(e);
    }
  }
  if (pid < 0) {
    return Errno("clone" + (refusals.empty() ? std::string() : " (" + refusals + ")"),
                 static_cast<int>(-pid));
  }
  out.pid = static_cast<pid_t>(pid);
  out.pidfd.Reset(pidfd);
  err_w.Reset();  // only the child's copy is left: EOF means execve succeeded
  const bool map_here = root && !out.namespaces.empty() && out.namespaces.front() == "user";
  if (map_here || !req.cgroup_procs.empty()) {
    // The child waits: place it in its cgroup; map its kWorkerInnerId to the same id outside,
    // leave setgroups allowed (the child drops its groups, then execve leaves it no capability to
    // add any); then let it go on. On failure it is killed and reaped.
    Status ready = Status::Ok();
    if (!req.cgroup_procs.empty()) ready = WriteMap(req.cgroup_procs, std::to_string(out.pid));
    const std::string proc = "/proc/" + std::to_string(out.pid) + "/";
    if (ready.ok() && map_here) ready = WriteMap(proc + "gid_map", root_map);
    if (ready.ok() && map_here) ready = WriteMap(proc + "uid_map", root_map);
    if (ready.ok() && ::write(sync_w.get(), "g", 1) != 1) ready = Errno("write (sync)", errno);
    if (!ready.ok()) {
      (void)::syscall(SYS_pidfd_send_signal, out.pidfd.get(), SIGKILL, nullptr, 0);
      Reap(out.pidfd.get());
      return ready;
    }
  }
  sync_w.Reset();

  ChildError ce;
  size_t got = 0;
  while (got < sizeof(ce)) {
    const ssize_t n = ::read(err_r.get(), reinterpret_cast<char*>(&ce) + got, sizeof(ce) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  if (got == 0) return out;

  // The child failed and is exiting: reap it so that no zombie is left.
  Reap(out.pidfd.get());
  if (got != sizeof(ce)) return Internal("worker spawn: the child failed before execve");
  return Internal("worker spawn: " + std::string(StepName(ce.step)) + " of '" + req.executable +
                  "' failed in the child: " + std::strerror(ce.err));
}

// The parent-death signal fires when the thread that cloned the worker ends, not the process: a
// worker cloned by a delivery thread would die with that thread. Every worker is cloned by one
// thread that lives as long as the host process (never joined, never ending).
class SpawnerThread {
 public:
  static SpawnerThread& Get() {
    static auto* const spawner = new SpawnerThread;  // never destroyed: its thread never ends
    return *spawner;
  }
  // Run runs |job| on the spawner thread and waits for it (a clone and its checks: milliseconds).
  void Run(const std::function<void()>& job) {
    std::promise<void> done;
    std::future<void> finished = done.get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.push_back([&] {
        job();
        done.set_value();
      });
    }
    cv_.notify_one();
    finished.wait();
  }

 private:
  SpawnerThread() {
    std::thread([this] {
      (void)::prctl(PR_SET_NAME, "cg-spawner", 0, 0, 0);
      for (;;) {
        std::function<void()> next;
        {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [this] { return !jobs_.empty(); });
          next = std::move(jobs_.front());
          jobs_.pop_front();
        }
        next();
      }
    }).detach();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
};

}  // namespace

Result<SpawnedProcess> SpawnWorker(const SpawnRequest& req) {
  Result<SpawnedProcess> result = Status(Reason::kInternal, "worker spawn: not run");
  SpawnerThread::Get().Run([&] { result = SpawnWorkerHere(req); });
  return result;
}

}  // namespace clawguard::sandbox
