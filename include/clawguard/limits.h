// limits.h — every limit on sizes, counts and depths of untrusted input, in one place
// (minisign, signify). Policy-configurable limits (trust.yaml `limits:`) take these as defaults.
#ifndef CLAWGUARD_LIMITS_H_
#define CLAWGUARD_LIMITS_H_

#include <cstdint>

namespace clawguard::limits {

inline constexpr uint64_t kMiB = 1024ull * 1024ull;
inline constexpr uint64_t kGiB = 1024ull * kMiB;

// Files read whole.
inline constexpr uint64_t kMaxPolicyFile = 1 * kMiB;  // trust.yaml, allowlist.yaml, host.yaml
inline constexpr uint64_t kMaxManifest = 256 * 1024;  // manifest.yaml
inline constexpr uint64_t kMaxBundle = 4 * kMiB;      // NAME-VERSION.claw.sig
inline constexpr uint64_t kMaxCertFile = 1 * kMiB;    // PEM chains, roots, CRLs
inline constexpr uint64_t kMaxPinFile = 4096;         // --pin-source file:/fd:
inline constexpr uint64_t kMaxSecretFile = 16384;     // host.yaml secrets given as file:PATH

// Defaults of trust.yaml `limits:`.
inline constexpr uint64_t kDefaultMaxPackage = 256 * kMiB;
inline constexpr uint64_t kDefaultMaxUnpacked = 1 * kGiB;
inline constexpr uint64_t kDefaultMaxEntries = 64;
inline constexpr uint64_t kDefaultMaxRatio = 100;

// Structure.
inline constexpr int kMaxYamlDepth = 32;
inline constexpr int kMaxJsonDepth = 32;
inline constexpr uint64_t kMaxManifestFiles = 1024;
inline constexpr uint64_t kMaxCapabilities = 256;
inline constexpr uint64_t kMaxSignatures = 16;  // signatures in one bundle
inline constexpr uint64_t kMaxChainLength = 8;  // certificates per signer
inline constexpr uint64_t kMaxAllowlistEntries = 100000;
inline constexpr uint64_t kMaxPathLength = 255;  // a packaged file's path
inline constexpr uint64_t kMaxPinLength = 256;
// A buffer sized from a length an HSM declares (a PKCS#11 attribute) never exceeds this. (A tar
// header's size is capped by the package's own budget instead: max_unpacked and max_ratio.)
inline constexpr uint64_t kMaxDeclaredReservation = 64 * kMiB;

// Certificates.
inline constexpr int64_t kLeafExpiryWarningSeconds = 30ll * 24 * 3600;

// Host network layer (host.yaml `listen:` defaults; ERP gateway).
inline constexpr uint64_t kDefaultMaxRequestBody = 1 * kMiB;      // listen.max_body
inline constexpr uint64_t kDefaultMaxRequestHeaders = 16 * 1024;  // listen.max_headers
inline constexpr uint64_t kMaxServerWorkers = 256;                // listen.workers
// listen.handlers: threads that run deliveries (each blocked delivery holds one; they bound the
// deliveries in flight and so what one group commit can merge).
inline constexpr uint64_t kDefaultHandlerThreads = 64;
inline constexpr uint64_t kMaxHandlerThreads = 1024;
inline constexpr uint64_t kMaxLingerDrainBytes = 1 * kMiB;  // read and dropped after a 413
inline constexpr uint64_t kMinAdminTokenLength = 32;        // admin.token
// Every other secret host.yaml names (a route's decoded webhook key, the ERP credential after its
// scheme) has at least this many bytes, or the host refuses to start: shorter ones are guessable
// and cannot be scrubbed from logs without mangling ordinary text.
inline constexpr uint64_t kMinSecretBytes = 24;
// Connections of one listener (listen.max_connections, listen.max_connections_per_peer). The
// listener never holds more than the file descriptors left after kReservedFds allow.
inline constexpr uint64_t kDefaultMaxConnections = 4096;
inline constexpr uint64_t kDefaultMaxConnectionsPerPeer = 256;
inline constexpr uint64_t kMaxConnectionsSetting = 1'000'000;
inline constexpr uint64_t kMinConnections = 16;            // below it the host refuses to start
inline constexpr uint64_t kReservedFds = 256;              // store, logs, plugins, epolls, pipes
inline constexpr uint64_t kAdminMaxConnections = 64;       // the admin listener (fixed)
inline constexpr uint64_t kMaxErpResponseBody = 1 * kMiB;  // an ERP answer's body
inline constexpr uint64_t kMaxErpResponseHeaders = 16 * 1024;  // an ERP answer's header block
// Keep-alive pool of the ERP client: as many as deliveries in flight (listen.handlers default), or
// every delivery past the eighth paid a TCP connect and left a TIME_WAIT behind (seen in profiles).
inline constexpr uint64_t kMaxErpIdleConnections = 64;

// Host (webhooks, idempotency).
inline constexpr uint64_t kMaxWebhookBody = 64 * kMiB;    // listen.max_body may not exceed it
inline constexpr uint64_t kMaxWebhookHeaders = 1 * kMiB;  // listen.max_headers may not exceed it
inline constexpr uint64_t kMaxWebhookIdLength = 256;      // webhook-id bytes (visible ASCII)
inline constexpr uint64_t kMaxWebhookSignatures = 16;     // entries in one webhook-signature header
inline constexpr uint64_t kMaxWebhookSecretBytes = 1024;  // a decoded route secret
inline constexpr uint64_t kMaxHostRoutes = 4096;          // webhooks.routes entries
inline constexpr uint64_t kMaxRetrySchedule = 64;       // webhooks.platform_retry.schedule entries
inline constexpr uint64_t kMaxBusinessKeyBytes = 1024;  // a business key value
inline constexpr uint64_t kMaxErpPathLength = 2048;     // an ERP call's path
inline constexpr uint64_t kMaxErpMethodLength = 16;     // longer than any method a capability names
inline constexpr uint64_t kMaxErpRequestBody =
    1 * kMiB;  // an ERP call's body (a plugin's erp_call)

}  // namespace clawguard::limits

#endif  // CLAWGUARD_LIMITS_H_
