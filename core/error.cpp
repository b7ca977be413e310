// error.cpp — names, meanings and exit codes of the stable reason codes.
#include "clawguard/error.h"

#include <array>
#include <cstdio>

namespace clawguard {
namespace {

struct ReasonInfo {
  Reason reason;
  std::string_view name;
  std::string_view meaning;
  int exit_code;
};

// One row per Reason, in enum order (checked by error_test).
constexpr std::array kReasons = {
    ReasonInfo{Reason::kOk, "ok", "success", 0},
    ReasonInfo{Reason::kUnsigned, "unsigned",
               "the package or its .sig bundle is missing or unreadable", 1},
    ReasonInfo{Reason::kPackageTooLarge, "package_too_large",
               "the package is larger than limits.max_package", 1},
    ReasonInfo{Reason::kBundleInvalid, "bundle_invalid",
               "the signature bundle or its statement is malformed", 1},
    ReasonInfo{Reason::kAlgorithmRefused, "algorithm_refused",
               "a signature or certificate algorithm is weak or unknown", 1},
    ReasonInfo{Reason::kChainUntrusted, "chain_untrusted",
               "the certificate chain does not build to a pinned root with the codeSigning EKU", 1},
    ReasonInfo{Reason::kCertExpired, "cert_expired",
               "a certificate in the chain is expired or not yet valid", 1},
    ReasonInfo{Reason::kCertRevoked, "cert_revoked", "a certificate or key in the chain is revoked",
               1},
    ReasonInfo{Reason::kPublisherNotAllowed, "publisher_not_allowed",
               "the signer's organisation is not the publisher or may not sign this name", 1},
    ReasonInfo{Reason::kSignatureInvalid, "signature_invalid",
               "a signature does not verify over the DSSE PAE", 1},
    ReasonInfo{Reason::kThresholdNotMet, "threshold_not_met",
               "fewer distinct trusted keys signed than the policy threshold", 1},
    ReasonInfo{Reason::kDigestMismatch, "digest_mismatch",
               "the package's sha256 differs from the signed statement's subject", 1},
    ReasonInfo{Reason::kAllowlistInvalid, "allowlist_invalid",
               "the allowlist is malformed, badly signed, or older than one already seen", 1},
    ReasonInfo{Reason::kAllowlistExpired, "allowlist_expired", "the allowlist has expired", 1},
    ReasonInfo{Reason::kNotAllowlisted, "not_allowlisted",
               "this name, version and sha256 are not in the allowlist", 1},
    ReasonInfo{Reason::kVersionOverwritten, "version_overwritten",
               "another digest was already recorded for this name and version", 1},
    ReasonInfo{Reason::kVersionRollback, "version_rollback",
               "the version is lower than the highest deployed one", 1},
    ReasonInfo{Reason::kLedgerTampered, "ledger_tampered",
               "the ledger's hash chain is broken or does not hold the last checkpoint", 1},
    ReasonInfo{Reason::kArchiveUnsafe, "archive_unsafe",
               "the archive has unsafe entries or exceeds a limit", 1},
    ReasonInfo{Reason::kManifestInvalid, "manifest_invalid",
               "the manifest is malformed, not first, or differs from the signed predicate", 1},
    ReasonInfo{Reason::kFileDigestMismatch, "file_digest_mismatch",
               "a packaged file's sha256 differs from the manifest", 1},
    ReasonInfo{Reason::kElfUnsafe, "elf_unsafe", "the plugin library fails an ELF safety check", 1},
    ReasonInfo{Reason::kAbiMismatch, "abi_mismatch",
               "the plugin ABI is unsupported or differs from the manifest", 1},
    ReasonInfo{Reason::kLoadFailed, "load_failed",
               "the plugin library could not be loaded or initialised", 1},
    ReasonInfo{Reason::kHsmUnavailable, "hsm_unavailable",
               "the PKCS#11 module or token is unavailable", 2},
    ReasonInfo{Reason::kHsmLoginFailed, "hsm_login_failed", "the token refused the PIN", 2},
    ReasonInfo{Reason::kKeyNotFound, "key_not_found", "no key in the token matches the URI", 2},
    ReasonInfo{Reason::kKeyAmbiguous, "key_ambiguous", "more than one key matches the URI", 2},
    ReasonInfo{Reason::kKeyUriInvalid, "key_uri_invalid",
               "the PKCS#11 URI is malformed or carries pin-value or module-path", 2},
    ReasonInfo{Reason::kKeyExtractable, "key_extractable",
               "the key is extractable or not always sensitive", 1},
    ReasonInfo{Reason::kKeyImported, "key_imported",
               "the key was imported rather than generated in the token", 1},
    ReasonInfo{Reason::kCertKeyMismatch, "cert_key_mismatch",
               "the leaf certificate's public key is not the token key", 1},
    ReasonInfo{Reason::kFileUnreadable, "file_unreadable",
               "an input file is missing, unreadable or too large", 2},
    ReasonInfo{Reason::kRequestTooLarge, "request_too_large",
               "the request headers or body exceed the limits", 1},
    ReasonInfo{Reason::kNotFound, "not_found", "unknown plugin or route", 1},
    ReasonInfo{Reason::kHeaderConflict, "header_conflict", "webhook-* and svix-* headers differ",
               1},
    ReasonInfo{Reason::kTimestampOutOfTolerance, "timestamp_out_of_tolerance",
               "the webhook timestamp is outside the tolerance", 1},
    ReasonInfo{Reason::kIdempotencyKeyMissing, "idempotency_key_missing",
               "the business key is absent or of the wrong type", 1},
    ReasonInfo{Reason::kFingerprintMismatch, "fingerprint_mismatch",
               "the same idempotency key arrived with another payload", 1},
    ReasonInfo{Reason::kInProgress, "in_progress",
               "the idempotency key is being processed under a live lease", 1},
    ReasonInfo{Reason::kRateLimited, "rate_limited", "the plugin's rate limit is exceeded", 1},
    ReasonInfo{Reason::kBreakerOpen, "breaker_open", "the circuit breaker for this key is open", 1},
    ReasonInfo{Reason::kStoreUnavailable, "store_unavailable", "the store cannot be reached", 2},
    ReasonInfo{Reason::kPluginFailed, "plugin_failed",
               "the plugin failed or did not respond exactly once", 1},
    ReasonInfo{Reason::kPluginTimeout, "plugin_timeout", "the plugin exceeded its handler timeout",
               1},
    ReasonInfo{Reason::kErpPending, "erp_pending",
               "an ERP call of the event is in flight or queued; the host finishes it", 1},
    ReasonInfo{Reason::kPluginUnavailable, "plugin_unavailable",
               "the plugin's worker process stopped or the plugin is marked failed", 1},
    ReasonInfo{Reason::kExpiredKeySeen, "expired_key_seen",
               "a delivery arrived for a key past its retention", 1},
    ReasonInfo{Reason::kUsage, "usage", "the command line is not valid", 2},
    ReasonInfo{Reason::kConfigInvalid, "config_invalid",
               "a policy or configuration file was refused", 2},
    ReasonInfo{Reason::kInternal, "internal", "an operational error", 2},
};

constexpr bool TableInEnumOrder() {
  for (size_t i = 0; i < kReasons.size(); ++i) {
    if (static_cast<size_t>(kReasons[i].reason) != i) return false;
  }
  return true;
}
static_assert(TableInEnumOrder(), "kReasons must list every Reason in enum order");
static_assert(static_cast<size_t>(Reason::kInternal) + 1 == kReasons.size(),
              "a Reason is missing from kReasons");

const ReasonInfo& Info(Reason r) {
  const auto i = static_cast<size_t>(r);
  CLAWGUARD_CHECK(i < kReasons.size());
  return kReasons[i];
}

}  // namespace

std::string_view ReasonName(Reason r) { return Info(r).name; }
std::string_view ReasonMeaning(Reason r) { return Info(r).meaning; }
int ExitCodeFor(Reason r) { return Info(r).exit_code; }

std::optional<Reason> ReasonFromName(std::string_view name) {
  for (const auto& info : kReasons) {
    if (info.name == name) return info.reason;
  }
  return std::nullopt;
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string s(ReasonName(reason_));
  if (!message_.empty()) {
    s += ": ";
    s += message_;
  }
  return s;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(reason_, std::string(context) + ": " + message_);
}

namespace internal {
void CheckFailed(const char* cond, const char* file, int line) {
  std::fprintf(stderr, "CLAWGUARD_CHECK failed: %s at %s:%d\n", cond, file, line);
  std::abort();
}
}  // namespace internal

}  // namespace clawguard
