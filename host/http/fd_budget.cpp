// fd_budget.cpp — see fd_budget.h.
#include "host/http/fd_budget.h"

#include <sys/resource.h>

#include <algorithm>
#include <string>

#include "clawguard/limits.h"

namespace clawguard::host {
namespace {

constexpr uint64_t kNrOpenDefault = 1'048'576;  // fs.nr_open's default: the most setrlimit accepts

}  // namespace

FdLimit RaiseFdLimit() {
  FdLimit out;
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return out;
  out.soft_before = rl.rlim_cur;
  out.soft = rl.rlim_cur;
  out.hard = rl.rlim_max == RLIM_INFINITY ? kNrOpenDefault : rl.rlim_max;
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < out.hard) {
    rlimit raised = rl;
    raised.rlim_cur = out.hard;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) out.soft = out.hard;
  }
  return out;
}

uint64_t FdsReserved(uint64_t handlers) {
  return limits::kReservedFds + handlers + limits::kAdminMaxConnections;
}

Result<uint64_t> ListenerBudget(uint64_t configured, uint64_t fd_soft, uint64_t handlers) {
  const uint64_t reserved = FdsReserved(handlers);
  const uint64_t left = fd_soft > reserved ? fd_soft - reserved : 0;
  if (left < limits::kMinConnections) {
    return Status(Reason::kConfigInvalid,
                  "RLIMIT_NOFILE is " + std::to_string(fd_soft) +
                      " file descriptors (after raising the soft limit to "
                      "the hard one): " +
                      std::to_string(reserved) +
                      " are kept for the store, logs, plugins, ERP "
                      "connections and the admin listener, which leaves fewer than " +
                      std::to_string(limits::kMinConnections) +
                      " for listen.max_connections; raise the hard limit "
                      "(e.g. LimitNOFILE= in the systemd unit) to at least " +
                      std::to_string(reserved + limits::kMinConnections));
  }
  return std::min(configured, left);
}

}  // namespace clawguard::host
