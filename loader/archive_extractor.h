// archive_extractor.h — ExtractPackage: the package archive (pax tar + zstd) read from the
// authenticated in-memory bytes, with every hostile-archive check of ARCHITECTURE.md.
//
// Called only after the signatures, the package digest and the allowlist have passed. Reads with
// libarchive (zstd filter + tar format only; an archive that is not zstd-compressed is refused).
// Refusals:
//   kArchiveUnsafe: more than max_entries entries; an entry over max_unpacked, or a total over
//     max_unpacked, or total/packed over max_ratio (actual bytes read, never header sizes: a
//     header's size only sizes an up-front reservation, capped at what max_unpacked and max_ratio
//     still allow for this package); a host out of memory while unpacking;
//     absolute paths, "..", backslashes, non-canonical paths; symlinks, hardlinks, devices,
//     fifos, directories, sparse files; duplicate or case-colliding names; a file the manifest
//     does not list; a compression other than zstd.
//   kManifestInvalid: the first entry is not manifest.yaml; its sha256 ≠ the predicate's
//     manifestSha256; it does not parse; ManifestToJson(parsed) ≠ the predicate's manifest or
//     name/version/publisher/abi ≠ the predicate's; a digest missing in the manifest; a listed
//     file absent from the archive (chosen over kFileDigestMismatch: the archive does not match
//     its manifest's file list, and no digest can even be computed).
//   kFileDigestMismatch: a file's sha256 differs from the manifest's.
// Thread-safe (no shared state); never throws (an allocation failure is kArchiveUnsafe).
#ifndef CLAWGUARD_LOADER_ARCHIVE_EXTRACTOR_H_
#define CLAWGUARD_LOADER_ARCHIVE_EXTRACTOR_H_

#include <string>
#include <string_view>

#include "clawguard/bundle.h"
#include "clawguard/error.h"
#include "clawguard/manifest.h"
#include "trust_policy.h"

namespace clawguard {

// ExtractedPackage is what a checked archive yields.
struct ExtractedPackage {
  Manifest manifest;
  std::string manifest_bytes;  // the exact manifest.yaml bytes
  std::string entry_bytes;     // the entry library's bytes (checked against the manifest)
  uint64_t unpacked_bytes = 0;
};

// ExtractPackage checks and extracts |package| (the bytes that were hashed and authenticated).
Result<ExtractedPackage> ExtractPackage(std::string_view package, const Statement& statement,
                                        const TrustLimits& limits);

}  // namespace clawguard

#endif  // CLAWGUARD_LOADER_ARCHIVE_EXTRACTOR_H_
