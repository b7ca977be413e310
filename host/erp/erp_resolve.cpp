// erp_resolve.cpp — see erp_resolve.h.
#include "host/erp/erp_resolve.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <system_error>
#include <thread>

#include "core/mutex.h"
#include "runtime/thread_name.h"

namespace clawguard::host {
namespace {

// Lookup is one resolution shared by the caller, which waits for it until its deadline, and the
// thread that runs getaddrinfo, which may outlive that wait: whichever lets go last frees it.
struct Lookup {
  Mutex mu;
  std::condition_variable done_cv;
  bool done CLAWGUARD_GUARDED_BY(mu) = false;
  int rc CLAWGUARD_GUARDED_BY(mu) = 0;
  std::vector<ResolvedAddress> addresses CLAWGUARD_GUARDED_BY(mu);
};

// g_lookups_in_flight counts resolver threads still running, the abandoned ones included.
std::atomic<int> g_lookups_in_flight{0};

// Literal returns |host| as an address when it is an IPv4 or IPv6 literal.
bool Literal(const std::string& host, uint16_t port, ResolvedAddress* out) {
  sockaddr_in v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4.sin_addr) == 1) {
    v4.sin_family = AF_INET;
    v4.sin_port = htons(port);
    std::memcpy(&out->storage, &v4, sizeof v4);
    out->length = sizeof v4;
    return true;
  }
  sockaddr_in6 v6{};
  if (::inet_pton(AF_INET6, host.c_str(), &v6.sin6_addr) == 1) {
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(port);
    std::memcpy(&out->storage, &v6, sizeof v6);
    out->length = sizeof v6;
    return true;
  }
  return false;
}

void RunLookup(const std::shared_ptr<Lookup>& lookup, const std::string& host, uint16_t port) {
  NameThisThread("cg-resolve");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  std::vector<ResolvedAddress> addresses;
  for (const addrinfo* a = found; rc == 0 && a != nullptr; a = a->ai_next) {
    if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) ||
        a->ai_addrlen > sizeof(sockaddr_storage))
      continue;
    ResolvedAddress r;
    std::memcpy(&r.storage, a->ai_addr, a->ai_addrlen);
    r.length = a->ai_addrlen;
    addresses.push_back(r);
  }
  if (found != nullptr) ::freeaddrinfo(found);
  {
    MutexLock lock(lookup->mu);
    lookup->rc = rc;
    lookup->addresses = std::move(addresses);
    lookup->done = true;
  }
  lookup->done_cv.notify_all();
  g_lookups_in_flight.fetch_sub(1);
}

}  // namespace

Resolution ResolveBefore(const std::string& host, uint16_t port,
                         std::chrono::steady_clock::time_point deadline) {
  Resolution out;
  ResolvedAddress literal;
  if (Literal(host, port, &literal)) {
    out.outcome = Resolution::Outcome::kFound;
    out.addresses.push_back(literal);
    return out;
  }
  // A call whose deadline has passed does not start a lookup (a fast resolver could otherwise
  // still answer in time for the wait below to find it done).
  if (std::chrono::steady_clock::now() >= deadline) {
    out.outcome = Resolution::Outcome::kTimedOut;
    return out;
  }
  if (g_lookups_in_flight.fetch_add(1) >= kMaxErpNameLookupsInFlight) {
    g_lookups_in_flight.fetch_sub(1);
    out.outcome = Resolution::Outcome::kBusy;
    out.detail = std::to_string(kMaxErpNameLookupsInFlight) +
                 " name lookups are still waiting for the resolver";
    return out;
  }
  auto lookup = std::make_shared<Lookup>();
  try {
    std::thread([lookup, host, port] { RunLookup(lookup, host, port); }).detach();
  } catch (const std::system_error& e) {
    g_lookups_in_flight.fetch_sub(1);
    out.outcome = Resolution::Outcome::kFailed;
    out.detail = std::string("no thread for the lookup: ") + e.what();
    return out;
  }
  MutexLock lock(lookup->mu);
  if (!lookup->mu.WaitUntil(lookup->done_cv, deadline,
                            [&]() CLAWGUARD_REQUIRES(lookup->mu) { return lookup->done; })) {
    out.outcome = Resolution::Outcome::kTimedOut;
    return out;
  }
  if (lookup->rc != 0) {
    out.outcome = Resolution::Outcome::kFailed;
    out.detail = ::gai_strerror(lookup->rc);
    return out;
  }
  if (lookup->addresses.empty()) {
    out.outcome = Resolution::Outcome::kFailed;
    out.detail = "no IPv4 or IPv6 address";
    return out;
  }
  out.outcome = Resolution::Outcome::kFound;
  out.addresses = std::move(lookup->addresses);
  return out;
}

}  // namespace clawguard::host
