// package_manifest.h — ReadFirstEntryManifest: the exact manifest.yaml bytes of a package,
// read from its first entry only (the signer hashes and signs these; it never extracts the rest).
#ifndef CLAWGUARD_SIGNER_PACKAGE_MANIFEST_H_
#define CLAWGUARD_SIGNER_PACKAGE_MANIFEST_H_

#include <string>
#include <string_view>

#include "clawguard/error.h"

namespace clawguard::signer {

// ReadFirstEntryManifest decompresses |package_bytes| (zstd + tar, read from memory) only as far
// as its first entry and returns that entry's exact bytes. It does not parse them.
// Returns:
//   kArchiveUnsafe   — not a zstd-compressed tar, or libarchive cannot read the first header or
//                      its data (truncated, corrupt);
//   kManifestInvalid — the archive is empty, the first entry is not named exactly
//                      "manifest.yaml", is not a regular file (link, folder, ...), or is larger
//                      than limits::kMaxManifest.
// Thread-safe (no shared state). |package_bytes| is borrowed for the call.
Result<std::string> ReadFirstEntryManifest(std::string_view package_bytes);

}  // namespace clawguard::signer

#endif  // CLAWGUARD_SIGNER_PACKAGE_MANIFEST_H_
