// deployment_audit.h — the findings of `clawguard audit --config host.yaml` (ARCHITECTURE.md
// "Commands"): what a security reviewer checks on a deployment, computed from the
// host's own config, trust policy, allowlist, plugins directory, ledger and audit log.
//
// Each finding has a stable id, a severity (high | medium | low | info), a subject (the file,
// route, listener or package it is about) and a detail a person can act on. Never a secret: the
// route secrets are only dated, never shown. Checks (ids):
//   trust.unloadable (high)           the trust policy does not load (the host would not start)
//   trust.mode_audit (high)           `mode: audit` (relaxed refusals load plugins)
//   trust.root (info / medium / high) each pinned root, its subject and expiry (≤ 30 days:
//                                     medium; expired: high)
//   allowlist.unsigned (high)         no `allowlist_signer`: anyone who can write the file decides
//   allowlist.unloadable (high)       the allowlist does not load
//   allowlist.summary (info / medium / high)  version and expiry (≤ 30 days: medium; expired: high)
//   allowlist.entry (info)            each entry: name, version, sha256
//   plugin.unsigned / plugin.unreadable / plugin.not_allowlisted (medium)  a package in
//                                     plugins.dir that the loader will refuse
//   plugin.leaf_expiring (medium) / plugin.leaf_expired (high)  a signer leaf of a package on disk
//   allowlist.not_on_disk (low)       an allowlisted name+version with no package in plugins.dir
//   ledger.unavailable (high)         the store cannot be opened or read
//   ledger.tampered (high)            the chain does not verify, or no longer holds the anchor
//                                     file's checkpoint (log.anchor) or the audit log's last one,
//                                     or the anchor file is not a valid anchor
//   ledger.anchor_unreadable (high)   log.anchor is not a regular file (a FIFO…) or unreadable
//   ledger.not_anchored (high)        the ledger has rows but there is no anchor file and no
//                                     checkpoint in the audit log: a rewrite would not show, and
//                                     the host would trust the head on first use
//   ledger.anchor_adopted (high)      the anchor began by trusting a head on first use and no one
//                                     has confirmed it since (`ledger verify --write-anchor`)
//   ledger.anchor_missing (medium)    no anchor file, but the audit log still holds a checkpoint
//                                     (the host writes the anchor from it at its next start)
//   allowlist.below_floor (high)      the allowlist's version is lower than the ledger's floor
//   log.audit_unreadable (high)       log.audit is not a regular file (a FIFO…) or unreadable
//   ledger.ok (info)                  rows and head
//   webhook.previous_expired (medium) a `previous` secret past its `previous_until`
//   webhook.secret_old (medium)       `current_since` older than 90 days
//   webhook.secret_age_unknown (low)  no `current_since`
//   idempotency.retention (info)      retention vs retry span + 2 × clock_skew, with the numbers
//   admin.plaintext_nonloopback (high)  the admin listener on a non-loopback address without TLS
//   listen.plaintext_nonloopback (low)  the webhook listener likewise (bodies are signed, not
//                                     encrypted)
//   erp.plaintext_nonloopback (high)  erp.base_url is http:// to a host that is not loopback
//                                     (only loads with erp.allow_plaintext: the credential in
//                                     clear)
//   listen.fibers_thread_locals (medium)  execution: fibers — plugins' thread-locals are shared
//                                     by the deliveries of a carrier
// Thread-safe (no shared state); the Ledger is used for reads only.
#ifndef CLAWGUARD_HOST_APP_DEPLOYMENT_AUDIT_H_
#define CLAWGUARD_HOST_APP_DEPLOYMENT_AUDIT_H_

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/clock.h"
#include "clawguard/error.h"
#include "clawguard/store/ledger.h"
#include "host/app/host_config.h"

namespace clawguard::host {

enum class Severity { kHigh, kMedium, kLow, kInfo };
// SeverityName is "high" / "medium" / "low" / "info".
std::string_view SeverityName(Severity s);

inline constexpr int64_t kLeafExpiryWarningSeconds = 30 * 86400;  // ARCHITECTURE.md "Verification"
inline constexpr int64_t kSecretRotationMaxAgeSeconds = 90 * 86400;  // host.yaml current_since

struct AuditFinding {
  std::string id;
  Severity severity = Severity::kInfo;
  std::string subject;
  std::string detail;
};

struct AuditReport {
  std::string config;  // the host.yaml audited
  std::vector<AuditFinding> findings;

  bool HasHigh() const;
  size_t Count(Severity s) const;
  // ToJson: {"config", "findings": [{"id","severity","subject","detail"}…],
  // "summary": {"high","medium","low","info"}}.
  nlohmann::json ToJson() const;
  // ToText: one line per finding ("HIGH    id  subject: detail") and a summary line.
  std::string ToText() const;
};

// LedgerSource is how the audit reaches the ledger: the store named by host.yaml opened for
// reading (the CLI opens it; tests pass an engine). A failed open is given as the Status.
using LedgerSource = Result<Ledger*>;

// RunDeploymentAudit computes every finding above for |config| at |clock|'s time.
AuditReport RunDeploymentAudit(const HostConfig& config, const LedgerSource& ledger,
                               const Clock& clock);

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_APP_DEPLOYMENT_AUDIT_H_
