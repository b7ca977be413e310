// host_observe.h — what a running host shows about itself (ARCHITECTURE.md "Host request
// pipeline", the admin listener): the closed set of metric label names, the signing leaves of the
// loaded plugins, the /ops snapshot and the gauges refreshed by the host's background loop.
//
// HostObserver holds what is fixed at start (trust mode, plugins loaded and refused, signing
// leaves, the ERP endpoints of the loaded manifests) and reads the live state on demand (endpoint
// and key breakers, DLQ counts, delivery counters). Thread-safe: Snapshot and PublishGauges may
// run on any thread at once (the sources are thread-safe; the fixed part is immutable).
#ifndef CLAWGUARD_HOST_APP_HOST_OBSERVE_H_
#define CLAWGUARD_HOST_APP_HOST_OBSERVE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "clawguard/clock.h"
#include "clawguard/error.h"
#include "clawguard/loader.h"
#include "clawguard/store/dlq.h"
#include "host/guard/breaker.h"
#include "host/observe/host_metrics.h"
#include "host/observe/ops_page.h"

namespace clawguard::host {

// SigningLeaf is the leaf certificate of one signer that counted for a loaded plugin.
struct SigningLeaf {
  std::string keyid;
  std::string subject;    // one-line X.509 subject, for people
  int64_t not_after = 0;  // Unix seconds
};

// ReadSigningLeaves reads |package_path|.sig and returns the leaf of every keyid in
// |verdict.signers| (the signatures that counted), sorted by not_after. It is for metrics and the
// operator page only, never a trust decision (the loader already decided on the same bundle).
// Reasons: kFileUnreadable (no bundle), kBundleInvalid (it does not parse, or a leaf does not).
Result<std::vector<SigningLeaf>> ReadSigningLeaves(const std::string& package_path,
                                                   const Verdict& verdict);

// MetricsNamesFor is the label vocabulary of a host: |routes| (the (plugin, route) pairs it
// serves), the loaded plugins' names and every ERP capability string of their manifests (each
// once, in first-seen order).
MetricsNames MetricsNamesFor(const std::vector<std::pair<std::string, std::string>>& routes,
                             const std::vector<LoadedPlugin>& plugins);

class HostObserver {
 public:
  // Sources are the live objects read by Snapshot/PublishGauges; all must outlive the observer.
  struct Sources {
    const HostMetrics* metrics = nullptr;
    EndpointBreaker* endpoint_breaker = nullptr;
    KeyBreaker* key_breaker = nullptr;
    Dlq* dlq = nullptr;
    const Clock* clock = nullptr;
  };
  // Fixed is what the host decided at start.
  struct Fixed {
    std::string trust_mode;              // "enforce" or "audit"
    std::vector<OpsPlugin> plugins;      // loaded and refused packages
    std::vector<OpsLeaf> leaves;         // signing leaves of the loaded plugins
    std::vector<std::string> endpoints;  // ERP endpoints of the loaded manifests
  };
  // Create: kInternal when a source is missing.
  static Result<std::unique_ptr<HostObserver>> Create(Sources sources, Fixed fixed);

  // Snapshot is the /ops page's content now. A DLQ that cannot be read shows no DLQ rows (the
  // page must render while the store is down); every known endpoint is listed, closed if the
  // breaker never saw it.
  OpsSnapshot Snapshot() const;

  // PublishGauges sets dead_letter_queue_size for every class (0 for a class without unresolved
  // entries) and the breaker gauges (circuit_breaker_open per endpoint and for the key breakers).
  // kStoreUnavailable when the DLQ cannot be counted (the breaker gauges are still set).
  Status PublishGauges() const;

 private:
  HostObserver(Sources sources, Fixed fixed) : sources_(sources), fixed_(std::move(fixed)) {}
  std::vector<OpsBreaker> Breakers() const;

  const Sources sources_;
  const Fixed fixed_;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_APP_HOST_OBSERVE_H_
