// loader.cpp — the ordered verification pipeline and the load (see clawguard/loader.h).
#include "clawguard/loader.h"

#include <mutex>

#include "allowlist.h"
#include "archive_extractor.h"
#include "audit_log.h"
#include "chain_verifier.h"
#include "clawguard/bundle.h"
#include "clawguard/file_io.h"
#include "clawguard/limits.h"
#include "clawguard/semver.h"
#include "clawguard/sha256.h"
#include "elf_check.h"
#include "memfd_loader.h"
#include "trust_policy.h"

namespace clawguard {

struct Loader::Impl {
  LoaderOptions opts;
  const Clock* clock = nullptr;
  std::unique_ptr<TrustPolicy> policy;
  std::unique_ptr<ChainVerifier> chain;
  std::optional<AuditLog> audit;
  std::mutex mu;                                // guards checkpoint and recording
  std::optional<LedgerCheckpoint> checkpoint;   // the last one read from or written to the audit log
};

namespace {

bool IsOperational(Reason r) { return ExitCodeFor(r) == 2; }

// Outcome is a pipeline run: the verdict so far, plus what a load needs.
struct Outcome {
  Verdict verdict;
  std::optional<ExtractedPackage> extracted;
};

}  // namespace

Loader::Loader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Loader::~Loader() = default;

std::string Loader::mode() const { return std::string(PolicyModeName(impl_->policy->mode())); }

Result<std::unique_ptr<Loader>> Loader::Create(LoaderOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->clock = options.clock != nullptr ? options.clock : &SystemClock::Instance();
  if (options.trust_policy_path.empty()) return Status(Reason::kConfigInvalid, "no trust policy path given");
  if (options.allowlist_path.empty()) return Status(Reason::kConfigInvalid, "no allowlist path given");
  CLAWGUARD_ASSIGN_OR_RETURN(impl->policy, TrustPolicy::Load(options.trust_policy_path, *impl->clock));
  CLAWGUARD_ASSIGN_OR_RETURN(impl->chain, ChainVerifier::Create(*impl->policy, *impl->clock));
  if (options.audit_log_path && !options.audit_log_path->empty()) {
    impl->audit.emplace(*options.audit_log_path);
    CLAWGUARD_ASSIGN_OR_RETURN(impl->checkpoint, impl->audit->LastCheckpoint());
  }
  impl->opts = std::move(options);
  return std::unique_ptr<Loader>(new Loader(std::move(impl)));
}

// LoaderPipeline holds the steps that need Loader::Impl.
class LoaderPipeline {
 public:
  static Result<Outcome> Run(Loader::Impl& im, const std::string& path, bool record);
  static Status LogDecision(Loader::Impl& im, const Verdict& v);
};

// Run runs every check up to (and, with |record|, including) the deploy row. Refusals are in the
// returned verdict; an error Status is operational.
Result<Outcome> LoaderPipeline::Run(Loader::Impl& im, const std::string& path, bool record) {
  Outcome out;
  Verdict& v = out.verdict;
  const TrustPolicy& policy = *im.policy;
  const bool audit = policy.mode() == PolicyMode::kAudit;
  v.package = path;
  v.mode = std::string(PolicyModeName(policy.mode()));
  v.ledger = im.opts.ledger != nullptr ? "checked" : "skipped";
  std::vector<Relaxation> relaxed;
  // refuse ends the run with |s| (operational reasons become the error Status).
  auto refuse = [&](const Status& s) -> Result<Outcome> {
    if (IsOperational(s.reason())) return s;
    v.verdict = VerdictKind::kRefused;
    v.reason = s.reason();
    v.detail = s.message();
    if (v.ledger == "recorded") v.ledger = "checked";
    return std::move(out);
  };
  // relax lets audit mode pass a relaxable refusal (recorded), else refuses.
  auto relax = [&](const Status& s) -> bool {
    if (s.ok()) return true;
    if (audit && IsRelaxable(s.reason())) {
      relaxed.push_back({s.reason(), s.message()});
      return true;
    }
    return false;
  };

  // 1. Package and bundle, read once; the package hashed before anything parses it.
  auto package = ReadFileBounded(path, policy.limits().max_package, Reason::kPackageTooLarge);
  if (!package) {
    if (package.error().reason() == Reason::kPackageTooLarge) return refuse(package.error());
    return refuse(Status(Reason::kUnsigned, "package unreadable: " + package.error().message()));
  }
  const Sha256Digest digest = Sha256Of(*package);
  v.sha256 = DigestHex(digest);
  auto bundle_bytes = ReadFileBounded(path + ".sig", limits::kMaxBundle, Reason::kBundleInvalid);
  if (!bundle_bytes) {
    if (bundle_bytes.error().reason() == Reason::kBundleInvalid) return refuse(bundle_bytes.error());
    return refuse(Status(Reason::kUnsigned, "no signature bundle: " + bundle_bytes.error().message()));
  }
  // 2. Bundle and statement.
  auto bundle = ParseBundle(*bundle_bytes);
  if (!bundle) return refuse(bundle.error());
  if (bundle->payload_type != kInTotoPayloadType) {
    return refuse(Status(Reason::kBundleInvalid, "payloadType is '" + bundle->payload_type + "', expected '" +
                                                     std::string(kInTotoPayloadType) + "'"));
  }
  auto statement = ParseStatement(bundle->payload);
  if (!statement) return refuse(statement.error());
  v.name = statement->name;
  v.version = statement->version;
  v.publisher = statement->publisher;
  // 3. Signatures counted.
  auto counted = im.chain->Verify(*bundle, *statement);
  if (!counted) return refuse(counted.error());
  v.signers = counted->signers;
  v.warnings = counted->warnings;
  for (auto& r : counted->relaxations) relaxed.push_back(std::move(r));
  // 4. Digest of the bytes read.
  if (statement->subject_sha256 != v.sha256) {
    return refuse(Status(Reason::kDigestMismatch, "the package's sha256 is " + v.sha256 + "; the signed statement says " +
                                                      statement->subject_sha256));
  }
  // The signed version must be SemVer without build metadata ("+…" would dodge the ledger).
  const auto semver = ParseSemVer(statement->version);
  if (!semver) {
    return refuse(Status(Reason::kManifestInvalid, "signed version '" + statement->version +
                                                       "' is not SemVer 2.0 without build metadata"));
  }
  // 5. Allowlist.
  auto allowlist = Allowlist::Load(im.opts.allowlist_path, policy, im.opts.ledger, *im.clock);
  if (!allowlist) return refuse(allowlist.error());
  if ((*allowlist)->expired()) {
    Status s(Reason::kAllowlistExpired, "the allowlist expired at " + FormatRfc3339Utc((*allowlist)->expires()));
    if (!relax(s)) return refuse(s);
  }
  if (Status s = (*allowlist)->Lookup(statement->name, statement->version, digest); !relax(s)) return refuse(s);
  // 6. Ledger: the chain first (a tampered ledger cannot answer the next two), then overwrite
  // (both kinds) and rollback (deploy rows only).
  Ledger* ledger = im.opts.ledger;
  if (ledger != nullptr) {
    std::optional<LedgerCheckpoint> anchor;
    {
      std::lock_guard<std::mutex> lock(im.mu);
      anchor = im.checkpoint;
    }
    auto all = ledger->ReadAll();
    if (!all) return refuse(all.error());
    if (Status s = VerifyLedgerChain(*all, anchor); !s.ok()) return refuse(s);
    auto rows = ledger->RowsFor(statement->name);
    if (!rows) return refuse(rows.error());
    std::optional<SemVer> highest;
    std::string highest_text;
    for (const auto& row : *rows) {
      if (row.version == statement->version && row.sha256 != v.sha256) {
        return refuse(Status(Reason::kVersionOverwritten, statement->name + " " + statement->version + " was recorded (" +
                                                              std::string(LedgerKindName(row.kind)) + ", seq " +
                                                              std::to_string(row.seq) + ") with sha256 " + row.sha256));
      }
      if (row.kind != LedgerKind::kDeploy) continue;
      auto rv = ParseSemVer(row.version);
      if (rv && (!highest || CompareSemVer(*rv, *highest) > 0)) {
        highest = rv;
        highest_text = row.version;
      }
    }
    if (highest && CompareSemVer(*semver, *highest) < 0 && !policy.rollback_allowed()) {
      Status s(Reason::kVersionRollback, statement->version + " is lower than " + highest_text + ", already deployed");
      if (!relax(s)) return refuse(s);
    }
  }
  // 7. Only now is the archive parsed.
  auto extracted = ExtractPackage(*package, *statement, policy.limits());
  if (!extracted) return refuse(extracted.error());
  // 8. ELF and ABI.
  if (auto elf = CheckElf(extracted->entry_bytes, policy.allowed_needed()); !elf) return refuse(elf.error());
  if (extracted->manifest.abi != static_cast<int64_t>(CLAWGUARD_PLUGIN_ABI)) {
    return refuse(Status(Reason::kAbiMismatch, "the manifest's abi " + std::to_string(extracted->manifest.abi) +
                                                   " is not this host's " + std::to_string(CLAWGUARD_PLUGIN_ABI)));
  }
  // 9. Record the deploy row (never for an audit-relaxed decision).
  if (record && ledger != nullptr && relaxed.empty()) {
    std::lock_guard<std::mutex> lock(im.mu);
    auto appended = ledger->Record(LedgerKind::kDeploy, statement->name, statement->version, v.sha256);
    if (!appended) return refuse(appended.error());
    if (Status s = ledger->NoteAllowlistVersion((*allowlist)->version()); !s.ok()) return refuse(s);
    if (appended->appended && im.audit) {
      nlohmann::json cp = {{"event", "ledger_checkpoint"}, {"count", appended->head.count}, {"head", appended->head.head}};
      if (Status s = im.audit->Append(cp); !s.ok()) return s;
    }
    im.checkpoint = appended->head;
    v.ledger = "recorded";
  }
  if (relaxed.empty()) {
    v.verdict = VerdictKind::kVerified;
    v.reason = Reason::kOk;
    v.detail = "verified: " + std::to_string(v.signers.size()) + " counting signature(s)";
  } else {
    v.verdict = VerdictKind::kAudit;
    v.reason = relaxed.front().reason;
    v.detail = "audit mode relaxed";
    for (const auto& r : relaxed) {
      v.relaxed.emplace_back(ReasonName(r.reason));
      v.detail += " " + std::string(ReasonName(r.reason)) + " (" + r.detail + ");";
    }
  }
  out.extracted = std::move(*extracted);
  return out;
}

// LogDecision writes the decision line; an audit log that cannot be written fails the call.
Status LoaderPipeline::LogDecision(Loader::Impl& im, const Verdict& v) {
  if (!im.audit) return Status::Ok();
  nlohmann::json line = VerdictToJson(v);
  line["time"] = FormatRfc3339Utc(im.clock->NowSeconds());
  if (!v.warnings.empty()) line["warnings"] = v.warnings;
  return im.audit->Append(line);
}

Result<Verdict> Loader::Verify(const std::string& package_path, VerifyOptions options) {
  auto out = LoaderPipeline::Run(*impl_, package_path, options.record);
  if (!out) {
    Verdict v;
    v.package = package_path;
    v.mode = mode();
    v.reason = out.error().reason();
    v.detail = out.error().message();
    (void)LoaderPipeline::LogDecision(*impl_, v);
    return out.error();
  }
  CLAWGUARD_RETURN_IF_ERROR(LoaderPipeline::LogDecision(*impl_, out->verdict));
  return std::move(out->verdict);
}

Result<LoadedPlugin> Loader::Load(const std::string& package_path) {
  auto out = LoaderPipeline::Run(*impl_, package_path, /*record=*/impl_->opts.ledger != nullptr);
  if (!out) return out.error();
  Verdict& v = out->verdict;
  if (v.verdict == VerdictKind::kRefused) {
    CLAWGUARD_RETURN_IF_ERROR(LoaderPipeline::LogDecision(*impl_, v));
    return Status(v.reason, v.detail);
  }
  const ExtractedPackage& x = *out->extracted;
  auto lib = LoadFromMemfd(x.entry_bytes, "clawguard:" + v.name + "-" + v.version, x.manifest.abi, impl_->opts.host_api);
  if (!lib) {
    v.verdict = VerdictKind::kRefused;
    v.reason = lib.error().reason();
    v.detail = lib.error().message();
    CLAWGUARD_RETURN_IF_ERROR(LoaderPipeline::LogDecision(*impl_, v));
    return lib.error();
  }
  CLAWGUARD_RETURN_IF_ERROR(LoaderPipeline::LogDecision(*impl_, v));
  return LoadedPlugin(std::move(*lib), x.manifest, v);
}

}  // namespace clawguard
