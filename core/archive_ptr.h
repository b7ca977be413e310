// archive_ptr.h — one RAII owner per libarchive handle type: ArchiveReader, ArchiveWriter and
// ArchiveEntry. No archive_*_free call appears outside these deleters.
//
// Internal (not installed): header-only, for the rooms that link LibArchive::LibArchive (signer,
// loader) and their tests; ClawGuard::core itself does not link libarchive.
#ifndef CLAWGUARD_CORE_ARCHIVE_PTR_H_
#define CLAWGUARD_CORE_ARCHIVE_PTR_H_

#include <archive.h>
#include <archive_entry.h>

#include <memory>

namespace clawguard {

// ArchiveReadFree closes and frees a read handle (archive_read_new).
struct ArchiveReadFree {
  void operator()(archive* a) const { archive_read_free(a); }
};
// ArchiveWriteFree closes and frees a write handle (archive_write_new); a handle not closed yet
// is closed first, which writes out what it still buffers.
struct ArchiveWriteFree {
  void operator()(archive* a) const { archive_write_free(a); }
};
// ArchiveEntryFree frees an entry the caller made (archive_entry_new); never one a reader hands
// out from archive_read_next_header, which the reader owns.
struct ArchiveEntryFree {
  void operator()(archive_entry* e) const { archive_entry_free(e); }
};

// ArchiveReader owns one libarchive read handle.
using ArchiveReader = std::unique_ptr<archive, ArchiveReadFree>;
// ArchiveWriter owns one libarchive write handle.
using ArchiveWriter = std::unique_ptr<archive, ArchiveWriteFree>;
// ArchiveEntry owns one entry made with archive_entry_new.
using ArchiveEntry = std::unique_ptr<archive_entry, ArchiveEntryFree>;

}  // namespace clawguard

#endif  // CLAWGUARD_CORE_ARCHIVE_PTR_H_
