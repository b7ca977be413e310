// capability_pauses.h — CapabilityPauses: the host's in-memory mirror of the store's capability
// pauses (Dlq::ListPauses), consulted before every ERP send (ARCHITECTURE.md "Dead-letter
// triage": on ERP 401/403 the capability is paused until `clawguard capability resume`).
//
// The store is the truth. The host calls Refresh at start, whenever the operations generation
// changes (an operator paused or resumed a capability) and at least every kPauseRefreshMs (a pause
// another host wrote on an ERP 401/403 bumps no generation) — from its background loop, which
// never waits on the ERP (host/app/host_ops_loop.h) — and MarkPaused right after it paused one
// itself (so its own next send is held back without waiting for a refresh). A paused call is not
// sent, whichever path retries it: its outbox row is deferred and sent once after the pause is
// lifted.
//
// Thread-safe (one mutex); IsPaused is a set lookup.
#ifndef CLAWGUARD_HOST_GUARD_CAPABILITY_PAUSES_H_
#define CLAWGUARD_HOST_GUARD_CAPABILITY_PAUSES_H_

#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clawguard/error.h"
#include "clawguard/store/dlq.h"
#include "core/mutex.h"

namespace clawguard::host {

class CapabilityPauses {
 public:
  CapabilityPauses() = default;
  CapabilityPauses(const CapabilityPauses&) = delete;
  CapabilityPauses& operator=(const CapabilityPauses&) = delete;

  // Refresh replaces the set with the store's pauses. On a store failure (kStoreUnavailable) the
  // previous set is kept: a pause is never lifted because the store could not be read.
  Status Refresh(Dlq& dlq);
  // IsPaused: |capability| of |plugin| ("POST /orders/{id}/fulfil", exactly as in the manifest).
  bool IsPaused(std::string_view plugin, std::string_view capability) const;
  // MarkPaused adds one pause locally (the host has just written it to the store).
  void MarkPaused(std::string_view plugin, std::string_view capability);
  // Snapshot returns the (plugin, capability) pairs, sorted (for /ops and tests).
  std::vector<std::pair<std::string, std::string>> Snapshot() const;
  size_t size() const;

 private:
  mutable Mutex mu_;
  std::set<std::pair<std::string, std::string>, std::less<>> paused_ CLAWGUARD_GUARDED_BY(mu_);
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_GUARD_CAPABILITY_PAUSES_H_
