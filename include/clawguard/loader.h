// loader.h — Loader: the gate in front of dlopen (ARCHITECTURE.md "Verification (loader)").
//
// Loader::Verify runs the ordered pipeline on one package and returns a Verdict:
//   read package (≤ max_package) and bundle → unsigned / package_too_large; hash the bytes read;
//   parse bundle + statement (in-toto payload type) → bundle_invalid / algorithm_refused;
//   count signatures (chain_verifier.h) → chain_untrusted … threshold_not_met;
//   statement subject sha256 == package sha256 → digest_mismatch;
//   predicate version is SemVer without +build → manifest_invalid;
//   allowlist (signature, version not lower than seen, not expired, entry) →
//     allowlist_invalid / allowlist_expired / not_allowlisted;
//   ledger (when given): the chain verifies and holds the last checkpoint → ledger_tampered
//     (checked first: a tampered ledger cannot be trusted for the next two), no other digest for
//     name+version → version_overwritten, not lower than the highest deployed →
//     version_rollback (unless rollback: allow);
//   archive (only now decompressed) → archive_unsafe / manifest_invalid / file_digest_mismatch;
//   ELF → elf_unsafe; manifest abi == CLAWGUARD_PLUGIN_ABI → abi_mismatch;
//   with record: Ledger::Record(deploy) → version_overwritten (nothing opened).
// Loader::Load = Verify with recording (when a ledger is given) + the sealed-memfd dlopen
// (load_failed / abi_mismatch). In `mode: audit`, publisher_not_allowed, not_allowlisted,
// allowlist_expired, cert_expired, cert_revoked and version_rollback are relaxed: the verdict is
// then "audit" naming the would-be reason, and such a load is never recorded in the ledger.
// Every decision is one JSON line in the audit log (VerdictToJson + "time"); each ledger append
// adds {"event":"ledger_checkpoint","count":N,"head":"…"}.
//
// Public APIs never throw. Verify/Load are thread-safe; a Loader must outlive its LoadedPlugins.
#ifndef CLAWGUARD_LOADER_H_
#define CLAWGUARD_LOADER_H_

#include <nlohmann/json.hpp>

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

struct LoaderOptions {
  std::string trust_policy_path;
  std::string allowlist_path;
  Ledger* ledger = nullptr;                    // borrowed; nullable (ledger "skipped")
  const Clock* clock = nullptr;                // borrowed; null = SystemClock::Instance()
  std::optional<std::string> audit_log_path;   // JSON lines; also the source of the last checkpoint
  const cg_host_api* host_api = nullptr;       // passed to each plugin's init
};

struct VerifyOptions {
  bool record = false;  // record the deploy row (needs a ledger)
};

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
  std::string ledger = "skipped";      // "checked" | "recorded" | "skipped"
  std::vector<std::string> warnings;   // e.g. leaves expiring within 30 days
  std::vector<std::string> relaxed;    // reason codes relaxed by audit mode
};

// VerdictToJson renders the exact `verify --json` object.
nlohmann::json VerdictToJson(const Verdict& v);

class MemfdLibrary;

// LoadedPlugin owns a loaded plugin: its library, its memfd, its manifest and verdict.
class LoadedPlugin {
 public:
  LoadedPlugin(LoadedPlugin&&) noexcept;
  LoadedPlugin& operator=(LoadedPlugin&&) noexcept;
  ~LoadedPlugin();
  // plugin is the entry point's table; valid while this object lives.
  const cg_plugin* plugin() const;
  const Manifest& manifest() const { return manifest_; }
  const Verdict& verdict() const { return verdict_; }

 private:
  friend class Loader;
  LoadedPlugin(std::unique_ptr<MemfdLibrary> lib, Manifest manifest, Verdict verdict);
  std::unique_ptr<MemfdLibrary> lib_;
  Manifest manifest_;
  Verdict verdict_;
};

class Loader {
 public:
  // Create loads and checks the trust policy (kConfigInvalid, exit 2) and the last checkpoint
  // from the audit log.
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

 private:
  struct Impl;
  friend class LoaderPipeline;  // loader.cpp
  explicit Loader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace clawguard

#endif  // CLAWGUARD_LOADER_H_
