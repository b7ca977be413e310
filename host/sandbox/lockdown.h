// lockdown.h — the worker side of plugin isolation: what a plugin worker calls on itself, single-
// threaded, right after main() starts and BEFORE the plugin library is dlopen-ed (its constructors
// then already run confined).
//
// EnterLoadPhase, in this order:
//   1. closes every descriptor above 2 but opts.keep_fds and opts.supervisor_fd;
//   2. PR_SET_NO_NEW_PRIVS (Landlock and seccomp need it; no set-id gain through execve either) and
//      PR_SET_DUMPABLE 0 (no core files, /proc/<pid> owned by root, no ptrace by the host's uid);
//   3. rlimits: RLIMIT_AS = opts.address_space_bytes when set, RLIMIT_CORE = 0, RLIMIT_NOFILE =
//      opts.max_open_files, RLIMIT_NPROC = opts.max_threads when set (soft and hard, so they can
//      never be raised again), RLIMIT_CPU's soft limit raised to its hard one (the kernel then ends
//      the worker with SIGKILL, never with a SIGXCPU a handler could catch). RLIMIT_NPROC counts
//      the tasks of the caller's uid in its user namespace and every namespace above: in a worker
//      alone in its own user namespace it bounds the worker's threads, so a plugin cannot spend
//      the tasks (a cgroup's pids.max, systemd's TasksMax) the host needs. The kernel exempts real
//      uid 0 outside every namespace — a root host's worker is uid 65534 (worker_spawn.h) — and
//      where the worker shares its uid with the host in the host's namespace, the limit would
//      count the host too: the caller then leaves it unset;
//   4. Landlock (ABI ≥ 1 or an error: fail closed), handling every filesystem right the running
//      ABI knows and allowing only reads (READ_FILE, READ_DIR) beneath /usr/lib, /lib, /lib64 and
//      /usr/lib64 (those that exist) and of /etc/ld.so.cache — what the dynamic loader needs to
//      resolve a plugin's DT_NEEDED libraries — plus opts.read_paths. ABI ≥ 4: TCP bind and connect
//      handled with no rule (denied). ABI ≥ 6: abstract unix sockets and signals scoped to the
//      worker's own domain.
//      A sealed memfd the worker holds still opens as /proc/self/fd/N and dlopen()s: the magic link
//      resolves to an inode of the kernel's internal tmpfs mount (SB_NOUSER), which Landlock does
//      not mediate (security/landlock/fs.c, is_nouser_or_private). No rule is needed for it, and
//      none widens what else the worker can open: /proc/self/maps or another process's
//      /proc/<pid>/fd are still refused (procfs is path-checked, and Landlock's ptrace hook refuses
//      reaching a process outside the domain).
//   5. seccomp stage 1 (see lockdown.cpp for the table of allowed calls and why), whose default
//      action is SECCOMP_RET_USER_NOTIF: a call not allowed is held in the kernel — it never runs
//      — and reported on the filter's listener. The worker sends that listener over
//      opts.supervisor_fd (SCM_RIGHTS) and closes both before it returns: the host (its
//      supervisor) reads each report from the kernel (ReadRefusedCall) and kills the worker. No
//      code in the worker takes part in the report, so plugin code cannot forge, suppress or delay
//      it, whatever it does to the worker's memory. W^X holds from here on: no mprotect adds
//      PROT_EXEC, and mmap with PROT_EXEC only of a file and never writable. The plugin can
//      install no seccomp filter of its own (one could answer a forbidden call first and hide it,
//      or flood the kernel's audit stream). sendmsg is allowed on opts.supervisor_fd only, which
//      is closed before plugin code runs: the plugin can put no descriptor in flight (SCM_RIGHTS),
//      so it cannot spend the per-user count of in-flight descriptors the kernel keeps (every
//      worker of a host shares one outside uid) and make other workers' hand-overs fail.
//      A signal handler running on a thread whose call is held would withdraw the report before
//      the host reads it (the wait is interruptible until then). So the plugin may set no signal
//      handler at all (rt_sigaction only reads), and sends no signals but SIGABRT or 0 to its own
//      threads (tgkill); no timers, no O_ASYNC, no CPU soft limit below the hard one. A signal
//      from outside — any process with the worker's outside uid may send one — then ends the
//      worker (audited), stops it (the held call is reported again when it continues) or is
//      ignored (the worker is its PID namespace's init). What ends a held call other than the
//      host is the worker's death, which the host audits too.
// EnterServePhase adds a second Landlock domain that allows no filesystem access at all, on the
// calling thread and every thread it starts afterwards (the delivery threads): no file is opened
// once the plugin is loaded (EACCES). Threads the plugin started in a constructor or init keep
// the load phase's domain (the system library directories, read-only). Plugin code runs before
// it and could keep it from being entered; what the sandbox promises rests on stage 1 and the
// first domain.
//
// Not thread-safe: EnterLoadPhase must run while the process has one thread (it checks
// /proc/self/task), since Landlock binds only the calling thread and its future children.
#ifndef CLAWGUARD_HOST_SANDBOX_LOCKDOWN_H_
#define CLAWGUARD_HOST_SANDBOX_LOCKDOWN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "clawguard/error.h"
#include "clawguard/unique_fd.h"

namespace clawguard::sandbox {

struct LockdownOptions {
  uint64_t address_space_bytes = 0;     // RLIMIT_AS; 0: leave as is
  uint64_t max_open_files = 16;         // RLIMIT_NOFILE (soft and hard)
  uint64_t max_threads = 0;             // RLIMIT_NPROC (soft and hard); 0: leave as is
  std::vector<int> keep_fds;            // fds > 2 to keep; every other fd > 2 is closed
  int supervisor_fd = -1;               // a socket: the filter's listener is sent here (required)
  std::vector<std::string> read_paths;  // extra read-only Landlock paths; the defaults always apply
};

struct LockdownReport {
  int landlock_abi = 0;
  bool landlock_net = false;     // TCP bind/connect denied by Landlock (ABI ≥ 4)
  bool landlock_scoped = false;  // abstract unix sockets and signals scoped (ABI ≥ 6)
};

// EnterLoadPhase confines the calling process as described above. Errors: kConfigInvalid for bad
// options (a kept fd ≤ 2, a missing read path), kInternal when the kernel refuses a step
// (Landlock unavailable included). On error the process is partly confined and must exit.
Result<LockdownReport> EnterLoadPhase(const LockdownOptions& opts);

// EnterServePhase enters the serve phase's Landlock domain (see above). Call it after the plugin
// is loaded, from the thread that will start the delivery threads.
Status EnterServePhase();

// ---- the supervisor's side (the host) ----

// RefusedCall is one call the worker's filter held, as the kernel reported it.
struct RefusedCall {
  bool withdrawn = false;  // the report was withdrawn before it was read (see below): no call
  int nr = 0;              // the call's number for |arch| (any int: the register's low half)
  uint32_t arch = 0;       // AUDIT_ARCH_* of the call (x86-64, or i386 via int 0x80)
  uint32_t pid = 0;        // the calling thread, in the supervisor's PID namespace (0: not in it)
  std::string name;        // the call's name ("socket"; x32 numbers too), or "syscall N"
  // Describe renders "socket (41)", "socket (1073741865, x32)", "getpid (20, i386)" or
  // "syscall -1 (-1)".
  std::string Describe() const;
};

// SendListener is the worker's side of the hand-over: |listener| to the supervisor over |socket|
// (one byte with one SCM_RIGHTS descriptor). kInternal names the errno.
Status SendListener(int socket, int listener);

// ReceiveListener takes the worker's listener from the supervisor socket |fd| (non-blocking).
// An invalid UniqueFd: nothing has arrived yet. Errors (kInternal): the worker closed the socket
// without one, sent something else, or the descriptor is not a seccomp listener.
Result<UniqueFd> ReceiveListener(int fd);

// ReadRefusedCall reads one report from |listener| after poll said POLLIN. A report withdrawn
// between the two (its thread died) is a RefusedCall with |withdrawn| set: the worker still made a
// forbidden call. Errors: the ioctl failed otherwise (kInternal). Never blocks once poll said
// POLLIN.
Result<RefusedCall> ReadRefusedCall(int listener);

}  // namespace clawguard::sandbox

#endif  // CLAWGUARD_HOST_SANDBOX_LOCKDOWN_H_
