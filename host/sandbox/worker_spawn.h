// worker_spawn.h — starts a plugin worker process in its own namespaces, from a multi-threaded
// host, with nothing of the host's but the descriptors it is handed.
//
// SpawnWorker clones (clone3, or clone where clone3 is refused) with CLONE_PIDFD and, when asked,
// new user, PID, network, IPC, mount and UTS namespaces. Between clone and execve the child makes
// only raw system calls on memory prepared by the parent (another host thread may have held the
// malloc or stdio locks at the moment of the clone; they stay held forever in the child). The
// child:
//   - when asked, waits until the parent has placed it in a cgroup (SpawnRequest::cgroup_procs);
//   - sets its oom_score_adj to 1000: when the kernel must end a process for memory (the
//     machine's, or the service's MemoryMax=), it ends a worker — whose page tables count in the
//     kernel's choice — before the host;
//   - in a new user namespace maps ONE id each way, kWorkerInnerId (65534) inside to:
//       - a host that is not root: the host's effective uid/gid outside (the child writes its own
//         maps, after denying setgroups — the only map an unprivileged writer may make);
//       - a root host: the same id, 65534 ("nobody"), outside (the parent writes the maps while
//         the child waits on a pipe: mapping another id needs CAP_SETUID outside);
//     The inner id is not 0, so execve drops every capability the child had in its namespace: the
//     worker starts with none anywhere.
//   - names a new UTS namespace kWorkerHostName (and an empty NIS domain): the plugin does not
//     learn the machine's name.
//   - a root host's child, with or without a user namespace, drops its supplementary groups and
//     sets gid and uid to 65534: the worker is never uid 0 outside, so it gets no owner access to
//     root's files, and RLIMIT_NPROC binds it (the kernel exempts uid 0 — the worker's thread
//     bound, lockdown.h, rests on this). A host that is not root keeps its own supplementary groups
//     in the worker: an unprivileged user namespace cannot drop them.
//   - moves req.fds to 3, 4, 5, … in order (without CLOEXEC), makes 0, 1 and 2 /dev/null and
//     closes every other descriptor;
//   - clears ambient capabilities, resets every signal disposition to SIG_DFL and unblocks all
//     signals;
//   - sets its parent-death signal to SIGKILL (after the id change, which would clear it): the
//     worker dies with the host, even a worker whose plugin made its own exit fail (a seccomp
//     filter of its own) while a thread of it lives on;
//   - execveat(the executable's O_PATH descriptor the host opened, argv, {}) — an empty
//     environment; the worker's uid needs no search permission on the executable's directories. A
//     script (#!) keeps that descriptor across execve for its interpreter (/dev/fd/N); the
//     interpreter then runs as the worker, with the worker's permissions.
// A failing step makes the child write which step and errno to a CLOEXEC pipe and _exit(127); the
// parent then reaps it and returns a Status naming the step. Success closes the pipe by execve.
//
// Namespaces are best effort: if the kernel refuses the full set (EPERM, EINVAL, ENOSPC, EUSERS),
// SpawnWorker tries the set without a user namespace (which only a host with CAP_SYS_ADMIN gets)
// and then none. SpawnedProcess::namespaces says exactly what was obtained; whether that is enough
// is the caller's decision. Without "user" the worker of a host that is not root runs as the
// host's uid; only Landlock and seccomp then stand between it and the host's files.
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
// The host name a worker sees (its own UTS namespace).
inline constexpr char kWorkerHostName[] = "clawguard-worker";

struct SpawnRequest {
  std::string executable;         // absolute path of the worker binary
  std::vector<std::string> argv;  // argv[0..]; no secrets ever go here (they show in /proc)
  std::vector<int> fds;           // become fds 3, 4, 5, ... in the child, in this order
  bool namespaces = true;         // try new user, PID, network, IPC, mount and UTS namespaces
  // A cgroup's cgroup.procs file (worker_cgroup.h), or "": the child waits until the parent has
  // written its pid there, so nothing it runs is outside that cgroup.
  std::string cgroup_procs;
};

struct SpawnedProcess {
  pid_t pid = -1;  // in the host's PID namespace
  UniqueFd pidfd;  // CLONE_PIDFD: poll it for exit; waitid(P_PIDFD) to reap
  // Which namespaces were obtained, of "user", "pid", "net", "ipc", "mnt", "uts" (in that order).
  std::vector<std::string> namespaces;
};

// SpawnWorker starts |req.executable|. Errors: kConfigInvalid for a request that cannot be run
// (relative path, empty argv, a negative fd, NUL in a string), kInternal when a
// system call fails — the message names the step ("execve", "write uid_map", …) and the errno.
Result<SpawnedProcess> SpawnWorker(const SpawnRequest& req);

}  // namespace clawguard::sandbox

#endif  // CLAWGUARD_HOST_SANDBOX_WORKER_SPAWN_H_
