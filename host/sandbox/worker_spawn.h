// worker_spawn.h — starts a plugin worker process in its own namespaces, from a multi-threaded
// host, with nothing of the host's but the descriptors it is handed.
//
// SpawnWorker clones (clone3, or clone where clone3 is refused) with CLONE_PIDFD and, when asked,
// new user, PID, network, IPC and mount namespaces. Between clone and execve the child makes only
// raw system calls on memory prepared by the parent (another host thread may have held the malloc
// or stdio locks at the moment of the clone; they stay held forever in the child). The child:
//   - in a new user namespace, denies setgroups and maps ONE id each way: the host's effective
//     uid/gid outside ↔ kWorkerInnerId (65534) inside. The inner id is not 0, so execve drops every
//     capability the child had in its namespace: the worker starts with none anywhere. (Outside,
//     the worker is still the host's uid for file permission checks — Landlock, not DAC, is what
//     keeps it off the host's files.)
//   - moves req.fds to 3, 4, 5, … in order (without CLOEXEC), makes 0, 1 and 2 /dev/null and
//     closes every other descriptor;
//   - clears ambient capabilities, resets every signal disposition to SIG_DFL and unblocks all
//     signals;
//   - sets its parent-death signal to SIGKILL: the worker dies with the host, even a worker whose
//     plugin made its own exit fail (a seccomp filter of its own) while a thread of it lives on;
//   - execve(executable, argv, {}) — an empty environment.
// A failing step makes the child write which step and errno to a CLOEXEC pipe and _exit(127); the
// parent then reaps it and returns a Status naming the step. Success closes the pipe by execve.
//
// Namespaces are best effort: if the kernel refuses the full set (EPERM, EINVAL, ENOSPC, EUSERS),
// SpawnWorker tries the set without a user namespace (which only a host with CAP_SYS_ADMIN gets)
// and then none. SpawnedProcess::namespaces says exactly what was obtained; whether that is enough
// is the caller's decision. Without "user" the worker runs as the host's uid with the host's
// capabilities (a root host: all of them, NO_NEW_PRIVS does not drop them); only Landlock and
// seccomp then stand between it and the machine.
//
// Thread-safe. The parent-death signal follows the thread that cloned, not the process, so every
// worker is cloned by one thread that lives as long as the process ("cg-spawner"); SpawnWorker
// hands it the request and waits (a clone and its checks: milliseconds; calls are serialized).
// That thread's signal mask is blocked around the clone and restored after.
#ifndef CLAWGUARD_HOST_SANDBOX_WORKER_SPAWN_H_
#define CLAWGUARD_HOST_SANDBOX_WORKER_SPAWN_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "clawguard/error.h"
#include "clawguard/unique_fd.h"

namespace clawguard::sandbox {

// The uid and gid a worker has inside its user namespace (the conventional "nobody").
inline constexpr unsigned kWorkerInnerId = 65534;

struct SpawnRequest {
  std::string executable;         // absolute path of the worker binary
  std::vector<std::string> argv;  // argv[0..]; no secrets ever go here (they show in /proc)
  std::vector<int> fds;           // become fds 3, 4, 5, ... in the child, in this order
  bool namespaces = true;         // try new user, PID, network, IPC and mount namespaces
};

struct SpawnedProcess {
  pid_t pid = -1;  // in the host's PID namespace
  UniqueFd pidfd;  // CLONE_PIDFD: poll it for exit; waitid(P_PIDFD) to reap
  // Which namespaces were obtained, of "user", "pid", "net", "ipc", "mnt" (in that order).
  std::vector<std::string> namespaces;
};

// SpawnWorker starts |req.executable|. Errors: kConfigInvalid for a request that cannot be run
// (relative path, empty argv, a negative fd, NUL in a string), kInternal when a
// system call fails — the message names the step ("execve", "write uid_map", …) and the errno.
Result<SpawnedProcess> SpawnWorker(const SpawnRequest& req);

}  // namespace clawguard::sandbox

#endif  // CLAWGUARD_HOST_SANDBOX_WORKER_SPAWN_H_
