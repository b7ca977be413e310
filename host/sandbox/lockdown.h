// lockdown.h — the worker side of plugin isolation: what a plugin worker calls on itself, single-
// threaded, right after main() starts and BEFORE the plugin library is dlopen-ed (its constructors
// then already run confined).
//
// EnterLoadPhase, in this order:
//   1. closes every descriptor above 2 but opts.keep_fds and opts.fault_fd;
//   2. PR_SET_NO_NEW_PRIVS (Landlock and seccomp need it; no set-id gain through execve either) and
//      PR_SET_DUMPABLE 0 (no core files, /proc/<pid> owned by root, no ptrace by the host's uid);
//   3. rlimits: RLIMIT_AS = opts.address_space_bytes when set, RLIMIT_CORE = 0, RLIMIT_NOFILE =
//      opts.max_open_files, RLIMIT_NPROC = opts.max_threads when set (soft and hard, so they can
//      never be raised again). RLIMIT_NPROC counts the tasks of the caller's uid in its user
//      namespace and every namespace above: in a worker alone in its own user namespace it bounds
//      the worker's threads, so a plugin cannot spend the tasks (a cgroup's pids.max, systemd's
//      TasksMax) the host needs. The kernel exempts real uid 0 outside every namespace — a root
//      host's worker is uid 65534 (worker_spawn.h) — and where the worker shares its uid with the
//      host in the host's namespace, the limit would count the host too: the caller then leaves
//      it unset;
//   4. a SIGSYS handler: a system call the filters trap writes one FaultReport to opts.fault_fd
//      with one write(2) and ends the whole worker with _exit(kFaultExitCode);
//   5. Landlock (ABI ≥ 1 or an error: fail closed), handling every filesystem right the running
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
//   6. seccomp stage 1 (see lockdown.cpp for the table of allowed calls and why): default action
//      TRAP — anything not allowed is reported and ends the worker. W^X holds from here on: no
//      mprotect adds PROT_EXEC, and mmap with PROT_EXEC only of a file and never writable. The
//      plugin can install no seccomp filter of its own (one could answer a forbidden call first
//      and hide it, or flood the kernel's audit stream) and no handler for SIGSYS or SIGSEGV.
// EnterServePhase adds a second Landlock domain that allows no filesystem access at all, on the
// calling thread and every thread it starts afterwards (the delivery threads): no file is opened
// once the plugin is loaded (EACCES). Threads the plugin started in a constructor or init keep
// the load phase's domain (the system library directories, read-only). Plugin code runs before
// it and could keep it from being entered; what the sandbox promises rests on stage 1 and the
// first domain.
//
// The fault report: fd opts.fault_fd should be a socket — the handler sends with MSG_DONTWAIT,
// which never blocks whatever the plugin does to the descriptor. A thread that blocks SIGSYS and
// then makes a trapped call is killed by the kernel's default SIGSYS action instead
// (force_sig_seccomp): the host then sees death by SIGSYS, not kFaultExitCode. A trapped call
// made with the stack pointer on unmapped memory cannot have its SIGSYS delivered; the kernel
// raises SIGSEGV, which nothing in the worker may catch: it dies of it (a crash, to the host).
// Either way the call never runs. What the report says is the worker's word: plugin code can
// write reports of its own.
//
// Not thread-safe: EnterLoadPhase must run while the process has one thread (it checks
// /proc/self/task), since Landlock binds only the calling thread and its future children.
#ifndef CLAWGUARD_HOST_SANDBOX_LOCKDOWN_H_
#define CLAWGUARD_HOST_SANDBOX_LOCKDOWN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "clawguard/error.h"

namespace clawguard::sandbox {

struct LockdownOptions {
  uint64_t address_space_bytes = 0;     // RLIMIT_AS; 0: leave as is
  uint64_t max_open_files = 16;         // RLIMIT_NOFILE (soft and hard)
  uint64_t max_threads = 0;             // RLIMIT_NPROC (soft and hard); 0: leave as is
  std::vector<int> keep_fds;            // fds > 2 to keep; every other fd > 2 is closed
  int fault_fd = -1;                    // the SIGSYS handler writes one FaultReport here (kept)
  std::vector<std::string> read_paths;  // extra read-only Landlock paths; the defaults always apply
};

// FaultReport is what the SIGSYS handler writes: fixed 16 bytes, host byte order.
struct FaultReport {
  uint32_t magic;      // kFaultMagic
  int32_t syscall_nr;  // siginfo si_syscall: the trapped call's number for |arch|
  uint32_t arch;       // siginfo si_arch: AUDIT_ARCH_* of the call (x86-64, or i386 via int 0x80)
  uint32_t pad;        // 0
};
static_assert(sizeof(FaultReport) == 16);

inline constexpr uint32_t kFaultMagic = 0x46534743;  // "CGSF" in little-endian memory order

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

// What the worker exits with after a reported seccomp fault.
inline constexpr int kFaultExitCode = 159;

}  // namespace clawguard::sandbox

#endif  // CLAWGUARD_HOST_SANDBOX_LOCKDOWN_H_
