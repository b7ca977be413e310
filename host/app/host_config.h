// host_config.h — host.yaml (schema clawguard/host/v1), read strictly and validated once.
//
// The shape is ARCHITECTURE.md "Policies" → host.yaml, every key. Relative paths are resolved
// against the file's directory. Secrets are written `env:VAR` or `file:PATH` and resolved at load
// into SecretBytes (a missing or empty variable or file, or a file others may read, is
// kConfigInvalid naming VAR or PATH, never a value; ConfigReader::Secret); route
// secrets are Standard Webhooks secrets (`whsec_<base64>`) decoded to their HMAC key. Impossible
// settings are refused at start-up, each with file:line:
//   - admin.token shorter than limits::kMinAdminTokenLength characters; a route secret that
//     decodes to fewer than limits::kMinSecretBytes bytes; an erp.auth credential (after its
//     scheme, e.g. "Bearer ") shorter than that — each message names the setting, never the value;
//   - an http:// erp.base_url whose host is not loopback, unless erp.allow_plaintext: true;
//   - a store URL carrying a password (the URL is not echoed);
//   - idempotency.retention < sum(platform_retry.schedule) + 2 × clock_skew (both numbers printed);
//   - plugins.handler_timeout ≥ idempotency.lease;
//   - webhooks.routes: previous without previous_until or the reverse.
// Every refusal is kConfigInvalid. A HostConfig is immutable once loaded (held as
// shared_ptr<const HostConfig>); thread-safe to read.
#ifndef CLAWGUARD_HOST_APP_HOST_CONFIG_H_
#define CLAWGUARD_HOST_APP_HOST_CONFIG_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/error.h"
#include "clawguard/limits.h"
#include "clawguard/secret_bytes.h"
#include "host/guard/breaker.h"
#include "host/guard/rate_limiter.h"
#include "host/intake/webhook_auth.h"

namespace clawguard::host {

inline constexpr std::string_view kHostSchema = "clawguard/host/v1";

using Millis = std::chrono::milliseconds;

struct TlsFiles {
  std::string cert;  // absolute paths
  std::string key;
};

struct ListenConfig {
  std::string address;  // "127.0.0.1:8080" (port 0 allowed: tests)
  std::optional<TlsFiles> tls;
  uint64_t max_body = 0;
  uint64_t max_headers = 0;
  int workers = 0;   // I/O threads
  int handlers = 0;  // deliveries run at once (listen.handlers; default kDefaultHandlerThreads)
  // listen.execution: how deliveries run (ARCHITECTURE.md "Execution model"): a thread each
  // (false, "threads") or fibers on |carriers| carrier threads (true, "fibers"; SQLite only).
  bool fibers = false;
  int carriers = 0;  // listen.carriers (fibers only); default: DefaultCarriers
  // listen.max_connections / listen.max_connections_per_peer (ARCHITECTURE.md "Host request
  // pipeline", connection limits): connections the webhook listener holds at once, in all and from
  // one peer address. The host lowers the first to what RLIMIT_NOFILE leaves
  // (host/http/fd_budget.h).
  uint64_t max_connections = 0;           // default limits::kDefaultMaxConnections
  uint64_t max_connections_per_peer = 0;  // default limits::kDefaultMaxConnectionsPerPeer
};

// DefaultCarriers is listen.carriers when not set: half the CPUs |cpus| (at least one). The
// carriers share the machine with the I/O threads, the store's flusher and checkpointer and the
// kernel's network work, and fewer carriers let a fiber leader's yields gather more writes into one
// batch (decision 0033). |cpus| 0 (unknown) is one.
inline int DefaultCarriers(unsigned cpus) { return cpus < 4 ? 1 : static_cast<int>(cpus / 2); }

struct AdminConfig {
  std::string address;
  SecretBytes token;  // ≥ limits::kMinAdminTokenLength characters
  std::optional<TlsFiles> tls;
};

struct PluginsConfig {
  std::string dir, trust, allowlist;  // absolute paths
  Millis handler_timeout{0};
  // isolation: sandbox (each plugin in a locked-down worker process; the default) or none (in
  // the host's process: a plugin can read the host's memory; `clawguard audit` grades it high).
  bool sandbox = true;
  uint64_t memory_limit = kDefaultPluginMemoryLimit;  // a worker's address space (RLIMIT_AS)
  // memory_cgroup: each worker in a memory cgroup of its own, limited to memory_limit with the
  // kernel memory (page tables) RLIMIT_AS does not count (host/sandbox/worker_cgroup.h). auto: when
  // the host can make them (the start's audit line says which); required: a host that cannot
  // refuses to start; none: never (`clawguard audit` grades it medium).
  enum class MemoryCgroup { kAuto, kRequired, kNone };
  MemoryCgroup memory_cgroup = MemoryCgroup::kAuto;
  // Threads a plugin may start of its own in its worker, beyond the worker's main thread and one
  // per delivery the host runs at once (listen.handlers): the worker's RLIMIT_NPROC is their sum.
  int max_threads = kDefaultPluginThreads;
  std::string worker;  // the clawguard-worker binary; "" = beside this executable, then libexec
  // A plugin whose worker dies max_faults times within fault_window is failed (its routes 503)
  // until the host restarts.
  int max_faults = 5;
  Millis fault_window{60'000};
  static constexpr uint64_t kDefaultPluginMemoryLimit = 2 * limits::kGiB;
  static constexpr int kDefaultPluginThreads = 32;
};

struct WebhooksConfig {
  Millis tolerance{0};
  Millis clock_skew{0};
  std::vector<Millis> retry_schedule;
  std::map<std::string, RouteSecrets> routes;  // "plugin/route" → secrets
  RateLimit rate_limit;
};

struct IdempotencyConfig {
  Millis retention{0}, lease{0}, tombstones{0}, intent_expiry{0};
};

struct ErpRetry {
  Millis base{0}, max{0};
  int attempts = 0;
  int jitter_percent = 0;
  Millis floor_429{0};
};

struct ErpConfig {
  std::string
      base_url;  // https://…, or http:// to a loopback host (else only with allow_plaintext)
  Millis timeout{0};
  std::string ca;  // absolute path
  SecretBytes auth;
  ErpRetry retry;
  // erp.allow_plaintext: an http:// base_url on a host that is not loopback is accepted only with
  // this set (the bearer credential then crosses the network in clear; `clawguard audit` reports it
  // as high).
  bool allow_plaintext = false;
  // erp.keep_alive (default true): reuse connections to the ERP; false opens one per call (see
  // ErpClientOptions::keep_alive for what keep-alive cannot rule out).
  bool keep_alive = true;
};

struct LogConfig {
  std::string audit;   // absolute path
  std::string anchor;  // the ledger anchor file (absolute); default ledger-anchor.json beside audit
  std::vector<std::string> redact;
};

// EnvLookup returns the value of an environment variable, or nullopt if unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

struct HostConfig {
  std::string source;  // the file it came from
  ListenConfig listen;
  AdminConfig admin;
  std::string store;  // "sqlite:/abs/path" or "postgresql://user@host:port/db"
  PluginsConfig plugins;
  WebhooksConfig webhooks;
  IdempotencyConfig idempotency;
  ErpConfig erp;
  BreakerSpec breaker_key, breaker_erp;
  LogConfig log;

  // Load reads |path| (at most limits::kMaxPolicyFile) with the process environment. Every
  // `env:VAR` it reads is taken out of the environment (TakeEnvSecret: value overwritten, then
  // unset) whether or not the file loads, so code loaded later — plugins — finds no secret in
  // getenv or /proc/self/environ. WARNING: not thread-safe; call before other threads start.
  static Result<std::shared_ptr<const HostConfig>> Load(const std::string& path);
  // Parse reads |text| as if it were the file |path| (relative paths against its directory),
  // resolving env:VAR through |env|.
  static Result<std::shared_ptr<const HostConfig>> Parse(std::string_view text,
                                                         const std::string& path,
                                                         const EnvLookup& env);

  // RetrySpan is sum(webhooks.retry_schedule).
  Millis RetrySpan() const;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_APP_HOST_CONFIG_H_
