// sign.h — `clawguard sign`: the bundle for a package (in-toto statement) or an allowlist
// (its exact bytes), signed by a Signer, verified, recorded in the ledger, then written.
//
// Two phases so that cheap checks come before any HSM work (minisign):
//   Prepare*  reads the inputs once (bounded), hashes the package once while reading it in
//             chunks, keeps only its first 4 MiB, from which the first entry (manifest.yaml) is
//             read (a 64 MiB package costs one pass and 4 MiB of memory), builds the payload
//             and reads the chain;
//   SignPrepared signs PAE(payloadType, payload) under the token key's canonical keyid
//             (bundle.h KeyIdOf), checks the leaf holds that key (compared canonically: a
//             certificate that writes the point compressed still names it),
//             merges with an existing bundle under --append, verifies its own output (the bundle
//             round-trips through ParseBundle and every signature verifies with its leaf key),
//             records the release row in the ledger, and only then writes TARGET.sig atomically.
// --append: the existing TARGET.sig must carry a byte-identical payload (kManifestInvalid for a
// package, kBundleInvalid for an allowlist). A key that already signed it is a no-op (exit 0,
// already_signed=true): re-running a pipeline step is safe and never duplicates a keyid.
// Without --append an existing TARGET.sig is replaced. Not thread-safe (the Signer is not).
#ifndef CLAWGUARD_SIGNER_SIGN_H_
#define CLAWGUARD_SIGNER_SIGN_H_

#include <optional>
#include <string>
#include <vector>

#include "clawguard/bundle.h"
#include "clawguard/error.h"
#include "clawguard/ossl.h"
#include "clawguard/store/ledger.h"
#include "signer/signer.h"

namespace clawguard::signer {

struct PreparedPayload {
  std::string target_path;  // the package or allowlist file
  std::string sig_path;     // target_path + ".sig"
  std::string payload_type;
  std::string payload;  // statement JSON, or the allowlist's exact bytes
  bool is_package = false;
  std::string name, version, publisher,
      sha256;  // packages: from the manifest; sha256 of the package bytes
  std::vector<ossl::UniquePtr<X509>> chain;  // leaf first, then intermediates
};

// PreparePackage reads PKG (≤ limits::kDefaultMaxPackage: kPackageTooLarge; missing, or not a
// regular file — a FIFO is refused without blocking: kFileUnreadable), its first entry
// manifest.yaml (kManifestInvalid if it is not first, does not parse, or lacks a file digest: run
// `clawguard pack`), and the PEM chain (kFileUnreadable, kConfigInvalid if it holds no certificate
// or more than limits::kMaxChainLength).
Result<PreparedPayload> PreparePackage(const std::string& package_path,
                                       const std::string& chain_path);

// PrepareAllowlist reads allowlist.yaml (≤ limits::kMaxPolicyFile) and the chain; the payload
// is the file's exact bytes with payloadType kAllowlistPayloadType.
Result<PreparedPayload> PrepareAllowlist(const std::string& allowlist_path,
                                         const std::string& chain_path);

struct SignOutcome {
  std::string sig_path;
  std::string keyid;
  size_t signatures = 0;               // in the written bundle
  bool already_signed = false;         // --append and this key had signed: nothing written
  std::optional<LedgerAppend> ledger;  // set when a ledger was given (packages only)
  std::vector<std::string> warnings;   // e.g. the leaf's O is not the publisher
};

// SignPrepared signs and writes (see the file comment). |ledger| null means --no-ledger.
// Reasons: kCertKeyMismatch (leaf ≠ signer key), kFileUnreadable (--append without a bundle),
// kBundleInvalid / kManifestInvalid (--append onto another payload), kVersionOverwritten and
// kStoreUnavailable from the ledger (nothing written), kInternal (signing or writing failed).
Result<SignOutcome> SignPrepared(const PreparedPayload& prepared, Signer& signer, Ledger* ledger,
                                 bool append);

}  // namespace clawguard::signer

#endif  // CLAWGUARD_SIGNER_SIGN_H_
