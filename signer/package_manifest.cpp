// package_manifest.cpp — see package_manifest.h.
#include "signer/package_manifest.h"

#include <archive.h>
#include <archive_entry.h>

#include <memory>

#include "clawguard/limits.h"
#include "clawguard/manifest.h"
#include "core/archive_ptr.h"

namespace clawguard::signer {
namespace {

Status Unsafe(archive* a, const std::string& what) {
  const char* detail = archive_error_string(a);
  return Status(Reason::kArchiveUnsafe, "package is not a readable zstd-compressed tar: " + what +
                                            (detail ? std::string(": ") + detail : std::string()));
}
Status NotFirst(const std::string& m) { return Status(Reason::kManifestInvalid, m); }

}  // namespace

Result<std::string> ReadFirstEntryManifest(std::string_view package_bytes) {
  ArchiveReader a(archive_read_new());
  if (!a) return Status(Reason::kInternal, "cannot read the package: out of memory");
  // Only zstd and tar: nothing else is a package, and every extra decoder is attack surface.
  if (archive_read_support_filter_zstd(a.get()) != ARCHIVE_OK ||
      archive_read_support_format_tar(a.get()) != ARCHIVE_OK) {
    return Status(Reason::kInternal, "this libarchive cannot read zstd-compressed tar");
  }
  if (archive_read_open_memory(a.get(), package_bytes.data(), package_bytes.size()) != ARCHIVE_OK) {
    return Unsafe(a.get(), "cannot open it");
  }
  archive_entry* entry = nullptr;  // owned by the reader, valid until the next header
  const int rc = archive_read_next_header(a.get(), &entry);
  if (rc == ARCHIVE_EOF) return NotFirst("package is empty; manifest.yaml must be its first entry");
  // ARCHIVE_WARN too: a header libarchive had to guess at is not one to sign (fail closed).
  if (rc != ARCHIVE_OK) return Unsafe(a.get(), "cannot read the first entry's header");
  if (archive_filter_count(a.get()) != 2 ||
      archive_filter_code(a.get(), 0) != ARCHIVE_FILTER_ZSTD) {
    return Status(Reason::kArchiveUnsafe, std::string("package is compressed with '") +
                                              archive_filter_name(a.get(), 0) + "', expected zstd");
  }
  const char* name = archive_entry_pathname(entry);
  const std::string path = name ? name : "";
  if (path != kManifestFileName) {
    return NotFirst("the package's first entry is '" + path +
                    "'; manifest.yaml must come first (pack writes it so)");
  }
  if (archive_entry_filetype(entry) != AE_IFREG || archive_entry_hardlink(entry) != nullptr ||
      archive_entry_symlink(entry) != nullptr) {
    return NotFirst("the package's manifest.yaml is not a regular file");
  }
  if (!archive_entry_size_is_set(entry) || archive_entry_size(entry) < 0 ||
      static_cast<uint64_t>(archive_entry_size(entry)) > limits::kMaxManifest) {
    return NotFirst("the package's manifest.yaml is " + std::to_string(archive_entry_size(entry)) +
                    " bytes; the limit is " + std::to_string(limits::kMaxManifest));
  }
  const size_t size = static_cast<size_t>(archive_entry_size(entry));
  std::string out(size, '\0');
  size_t got = 0;
  while (got < size) {
    const la_ssize_t n = archive_read_data(a.get(), out.data() + got, size - got);
    if (n < 0) return Unsafe(a.get(), "cannot read manifest.yaml");
    if (n == 0)
      return Unsafe(a.get(), "manifest.yaml ends after " + std::to_string(got) + " of " +
                                 std::to_string(size) + " bytes");
    got += static_cast<size_t>(n);
  }
  return out;
}

}  // namespace clawguard::signer
