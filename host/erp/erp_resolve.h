// erp_resolve.h — ResolveBefore: name resolution for the ERP client's connections, bounded by the
// call's deadline (ARCHITECTURE.md "Host request pipeline" step 5). getaddrinfo alone may block for
// resolv.conf's timeout × attempts and cannot be cancelled, so it runs on a thread of its own
// (`cg-resolve`); the caller waits for it only until its deadline, and a lookup still running then
// finishes by itself. At most kMaxErpNameLookupsInFlight such threads run at once.
#ifndef CLAWGUARD_HOST_ERP_ERP_RESOLVE_H_
#define CLAWGUARD_HOST_ERP_ERP_RESOLVE_H_

#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace clawguard::host {

// kMaxErpNameLookupsInFlight bounds resolver threads still running (a lookup the call's deadline
// gave up on keeps its thread until getaddrinfo returns); past it a lookup fails at once.
inline constexpr int kMaxErpNameLookupsInFlight = 64;

// ResolvedAddress is one IPv4 or IPv6 TCP address with its port.
struct ResolvedAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
};

// Resolution is what ResolveBefore found: the addresses (kFound), or why there are none.
struct Resolution {
  enum class Outcome {
    kFound,     // |addresses| holds at least one address
    kTimedOut,  // the deadline passed first (the lookup goes on without the caller)
    kFailed,    // the resolver answered without an address; |detail| says why (gai_strerror)
    kBusy,      // kMaxErpNameLookupsInFlight lookups are still running: none started
  };
  Outcome outcome = Outcome::kFailed;
  std::vector<ResolvedAddress> addresses;
  std::string detail;
};

// ResolveBefore resolves |host| (a name, or an IPv4/IPv6 literal, which needs no lookup) and
// |port| for TCP, waiting until |deadline| at most. Thread-safe; never throws.
Resolution ResolveBefore(const std::string& host, uint16_t port,
                         std::chrono::steady_clock::time_point deadline);

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_ERP_ERP_RESOLVE_H_
