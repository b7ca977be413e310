// lockdown.cpp — see lockdown.h. References: Documentation/userspace-api/landlock.rst (rights per
// ABI), Documentation/userspace-api/seccomp_filter.rst (stacked filters: the strictest action
// wins), seccomp_rule_add(3).
#include "host/sandbox/lockdown.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#include "clawguard/unique_fd.h"

namespace clawguard::sandbox {
namespace {

// ---- Landlock: the UAPI of newer kernels than linux-libc-dev 6.1's header (values are ABI) ----
constexpr uint64_t kFsRead = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
constexpr uint64_t kFsAbi1 = (1ULL << 13) - 1;            // EXECUTE … MAKE_SYM
constexpr uint64_t kFsRefer = 1ULL << 13;                 // ABI 2
constexpr uint64_t kFsTruncate = 1ULL << 14;              // ABI 3
constexpr uint64_t kFsIoctlDev = 1ULL << 15;              // ABI 5
constexpr uint64_t kNetBindTcp = 1ULL << 0;               // ABI 4
constexpr uint64_t kNetConnectTcp = 1ULL << 1;            // ABI 4
constexpr uint64_t kScopeAbstractUnixSocket = 1ULL << 0;  // ABI 6
constexpr uint64_t kScopeSignal = 1ULL << 1;              // ABI 6

// struct landlock_ruleset_attr as of ABI 6; the size passed tells the kernel which fields exist.
struct RulesetAttr {
  uint64_t handled_access_fs = 0;
  uint64_t handled_access_net = 0;  // ABI 4
  uint64_t scoped = 0;              // ABI 6
};

Status Internal(std::string m) { return Status(Reason::kInternal, std::move(m)); }
Status Errno(std::string_view what, int e) {
  return Internal("lockdown: " + std::string(what) + " failed: " + std::strerror(e));
}

// The directories the dynamic loader searches for DT_NEEDED libraries (ld.so.cache entries and
// the default paths); where one is a symlink (merged /usr), the rule lands on its target.
constexpr const char* kLoaderDirs[] = {"/usr/lib", "/lib", "/lib64", "/usr/lib64"};
constexpr const char* kLoaderCache = "/etc/ld.so.cache";

// AddReadRule allows reading beneath |path| (a directory) or of |path| (a file). Landlock's
// EXECUTE right is not given: it is checked only when execve opens a file (__FMODE_EXEC), which
// seccomp refuses anyway; dlopen maps libraries with mmap(PROT_EXEC), which Landlock does not see.
// |missing_ok|: a path that does not exist is skipped instead of an error.
Status AddReadRule(int ruleset, const std::string& path, bool missing_ok) {
  UniqueFd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!fd.valid()) {
    if (missing_ok && errno == ENOENT) return Status::Ok();
    const int e = errno;
    return Status(e == ENOENT ? Reason::kConfigInvalid : Reason::kInternal,
                  "lockdown: cannot open the Landlock path " + path + ": " + std::strerror(e));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Errno("fstat of " + path, errno);
  landlock_path_beneath_attr rule{};
  rule.allowed_access = S_ISDIR(st.st_mode) ? kFsRead : LANDLOCK_ACCESS_FS_READ_FILE;
  rule.parent_fd = fd.get();
  if (::syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0) {
    return Errno("landlock_add_rule for " + path, errno);
  }
  return Status::Ok();
}

Result<LockdownReport> ApplyLandlock(const std::vector<std::string>& read_paths) {
  const long abi =
      ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) {
    return Internal(std::string("lockdown: Landlock is not available (") + std::strerror(errno) +
                    "); refusing to run a plugin without it");
  }
  LockdownReport report;
  report.landlock_abi = static_cast<int>(abi);
  RulesetAttr attr;
  size_t attr_size = sizeof(attr.handled_access_fs);
  attr.handled_access_fs = kFsAbi1;
  if (abi >= 2) attr.handled_access_fs |= kFsRefer;
  if (abi >= 3) attr.handled_access_fs |= kFsTruncate;
  if (abi >= 5) attr.handled_access_fs |= kFsIoctlDev;
  if (abi >= 4) {
    // Handled with no rule: every TCP bind and connect is refused (seccomp refuses socket() too;
    // this also covers a socket the worker might be handed).
    attr.handled_access_net = kNetBindTcp | kNetConnectTcp;
    attr_size = offsetof(RulesetAttr, scoped);
    report.landlock_net = true;
  }
  if (abi >= 6) {
    attr.scoped = kScopeAbstractUnixSocket | kScopeSignal;
    attr_size = sizeof(attr);
    report.landlock_scoped = true;
  }
  UniqueFd ruleset(static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0)));
  if (!ruleset.valid()) return Errno("landlock_create_ruleset", errno);
  for (const char* dir : kLoaderDirs) {
    CLAWGUARD_RETURN_IF_ERROR(AddReadRule(ruleset.get(), dir, /*missing_ok=*/true));
  }
  CLAWGUARD_RETURN_IF_ERROR(AddReadRule(ruleset.get(), kLoaderCache, /*missing_ok=*/true));
  for (const auto& p : read_paths) {
    CLAWGUARD_RETURN_IF_ERROR(AddReadRule(ruleset.get(), p, /*missing_ok=*/false));
  }
  if (::syscall(SYS_landlock_restrict_self, ruleset.get(), 0) != 0) {
    return Errno("landlock_restrict_self", errno);
  }
  return report;
}

// ---- the listener ----

// OneFdMessage is the hand-over's message: one byte, with room for one SCM_RIGHTS descriptor.
struct OneFdMessage {
  char byte = 'L';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  OneFdMessage() {
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
  }
  OneFdMessage(const OneFdMessage&) = delete;
  OneFdMessage& operator=(const OneFdMessage&) = delete;
};

// ---- seccomp ----
// RAII for a libseccomp context.
class Filter {
 public:
  explicit Filter(uint32_t default_action) : ctx_(seccomp_init(default_action)) {}
  ~Filter() {
    if (ctx_ != nullptr) seccomp_release(ctx_);
  }
  Filter(const Filter&) = delete;
  Filter& operator=(const Filter&) = delete;
  scmp_filter_ctx get() const { return ctx_; }

 private:
  scmp_filter_ctx ctx_;
};

// Arg builds one argument comparison (libseccomp's SCMP_A* macros are C compound literals).
scmp_arg_cmp Arg(unsigned arg, scmp_compare op, scmp_datum_t a, scmp_datum_t b = 0) {
  return scmp_arg_cmp{arg, op, a, b};
}

Status SeccompError(std::string_view what, int rc) {
  return Internal("lockdown: seccomp " + std::string(what) + " failed: " + std::strerror(-rc));
}

// Stage 1: default USER_NOTIF (lockdown.h). Every call a worker may make, unconditionally, and why.
// Calls allowed only with some arguments are added in InstallStage1 below, with their conditions.
//
// Left out on purpose (each is held and reported): socket, socketpair, connect, bind, listen,
// accept, accept4 (no network and no new channel; the worker only talks on the descriptors it was
// given); execve, execveat, fork, vfork, clone without CLONE_THREAD (no new program, no child);
// clone3 (ENOSYS, see below); ptrace, process_vm_readv/writev, kill, tkill, rt_sigqueueinfo,
// rt_tgsigqueueinfo (tgkill to itself with SIGABRT only), pidfd_* (no reach into other processes,
// and no signal a handler could catch: lockdown.h); alarm, setitimer, timer_create, timerfd_create
// (no timer signals either); memfd_create, mount, unshare, setns, personality (no new code source,
// no namespace games, no READ_IMPLIES_EXEC); io_uring_*, bpf, perf_event_open, keyctl, userfaultfd
// (large kernel attack surface); ioctl but TCGETS; dup, dup2, dup3, pipe, pipe2, eventfd, epoll (a
// serving loop that needs one adds it here, with its reason); getdents64, readlink, getcwd, access
// (nothing to discover in a filesystem it cannot read); pwrite64; getuid and the other id calls;
// prlimit64 and setrlimit (the limits are final); seccomp — a filter of the plugin's own could
// answer a forbidden call before this one does (KILL_THREAD, TRAP and ERRNO outrank USER_NOTIF),
// hiding it from the host, or log every call it sees to the kernel's audit stream without bound
// (SECCOMP_RET_LOG). The serve phase is a Landlock domain for that reason.
struct Allowed {
  int nr;
  const char* reason;
};
const Allowed kStage1Allowed[] = {
    {SCMP_SYS(read), "read the host channel and files ld.so opens"},
    {SCMP_SYS(write), "write the host channel"},
    {SCMP_SYS(readv), "scatter reads on the host channel"},
    {SCMP_SYS(writev), "gather writes; glibc's fatal-error messages (__libc_message)"},
    {SCMP_SYS(pread64), "ld.so reads program headers past its first 832-byte read, and notes"},
    {SCMP_SYS(close), "ld.so closes a library once mapped; the plugin closes its own"},
    {SCMP_SYS(fstat), "metadata of an open descriptor"},
    {SCMP_SYS(newfstatat), "glibc's fstat (AT_EMPTY_PATH) and ld.so's stat of search dirs"},
    {SCMP_SYS(statx), "the same for runtimes that stat with statx (Rust std)"},
    {SCMP_SYS(lseek), "ld.so and stdio position in files"},
    {SCMP_SYS(openat), "ld.so opens the plugin and its DT_NEEDED libraries; Landlock bounds paths"},
    {SCMP_SYS(munmap), "unmap (dlclose, free, thread stacks)"},
    {SCMP_SYS(mremap), "realloc of large blocks"},
    {SCMP_SYS(madvise), "glibc frees an exited thread's stack (MADV_DONTNEED); malloc trim"},
    {SCMP_SYS(brk), "malloc's main arena"},
    {SCMP_SYS(futex), "mutexes, condition variables, thread join"},
    {SCMP_SYS(rt_sigprocmask), "glibc blocks signals around thread creation and in abort()"},
    {SCMP_SYS(rt_sigreturn), "return from a signal handler"},
    {SCMP_SYS(sigaltstack), "runtimes that give threads an alternate signal stack"},
    {SCMP_SYS(set_robust_list), "every new glibc thread registers its robust-futex list"},
    {SCMP_SYS(rseq), "every new glibc thread (2.35+) registers restartable sequences"},
    {SCMP_SYS(gettid), "thread ids (logging, glibc internals)"},
    {SCMP_SYS(getpid), "own pid (glibc's raise/abort pair it with tgkill)"},
    {SCMP_SYS(exit), "a thread ends"},
    {SCMP_SYS(exit_group), "the worker ends"},
    {SCMP_SYS(restart_syscall), "the kernel restarts a call a signal interrupted"},
    {SCMP_SYS(clock_gettime), "time, when the vDSO falls back to the system call"},
    {SCMP_SYS(clock_getres), "clock resolution (std::chrono, the vDSO fallback)"},
    {SCMP_SYS(gettimeofday), "time, vDSO fallback"},
    {SCMP_SYS(clock_nanosleep), "sleep (std::this_thread::sleep_for)"},
    {SCMP_SYS(nanosleep), "sleep"},
    {SCMP_SYS(sched_yield), "spin-wait back-off"},
    {SCMP_SYS(sched_getaffinity), "CPU count (get_nprocs, hardware_concurrency)"},
    {SCMP_SYS(getrandom), "randomness (std::random_device, arc4random, hash seeds)"},
    {SCMP_SYS(poll), "wait on the host channel"},
    {SCMP_SYS(ppoll), "wait on the host channel with a timeout and mask"},
    {SCMP_SYS(uname), "gethostname and kernel-version checks in libraries"},
    {SCMP_SYS(sysinfo), "sysconf(_SC_PHYS_PAGES) (glibc's qsort sizes its buffer with it)"},
    {SCMP_SYS(getrlimit), "reading a limit (it sets none)"},
    {SCMP_SYS(landlock_create_ruleset), "the serve phase's Landlock domain (only narrows)"},
    {SCMP_SYS(landlock_restrict_self), "the serve phase's Landlock domain (only narrows)"},
};

// kCloneThreadMask: the clone flags checked. A thread has CLONE_THREAD, CLONE_VM, CLONE_SIGHAND,
// CLONE_FILES and CLONE_FS (as glibc's pthread_create makes them: a thread with a descriptor table
// of its own could open RLIMIT_NOFILE more files) and no namespace flag (CLONE_NEWTIME is left out:
// in clone(), 0x80 is part of the exit signal).
constexpr uint64_t kCloneThreadRequired =
    CLONE_THREAD | CLONE_VM | CLONE_SIGHAND | CLONE_FILES | CLONE_FS;
constexpr uint64_t kCloneThreadMask = kCloneThreadRequired | CLONE_NEWNS | CLONE_NEWCGROUP |
                                      CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |
                                      CLONE_NEWNET;

// InstallStage1 loads the filter and returns its listener.
Result<UniqueFd> InstallStage1(int supervisor_fd) {
  Filter f(SCMP_ACT_NOTIFY);
  if (f.get() == nullptr) return Internal("lockdown: seccomp_init failed");
  int rc = 0;
  // A call of another architecture (int 0x80, x32 numbers) is reported, with its arch.
  if ((rc = seccomp_attr_set(f.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_NOTIFY)) != 0) {
    return SeccompError("attr BADARCH", rc);
  }
  // NO_NEW_PRIVS was set by EnterLoadPhase; libseccomp need not set it again.
  if ((rc = seccomp_attr_set(f.get(), SCMP_FLTATR_CTL_NNP, 0)) != 0) {
    return SeccompError("attr NNP", rc);
  }
  for (const Allowed& a : kStage1Allowed) {
    if ((rc = seccomp_rule_add(f.get(), SCMP_ACT_ALLOW, a.nr, 0)) != 0) {
      return SeccompError(std::string("allow ") + a.reason, rc);
    }
  }
  struct Conditional {
    const char* what;
    uint32_t action;
    int nr;
    std::vector<scmp_arg_cmp> cmp;
  };
  const auto self = static_cast<scmp_datum_t>(::getpid());
  // Argument comparisons are on the full 64-bit register, while the kernel reads int arguments
  // from the low 32 bits only: every condition below is written so that garbage in the high half
  // fails it (equality, or an unsigned range that excludes anything above 2^32).
  const std::vector<Conditional> conditional = {
      // Sends and receives on the host channel (a connected AF_UNIX socket: no other peer),
      // never with MSG_OOB: AF_UNIX out-of-band data is a kernel
      // path no channel needs and the one a sandbox escape went through (CVE-2025-38236). The
      // flags are an int: bit 0 is the same in the low half the kernel reads.
      {"recvmsg(no MSG_OOB)",
       SCMP_ACT_ALLOW,
       SCMP_SYS(recvmsg),
       {Arg(2, SCMP_CMP_MASKED_EQ, MSG_OOB, 0)}},
      // sendmsg only on the supervisor socket (the listener's hand-over; closed before any plugin
      // code runs): a message can carry descriptors (SCM_RIGHTS), and every descriptor in flight
      // counts against a per-user limit all workers share (lockdown.h). The worker's own sends
      // use send (sendto), which carries none. fd is an int: equality on the whole register.
      {"sendmsg(supervisor socket, no MSG_OOB)",
       SCMP_ACT_ALLOW,
       SCMP_SYS(sendmsg),
       {Arg(0, SCMP_CMP_EQ, static_cast<scmp_datum_t>(supervisor_fd)),
        Arg(2, SCMP_CMP_MASKED_EQ, MSG_OOB, 0)}},
      {"recvfrom(no MSG_OOB)",
       SCMP_ACT_ALLOW,
       SCMP_SYS(recvfrom),
       {Arg(3, SCMP_CMP_MASKED_EQ, MSG_OOB, 0)}},
      {"sendto(no MSG_OOB)",
       SCMP_ACT_ALLOW,
       SCMP_SYS(sendto),
       {Arg(3, SCMP_CMP_MASKED_EQ, MSG_OOB, 0)}},
      // Thread creation only (fork, vfork and posix_spawn use clone without CLONE_THREAD).
      {"clone(CLONE_THREAD)",
       SCMP_ACT_ALLOW,
       SCMP_SYS(clone),
       {Arg(0, SCMP_CMP_MASKED_EQ, kCloneThreadMask, kCloneThreadRequired)}},
      // glibc's pthread_create tries clone3 first and falls back to clone on ENOSYS; clone3's
      // flags are behind a pointer, where seccomp cannot look.
      {"clone3 → ENOSYS", SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), {}},
      // Signals: to the worker's own threads only, and only SIGABRT (abort, a failed assert) or 0
      // (is the thread there).
      {"tgkill(own tgid, SIGABRT)",
       SCMP_ACT_ALLOW,
       SCMP_SYS(tgkill),
       {Arg(0, SCMP_CMP_EQ, self), Arg(2, SCMP_CMP_EQ, SIGABRT)}},
      {"tgkill(own tgid, 0)",
       SCMP_ACT_ALLOW,
       SCMP_SYS(tgkill),
       {Arg(0, SCMP_CMP_EQ, self), Arg(2, SCMP_CMP_EQ, 0)}},
      // getrlimit and sysconf(_SC_OPEN_MAX) read the worker's own limits: no new limit, pid 0.
      {"prlimit64(0, read only)",
       SCMP_ACT_ALLOW,
       SCMP_SYS(prlimit64),
       {Arg(0, SCMP_CMP_EQ, 0), Arg(2, SCMP_CMP_EQ, 0)}},
      // No signal handler at all: reading an action is allowed, setting one fails with EPERM
      // (glibc's abort() resets SIGABRT's and carries on). A handler run on a thread whose
      // forbidden call is held would withdraw the report before the host reads it, and signals
      // come not only from the plugin (above) but from any process with the worker's outside uid.
      // Without one, a signal to the worker ends it (audited), stops it (the held call is
      // reported again once it continues) or is ignored (the worker is its PID namespace's init,
      // which ignores what it has no handler for).
      {"rt_sigaction(read)", SCMP_ACT_ALLOW, SCMP_SYS(rt_sigaction), {Arg(1, SCMP_CMP_EQ, 0)}},
      {"rt_sigaction(set) → EPERM",
       SCMP_ACT_ERRNO(EPERM),
       SCMP_SYS(rt_sigaction),
       {Arg(1, SCMP_CMP_NE, 0)}},
      // W^X from the first instruction of plugin code on (a constructor runs in the load phase
      // and could otherwise make memory executable, or patch the worker's own code). prot and
      // flags are unsigned long in the kernel: compared whole.
      // mmap without PROT_EXEC: malloc, thread stacks, data segments.
      // Private mappings only: a shared anonymous mapping is a kernel object that lives while any
      // page of it stays mapped, so mapping 64 MiB, touching it and unmapping all but one page
      // holds the 64 MiB outside what RLIMIT_AS counts. glibc, ld.so and thread stacks map
      // MAP_PRIVATE; MAP_SHARED_VALIDATE (3) has both bits. No MAP_HUGETLB: huge pages come from
      // the hugetlb pool, which a cgroup v1 memory limit does not count.
      {"mmap(private, no PROT_EXEC)",
       SCMP_ACT_ALLOW,
       SCMP_SYS(mmap),
       {Arg(2, SCMP_CMP_MASKED_EQ, PROT_EXEC, 0),
        Arg(3, SCMP_CMP_MASKED_EQ, MAP_SHARED | MAP_PRIVATE | MAP_HUGETLB, MAP_PRIVATE)}},
      // mmap with PROT_EXEC: only of a file (ld.so maps text segments of the plugin's memfd and
      // of system libraries, read-only by Landlock and the seals), never writable too.
      {"mmap(PROT_EXEC of a file, private, not writable)",
       SCMP_ACT_ALLOW,
       SCMP_SYS(mmap),
       {Arg(2, SCMP_CMP_MASKED_EQ, PROT_EXEC | PROT_WRITE, PROT_EXEC),
        Arg(3, SCMP_CMP_MASKED_EQ, MAP_ANONYMOUS | MAP_SHARED | MAP_PRIVATE | MAP_HUGETLB,
            MAP_PRIVATE)}},
      // mprotect never adds PROT_EXEC: RELRO (PROT_READ), guard pages (PROT_NONE) only. The ELF
      // check refuses what would need it (text relocations, an executable stack).
      {"mprotect(no PROT_EXEC)",
       SCMP_ACT_ALLOW,
       SCMP_SYS(mprotect),
       {Arg(2, SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)}},
      // Threads name themselves (pthread_setname_np on the calling thread).
      {"prctl(PR_SET_NAME)", SCMP_ACT_ALLOW, SCMP_SYS(prctl), {Arg(0, SCMP_CMP_EQ, PR_SET_NAME)}},
      {"prctl(PR_GET_NAME)", SCMP_ACT_ALLOW, SCMP_SYS(prctl), {Arg(0, SCMP_CMP_EQ, PR_GET_NAME)}},
      // Descriptor flags: CLOEXEC (glibc), O_NONBLOCK on the host channel, seals of a memfd.
      {"fcntl(F_GETFD)", SCMP_ACT_ALLOW, SCMP_SYS(fcntl), {Arg(1, SCMP_CMP_EQ, F_GETFD)}},
      {"fcntl(F_SETFD)", SCMP_ACT_ALLOW, SCMP_SYS(fcntl), {Arg(1, SCMP_CMP_EQ, F_SETFD)}},
      {"fcntl(F_GETFL)", SCMP_ACT_ALLOW, SCMP_SYS(fcntl), {Arg(1, SCMP_CMP_EQ, F_GETFL)}},
      // Never O_ASYNC: SIGIO is a signal a handler could catch (lockdown.h).
      {"fcntl(F_SETFL, no O_ASYNC)",
       SCMP_ACT_ALLOW,
       SCMP_SYS(fcntl),
       {Arg(1, SCMP_CMP_EQ, F_SETFL), Arg(2, SCMP_CMP_MASKED_EQ, O_ASYNC, 0)}},
      {"fcntl(F_GET_SEALS)", SCMP_ACT_ALLOW, SCMP_SYS(fcntl), {Arg(1, SCMP_CMP_EQ, F_GET_SEALS)}},
      // stdio asks isatty() (TCGETS) of a character device such as /dev/null on its first
      // write: answer "not a terminal" rather than end the worker. Every other ioctl traps.
      {"ioctl(TCGETS) → ENOTTY",
       SCMP_ACT_ERRNO(ENOTTY),
       SCMP_SYS(ioctl),
       {Arg(1, SCMP_CMP_EQ, TCGETS)}},
  };
  for (const Conditional& c : conditional) {
    rc = seccomp_rule_add_array(f.get(), c.action, c.nr, static_cast<unsigned>(c.cmp.size()),
                                c.cmp.empty() ? nullptr : c.cmp.data());
    if (rc != 0) return SeccompError(std::string("rule ") + c.what, rc);
  }
  if ((rc = seccomp_load(f.get())) != 0) return SeccompError("load (stage 1)", rc);
  UniqueFd listener(seccomp_notify_fd(f.get()));
  if (!listener.valid()) return Internal("lockdown: the seccomp filter has no listener");
  return listener;
}

// CountThreads counts the entries of /proc/self/task.
Result<int> CountThreads() {
  DIR* d = ::opendir("/proc/self/task");
  if (d == nullptr) return Errno("opendir /proc/self/task", errno);
  int n = 0;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(d);
  return n;
}

Status CloseOtherFds(std::vector<int> keep) {
  std::sort(keep.begin(), keep.end());
  keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
  unsigned next = 3;  // first descriptor not yet handled
  for (int fd : keep) {
    const auto u = static_cast<unsigned>(fd);
    if (u > next && ::close_range(next, u - 1, 0) != 0) return Errno("close_range", errno);
    next = u + 1;
  }
  if (::close_range(next, ~0U, 0) != 0) return Errno("close_range", errno);
  return Status::Ok();
}

Status SetLimit(int resource, rlim_t value, std::string_view name) {
  const rlimit lim{value, value};
  if (::setrlimit(resource, &lim) != 0) return Errno("setrlimit(" + std::string(name) + ")", errno);
  return Status::Ok();
}

}  // namespace

Status SendListener(int socket, int listener) {
  OneFdMessage m;
  msghdr& msg = m.msg;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &listener, sizeof(int));
  ssize_t n = -1;
  do {
    n = ::sendmsg(socket, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n != 1) return Errno("sending the seccomp listener to the host", n < 0 ? errno : EPIPE);
  return Status::Ok();
}

Result<LockdownReport> EnterLoadPhase(const LockdownOptions& opts) {
  std::vector<int> keep = opts.keep_fds;
  if (opts.supervisor_fd < 0) {
    return Status(Reason::kConfigInvalid,
                  "lockdown: a supervisor socket is required (it receives the seccomp listener)");
  }
  keep.push_back(opts.supervisor_fd);
  for (int fd : keep) {
    if (fd <= 2) {
      return Status(Reason::kConfigInvalid,
                    "lockdown: kept descriptor " + std::to_string(fd) + " is not above 2");
    }
  }
  if (opts.max_open_files == 0) {
    return Status(Reason::kConfigInvalid, "lockdown: max_open_files must be at least 1");
  }
  CLAWGUARD_ASSIGN_OR_RETURN(const int threads, CountThreads());
  if (threads != 1) {
    return Internal("lockdown: the process has " + std::to_string(threads) +
                    " threads; Landlock would confine only the calling one");
  }
  CLAWGUARD_RETURN_IF_ERROR(CloseOtherFds(std::move(keep)));
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return Errno("PR_SET_NO_NEW_PRIVS", errno);
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return Errno("PR_SET_DUMPABLE", errno);
  if (opts.address_space_bytes != 0) {
    CLAWGUARD_RETURN_IF_ERROR(SetLimit(RLIMIT_AS, opts.address_space_bytes, "RLIMIT_AS"));
  }
  CLAWGUARD_RETURN_IF_ERROR(SetLimit(RLIMIT_CORE, 0, "RLIMIT_CORE"));
  CLAWGUARD_RETURN_IF_ERROR(SetLimit(RLIMIT_NOFILE, opts.max_open_files, "RLIMIT_NOFILE"));
  if (opts.max_threads != 0) {
    CLAWGUARD_RETURN_IF_ERROR(SetLimit(RLIMIT_NPROC, opts.max_threads, "RLIMIT_NPROC"));
  }
  rlimit cpu{};
  if (::getrlimit(RLIMIT_CPU, &cpu) != 0) return Errno("getrlimit(RLIMIT_CPU)", errno);
  CLAWGUARD_RETURN_IF_ERROR(SetLimit(RLIMIT_CPU, cpu.rlim_max, "RLIMIT_CPU"));
  CLAWGUARD_ASSIGN_OR_RETURN(LockdownReport report, ApplyLandlock(opts.read_paths));
  CLAWGUARD_ASSIGN_OR_RETURN(UniqueFd listener, InstallStage1(opts.supervisor_fd));
  CLAWGUARD_RETURN_IF_ERROR(SendListener(opts.supervisor_fd, listener.get()));
  // The host holds the listener now (a descriptor in flight keeps it alive); the plugin gets
  // neither it nor the socket.
  listener.Reset();
  if (::close(opts.supervisor_fd) != 0) return Errno("close of the supervisor socket", errno);
  return report;
}

Status EnterServePhase() {
  // No file is opened once the plugin is loaded: a second Landlock domain that handles every
  // filesystem right the ABI knows and allows none. An open fails with EACCES, not a kill: glibc
  // opens files lazily in honest code (/etc/localtime on a first localtime_r,
  // /proc/sys/vm/overcommit_memory on a heap trim) and copes with a refusal. Landlock, not a
  // seccomp filter: the plugin may not install filters at all (stage 1), and a domain binds the
  // calling thread and every thread it starts from now on — the delivery threads.
  const long abi =
      ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) return Errno("Landlock (serve phase)", errno);
  RulesetAttr attr;
  attr.handled_access_fs = kFsAbi1;
  if (abi >= 2) attr.handled_access_fs |= kFsRefer;
  if (abi >= 3) attr.handled_access_fs |= kFsTruncate;
  if (abi >= 5) attr.handled_access_fs |= kFsIoctlDev;
  UniqueFd ruleset(static_cast<int>(
      ::syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr.handled_access_fs), 0)));
  if (!ruleset.valid()) return Errno("landlock_create_ruleset (serve phase)", errno);
  if (::syscall(SYS_landlock_restrict_self, ruleset.get(), 0) != 0) {
    return Errno("landlock_restrict_self (serve phase)", errno);
  }
  return Status::Ok();
}

// ---- the supervisor's side ----

// The x32 ABI's calls come with the x86-64 architecture and this bit set in the number.
constexpr int kX32SyscallBit = 0x40000000;

std::string RefusedCall::Describe() const {
  if (withdrawn) return "a call withdrawn before it was read";
  std::string s = name + " (" + std::to_string(nr);
  if (arch == SCMP_ARCH_X86_64) {
    if (nr >= 0 && (nr & kX32SyscallBit) != 0) s += ", x32";
  } else {
    s += arch == SCMP_ARCH_X86 ? ", i386" : ", arch " + std::to_string(arch);
  }
  return s + ")";
}

Result<UniqueFd> ReceiveListener(int fd) {
  OneFdMessage m;
  msghdr& msg = m.msg;
  ssize_t n = -1;
  do {
    n = ::recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return UniqueFd();
  if (n < 0) return Errno("receiving the worker's seccomp listener", errno);
  UniqueFd listener;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
        c->cmsg_len == CMSG_LEN(sizeof(int)) && !listener.valid()) {
      int received = -1;
      std::memcpy(&received, CMSG_DATA(c), sizeof(int));
      listener.Reset(received);
    }
  }
  if (n == 0) return Internal("the worker closed its supervisor socket without a seccomp listener");
  if (!listener.valid() || (msg.msg_flags & MSG_CTRUNC) != 0) {
    return Internal("the worker sent something other than its seccomp listener");
  }
  // What the kernel names the descriptor: a listener is "anon_inode:seccomp notify".
  char target[64] = {};
  const std::string link = "/proc/self/fd/" + std::to_string(listener.get());
  const ssize_t len = ::readlink(link.c_str(), target, sizeof(target) - 1);
  if (len < 0 ||
      std::string_view(target, static_cast<size_t>(len)) != "anon_inode:seccomp notify") {
    return Internal("the descriptor the worker sent is not a seccomp listener");
  }
  return listener;
}

Result<RefusedCall> ReadRefusedCall(int listener) {
  // The ioctl itself, not libseccomp's wrapper: that one turns every error into ECANCELED, and
  // ENOENT (a withdrawn report) is an answer here, not a failure.
  seccomp_notif req{};
  int rc = 0;
  do {
    std::memset(&req, 0, sizeof(req));  // the kernel refuses a buffer that is not zeroed
    rc = ::ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req);
  } while (rc < 0 && errno == EINTR);
  RefusedCall call;
  // ENOENT: the report was withdrawn between poll and here (lockdown.h: only a fatal signal can).
  if (rc < 0 && errno == ENOENT) {
    call.withdrawn = true;
    return call;
  }
  if (rc < 0) return Errno("reading a seccomp report", errno);
  call.nr = req.data.nr;
  call.arch = req.data.arch;
  call.pid = req.pid;
  const bool x32 = call.arch == SCMP_ARCH_X86_64 && call.nr >= 0 && (call.nr & kX32SyscallBit);
  if (char* name = seccomp_syscall_resolve_num_arch(x32 ? SCMP_ARCH_X32 : call.arch, call.nr)) {
    call.name = name;
    std::free(name);
  } else {
    call.name = "syscall " + std::to_string(call.nr);
  }
  return call;
}

}  // namespace clawguard::sandbox
