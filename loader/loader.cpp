// loader.cpp — the ordered verification pipeline and the load (see clawguard/loader.h).
#include "clawguard/loader.h"

#include <sys/stat.h>

#include "allowlist.h"
#include "archive_extractor.h"
#include "audit_log.h"
#include "chain_verifier.h"
#include "clawguard/bundle.h"
#include "clawguard/file_io.h"
#include "clawguard/limits.h"
#include "clawguard/semver.h"
#include "clawguard/sha256.h"
#include "core/mutex.h"
#include "elf_check.h"
#include "ledger_anchor.h"
#include "memfd_loader.h"
#include "trust_policy.h"

namespace clawguard {

struct Loader::Impl {
  LoaderOptions opts;
  const Clock* clock = nullptr;
  std::unique_ptr<TrustPolicy> policy;
  std::unique_ptr<ChainVerifier> chain;
  std::optional<AuditLog> audit;
  std::optional<LedgerAnchorFile> anchor_file;
  mutable Mutex mu;  // guards the two below, recording and anchoring
  // The anchor file's content (or adopted in memory).
  std::optional<LedgerAnchor> anchor CLAWGUARD_GUARDED_BY(mu);
  // The audit log's last, or this loader's last append.
  std::optional<LedgerCheckpoint> log_checkpoint CLAWGUARD_GUARDED_BY(mu);
};

namespace {

bool IsOperational(Reason r) { return ExitCodeFor(r) == 2; }

// Outcome is a pipeline run: the verdict so far, plus what a load needs.
struct Outcome {
  Verdict verdict;
  std::optional<ExtractedPackage> extracted;
  bool attempted = false;         // an attempt row was recorded: Load records the deploy after init
  int64_t allowlist_version = 0;  // the allowlist the decision used (for its ledger row)
  std::string allowlist_sha256;
};

// Recording is what a pipeline run writes to the ledger.
enum class Recording { kNone, kDeploy, kAttempt };

}  // namespace

Loader::Loader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Loader::~Loader() = default;

std::string Loader::mode() const { return std::string(PolicyModeName(impl_->policy->mode())); }

LedgerAnchorStatus Loader::ledger_anchor() const {
  MutexLock lock(impl_->mu);
  LedgerAnchorStatus s;
  if (impl_->anchor_file) s.path = impl_->anchor_file->path();
  if (impl_->anchor) {
    s.checkpoint = impl_->anchor->checkpoint;
    s.trust_on_first_use = impl_->anchor->trust_on_first_use;
  }
  if (impl_->log_checkpoint &&
      (!s.checkpoint || impl_->log_checkpoint->count > s.checkpoint->count)) {
    s.checkpoint = impl_->log_checkpoint;
  }
  return s;
}

nlohmann::json LedgerAnchorStatusToJson(const LedgerAnchorStatus& s) {
  nlohmann::json j;
  j["state"] = !s.checkpoint          ? "unanchored"
               : s.trust_on_first_use ? "trust_on_first_use"
                                      : "anchored";
  j["path"] = s.path;
  j["count"] = s.checkpoint ? nlohmann::json(s.checkpoint->count) : nlohmann::json(nullptr);
  j["head"] = s.checkpoint ? nlohmann::json(s.checkpoint->head) : nlohmann::json(nullptr);
  j["trust_on_first_use"] = s.trust_on_first_use
                                ? nlohmann::json{{"count", s.trust_on_first_use->count},
                                                 {"head", s.trust_on_first_use->head}}
                                : nlohmann::json(nullptr);
  return j;
}

Result<std::unique_ptr<Loader>> Loader::Create(LoaderOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->clock = options.clock != nullptr ? options.clock : &SystemClock::Instance();
  if (options.trust_policy_path.empty())
    return Status(Reason::kConfigInvalid, "no trust policy path given");
  if (options.allowlist_path.empty())
    return Status(Reason::kConfigInvalid, "no allowlist path given");
  CLAWGUARD_ASSIGN_OR_RETURN(impl->policy,
                             TrustPolicy::Load(options.trust_policy_path, *impl->clock));
  CLAWGUARD_ASSIGN_OR_RETURN(impl->chain, ChainVerifier::Create(*impl->policy, *impl->clock));
  if (options.audit_log_path && !options.audit_log_path->empty()) {
    impl->audit.emplace(*options.audit_log_path);
    CLAWGUARD_ASSIGN_OR_RETURN(std::optional<LedgerCheckpoint> checkpoint,
                               impl->audit->LastCheckpoint());
    MutexLock lock(impl->mu);  // uncontended: nothing else sees |impl| yet
    impl->log_checkpoint = std::move(checkpoint);
  }
  std::string anchor_path = options.anchor_path.value_or("");
  if (anchor_path.empty() && impl->audit)
    anchor_path = DefaultLedgerAnchorPath(impl->audit->path());
  if (!anchor_path.empty()) {
    impl->anchor_file.emplace(anchor_path);
    CLAWGUARD_ASSIGN_OR_RETURN(std::optional<LedgerAnchor> anchor, impl->anchor_file->Read());
    MutexLock lock(impl->mu);
    impl->anchor = std::move(anchor);
  }
  impl->opts = std::move(options);
  return std::unique_ptr<Loader>(new Loader(std::move(impl)));
}

// LoaderPipeline holds the steps that need Loader::Impl.
class LoaderPipeline {
 public:
  static Result<Outcome> Run(Loader::Impl& im, const std::string& path, Recording recording);
  static Status LogDecision(Loader::Impl& im, const Verdict& v);
  // CheckAnchors checks the verified |rows| against every checkpoint the loader knows, and when
  // there is none adopts the head (trust on first use, loudly). An error Status is operational.
  static Status CheckAnchors(Loader::Impl& im, const std::vector<LedgerRow>& rows, Verdict& v);
  // NoteAppend moves the anchor file and the audit log's checkpoint to |head| after an append.
  static Status NoteAppend(Loader::Impl& im, const LedgerCheckpoint& head);
  // RulesFor is what every Record of this loader passes: the policy's rollback rule and every
  // checkpoint the loader trusts, so that a chain rewritten between the check and the record is
  // refused inside the recording transaction and the anchor never moves onto it.
  static LedgerRecordRules RulesFor(Loader::Impl& im);
  // RecordDeploy records the allowlist row, then the deploy row, of |out| (the rules applied
  // again inside each transaction). A refusal is the returned Status.
  static Status RecordDeploy(Loader::Impl& im, const Outcome& out);
};

Status LoaderPipeline::CheckAnchors(Loader::Impl& im, const std::vector<LedgerRow>& rows,
                                    Verdict& v) {
  MutexLock lock(im.mu);
  if (im.anchor) {
    Status s = CheckLedgerAnchor(rows, im.anchor->checkpoint);
    if (!s.ok()) {
      return Status(
          s.reason(),
          s.message() + (im.anchor_file ? " (anchor file " + im.anchor_file->path() + ")"
                                        : std::string(" (the head trusted on first use)")));
    }
  }
  if (im.log_checkpoint) {
    Status s = CheckLedgerAnchor(rows, *im.log_checkpoint);
    if (!s.ok()) {
      return Status(s.reason(), s.message() + " (ledger_checkpoint of the audit log" +
                                    (im.audit ? " " + im.audit->path() : std::string()) + ")");
    }
  }
  const int64_t now = im.clock->NowSeconds();
  if (!im.anchor && im.log_checkpoint && im.anchor_file) {
    // The anchor file is gone (or predates this build) but the audit log still holds a
    // checkpoint that the chain was just checked against: the file is written from it.
    // Loudly: whoever can delete the anchor file may also have written that log line (keep
    // log.anchor outside the audit log's folder).
    LedgerAnchor restored{*im.log_checkpoint, now, std::nullopt, 0};
    CLAWGUARD_RETURN_IF_ERROR(im.anchor_file->Write(restored));
    im.anchor = restored;
    v.warnings.push_back(
        "ledger anchor file " + im.anchor_file->path() +
        " was missing: written again from the audit log's checkpoint " +
        std::to_string(restored.checkpoint.count) + ":" + restored.checkpoint.head +
        "; if nobody deleted it on purpose, compare that head with another host's anchor");
    if (im.audit) {
      CLAWGUARD_RETURN_IF_ERROR(im.audit->Append({{"event", "ledger_anchor_written"},
                                                  {"level", "warning"},
                                                  {"anchor", im.anchor_file->path()},
                                                  {"count", restored.checkpoint.count},
                                                  {"head", restored.checkpoint.head},
                                                  {"source", "audit log"},
                                                  {"time", FormatRfc3339Utc(now)}}));
    }
  }
  if (im.anchor || im.log_checkpoint || rows.empty()) return Status::Ok();
  // Nothing to check the rows against: trust the verified head on first use, and say so.
  const LedgerCheckpoint head{static_cast<int64_t>(rows.size()), rows.back().hash};
  const std::string where = im.anchor_file ? "no ledger anchor at " + im.anchor_file->path()
                                           : std::string("no ledger anchor configured");
  const std::string detail = where +
                             " and no ledger_checkpoint in the audit log, while the ledger holds " +
                             std::to_string(head.count) + " rows: its head " +
                             std::to_string(head.count) + ":" + head.head +
                             " is trusted on first use, and a rewrite made before now would not "
                             "show. Compare it with another host's "
                             "anchor, then confirm with `clawguard ledger verify --store URL "
                             "--anchor FILE --expect-head N:HEX "
                             "--write-anchor`";
  v.warnings.push_back("ledger not anchored: " + detail);
  im.anchor = LedgerAnchor{head, now, head, now};
  if (im.anchor_file) CLAWGUARD_RETURN_IF_ERROR(im.anchor_file->Write(*im.anchor));
  if (im.audit) {
    CLAWGUARD_RETURN_IF_ERROR(
        im.audit->Append({{"event", "ledger_anchor_adopted"},
                          {"level", "warning"},
                          {"anchor", im.anchor_file ? im.anchor_file->path() : std::string()},
                          {"count", head.count},
                          {"head", head.head},
                          {"detail", detail},
                          {"time", FormatRfc3339Utc(now)}}));
  }
  return Status::Ok();
}

Status LoaderPipeline::NoteAppend(Loader::Impl& im, const LedgerCheckpoint& head) {
  MutexLock lock(im.mu);
  if (!im.anchor || head.count > im.anchor->checkpoint.count) {
    LedgerAnchor next = im.anchor.value_or(LedgerAnchor{});
    next.checkpoint = head;
    next.time = im.clock->NowSeconds();
    if (im.anchor_file) CLAWGUARD_RETURN_IF_ERROR(im.anchor_file->Write(next));
    im.anchor = std::move(next);
  }
  if (!im.log_checkpoint || head.count > im.log_checkpoint->count) {
    if (im.audit) {
      CLAWGUARD_RETURN_IF_ERROR(im.audit->Append(
          {{"event", "ledger_checkpoint"}, {"count", head.count}, {"head", head.head}}));
    }
    im.log_checkpoint = head;
  }
  return Status::Ok();
}

LedgerRecordRules LoaderPipeline::RulesFor(Loader::Impl& im) {
  LedgerRecordRules rules;
  rules.rollback_allowed = im.policy->rollback_allowed();
  MutexLock lock(im.mu);
  if (im.anchor) rules.anchors.push_back(im.anchor->checkpoint);
  if (im.log_checkpoint) rules.anchors.push_back(*im.log_checkpoint);
  return rules;
}

Status LoaderPipeline::RecordDeploy(Loader::Impl& im, const Outcome& out) {
  Ledger& ledger = *im.opts.ledger;
  const Verdict& v = out.verdict;
  auto allowlisted =
      RecordAllowlist(ledger, out.allowlist_version, out.allowlist_sha256, RulesFor(im));
  if (!allowlisted) return allowlisted.error();
  if (allowlisted->appended) CLAWGUARD_RETURN_IF_ERROR(NoteAppend(im, allowlisted->head));
  auto deployed = ledger.Record(LedgerKind::kDeploy, v.name, v.version, v.sha256, RulesFor(im));
  if (!deployed) return deployed.error();
  if (deployed->appended) CLAWGUARD_RETURN_IF_ERROR(NoteAppend(im, deployed->head));
  return Status::Ok();
}

// Run runs every check up to (and, as |recording| says, including) the ledger rows written
// before anything is opened. Refusals are in the returned verdict; an error Status is
// operational.
Result<Outcome> LoaderPipeline::Run(Loader::Impl& im, const std::string& path,
                                    Recording recording) {
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

  // 1. Package opened (a regular file within max_package) but not read yet; bundle read.
  auto package_fd = OpenRegularFile(path);
  if (!package_fd)
    return refuse(Status(Reason::kUnsigned, "package unreadable: " + package_fd.error().message()));
  {
    struct stat st {};
    if (::fstat(package_fd->get(), &st) != 0) {
      return refuse(Status(Reason::kUnsigned, "package unreadable: cannot stat '" + path + "'"));
    }
    if (static_cast<uint64_t>(st.st_size) > policy.limits().max_package) {
      return refuse(
          Status(Reason::kPackageTooLarge, "'" + path + "' is " + std::to_string(st.st_size) +
                                               " bytes; the limit is " +
                                               std::to_string(policy.limits().max_package)));
    }
  }
  auto bundle_bytes = ReadFileBounded(path + ".sig", limits::kMaxBundle, Reason::kBundleInvalid);
  if (!bundle_bytes) {
    if (bundle_bytes.error().reason() == Reason::kBundleInvalid)
      return refuse(bundle_bytes.error());
    return refuse(
        Status(Reason::kUnsigned, "no signature bundle: " + bundle_bytes.error().message()));
  }
  // 2. Bundle and statement.
  auto bundle = ParseBundle(*bundle_bytes);
  if (!bundle) return refuse(bundle.error());
  if (bundle->payload_type != kInTotoPayloadType) {
    return refuse(Status(Reason::kBundleInvalid, "payloadType is '" + bundle->payload_type +
                                                     "', expected '" +
                                                     std::string(kInTotoPayloadType) + "'"));
  }
  auto statement = ParseStatement(bundle->payload);
  if (!statement) return refuse(statement.error());
  v.name = statement->name;
  v.version = statement->version;
  v.publisher = statement->publisher;
  // 3. Signatures counted — before the package is read, so that a file nobody trusted signed
  // costs its bundle's parse, never a read and hash of up to max_package bytes.
  auto counted = im.chain->Verify(*bundle, *statement);
  if (!counted) return refuse(counted.error());
  v.signers = counted->signers;
  v.warnings = counted->warnings;
  for (auto& r : counted->relaxations) relaxed.push_back(std::move(r));
  // The package, read once through the fd opened above and hashed before anything parses it.
  // The hash runs on a second thread behind the reads (Sha256Behind) and covers exactly the
  // bytes returned.
  auto read = ReadOpenedFileHashed(*package_fd, path, policy.limits().max_package,
                                   Reason::kPackageTooLarge);
  if (!read) {
    if (read.error().reason() == Reason::kPackageTooLarge) return refuse(read.error());
    return refuse(Status(Reason::kUnsigned, "package unreadable: " + read.error().message()));
  }
  const std::string* const package = &read->bytes;
  const Sha256Digest digest = read->sha256;
  v.sha256 = DigestHex(digest);
  // 4. Digest of the bytes read.
  if (statement->subject_sha256 != v.sha256) {
    return refuse(Status(Reason::kDigestMismatch, "the package's sha256 is " + v.sha256 +
                                                      "; the signed statement says " +
                                                      statement->subject_sha256));
  }
  // The signed version must be SemVer without build metadata ("+…" would dodge the ledger).
  const auto semver = ParseSemVer(statement->version);
  if (!semver) {
    return refuse(Status(
        Reason::kManifestInvalid,
        "signed version '" + statement->version + "' is not SemVer 2.0 without build metadata"));
  }
  // 5. Allowlist.
  auto allowlist = Allowlist::Load(im.opts.allowlist_path, policy, im.opts.ledger, *im.clock);
  if (!allowlist) return refuse(allowlist.error());
  if ((*allowlist)->expired()) {
    Status s(Reason::kAllowlistExpired,
             "the allowlist expired at " + FormatRfc3339Utc((*allowlist)->expires()));
    if (!relax(s)) return refuse(s);
  }
  if (Status s = (*allowlist)->Lookup(statement->name, statement->version, digest); !relax(s))
    return refuse(s);
  // 6. Ledger: the chain and its anchors first (a tampered ledger cannot answer the next two),
  // then overwrite (every kind) and rollback (deploy rows only) — the rules Record applies again
  // inside its transaction.
  Ledger* ledger = im.opts.ledger;
  if (ledger != nullptr) {
    auto all = ledger->ReadAll();
    if (!all) return refuse(all.error());
    if (Status s = VerifyLedgerChain(*all, std::nullopt); !s.ok()) return refuse(s);
    if (Status s = CheckAnchors(im, *all, v); !s.ok()) return refuse(s);
    std::vector<LedgerRow> same_name;
    for (const LedgerRow& row : *all) {
      if (row.name == statement->name) same_name.push_back(row);
    }
    auto rules =
        CheckLedgerRecord(same_name, LedgerKind::kDeploy, statement->name, statement->version,
                          v.sha256, LedgerRecordRules{policy.rollback_allowed(), {}});
    if (!rules && !relax(rules.error())) return refuse(rules.error());
  }
  // 7. Only now is the archive parsed.
  auto extracted = ExtractPackage(*package, *statement, policy.limits());
  if (!extracted) return refuse(extracted.error());
  // 8. ELF and ABI.
  if (auto elf = CheckElf(extracted->entry_bytes, policy.allowed_needed()); !elf)
    return refuse(elf.error());
  if (extracted->manifest.abi != static_cast<int64_t>(CLAWGUARD_PLUGIN_ABI)) {
    return refuse(Status(Reason::kAbiMismatch,
                         "the manifest's abi " + std::to_string(extracted->manifest.abi) +
                             " is not this host's " + std::to_string(CLAWGUARD_PLUGIN_ABI)));
  }
  // 9. Record (never for an audit-relaxed decision): `verify --record` the allowlist and deploy
  // rows; Load the attempt row, before any plugin code runs (its deploy row follows init).
  out.allowlist_version = (*allowlist)->version();
  out.allowlist_sha256 = (*allowlist)->bytes_sha256();
  if (recording != Recording::kNone && ledger != nullptr && relaxed.empty()) {
    if (recording == Recording::kDeploy) {
      if (Status s = RecordDeploy(im, out); !s.ok()) return refuse(s);
      v.ledger = "recorded";
    } else {
      auto attempt = ledger->Record(LedgerKind::kAttempt, statement->name, statement->version,
                                    v.sha256, RulesFor(im));
      if (!attempt) return refuse(attempt.error());
      if (attempt->appended) {
        if (Status s = NoteAppend(im, attempt->head); !s.ok()) return s;
      }
      out.attempted = true;
    }
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
  auto out = LoaderPipeline::Run(*impl_, package_path,
                                 options.record ? Recording::kDeploy : Recording::kNone);
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

namespace {

// InProcessRuntime is a plugin dlopen-ed in this process from its sealed memfd.
class InProcessRuntime final : public PluginRuntime {
 public:
  explicit InProcessRuntime(std::unique_ptr<MemfdLibrary> lib) : lib_(std::move(lib)) {}
  const cg_plugin* plugin() const override { return lib_->plugin(); }

 private:
  std::unique_ptr<MemfdLibrary> lib_;
};

Result<std::unique_ptr<PluginRuntime>> OpenInProcess(const CheckedLibrary& lib,
                                                     const cg_host_api* host) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::unique_ptr<MemfdLibrary> loaded,
                             LoadFromMemfd(lib.bytes, lib.memfd_name, lib.manifest->abi, host));
  return std::unique_ptr<PluginRuntime>(new InProcessRuntime(std::move(loaded)));
}

}  // namespace

Result<LoadedPlugin> Loader::Load(const std::string& package_path) {
  auto out = LoaderPipeline::Run(*impl_, package_path, Recording::kAttempt);
  if (!out) return out.error();
  Verdict& v = out->verdict;
  if (v.verdict == VerdictKind::kRefused) {
    CLAWGUARD_RETURN_IF_ERROR(LoaderPipeline::LogDecision(*impl_, v));
    return Status(v.reason, v.detail);
  }
  // refused_after_open: the library is unloaded (by |lib| going out of scope) and the decision
  // logged; operational reasons stay the returned error, as before the load.
  const auto refused_after_open = [&](const Status& s) -> Status {
    v.verdict = VerdictKind::kRefused;
    v.reason = s.reason();
    v.detail = s.message();
    if (v.ledger == "recorded") v.ledger = "checked";
    CLAWGUARD_RETURN_IF_ERROR(LoaderPipeline::LogDecision(*impl_, v));
    return s;
  };
  const ExtractedPackage& x = *out->extracted;
  const CheckedLibrary checked{x.entry_bytes, "clawguard:" + v.name + "-" + v.version, &x.manifest};
  auto lib = impl_->opts.opener ? impl_->opts.opener(checked)
                                : OpenInProcess(checked, impl_->opts.host_api);
  if (!lib) return refused_after_open(lib.error());
  // init returned 0: only now is the version deployed (its floor raised). A deploy refused here
  // (another host deployed a higher version since the attempt row) unloads the plugin.
  if (out->attempted) {
    if (Status s = LoaderPipeline::RecordDeploy(*impl_, *out); !s.ok()) {
      lib->reset();
      return refused_after_open(s);
    }
    v.ledger = "recorded";
  }
  CLAWGUARD_RETURN_IF_ERROR(LoaderPipeline::LogDecision(*impl_, v));
  return LoadedPlugin(std::move(*lib), x.manifest, v);
}

}  // namespace clawguard
