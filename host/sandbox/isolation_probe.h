// isolation_probe.h — what the running kernel offers for isolating plugin workers, asked once at
// host start so that the host can refuse to run plugins (fail closed) when it is not enough.
//
// ProbeIsolation asks: seccomp filtering with the USER_NOTIF action (SECCOMP_GET_ACTION_AVAIL), the
// Landlock ABI (landlock_create_ruleset(NULL, 0, VERSION)), and whether a user namespace — alone
// and with the PID, network, IPC, mount and UTS namespaces SpawnWorker asks for — can be created,
// by cloning a throwaway child that exits at once and reaping it.
//
// Thread-safe: no shared state; the throwaway child makes one raw system call (exit_group).
#ifndef CLAWGUARD_HOST_SANDBOX_ISOLATION_PROBE_H_
#define CLAWGUARD_HOST_SANDBOX_ISOLATION_PROBE_H_

#include <string>

#include "clawguard/error.h"

namespace clawguard::sandbox {

struct IsolationSupport {
  bool seccomp_filter = false;  // seccomp(2) filter mode is there
  bool seccomp_notify = false;  // ... with SECCOMP_RET_USER_NOTIF (what lockdown's filter uses)
  int landlock_abi = 0;         // 0: no Landlock
  bool user_namespace = false;  // clone(CLONE_NEWUSER) works
  bool all_namespaces = false;  // clone(user|pid|net|ipc|mnt|uts) works: SpawnWorker gets them all
  std::string namespace_error;  // why not, when either is false (strerror of the clone)

  // Enough is seccomp with USER_NOTIF and Landlock ABI ≥ 1 (what lockdown.h requires), plus all the
  // namespaces when |require_namespaces|. Not enough: kConfigInvalid with Describe().
  Status CheckSufficient(bool require_namespaces) const;
  // Describe renders the facts on one line, for the start-up log.
  std::string Describe() const;
};

// ProbeIsolation returns the facts; an error (kInternal) only when a probe itself fails in an
// unexpected way (the throwaway child cannot be reaped).
Result<IsolationSupport> ProbeIsolation();

}  // namespace clawguard::sandbox

#endif  // CLAWGUARD_HOST_SANDBOX_ISOLATION_PROBE_H_
