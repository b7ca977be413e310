// pack.h — PackPlugin: writes the deterministic plugin package NAME-VERSION.claw
// (ARCHITECTURE.md "Plugin package").
//
// The package is a pax tar (libarchive "pax restricted": plain ustar headers unless a path needs
// an extended one), zstd level 6 on one thread. Its first entry is manifest.yaml — the manifest
// re-rendered with every file's sha256 filled in — then the listed files sorted by path. Every
// entry is a regular file with mtime 0, uid/gid 0, empty uname/gname and mode 0644 (0755 for
// the entry library), so the same inputs give the same bytes whatever the source files' times,
// owners or modes and whatever the umask.
#ifndef CLAWGUARD_SIGNER_PACK_H_
#define CLAWGUARD_SIGNER_PACK_H_

#include <map>
#include <optional>
#include <string>

#include "clawguard/error.h"
#include "clawguard/manifest.h"

namespace clawguard::signer {

// PackResult describes a written package.
struct PackResult {
  std::string package_path;  // out_dir/NAME-VERSION.claw
  std::string sha256_hex;    // of the package bytes, 64 lowercase hex characters
  Manifest manifest;         // the manifest as packed, every digest filled in
};

// PackPlugin packs exactly the files that |manifest_path| lists, read under |root| (default: the
// manifest's folder); it never scans the folder, so unlisted files stay out. The package is
// written atomically (temp file + rename) into |out_dir|, which is created if missing.
// Returns:
//   kManifestInvalid — the manifest does not parse (file:line), is over limits::kMaxManifest, or
//     a digest it gives does not match the file's bytes;
//   kFileUnreadable  — the manifest or a listed file is missing or unreadable, is a symlink (at
//     any depth under |root|) or not a regular file;
//   kPackageTooLarge — the listed files, or the package, exceed limits::kDefaultMaxPackage bytes;
//   kInternal        — libarchive failed, or the output cannot be written.
// Thread-safe (no shared state).
Result<PackResult> PackPlugin(const std::string& manifest_path,
                              const std::optional<std::string>& root, const std::string& out_dir);

// BuildPackage renders the archive bytes for |manifest| (every digest already filled in) and the
// contents of its files (|contents| holds exactly the manifest's paths). Deterministic.
// Returns kManifestInvalid if |contents| and the manifest's files differ, kInternal if
// libarchive fails.
Result<std::string> BuildPackage(const Manifest& manifest,
                                 const std::map<std::string, std::string>& contents);

}  // namespace clawguard::signer

#endif  // CLAWGUARD_SIGNER_PACK_H_
