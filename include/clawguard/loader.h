// loader.h — Loader: the gate in front of dlopen (ARCHITECTURE.md "Verification (loader)").
//
// Loader::Verify runs the ordered pipeline on one package and returns a Verdict:
//   open the package (a regular file ≤ max_package) and read the bundle → unsigned /
//   package_too_large; parse bundle + statement (in-toto payload type) → bundle_invalid /
//   algorithm_refused; count signatures (chain_verifier.h) → chain_untrusted … threshold_not_met;
//   only then read the package and hash the bytes read; statement subject sha256 == package
//   sha256 → digest_mismatch;
//   predicate version is SemVer without +build → manifest_invalid;
//   allowlist (signature, version not lower than the ledger's allowlist floor, not expired,
//     entry) → allowlist_invalid / allowlist_expired / not_allowlisted;
//   ledger (when given): the chain verifies and holds every checkpoint this loader knows →
//     ledger_tampered (checked first: a tampered ledger cannot be trusted for the next two), no
//     other digest for name+version → version_overwritten, not lower than the highest deployed →
//     version_rollback (unless rollback: allow);
//   archive (only now decompressed) → archive_unsafe / manifest_invalid / file_digest_mismatch;
//   ELF → elf_unsafe; manifest abi == CLAWGUARD_PLUGIN_ABI → abi_mismatch;
//   with record: Ledger::Record of the allowlist row and the deploy row (the rules applied again
//     inside each transaction) → version_overwritten / version_rollback / allowlist_invalid.
// Loader::Load = the same checks, then Ledger::Record(attempt) — an overwrite or a rollback
// found there is refused before any plugin code runs, and attempt rows raise no floor — then the
// sealed-memfd dlopen and init (load_failed / abi_mismatch), and only once init returned 0 the
// allowlist and deploy rows (a deploy refused there, by a higher version another host deployed
// meanwhile, unloads the plugin: version_rollback). A package refused after dlopen leaves an
// attempt row and no deploy row, so it never blocks the last good version. In `mode: audit`,
// publisher_not_allowed, not_allowlisted, allowlist_expired, cert_expired, cert_revoked and
// version_rollback are relaxed: the verdict is then "audit" naming the would-be reason, and such
// a load is never recorded in the ledger.
//
// Anchors: the chain must hold the checkpoint of the anchor file (LoaderOptions::anchor_path;
// ledger_anchor.h) and the audit log's last {"event":"ledger_checkpoint","count":N,"head":"…"}
// line; each append this loader makes rewrites the anchor file and adds a checkpoint line. When
// neither exists and the ledger already has rows, the verified head is trusted on first use: the
// anchor file is written with trust_on_first_use, the audit log gets
// {"event":"ledger_anchor_adopted",…} and the verdict a warning (ledger_anchor() shows it; the
// host puts it in /readyz, `clawguard audit` grades it high). Without an anchor file configured
// and no audit log, every verdict that read a non-empty ledger carries a "not anchored" warning.
// Every decision is one JSON line in the audit log (VerdictToJson + "time").
//
// Public APIs never throw. Verify/Load are thread-safe; a Loader must outlive its LoadedPlugins.
#ifndef CLAWGUARD_LOADER_H_
#define CLAWGUARD_LOADER_H_

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "clawguard/clock.h"
#include "clawguard/error.h"
#include "clawguard/manifest.h"
#include "clawguard/plugin.h"
#include "clawguard/store/ledger.h"

namespace clawguard {

// PluginRuntime is a checked plugin brought to life: dlopen-ed in this process (the default), or
// in a worker process of its own (the host's sandbox: host/dispatch/plugin_worker.h).
class PluginRuntime {
 public:
  virtual ~PluginRuntime() = default;
  // plugin is the entry point's table when the plugin runs in this process; nullptr otherwise.
  virtual const cg_plugin* plugin() const = 0;
};

// CheckedLibrary is what Load hands a PluginOpener once every check passed: the exact library
// bytes it checked (valid during the call), the name for its memfd, and the signed manifest.
struct CheckedLibrary {
  std::string_view bytes;
  std::string memfd_name;
  const Manifest* manifest = nullptr;
};

// PluginOpener starts a checked library. It must run the plugin's init and succeed only if init
// returned 0 (the deploy row is recorded after it returns); refusals are kLoadFailed or
// kAbiMismatch.
using PluginOpener =
    std::function<Result<std::unique_ptr<PluginRuntime>>(const CheckedLibrary& library)>;

struct LoaderOptions {
  std::string trust_policy_path;
  std::string allowlist_path;
  Ledger* ledger = nullptr;                   // borrowed; nullable (ledger "skipped")
  const Clock* clock = nullptr;               // borrowed; null = SystemClock::Instance()
  std::optional<std::string> audit_log_path;  // JSON lines; also a source of the last checkpoint
  // The ledger anchor file (ledger_anchor.h); unset or empty: ledger-anchor.json beside the audit
  // log, none without an audit log.
  std::optional<std::string> anchor_path;
  const cg_host_api* host_api = nullptr;  // passed to each plugin's init (in-process loads)
  PluginOpener opener;                    // empty: the sealed memfd is dlopen-ed in this process
};

struct VerifyOptions {
  bool record = false;  // record the allowlist and deploy rows (needs a ledger; nothing is opened)
};

// LedgerAnchorStatus is how a Loader anchors the ledger chain (for /readyz).
struct LedgerAnchorStatus {
  std::string path;                            // the anchor file; "" when none is configured
  std::optional<LedgerCheckpoint> checkpoint;  // the latest checkpoint the chain must hold
  std::optional<LedgerCheckpoint> trust_on_first_use;  // adopted without proof, not yet confirmed
};
// LedgerAnchorStatusToJson: {"state": "anchored" | "trust_on_first_use" | "unanchored", "path",
// "count", "head", "trust_on_first_use": null | {"count", "head"}}.
nlohmann::json LedgerAnchorStatusToJson(const LedgerAnchorStatus& s);

enum class VerdictKind { kVerified, kRefused, kAudit };
std::string_view VerdictKindName(VerdictKind v);  // "verified" / "refused" / "audit"

// Verdict is one decision, shaped like `clawguard verify --json`.
struct Verdict {
  VerdictKind verdict = VerdictKind::kRefused;
  Reason reason = Reason::kOk;  // kOk when verified; the would-be reason for "audit"
  std::string detail;
  std::string package, sha256, name, version, publisher;
  std::vector<std::string> signers;
  std::string mode = "enforce";
  std::string ledger = "skipped";     // "checked" | "recorded" | "skipped"
  std::vector<std::string> warnings;  // e.g. leaves expiring within 30 days
  std::vector<std::string> relaxed;   // reason codes relaxed by audit mode
};

// VerdictToJson renders the exact `verify --json` object.
nlohmann::json VerdictToJson(const Verdict& v);

// LoadedPlugin owns a loaded plugin: its runtime (library and memfd, or worker), its manifest and
// verdict.
class LoadedPlugin {
 public:
  LoadedPlugin(LoadedPlugin&&) noexcept;
  LoadedPlugin& operator=(LoadedPlugin&&) noexcept;
  ~LoadedPlugin();
  // plugin is the entry point's table when the plugin runs in this process (valid while this
  // object lives); nullptr when it runs elsewhere (runtime()).
  const cg_plugin* plugin() const;
  PluginRuntime* runtime() const { return runtime_.get(); }
  const Manifest& manifest() const { return manifest_; }
  const Verdict& verdict() const { return verdict_; }

 private:
  friend class Loader;
  LoadedPlugin(std::unique_ptr<PluginRuntime> runtime, Manifest manifest, Verdict verdict);
  std::unique_ptr<PluginRuntime> runtime_;
  Manifest manifest_;
  Verdict verdict_;
};

class Loader {
 public:
  // Create loads and checks the trust policy (kConfigInvalid, exit 2), reads the anchor file and
  // the audit log's last checkpoint (kConfigInvalid when either path is not a regular file;
  // kLedgerTampered when the anchor file is not a valid anchor).
  static Result<std::unique_ptr<Loader>> Create(LoaderOptions options);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Verify decides on |package_path| (its bundle is package_path + ".sig"). A refusal is a
  // Verdict (verdict kRefused); an error Status means an operational failure (exit 2:
  // kStoreUnavailable, kInternal, kConfigInvalid).
  Result<Verdict> Verify(const std::string& package_path, VerifyOptions options = {});
  // Load verifies (recording when a ledger is given) and loads. Refusals are the Status.
  Result<LoadedPlugin> Load(const std::string& package_path);

  std::string mode() const;
  // ledger_anchor says what the chain is checked against now.
  LedgerAnchorStatus ledger_anchor() const;

 private:
  struct Impl;
  friend class LoaderPipeline;  // loader.cpp
  explicit Loader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace clawguard

#endif  // CLAWGUARD_LOADER_H_
