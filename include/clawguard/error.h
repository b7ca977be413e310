// error.h — the one error type of ClawGuard: stable reason codes, Status and Result<T>.
//
// Reason values are the reason codes of ARCHITECTURE.md ("Reason codes") and never change
// spelling: they appear in JSON output, audit logs and problem+json types. ReasonName() covers
// every value (tests/core/error_test.cpp walks them all). Result<T> is shaped like
// std::expected<T, Status> so it can become one when the toolchain has it.
#ifndef CLAWGUARD_ERROR_H_
#define CLAWGUARD_ERROR_H_

#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace clawguard {

enum class Reason {
  kOk = 0,  // not an error

  // ---- Loader (refusals: exit 1) ----
  kUnsigned,             // package or its .sig bundle is missing or unreadable
  kPackageTooLarge,      // package exceeds limits.max_package
  kBundleInvalid,        // bundle/statement JSON malformed, duplicate key, wrong payloadType/shape
  kAlgorithmRefused,     // signature or certificate algorithm is weak or unknown
  kChainUntrusted,       // no chain to a pinned root, missing/wrong EKU, CA:false issuer, pathlen
  kCertExpired,          // a certificate in the chain is expired or not yet valid
  kCertRevoked,          // certificate or key revoked (policy list or CRL)
  kPublisherNotAllowed,  // leaf subject O missing/duplicated/≠ publisher, or may not sign this name
  kSignatureInvalid,     // signature does not verify over the DSSE PAE
  kThresholdNotMet,      // every present signature counted but fewer distinct keys than threshold
  kDigestMismatch,       // statement subject sha256 ≠ sha256 of the package bytes
  kAllowlistInvalid,     // allowlist unreadable, badly signed, or version lower than seen
  kAllowlistExpired,     // allowlist `expires` is in the past
  kNotAllowlisted,       // name/version/sha256 not in the allowlist
  kVersionOverwritten,  // another digest was recorded for this name+version
  kVersionRollback,     // version lower than the highest deployed
  kLedgerTampered,      // the ledger chain is broken or does not hold the last checkpoint
  kArchiveUnsafe,       // hostile archive: paths, links, devices, duplicates, limits, ratio
  kManifestInvalid,     // manifest malformed, not first, ≠ predicate, +build version, bad digest
  kFileDigestMismatch,  // a packaged file's sha256 differs from the manifest
  kElfUnsafe,           // ELF fails a check (machine, RPATH, TEXTREL, stack, NEEDED, entry symbol)
  kAbiMismatch,         // plugin ABI unsupported or ≠ the manifest's
  kLoadFailed,          // dlopen or init failed, or the handle was already held

  // ---- Signer (exit 1 for refusals, 2 for operational errors; see ExitCodeFor) ----
  kHsmUnavailable,   // PKCS#11 module cannot be loaded or initialised, or the token is absent
  kHsmLoginFailed,   // C_Login refused the PIN (or the PIN source is unusable)
  kKeyNotFound,      // no key matches the URI
  kKeyAmbiguous,     // more than one key matches the URI
  kKeyUriInvalid,    // the PKCS#11 URI is malformed or carries pin-value/module-path
  kKeyExtractable,   // the key is extractable or not always sensitive
  kKeyImported,      // the key was imported (CKA_LOCAL false) without --allow-imported-key
  kCertKeyMismatch,  // the leaf certificate's public key is not the token key
  kFileUnreadable,   // an input file is missing, unreadable or too large

  // ---- Host (problem+json types) ----
  kRequestTooLarge,          // 413: headers or body over the limits
  kNotFound,                 // 404: unknown plugin or route
  kHeaderConflict,           // 400: webhook-* and svix-* differ
  kTimestampOutOfTolerance,  // 401: webhook-timestamp outside ±tolerance
  kIdempotencyKeyMissing,    // 400: business key absent or of a wrong type
  kFingerprintMismatch,      // 422: same key, other fingerprint
  kInProgress,               // 409: a live lease holds the key
  kRateLimited,              // 429: per-plugin rate limit
  kBreakerOpen,              // 503: per-key breaker open
  kStoreUnavailable,         // 503 / exit 2: the store cannot be reached
  kPluginFailed,             // 500: plugin returned non-zero or did not respond exactly once
  kPluginTimeout,            // 503: plugin exceeded handler_timeout
  kErpPending,               // 503: the plugin stopped on an ERP call the outbox still owns
  kPluginUnavailable,        // 503: the plugin's worker crashed, was killed, or the plugin failed
  kExpiredKeySeen,           // 409: tombstone hit after retention

  // ---- Generic (exit 2) ----
  kUsage,          // bad command-line usage
  kConfigInvalid,  // a policy or configuration file was refused (file:line in the message)
  kInternal,       // an operational failure with no more specific code (I/O, OpenSSL, ...)
};

// ReasonName returns the stable snake_case code of |r| ("ok" for kOk).
std::string_view ReasonName(Reason r);

// ReasonMeaning returns a one-line description of when |r| is returned.
std::string_view ReasonMeaning(Reason r);

// ReasonFromName parses a stable code; nullopt if unknown.
std::optional<Reason> ReasonFromName(std::string_view name);

// ExitCodeFor maps a reason to the CLI exit code of ARCHITECTURE.md: 0 ok, 1 refused, 2 usage,
// configuration or operational error.
int ExitCodeFor(Reason r);

// Status is a reason plus a message a person can act on (never a secret).
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Reason reason, std::string message) : reason_(reason), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return reason_ == Reason::kOk; }
  Reason reason() const { return reason_; }
  const std::string& message() const { return message_; }
  // ToString renders "reason_name: message".
  std::string ToString() const;
  // WithContext prefixes the message with |context| ("context: message").
  Status WithContext(std::string_view context) const;

 private:
  Reason reason_ = Reason::kOk;
  std::string message_;
};

// Result<T> holds a T or a non-ok Status. Accessing value() of an error aborts.
template <typename T>
class [[nodiscard]] Result {
 public:
  // Implicit, as std::expected's: a function returning Result<T> returns a T or a Status.
  // NOLINTBEGIN(google-explicit-constructor)
  Result(T value) : v_(std::move(value)) {}
  Result(Status status) : v_(std::move(status)) {
    if (std::get<Status>(v_).ok()) std::abort();  // an ok Status is not an error
  }
  // NOLINTEND(google-explicit-constructor)

  bool has_value() const { return std::holds_alternative<T>(v_); }
  bool ok() const { return has_value(); }
  explicit operator bool() const { return has_value(); }

  T& value() & {
    Check();
    return std::get<T>(v_);
  }
  const T& value() const& {
    Check();
    return std::get<T>(v_);
  }
  T&& value() && {
    Check();
    return std::get<T>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // error() returns the Status; Ok() when a value is held.
  Status error() const { return has_value() ? Status::Ok() : std::get<Status>(v_); }
  Status status() const { return error(); }

 private:
  void Check() const {
    if (!has_value()) std::abort();
  }
  std::variant<T, Status> v_;
};

}  // namespace clawguard

// CLAWGUARD_CHECK aborts on a broken invariant (never a Status).
#define CLAWGUARD_CHECK(cond)                                                   \
  do {                                                                          \
    if (!(cond)) ::clawguard::internal::CheckFailed(#cond, __FILE__, __LINE__); \
  } while (0)

// CLAWGUARD_RETURN_IF_ERROR returns the Status of |expr| if it is an error.
#define CLAWGUARD_RETURN_IF_ERROR(expr)      \
  do {                                       \
    ::clawguard::Status cg_status_ = (expr); \
    if (!cg_status_.ok()) return cg_status_; \
  } while (0)

#define CLAWGUARD_CONCAT_INNER_(a, b) a##b
#define CLAWGUARD_CONCAT_(a, b) CLAWGUARD_CONCAT_INNER_(a, b)
// CLAWGUARD_ASSIGN_OR_RETURN(lhs, expr) assigns the value of a Result or returns its Status.
// |lhs| is not parenthesized: it may be a declaration.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define CLAWGUARD_ASSIGN_OR_RETURN(lhs, expr)               \
  auto CLAWGUARD_CONCAT_(cg_result_, __LINE__) = (expr);    \
  if (!CLAWGUARD_CONCAT_(cg_result_, __LINE__).ok())        \
    return CLAWGUARD_CONCAT_(cg_result_, __LINE__).error(); \
  lhs = std::move(CLAWGUARD_CONCAT_(cg_result_, __LINE__)).value()
// NOLINTEND(bugprone-macro-parentheses)

namespace clawguard::internal {
[[noreturn]] void CheckFailed(const char* cond, const char* file, int line);
}

#endif  // CLAWGUARD_ERROR_H_
