// isolation_probe.cpp — see isolation_probe.h.
#include "host/sandbox/isolation_probe.h"

#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace clawguard::sandbox {
namespace {

// TryNamespaces clones a child in new namespaces |flags|; the child exits at once. Returns 0 when
// the clone worked, else the errno of the clone; -1 (with errno) when the child cannot be reaped.
int TryNamespaces(unsigned long flags) {
  // A raw clone without CLONE_VM is fork-like: the child runs on its copy of this stack and makes
  // one system call, safe in a multi-threaded process.
  const long pid = ::syscall(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0);
  if (pid == 0) {
    ::syscall(SYS_exit_group, 0);
    __builtin_unreachable();
  }
  if (pid < 0) return errno;
  int st = 0;
  while (::waitpid(static_cast<pid_t>(pid), &st, 0) < 0) {
    if (errno == EINTR) continue;
    if (errno == ECHILD) break;  // SIGCHLD ignored: the kernel reaped it
    return -1;
  }
  return 0;
}

}  // namespace

Status IsolationSupport::CheckSufficient(bool require_namespaces) const {
  if (seccomp_notify && landlock_abi >= 1 && (!require_namespaces || all_namespaces)) {
    return Status::Ok();
  }
  return Status(Reason::kConfigInvalid,
                "the kernel cannot isolate plugin workers as required (" + Describe() + ")");
}

std::string IsolationSupport::Describe() const {
  std::string s = "seccomp: ";
  s += !seccomp_filter  ? "no"
       : seccomp_notify ? "filter with user notification"
                        : "filter without user notification";
  s += "; Landlock: ";
  if (landlock_abi < 1) {
    s += "no";
  } else {
    s += "ABI " + std::to_string(landlock_abi);
    if (landlock_abi >= 4) s += " (TCP rules";
    if (landlock_abi >= 6) s += ", scoping";
    if (landlock_abi >= 4) s += ")";
  }
  s += "; namespaces: ";
  s += all_namespaces   ? "user pid net ipc mnt uts"
       : user_namespace ? "user only (others refused: " + namespace_error + ")"
                        : "none (" + namespace_error + ")";
  return s;
}

Result<IsolationSupport> ProbeIsolation() {
  IsolationSupport s;
  // PR_GET_SECCOMP fails with EINVAL on a kernel without seccomp; 0 or 2 (already filtered) is
  // fine: filters stack.
  s.seccomp_filter = ::prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
  if (s.seccomp_filter) {
    uint32_t action = SECCOMP_RET_USER_NOTIF;
    s.seccomp_notify = ::syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
  }
  const long abi =
      ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  s.landlock_abi = abi > 0 ? static_cast<int>(abi) : 0;

  int e = TryNamespaces(CLONE_NEWUSER);
  if (e < 0) return Status(Reason::kInternal, "isolation probe: cannot reap the probe child");
  s.user_namespace = e == 0;
  if (e != 0) s.namespace_error = std::strerror(e);
  if (s.user_namespace) {
    e = TryNamespaces(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWNS |
                      CLONE_NEWUTS);
    if (e < 0) return Status(Reason::kInternal, "isolation probe: cannot reap the probe child");
    s.all_namespaces = e == 0;
    if (e != 0) s.namespace_error = std::strerror(e);
  }
  return s;
}

}  // namespace clawguard::sandbox
