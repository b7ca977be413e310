// deployment_audit.cpp — see deployment_audit.h.
#include "host/app/deployment_audit.h"

#include <arpa/inet.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>
#include <set>
#include <utility>

#include "clawguard/bundle.h"
#include "clawguard/file_io.h"
#include "clawguard/limits.h"
#include "clawguard/sha256.h"
#include "clawguard/strict_yaml.h"
#include "host/app/host_config_reader.h"
#include "loader/allowlist.h"
#include "loader/audit_log.h"
#include "loader/ledger_anchor.h"
#include "loader/trust_policy.h"
#include "loader/x509_util.h"

namespace clawguard::host {

std::string_view SeverityName(Severity s) {
  switch (s) {
    case Severity::kHigh: return "high";
    case Severity::kMedium: return "medium";
    case Severity::kLow: return "low";
    case Severity::kInfo: return "info";
  }
  return "info";
}

bool AuditReport::HasHigh() const { return Count(Severity::kHigh) > 0; }

size_t AuditReport::Count(Severity s) const {
  size_t n = 0;
  for (const auto& f : findings) n += f.severity == s ? 1 : 0;
  return n;
}

nlohmann::json AuditReport::ToJson() const {
  nlohmann::json j = {{"config", config}, {"findings", nlohmann::json::array()}};
  for (const auto& f : findings) {
    j["findings"].push_back({{"id", f.id},
                             {"severity", std::string(SeverityName(f.severity))},
                             {"subject", f.subject},
                             {"detail", f.detail}});
  }
  j["summary"] = {{"high", Count(Severity::kHigh)},
                  {"medium", Count(Severity::kMedium)},
                  {"low", Count(Severity::kLow)},
                  {"info", Count(Severity::kInfo)}};
  return j;
}

std::string AuditReport::ToText() const {
  std::string out;
  for (const auto& f : findings) {
    std::string sev(SeverityName(f.severity));
    for (char& c : sev) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    sev.resize(8, ' ');
    out += sev + f.id + "  " + f.subject + ": " + f.detail + "\n";
  }
  out += std::to_string(Count(Severity::kHigh)) + " high, " +
         std::to_string(Count(Severity::kMedium)) + " medium, " +
         std::to_string(Count(Severity::kLow)) + " low, " + std::to_string(Count(Severity::kInfo)) +
         " info (" + config + ")\n";
  return out;
}

namespace {

namespace fs = std::filesystem;

class Auditor {
 public:
  Auditor(const HostConfig& c, const Clock& clock, AuditReport& r)
      : c_(c), clock_(clock), now_(clock.NowSeconds()), r_(r) {}

  void Add(std::string id, Severity s, std::string subject, std::string detail) {
    r_.findings.push_back(AuditFinding{std::move(id), s, std::move(subject), std::move(detail)});
  }

  // Expiry grades a notAfter: expired → high, within |warn| seconds → medium, else info.
  Severity Expiry(int64_t not_after, int64_t warn) const {
    if (not_after <= now_) return Severity::kHigh;
    return not_after - now_ <= warn ? Severity::kMedium : Severity::kInfo;
  }
  std::string Until(int64_t t) const {
    const int64_t days = (t - now_) / 86400;
    return FormatRfc3339Utc(t) +
           (t <= now_ ? " (expired)" : " (in " + std::to_string(days) + " days)");
  }

  std::unique_ptr<TrustPolicy> Trust();
  std::unique_ptr<Allowlist> AllowlistFile(const TrustPolicy& policy);
  void Plugins(const TrustPolicy* policy, const Allowlist* allowlist);
  void LedgerIntegrity(const LedgerSource& ledger, const Allowlist* allowlist);
  void Secrets();
  void Listeners();
  void Retention();
  void ErpTransport();
  void Execution();

  const HostConfig& c_;
  const Clock& clock_;
  const int64_t now_;
  AuditReport& r_;
  // name@version → listed in the allowlist (filled by AllowlistFile, consumed by Plugins).
  std::set<std::pair<std::string, std::string>> listed_;
};

std::string SubjectOf(X509* cert) {
  // get0: the name stays owned by |cert|.
  ossl::UniquePtr<BIO> bio(BIO_new(BIO_s_mem()));
  if (!bio || X509_NAME_print_ex(bio.get(), X509_get_subject_name(cert), 0, XN_FLAG_RFC2253) < 0)
    return "?";
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);  // get0: points into |bio|
  return len > 0 ? std::string(data, static_cast<size_t>(len)) : std::string("(empty subject)");
}

std::unique_ptr<TrustPolicy> Auditor::Trust() {
  auto policy = TrustPolicy::Load(c_.plugins.trust, clock_);
  if (!policy.ok()) {
    Add("trust.unloadable", Severity::kHigh, c_.plugins.trust,
        "the trust policy does not load, so the host will not start: " + policy.error().message());
    return nullptr;
  }
  const TrustPolicy& p = **policy;
  if (p.mode() == PolicyMode::kAudit) {
    Add("trust.mode_audit", Severity::kHigh, c_.plugins.trust,
        "mode: audit loads plugins whose refusals were relaxed (publisher, allowlist, expiry, "
        "revocation, rollback); "
        "set mode: enforce");
  }
  for (const auto& root : p.roots()) {
    // get0: the time stays owned by the root certificate.
    const auto not_after = x509util::AsnTimeToUnix(X509_get0_notAfter(root.get()));
    if (!not_after) {
      Add("trust.root", Severity::kHigh, SubjectOf(root.get()),
          "the root's notAfter cannot be read");
      continue;
    }
    const auto sha = x509util::Sha256HexOfCert(root.get());
    if (!sha.ok()) {
      Add("trust.root", Severity::kHigh, SubjectOf(root.get()),
          "the root's sha256 cannot be computed: " + sha.error().message());
      continue;
    }
    Add("trust.root", Expiry(*not_after, kLeafExpiryWarningSeconds), SubjectOf(root.get()),
        "pinned root sha256 " + *sha + ", valid until " + Until(*not_after));
  }
  return std::move(policy).value();
}

std::unique_ptr<Allowlist> Auditor::AllowlistFile(const TrustPolicy& policy) {
  const std::string& path = c_.plugins.allowlist;
  if (policy.allowlist_signer() == nullptr) {
    Add("allowlist.unsigned", Severity::kHigh, path,
        "the trust policy has no allowlist_signer: whoever can write this file decides what loads; "
        "pin a signer and "
        "sign the allowlist with `clawguard sign --allowlist`");
  }
  // The ledger's version check is left to LedgerIntegrity (allowlist.below_floor).
  auto list = Allowlist::Load(path, policy, /*ledger=*/nullptr, clock_);
  if (!list.ok()) {
    Add("allowlist.unloadable", Severity::kHigh, path, list.error().message());
    return nullptr;
  }
  const Allowlist& a = **list;
  Add("allowlist.summary", Expiry(a.expires(), kLeafExpiryWarningSeconds), path,
      "version " + std::to_string(a.version()) + ", " + std::to_string(a.size()) +
          " entries, expires " + Until(a.expires()));
  // The entries themselves: the file was just validated by Allowlist::Load, so this walk only
  // reads the fields back for the report.
  auto text = ReadFileBounded(path, limits::kMaxPolicyFile);
  auto doc = text.ok() ? ParseYamlStrict(*text, path) : Result<YamlDoc>(text.error());
  if (doc.ok()) {
    for (const auto& e : doc->root["plugins"]) {
      const std::string name = e["name"].Scalar(), version = e["version"].Scalar();
      listed_.insert({name, version});
      Add("allowlist.entry", Severity::kInfo, name + " " + version,
          "sha256 " + e["sha256"].Scalar());
    }
  }
  return std::move(list).value();
}

void Auditor::Plugins(const TrustPolicy* policy, const Allowlist* allowlist) {
  std::error_code ec;
  std::vector<fs::path> packages;
  for (const auto& e : fs::directory_iterator(c_.plugins.dir, ec)) {
    if (e.path().extension() == ".claw" && e.is_regular_file(ec)) packages.push_back(e.path());
  }
  if (ec) {
    Add("plugin.unreadable", Severity::kMedium, c_.plugins.dir,
        "the plugins directory cannot be listed: " + ec.message());
    return;
  }
  std::sort(packages.begin(), packages.end());
  std::set<std::pair<std::string, std::string>> on_disk;
  const uint64_t max_package = policy ? policy->limits().max_package : limits::kDefaultMaxPackage;
  for (const auto& path : packages) {
    const std::string p = path.string();
    auto sig = ReadFileBounded(p + ".sig", limits::kMaxBundle);
    if (!sig.ok()) {
      Add("plugin.unsigned", Severity::kMedium, p,
          "no readable " + path.filename().string() + ".sig beside it: the loader refuses it");
      continue;
    }
    auto bundle = ParseBundle(*sig);
    auto statement =
        bundle.ok() ? ParseStatement(bundle->payload) : Result<Statement>(bundle.error());
    auto bytes = ReadFileBounded(p, max_package);
    if (!statement.ok() || !bytes.ok()) {
      Add("plugin.unreadable", Severity::kMedium, p,
          (statement.ok() ? bytes.error() : statement.error()).message() +
              ": the loader refuses it");
      continue;
    }
    const std::string subject =
        statement->name + " " + statement->version + " (" + path.filename().string() + ")";
    on_disk.insert({statement->name, statement->version});
    if (allowlist != nullptr) {
      const Status listed =
          allowlist->Lookup(statement->name, statement->version, Sha256Of(*bytes));
      if (!listed.ok()) Add("plugin.not_allowlisted", Severity::kMedium, subject, listed.message());
    }
    for (const auto& [keyid, chain] : bundle->certificates) {
      if (chain.empty()) continue;
      const auto* der = reinterpret_cast<const unsigned char*>(chain[0].data());
      ossl::UniquePtr<X509> leaf(d2i_X509(nullptr, &der, static_cast<long>(chain[0].size())));
      // get0: the time stays owned by |leaf|.
      const auto not_after =
          leaf ? x509util::AsnTimeToUnix(X509_get0_notAfter(leaf.get())) : std::nullopt;
      if (!not_after) continue;  // the loader reports an unreadable chain as chain_untrusted
      const Severity s = Expiry(*not_after, kLeafExpiryWarningSeconds);
      if (s == Severity::kInfo) continue;
      Add(s == Severity::kHigh ? "plugin.leaf_expired" : "plugin.leaf_expiring", s, subject,
          "signer leaf " + SubjectOf(leaf.get()) + " (keyid " + keyid + ") valid until " +
              Until(*not_after));
    }
  }
  for (const auto& [name, version] : listed_) {
    if (on_disk.count({name, version}) == 0) {
      Add("allowlist.not_on_disk", Severity::kLow, name + " " + version,
          "allowlisted but no package in " + c_.plugins.dir);
    }
  }
}

void Auditor::LedgerIntegrity(const LedgerSource& ledger, const Allowlist* allowlist) {
  if (!ledger.ok()) {
    Add("ledger.unavailable", Severity::kHigh, "ledger",
        "the store cannot be opened: " + ledger.error().message());
    return;
  }
  auto rows = (*ledger)->ReadAll();
  if (!rows.ok()) {
    Add("ledger.unavailable", Severity::kHigh, "ledger",
        "the ledger cannot be read: " + rows.error().message());
    return;
  }
  if (const Status chain = VerifyLedgerChain(*rows, std::nullopt); !chain.ok()) {
    Add("ledger.tampered", Severity::kHigh, "ledger", chain.message());
    return;
  }
  // The anchors: the anchor file (durable) and the audit log's last checkpoint line.
  const std::string& anchor_path = c_.log.anchor;
  const auto anchor = LedgerAnchorFile(anchor_path).Read();
  if (!anchor.ok()) {
    Add(anchor.error().reason() == Reason::kLedgerTampered ? "ledger.tampered"
                                                           : "ledger.anchor_unreadable",
        Severity::kHigh, anchor_path, anchor.error().message() + ": the host refuses to start");
    return;
  }
  const auto log_checkpoint = AuditLog(c_.log.audit).LastCheckpoint();
  const std::optional<LedgerCheckpoint> from_log =
      log_checkpoint.ok() ? *log_checkpoint : std::nullopt;
  if (!log_checkpoint.ok()) {
    Add("log.audit_unreadable", Severity::kHigh, c_.log.audit,
        log_checkpoint.error().message() + ": the host refuses to start");
  }
  if (*anchor) {
    if (const Status s = CheckLedgerAnchor(*rows, (*anchor)->checkpoint); !s.ok()) {
      Add("ledger.tampered", Severity::kHigh, anchor_path, s.message());
      return;
    }
  }
  if (from_log) {
    if (const Status s = CheckLedgerAnchor(*rows, *from_log); !s.ok()) {
      Add("ledger.tampered", Severity::kHigh, c_.log.audit,
          s.message() + " (its last ledger_checkpoint)");
      return;
    }
  }
  const auto count = static_cast<int64_t>(rows->size());
  const std::string head = rows->empty() ? std::string(64, '0') : rows->back().hash;
  const std::string confirm =
      "compare the head with another host's anchor, then run `clawguard ledger verify --store "
      "URL --anchor " +
      anchor_path + " --expect-head N:HEX --write-anchor`";
  if (!*anchor && count > 0) {
    if (from_log) {
      Add("ledger.anchor_missing", Severity::kMedium, anchor_path,
          "no anchor file; the audit log still holds checkpoint " +
              std::to_string(from_log->count) + ":" + from_log->head +
              " (the host writes the anchor from it at its next start), but once the log is "
              "rotated nothing would anchor the ledger");
    } else {
      Add("ledger.not_anchored", Severity::kHigh, anchor_path,
          "no anchor file and no ledger_checkpoint in the audit log" +
              (log_checkpoint.ok() ? std::string()
                                   : " (" + log_checkpoint.error().message() + ")") +
              " while the ledger holds " + std::to_string(count) +
              " rows: a rewrite of the whole ledger would not show, and the host will trust its "
              "head on first use; " +
              confirm);
    }
  } else if (*anchor && (*anchor)->trust_on_first_use) {
    const LedgerCheckpoint& t = *(*anchor)->trust_on_first_use;
    Add("ledger.anchor_adopted", Severity::kHigh, anchor_path,
        "the anchor began by trusting the head " + std::to_string(t.count) + ":" + t.head +
            " on first use (" + FormatRfc3339Utc((*anchor)->trusted_at) + "): rows up to " +
            std::to_string(t.count) + " were never checked against a checkpoint from elsewhere; " +
            confirm);
  }
  if (allowlist != nullptr) {
    const std::optional<int64_t> floor = HighestAllowlistVersion(*rows);
    if (floor && allowlist->version() < *floor) {
      Add("allowlist.below_floor", Severity::kHigh, c_.plugins.allowlist,
          "version " + std::to_string(allowlist->version()) + " is lower than version " +
              std::to_string(*floor) +
              " recorded in the ledger: the loader refuses every package with allowlist_invalid");
    }
  }
  const std::optional<LedgerCheckpoint> cp =
      *anchor ? std::optional<LedgerCheckpoint>((*anchor)->checkpoint) : from_log;
  Add("ledger.ok", Severity::kInfo, "ledger",
      std::to_string(count) + " rows, head " + head +
          (cp ? ", holds checkpoint " + std::to_string(cp->count) + ":" + cp->head
              : std::string()));
}

void Auditor::Secrets() {
  for (const auto& [route, s] : c_.webhooks.routes) {
    if (s.previous && s.previous_until && *s.previous_until <= now_) {
      Add("webhook.previous_expired", Severity::kMedium, route,
          "a previous secret is still configured but its previous_until " +
              FormatRfc3339Utc(*s.previous_until) +
              " has passed; remove it from host.yaml and the environment");
    }
    if (!s.current_since) {
      Add("webhook.secret_age_unknown", Severity::kLow, route,
          "no current_since: the secret's age cannot be audited");
    } else if (now_ - *s.current_since > kSecretRotationMaxAgeSeconds) {
      Add("webhook.secret_old", Severity::kMedium, route,
          "the current secret dates from " + FormatRfc3339Utc(*s.current_since) + ", " +
              std::to_string((now_ - *s.current_since) / 86400) + " days ago (over 90): rotate it");
    }
  }
}

// IsLoopback is true for 127.0.0.0/8 and ::1 ("host:port" or "[v6]:port").
bool IsLoopback(const std::string& address) {
  std::string host = address.substr(0, address.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  unsigned char buf[16];
  if (inet_pton(AF_INET, host.c_str(), buf) == 1) return buf[0] == 127;
  if (inet_pton(AF_INET6, host.c_str(), buf) == 1) {
    static const unsigned char kLoop[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    return std::equal(buf, buf + 16, kLoop);
  }
  return false;
}

void Auditor::Listeners() {
  if (!c_.admin.tls && !IsLoopback(c_.admin.address)) {
    Add("admin.plaintext_nonloopback", Severity::kHigh, "admin " + c_.admin.address,
        "the admin listener is reachable off this machine without TLS: its bearer token crosses "
        "the network in clear; "
        "bind it to 127.0.0.1 or set admin.tls");
  }
  if (!c_.listen.tls && !IsLoopback(c_.listen.address)) {
    Add("listen.plaintext_nonloopback", Severity::kLow, "listen " + c_.listen.address,
        "webhooks arrive without TLS: they are signed, not encrypted; terminate TLS here or in "
        "front of the host");
  }
}

void Auditor::Retention() {
  const Millis span = c_.RetrySpan();
  const Millis need = span + 2 * c_.webhooks.clock_skew;
  const Millis have = c_.idempotency.retention;
  Add("idempotency.retention", have < need ? Severity::kHigh : Severity::kInfo, c_.source,
      "retention " + FormatDuration(have) + " vs retry span " + FormatDuration(span) +
          " + 2 × clock_skew " + FormatDuration(c_.webhooks.clock_skew) + " = " +
          FormatDuration(need) +
          (have < need ? ": a late retry would run again"
                       : ": a retry within the span is deduplicated"));
}

void Auditor::ErpTransport() {
  // The host starts with such a URL only under erp.allow_plaintext: true (host_config.h).
  if (config_internal::IsPlaintextOffHost(c_.erp.base_url)) {
    Add("erp.plaintext_nonloopback", Severity::kHigh,
        "erp " + config_internal::UrlHost(c_.erp.base_url),
        "erp.base_url is http:// to a host that is not loopback (allowed by erp.allow_plaintext): "
        "the bearer "
        "credential erp.auth and every plugin's ERP call cross the network in clear; use https:// "
        "with erp.ca");
  }
}

void Auditor::Execution() {
  if (!c_.plugins.sandbox) {
    Add("plugins.isolation_none", Severity::kHigh, "plugins.isolation none",
        "plugins run inside the host's process, unconfined: a signed plugin that is malicious (a "
        "stolen publisher key, a poisoned dependency) can read the host's memory — webhook "
        "secrets, "
        "the ERP credential, the admin token — open its own sockets to the ERP and crash the host; "
        "use plugins.isolation: sandbox (ARCHITECTURE.md \"Plugin workers\")");
  }
  if (c_.plugins.sandbox && c_.plugins.memory_cgroup == PluginsConfig::MemoryCgroup::kNone) {
    Add("plugins.memory_cgroup_none", Severity::kMedium, "plugins.memory_cgroup none",
        "RLIMIT_AS bounds what a worker maps, not the kernel memory behind it: a malicious plugin "
        "can hold page tables worth twice its memory_limit (up to about 512 MiB per worker); use "
        "plugins.memory_cgroup: auto or required (ARCHITECTURE.md \"Plugin workers\")");
  }
  if (!c_.listen.fibers) return;
  Add("listen.fibers_thread_locals", Severity::kMedium, "listen.execution fibers",
      "deliveries run as fibers on " + std::to_string(c_.listen.carriers) +
          " carrier thread(s): thread-local state is shared by every delivery on a carrier and may "
          "change "
          "across an erp_call (ARCHITECTURE.md \"Execution model\"); a plugin that keeps "
          "per-delivery data in "
          "thread-locals would mix deliveries — check every loaded plugin keeps none, or use "
          "execution: threads");
}

}  // namespace

AuditReport RunDeploymentAudit(const HostConfig& config, const LedgerSource& ledger,
                               const Clock& clock) {
  AuditReport report;
  report.config = config.source;
  Auditor a(config, clock, report);
  const std::unique_ptr<TrustPolicy> trust = a.Trust();
  const std::unique_ptr<Allowlist> allowlist = trust ? a.AllowlistFile(*trust) : nullptr;
  a.Plugins(trust.get(), allowlist.get());
  a.LedgerIntegrity(ledger, allowlist.get());
  a.Secrets();
  a.Listeners();
  a.Retention();
  a.ErpTransport();
  a.Execution();
  return report;
}

}  // namespace clawguard::host
