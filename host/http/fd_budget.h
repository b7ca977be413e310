// fd_budget.h — the host's file descriptors: RLIMIT_NOFILE raised to its hard limit at start, and
// how many connections the webhook listener may hold within it (ARCHITECTURE.md "Host request
// pipeline", connection limits).
//
// Why: a listener that accepts until the process runs out of descriptors stops accepting (EMFILE)
// — idle, unauthenticated clients then keep signed webhooks out. The host raises the soft limit to
// the hard one (the default soft limit, often 1024, is far below what the kernel allows), then
// bounds the listener so accept always has a descriptor: what the store, logs, plugins, the ERP
// client's connections (one per delivery in flight, at most), the admin listener and the I/O
// threads need is kept back (limits::kReservedFds + listen.handlers + the admin listener's bound).
#ifndef CLAWGUARD_HOST_HTTP_FD_BUDGET_H_
#define CLAWGUARD_HOST_HTTP_FD_BUDGET_H_

#include <cstdint>

#include "clawguard/error.h"

namespace clawguard::host {

// FdLimit is RLIMIT_NOFILE as the host found and left it.
struct FdLimit {
  uint64_t soft_before = 0;  // the soft limit at start
  uint64_t soft = 0;         // the soft limit now
  uint64_t hard = 0;
};

// RaiseFdLimit raises the process's soft RLIMIT_NOFILE to its hard limit (an infinite hard limit:
// to fs.nr_open's usual ceiling, 1048576) and returns what it found and set. A refused raise
// leaves the soft limit as it was (|soft| says so). Process-wide; call at start-up. Never throws.
FdLimit RaiseFdLimit();

// ListenerBudget returns how many connections the webhook listener may hold: |configured|
// (listen.max_connections), lowered to what |fd_soft| leaves after the reserve for |handlers|
// deliveries in flight and the other descriptors. kConfigInvalid (naming RLIMIT_NOFILE and the
// limit needed) when fewer than limits::kMinConnections would be left.
Result<uint64_t> ListenerBudget(uint64_t configured, uint64_t fd_soft, uint64_t handlers);

// FdsReserved is what ListenerBudget keeps back for |handlers|.
uint64_t FdsReserved(uint64_t handlers);

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_HTTP_FD_BUDGET_H_
