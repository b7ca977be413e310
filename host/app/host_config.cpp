// host_config.cpp — host.yaml reader on strict_yaml.h.
#include "host/app/host_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <thread>

#include "clawguard/clock.h"
#include "clawguard/file_io.h"
#include "clawguard/limits.h"
#include "clawguard/strict_yaml.h"
#include "host/app/host_config_reader.h"
#include "host/intake/webhook_auth.h"
#include "loader/ledger_anchor.h"

namespace clawguard::host {
namespace {

using config_internal::ConfigReader;
using config_internal::IsHostPort;
using config_internal::IsValidPluginName;
using config_internal::IsValidRouteName;
using Reader = ConfigReader;

Result<ListenConfig> ReadListen(Reader& r, YamlMap& top) {
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap m, r.Sub(top, "listen"));
  ListenConfig c;
  CLAWGUARD_ASSIGN_OR_RETURN(c.address, m.String("address"));
  if (!IsHostPort(c.address))
    return m.Error(m.node()["address"], "address", "expected HOST:PORT, e.g. 127.0.0.1:8080");
  CLAWGUARD_ASSIGN_OR_RETURN(c.tls, r.Tls(m));
  CLAWGUARD_ASSIGN_OR_RETURN(c.max_body, m.Size("max_body", limits::kMaxWebhookBody));
  CLAWGUARD_ASSIGN_OR_RETURN(c.max_headers, m.Size("max_headers", limits::kMaxWebhookHeaders));
  CLAWGUARD_ASSIGN_OR_RETURN(int64_t workers,
                             m.Int("workers", 1, static_cast<int64_t>(limits::kMaxServerWorkers)));
  c.workers = static_cast<int>(workers);
  CLAWGUARD_ASSIGN_OR_RETURN(
      std::optional<int64_t> handlers,
      m.OptionalInt("handlers", 1, static_cast<int64_t>(limits::kMaxHandlerThreads)));
  c.handlers =
      static_cast<int>(handlers.value_or(static_cast<int64_t>(limits::kDefaultHandlerThreads)));
  CLAWGUARD_ASSIGN_OR_RETURN(std::optional<std::string> execution, m.OptionalString("execution"));
  if (execution && *execution != "threads" && *execution != "fibers") {
    return m.Error(m.node()["execution"], "execution",
                   "expected threads or fibers, found '" + *execution + "'");
  }
  c.fibers = execution.value_or("threads") == "fibers";
  CLAWGUARD_ASSIGN_OR_RETURN(
      std::optional<int64_t> carriers,
      m.OptionalInt("carriers", 1, static_cast<int64_t>(limits::kMaxServerWorkers)));
  if (carriers && !c.fibers) {
    return m.Error(m.node()["carriers"], "carriers", "carriers applies only to execution: fibers");
  }
  c.carriers =
      static_cast<int>(carriers.value_or(DefaultCarriers(std::thread::hardware_concurrency())));
  const auto max = static_cast<int64_t>(limits::kMaxConnectionsSetting);
  const auto min = static_cast<int64_t>(limits::kMinConnections);
  CLAWGUARD_ASSIGN_OR_RETURN(std::optional<int64_t> conns,
                             m.OptionalInt("max_connections", min, max));
  CLAWGUARD_ASSIGN_OR_RETURN(std::optional<int64_t> per_peer,
                             m.OptionalInt("max_connections_per_peer", 1, max));
  c.max_connections =
      static_cast<uint64_t>(conns.value_or(static_cast<int64_t>(limits::kDefaultMaxConnections)));
  c.max_connections_per_peer = static_cast<uint64_t>(per_peer.value_or(
      static_cast<int64_t>(std::min(limits::kDefaultMaxConnectionsPerPeer, c.max_connections))));
  if (c.max_connections_per_peer > c.max_connections) {
    return m.Error(m.node()["max_connections_per_peer"], "max_connections_per_peer",
                   "must not exceed max_connections (" + std::to_string(c.max_connections) + ")");
  }
  CLAWGUARD_RETURN_IF_ERROR(m.Finish());
  return c;
}

Result<AdminConfig> ReadAdmin(Reader& r, YamlMap& top) {
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap m, r.Sub(top, "admin"));
  AdminConfig c;
  CLAWGUARD_ASSIGN_OR_RETURN(c.address, m.String("address"));
  if (!IsHostPort(c.address))
    return m.Error(m.node()["address"], "address", "expected HOST:PORT, e.g. 127.0.0.1:9091");
  CLAWGUARD_ASSIGN_OR_RETURN(std::string token, r.Secret(m, "token"));
  if (token.size() < limits::kMinAdminTokenLength) {
    const size_t n = token.size();
    std::fill(token.begin(), token.end(), '\0');
    return m.Error(m.node()["token"], "token",
                   "the admin token has " + std::to_string(n) + " characters; at least " +
                       std::to_string(limits::kMinAdminTokenLength) +
                       " are required (the host refuses to start)");
  }
  c.token = SecretBytes(token);
  std::fill(token.begin(), token.end(), '\0');
  CLAWGUARD_ASSIGN_OR_RETURN(c.tls, r.Tls(m));
  CLAWGUARD_RETURN_IF_ERROR(m.Finish());
  return c;
}

Result<std::string> ReadStore(Reader& r, YamlMap& top) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::string url, top.String("store"));
  const YAML::Node n = top.node()["store"];
  if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0) {
    const std::string rest = url.substr(url.find("://") + 3);
    const size_t at = rest.find('@');
    if (at != std::string::npos && rest.substr(0, at).find(':') != std::string::npos) {
      return top.Error(n, "store",
                       "the store URL carries a password (user:PASSWORD@…); remove it and use "
                       "PGPASSWORD or ~/.pgpass");
    }
    if (url.find("password=") != std::string::npos) {
      return top.Error(n, "store",
                       "the store URL carries a password parameter; use PGPASSWORD or ~/.pgpass");
    }
    return url;
  }
  std::string path = url.rfind("sqlite:", 0) == 0 ? url.substr(7) : url;
  if (path.empty() || path.find("://") != std::string::npos) {
    return top.Error(n, "store", "expected sqlite:PATH or postgresql://user@host:port/db");
  }
  return "sqlite:" + r.Resolve(path);
}

Result<PluginsConfig> ReadPlugins(Reader& r, YamlMap& top) {
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap m, r.Sub(top, "plugins"));
  PluginsConfig c;
  CLAWGUARD_ASSIGN_OR_RETURN(c.dir, r.PathOf(m, "dir"));
  CLAWGUARD_ASSIGN_OR_RETURN(c.trust, r.PathOf(m, "trust"));
  CLAWGUARD_ASSIGN_OR_RETURN(c.allowlist, r.PathOf(m, "allowlist"));
  CLAWGUARD_ASSIGN_OR_RETURN(c.handler_timeout, m.Duration("handler_timeout"));
  if (c.handler_timeout.count() <= 0)
    return m.Error(m.node()["handler_timeout"], "handler_timeout", "must be > 0");
  if (m.Has("isolation")) {
    CLAWGUARD_ASSIGN_OR_RETURN(std::string isolation, m.Enum("isolation", {"sandbox", "none"}));
    c.sandbox = isolation == "sandbox";
  }
  if (m.Has("memory_limit")) {
    CLAWGUARD_ASSIGN_OR_RETURN(c.memory_limit, m.Size("memory_limit", 64 * limits::kGiB));
    if (c.memory_limit < 64 * limits::kMiB)
      return m.Error(m.node()["memory_limit"], "memory_limit", "must be at least 64MiB");
  }
  if (m.Has("memory_cgroup")) {
    CLAWGUARD_ASSIGN_OR_RETURN(std::string mode,
                               m.Enum("memory_cgroup", {"auto", "required", "none"}));
    c.memory_cgroup = mode == "required" ? PluginsConfig::MemoryCgroup::kRequired
                      : mode == "none"   ? PluginsConfig::MemoryCgroup::kNone
                                         : PluginsConfig::MemoryCgroup::kAuto;
  }
  if (m.Has("max_threads")) {
    CLAWGUARD_ASSIGN_OR_RETURN(int64_t n, m.Int("max_threads", 0, 4096));
    c.max_threads = static_cast<int>(n);
  }
  if (m.Has("max_faults")) {
    CLAWGUARD_ASSIGN_OR_RETURN(int64_t n, m.Int("max_faults", 1, 1'000'000));
    c.max_faults = static_cast<int>(n);
  }
  if (m.Has("fault_window")) {
    CLAWGUARD_ASSIGN_OR_RETURN(c.fault_window, m.Duration("fault_window"));
    if (c.fault_window.count() <= 0)
      return m.Error(m.node()["fault_window"], "fault_window", "must be > 0");
  }
  if (m.Has("worker")) {
    CLAWGUARD_ASSIGN_OR_RETURN(c.worker, r.PathOf(m, "worker"));
  }
  CLAWGUARD_RETURN_IF_ERROR(m.Finish());
  return c;
}

Result<RateLimit> ReadRate(Reader& r, YamlMap& parent) {
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap m, r.Sub(parent, "rate_limit"));
  RateLimit c;
  CLAWGUARD_ASSIGN_OR_RETURN(std::string rate, m.String("per_plugin"));
  const size_t slash = std::min(rate.find('/'), rate.size());
  const std::string unit = slash == rate.size() ? "" : rate.substr(slash + 1);
  auto [p, ec] = std::from_chars(rate.data(), rate.data() + slash, c.count);
  const bool number_ok = slash > 0 && ec == std::errc() && p == rate.data() + slash && c.count > 0;
  if (unit == "s")
    c.per = Millis(1000);
  else if (unit == "m")
    c.per = Millis(60'000);
  else if (unit == "h")
    c.per = Millis(3'600'000);
  if (!number_ok || c.per.count() == 0) {
    return m.Error(m.node()["per_plugin"], "per_plugin",
                   "expected a rate such as 200/s, 600/m or 10000/h, found '" + rate + "'");
  }
  CLAWGUARD_ASSIGN_OR_RETURN(int64_t burst, m.Int("burst", 1, 1'000'000'000));
  c.burst = static_cast<uint64_t>(burst);
  CLAWGUARD_RETURN_IF_ERROR(m.Finish());
  return c;
}

Result<std::map<std::string, RouteSecrets>> ReadRoutes(Reader& r, YamlMap& parent) {
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap routes, r.Sub(parent, "routes"));
  std::map<std::string, RouteSecrets> out;
  if (routes.node().size() > limits::kMaxHostRoutes) {
    return routes.Error(routes.node(), "",
                        "more than " + std::to_string(limits::kMaxHostRoutes) + " routes");
  }
  for (auto it = routes.node().begin(); it != routes.node().end(); ++it) {
    const std::string name = it->first.Scalar();
    const size_t slash = name.find('/');
    if (slash == std::string::npos || !IsValidPluginName(name.substr(0, slash)) ||
        !IsValidRouteName(name.substr(slash + 1))) {
      return routes.Error(it->first, name,
                          "route keys are PLUGIN/ROUTE, e.g. acme-orders/order.created");
    }
    CLAWGUARD_ASSIGN_OR_RETURN(YamlMap m, r.Sub(routes, name));
    RouteSecrets s;
    CLAWGUARD_ASSIGN_OR_RETURN(s.current, r.WebhookSecret(m, "current"));
    CLAWGUARD_ASSIGN_OR_RETURN(s.current_since, r.Time(m, "current_since"));
    if (m.OptionalNode("previous")) {
      CLAWGUARD_ASSIGN_OR_RETURN(SecretBytes prev, r.WebhookSecret(m, "previous"));
      s.previous = std::move(prev);
    }
    CLAWGUARD_ASSIGN_OR_RETURN(s.previous_until, r.Time(m, "previous_until"));
    if (s.previous.has_value() != s.previous_until.has_value()) {
      return m.Error(m.node(), "",
                     "previous and previous_until go together: a previous secret needs the time "
                     "until which it is accepted");
    }
    CLAWGUARD_RETURN_IF_ERROR(m.Finish());
    out.emplace(name, std::move(s));
  }
  return out;
}

Result<WebhooksConfig> ReadWebhooks(Reader& r, YamlMap& top) {
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap m, r.Sub(top, "webhooks"));
  WebhooksConfig c;
  CLAWGUARD_ASSIGN_OR_RETURN(c.tolerance, m.Duration("tolerance"));
  CLAWGUARD_ASSIGN_OR_RETURN(c.clock_skew, m.Duration("clock_skew"));
  if (c.tolerance.count() < 1000)
    return m.Error(m.node()["tolerance"], "tolerance", "must be at least 1s");
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap retry, r.Sub(m, "platform_retry"));
  CLAWGUARD_ASSIGN_OR_RETURN(c.retry_schedule, r.Durations(retry, "schedule"));
  CLAWGUARD_RETURN_IF_ERROR(retry.Finish());
  CLAWGUARD_ASSIGN_OR_RETURN(c.routes, ReadRoutes(r, m));
  CLAWGUARD_ASSIGN_OR_RETURN(c.rate_limit, ReadRate(r, m));
  CLAWGUARD_RETURN_IF_ERROR(m.Finish());
  return c;
}

Result<IdempotencyConfig> ReadIdempotency(Reader& r, YamlMap& top) {
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap m, r.Sub(top, "idempotency"));
  IdempotencyConfig c;
  CLAWGUARD_ASSIGN_OR_RETURN(c.retention, m.Duration("retention"));
  CLAWGUARD_ASSIGN_OR_RETURN(c.lease, m.Duration("lease"));
  CLAWGUARD_ASSIGN_OR_RETURN(c.tombstones, m.Duration("tombstones"));
  CLAWGUARD_ASSIGN_OR_RETURN(c.intent_expiry, m.Duration("intent_expiry"));
  if (c.lease.count() <= 0) return m.Error(m.node()["lease"], "lease", "must be > 0");
  CLAWGUARD_RETURN_IF_ERROR(m.Finish());
  return c;
}

Result<ErpConfig> ReadErp(Reader& r, YamlMap& top) {
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap m, r.Sub(top, "erp"));
  ErpConfig c;
  CLAWGUARD_ASSIGN_OR_RETURN(c.base_url, m.String("base_url"));
  if (c.base_url.rfind("https://", 0) != 0 && c.base_url.rfind("http://", 0) != 0) {
    return m.Error(m.node()["base_url"], "base_url", "expected an http(s):// URL");
  }
  if (m.Has("allow_plaintext")) {
    CLAWGUARD_ASSIGN_OR_RETURN(c.allow_plaintext, m.Bool("allow_plaintext"));
  }
  if (m.Has("keep_alive")) {
    CLAWGUARD_ASSIGN_OR_RETURN(c.keep_alive, m.Bool("keep_alive"));
  }
  if (config_internal::IsPlaintextOffHost(c.base_url) && !c.allow_plaintext) {
    return m.Error(
        m.node()["base_url"], "base_url",
        "http:// to a host that is not loopback sends erp.auth (a bearer credential) and every "
        "plugin's ERP call in clear; use https:// with erp.ca, or set erp.allow_plaintext: true "
        "to accept that (clawguard audit reports it as high)");
  }
  CLAWGUARD_ASSIGN_OR_RETURN(c.timeout, m.Duration("timeout"));
  CLAWGUARD_ASSIGN_OR_RETURN(c.ca, r.PathOf(m, "ca"));
  CLAWGUARD_ASSIGN_OR_RETURN(std::string auth, r.Secret(m, "auth"));
  c.auth = SecretBytes(auth);
  std::fill(auth.begin(), auth.end(), '\0');
  if (const size_t n = config_internal::CredentialBytes(InsecureSecretAccess::View(c.auth));
      n < limits::kMinSecretBytes) {
    return m.Error(m.node()["auth"], "auth",
                   "the ERP credential (after its scheme, e.g. \"Bearer \") has " +
                       std::to_string(n) + " bytes; at least " +
                       std::to_string(limits::kMinSecretBytes) +
                       " are required (the host refuses to start)");
  }
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap rt, r.Sub(m, "retry"));
  CLAWGUARD_ASSIGN_OR_RETURN(c.retry.base, rt.Duration("base"));
  CLAWGUARD_ASSIGN_OR_RETURN(c.retry.max, rt.Duration("max"));
  CLAWGUARD_ASSIGN_OR_RETURN(int64_t attempts, rt.Int("attempts", 1, 100));
  c.retry.attempts = static_cast<int>(attempts);
  CLAWGUARD_ASSIGN_OR_RETURN(std::string jitter, rt.String("jitter"));
  int pct = -1;
  auto [p, ec] = std::from_chars(jitter.data(), jitter.data() + jitter.size(), pct);
  if (ec != std::errc() || p + 1 != jitter.data() + jitter.size() || *p != '%' || pct < 0 ||
      pct > 100) {
    return rt.Error(rt.node()["jitter"], "jitter",
                    "expected a percentage from 0% to 100%, found '" + jitter + "'");
  }
  c.retry.jitter_percent = pct;
  CLAWGUARD_ASSIGN_OR_RETURN(c.retry.floor_429, rt.Duration("floor_429"));
  CLAWGUARD_RETURN_IF_ERROR(rt.Finish());
  CLAWGUARD_RETURN_IF_ERROR(m.Finish());
  return c;
}

Result<BreakerSpec> ReadBreaker(Reader& r, YamlMap& parent, const std::string& key, bool probes) {
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap m, r.Sub(parent, key));
  BreakerSpec b;
  CLAWGUARD_ASSIGN_OR_RETURN(int64_t failures, m.Int("failures", 1, 1'000'000));
  b.failures = static_cast<int>(failures);
  CLAWGUARD_ASSIGN_OR_RETURN(b.window, m.Duration("window"));
  CLAWGUARD_ASSIGN_OR_RETURN(b.cooldown, m.Duration("cooldown"));
  if (probes) {
    CLAWGUARD_ASSIGN_OR_RETURN(int64_t n, m.Int("half_open_probes", 1, 1000));
    b.half_open_probes = static_cast<int>(n);
  }
  CLAWGUARD_RETURN_IF_ERROR(m.Finish());
  return b;
}

Result<LogConfig> ReadLog(Reader& r, YamlMap& top) {
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap m, r.Sub(top, "log"));
  LogConfig c;
  CLAWGUARD_ASSIGN_OR_RETURN(c.audit, r.PathOf(m, "audit"));
  // The ledger anchor (loader/ledger_anchor.h): a file of its own, never rotated like the log.
  if (m.OptionalNode("anchor")) {
    CLAWGUARD_ASSIGN_OR_RETURN(c.anchor, r.PathOf(m, "anchor"));
  } else {
    c.anchor = DefaultLedgerAnchorPath(c.audit);
  }
  if (auto n = m.OptionalNode("redact")) {
    if (!n->IsSequence()) return m.Error(*n, "redact", "expected a list of field names");
    for (const YAML::Node& e : *n) {
      if (!e.IsScalar() || e.Scalar().empty()) return m.Error(e, "redact", "expected a field name");
      c.redact.push_back(e.Scalar());
    }
  }
  CLAWGUARD_RETURN_IF_ERROR(m.Finish());
  return c;
}

int64_t Secs(Millis d) { return d.count() / 1000; }

}  // namespace

Millis HostConfig::RetrySpan() const {
  Millis sum{0};
  for (Millis d : webhooks.retry_schedule) sum += d;
  return sum;
}

Result<std::shared_ptr<const HostConfig>> HostConfig::Load(const std::string& path) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::string text,
                             ReadFileBounded(path, limits::kMaxPolicyFile, Reason::kConfigInvalid));
  // Each env:VAR is taken out of the environment the first time it is read (a variable named by
  // two settings is read once), before any plugin is loaded: a plugin's getenv and
  // /proc/self/environ find none of the host's secrets.
  std::map<std::string, SecretBytes> taken;
  const EnvLookup env = [&taken](const std::string& name) -> std::optional<std::string> {
    auto it = taken.find(name);
    if (it == taken.end()) {
      std::optional<SecretBytes> value = TakeEnvSecret(name);
      if (!value) return std::nullopt;
      it = taken.emplace(name, std::move(*value)).first;
    }
    return std::string(InsecureSecretAccess::View(it->second));  // wiped by the reader after use
  };
  return Parse(text, path, env);
}

Result<std::shared_ptr<const HostConfig>> HostConfig::Parse(std::string_view text,
                                                            const std::string& path,
                                                            const EnvLookup& env) {
  CLAWGUARD_ASSIGN_OR_RETURN(YamlDoc doc, ParseYamlStrict(text, path));
  Reader r(path, env);
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap top, r.Map(doc.root, ""));
  CLAWGUARD_ASSIGN_OR_RETURN(std::string schema, top.String("schema"));
  if (schema != kHostSchema) {
    return top.Error(top.node()["schema"], "schema",
                     "expected " + std::string(kHostSchema) + ", found '" + schema + "'");
  }
  auto c = std::make_shared<HostConfig>();
  c->source = path;
  CLAWGUARD_ASSIGN_OR_RETURN(c->listen, ReadListen(r, top));
  CLAWGUARD_ASSIGN_OR_RETURN(c->admin, ReadAdmin(r, top));
  CLAWGUARD_ASSIGN_OR_RETURN(c->store, ReadStore(r, top));
  CLAWGUARD_ASSIGN_OR_RETURN(c->plugins, ReadPlugins(r, top));
  CLAWGUARD_ASSIGN_OR_RETURN(c->webhooks, ReadWebhooks(r, top));
  CLAWGUARD_ASSIGN_OR_RETURN(c->idempotency, ReadIdempotency(r, top));
  CLAWGUARD_ASSIGN_OR_RETURN(c->erp, ReadErp(r, top));
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap breaker, r.Sub(top, "breaker"));
  CLAWGUARD_ASSIGN_OR_RETURN(c->breaker_key, ReadBreaker(r, breaker, "key", /*probes=*/false));
  CLAWGUARD_ASSIGN_OR_RETURN(c->breaker_erp, ReadBreaker(r, breaker, "erp", /*probes=*/true));
  CLAWGUARD_RETURN_IF_ERROR(breaker.Finish());
  CLAWGUARD_ASSIGN_OR_RETURN(c->log, ReadLog(r, top));
  CLAWGUARD_RETURN_IF_ERROR(top.Finish());

  // Cross-field rules, located at the key that has to change.
  const YAML::Node idem = top.node()["idempotency"];
  const Millis span = c->RetrySpan();
  const Millis needed = span + 2 * c->webhooks.clock_skew;
  if (c->idempotency.retention < needed) {
    return Status(Reason::kConfigInvalid,
                  YamlWhere(path, idem["retention"]) + ": idempotency.retention " +
                      FormatDuration(c->idempotency.retention) + " (" +
                      std::to_string(Secs(c->idempotency.retention)) +
                      " s) is shorter than the platform retry span " + FormatDuration(span) + " (" +
                      std::to_string(Secs(span)) + " s) + 2 × clock_skew " +
                      FormatDuration(c->webhooks.clock_skew) + " (" +
                      std::to_string(Secs(2 * c->webhooks.clock_skew)) +
                      " s) = " + std::to_string(Secs(needed)) + " s; raise retention to at least " +
                      FormatDuration(needed));
  }
  if (c->listen.fibers && c->store.rfind("sqlite:", 0) != 0) {
    return Status(
        Reason::kConfigInvalid,
        YamlWhere(path, top.node()["listen"]["execution"]) +
            ": listen.execution fibers needs the SQLite store; the PostgreSQL engine's client "
            "library "
            "blocks its thread on every round trip, which would hold a carrier's other deliveries "
            "(use execution: threads with postgresql://)");
  }
  if (c->plugins.handler_timeout >= c->idempotency.lease) {
    return Status(Reason::kConfigInvalid,
                  YamlWhere(path, top.node()["plugins"]["handler_timeout"]) +
                      ": plugins.handler_timeout " + FormatDuration(c->plugins.handler_timeout) +
                      " must be shorter than idempotency.lease " +
                      FormatDuration(c->idempotency.lease) +
                      " (a hung plugin must not outlive its lease)");
  }
  return std::shared_ptr<const HostConfig>(std::move(c));
}

}  // namespace clawguard::host
