// host_observe.cpp — signing leaves, metric names, the /ops snapshot and the gauges (see
// host_observe.h).
#include "host/app/host_observe.h"

#include <openssl/asn1.h>
#include <openssl/x509.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <set>

#include "clawguard/bundle.h"
#include "clawguard/file_io.h"
#include "clawguard/limits.h"
#include "clawguard/ossl.h"

namespace clawguard::host {
namespace {

// UnixOf converts an ASN1_TIME (UTCTime or GeneralizedTime, always UTC) to Unix seconds.
std::optional<int64_t> UnixOf(const ASN1_TIME* t) {
  std::tm tm{};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return std::nullopt;
  return static_cast<int64_t>(timegm(&tm));
}

std::string SubjectOf(X509* cert) {
  // get0: the name is owned by |cert|.
  const X509_NAME* name = X509_get_subject_name(cert);
  if (name == nullptr) return {};
  char buf[512];
  if (X509_NAME_oneline(name, buf, sizeof(buf)) == nullptr) return {};
  return buf;
}

}  // namespace

Result<std::vector<SigningLeaf>> ReadSigningLeaves(const std::string& package_path,
                                                   const Verdict& verdict) {
  const std::string sig_path = package_path + ".sig";
  CLAWGUARD_ASSIGN_OR_RETURN(std::string json, ReadFileBounded(sig_path, limits::kMaxBundle));
  CLAWGUARD_ASSIGN_OR_RETURN(Bundle bundle, ParseBundle(json));
  std::vector<SigningLeaf> leaves;
  for (const std::string& keyid : verdict.signers) {
    const auto chain = bundle.certificates.find(keyid);
    if (chain == bundle.certificates.end() || chain->second.empty()) {
      return Status(Reason::kBundleInvalid, sig_path + ": no certificate for signer " + keyid);
    }
    const std::string& der = chain->second.front();
    const auto* p = reinterpret_cast<const unsigned char*>(der.data());
    ossl::UniquePtr<X509> cert(d2i_X509(nullptr, &p, static_cast<long>(der.size())));
    if (cert == nullptr)
      return Status(Reason::kBundleInvalid, sig_path + ": the leaf of " + keyid + " is not X.509");
    // get0: notAfter is owned by |cert|.
    const std::optional<int64_t> not_after = UnixOf(X509_get0_notAfter(cert.get()));
    if (!not_after)
      return Status(Reason::kBundleInvalid,
                    sig_path + ": the leaf of " + keyid + " has no notAfter");
    leaves.push_back(SigningLeaf{keyid, SubjectOf(cert.get()), *not_after});
  }
  std::sort(leaves.begin(), leaves.end(),
            [](const SigningLeaf& a, const SigningLeaf& b) { return a.not_after < b.not_after; });
  return leaves;
}

MetricsNames MetricsNamesFor(const std::vector<std::pair<std::string, std::string>>& routes,
                             const std::vector<LoadedPlugin>& plugins) {
  MetricsNames names;
  names.routes = routes;
  std::set<std::string> seen;
  for (const LoadedPlugin& p : plugins) {
    names.plugins.push_back(p.manifest().name);
    for (const std::string& e : p.manifest().erp_capabilities) {
      if (seen.insert(e).second) names.endpoints.push_back(e);
    }
  }
  return names;
}

Result<std::unique_ptr<HostObserver>> HostObserver::Create(Sources sources, Fixed fixed) {
  if (sources.metrics == nullptr || sources.endpoint_breaker == nullptr ||
      sources.key_breaker == nullptr || sources.dlq == nullptr || sources.clock == nullptr) {
    return Status(Reason::kInternal,
                  "host observer: a source (metrics, breakers, DLQ or clock) is missing");
  }
  return std::unique_ptr<HostObserver>(new HostObserver(sources, std::move(fixed)));
}

std::vector<OpsBreaker> HostObserver::Breakers() const {
  std::map<std::string, OpsBreaker> by_endpoint;
  for (const std::string& e : fixed_.endpoints) by_endpoint[e] = OpsBreaker{e, "closed", 0};
  for (const EndpointBreaker::Snapshot& s : sources_.endpoint_breaker->SnapshotAll()) {
    by_endpoint[s.endpoint] =
        OpsBreaker{s.endpoint, std::string(EndpointBreaker::StateName(s.state)),
                   static_cast<int64_t>(s.recent_failures)};
  }
  std::vector<OpsBreaker> out;
  for (auto& [name, b] : by_endpoint) out.push_back(std::move(b));
  return out;
}

OpsSnapshot HostObserver::Snapshot() const {
  OpsSnapshot s;
  s.now_ms = sources_.clock->NowMillis();
  s.trust_mode = fixed_.trust_mode;
  s.plugins = fixed_.plugins;
  s.breakers = Breakers();
  s.open_key_breakers = static_cast<int64_t>(sources_.key_breaker->OpenKeys());
  if (Result<std::vector<DlqCount>> counts = sources_.dlq->CountUnresolved(); counts.ok()) {
    for (DlqClass klass : kAllDlqClasses) {
      OpsDlqClass row{std::string(DlqClassName(klass)), 0, 0, 0};
      for (const DlqCount& c : *counts) {
        if (c.klass != klass) continue;
        switch (c.age) {
          case DlqAge::kUnderHour: row.under_1h += c.count; break;
          case DlqAge::kUnderDay: row.under_24h += c.count; break;
          case DlqAge::kOlder: row.older += c.count; break;
        }
      }
      if (row.under_1h + row.under_24h + row.older > 0) s.dlq.push_back(std::move(row));
    }
  }
  s.deliveries = sources_.metrics->DeliveriesTotal();
  s.duplicates = sources_.metrics->DuplicatesTotal();
  s.leaves = fixed_.leaves;
  return s;
}

Status HostObserver::PublishGauges() const {
  for (const OpsBreaker& b : Breakers())
    sources_.metrics->SetErpBreakerOpen(b.endpoint, b.state != "closed");
  sources_.metrics->SetOpenKeyBreakers(static_cast<int64_t>(sources_.key_breaker->OpenKeys()));
  CLAWGUARD_ASSIGN_OR_RETURN(std::vector<DlqCount> counts, sources_.dlq->CountUnresolved());
  for (DlqClass klass : kAllDlqClasses) {
    int64_t total = 0;
    for (const DlqCount& c : counts) {
      if (c.klass == klass) total += c.count;
    }
    sources_.metrics->SetDeadLetterQueueSize(DlqClassName(klass), total);
  }
  return Status::Ok();
}

}  // namespace clawguard::host
