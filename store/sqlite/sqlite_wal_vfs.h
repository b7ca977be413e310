// sqlite_wal_vfs.h — "clawguard-wal": the default unix VFS, except that a connection opened with
// it writes the WAL frames of one commit with one write() instead of two per frame.
//
// Why: SQLite appends each WAL frame with two pwrite() calls (its 24-byte header, then the page).
// In the host benchmark a first-time delivery's commits wrote ~14 frames: ~28 pwrite calls, 11 %
// of the host's CPU on this machine (a syscall is a hypervisor exit here). The SqliteWriter's
// connection opens the database with this VFS; every other connection uses the default one.
//
// What it changes: only how appended WAL bytes reach the file, never what reaches it or when a
// commit is complete. Writes to the WAL that continue the run being appended are kept in a buffer
// of this file handle; the buffer is written (one pwrite of the whole run, through the default
// VFS's xWrite, so short writes and ENOSPC are handled as before) when
//   - the page of a commit frame (a frame header whose "database size" field is not 0) has been
//     added: the write that ends the commit returns the result of writing the whole commit, so a
//     COMMIT that returns SQLITE_OK has all its frames in the file (the page cache), exactly as
//     before, and a failed write fails the COMMIT as before (the buffer is dropped; SQLite writes
//     those frames again);
//   - anything else reads or changes the file through this handle (read, sync, truncate, size,
//     close; not file controls, whose results SQLite may ignore) — so the connection's own reads
//     of frames it spilled before its commit see them, and nothing is ever synced or truncated
//     around unwritten bytes;
//   - the run would outgrow the buffer (kWalBufferBytes), or a write does not continue it.
// A write below the highest offset this handle has written (SQLite rewriting a frame or a header
// within one transaction, or the WAL header at a restart) is never buffered: it is written at once,
// after the buffer. Frames become visible to other connections only when SQLite publishes them in
// the wal-index, after the commit's writes returned, so they never read from an unwritten buffer.
// Safety net: the SqliteWriter calls FlushWalWrites after every COMMIT, before the batch counts as
// committed (so before a group flush — fdatasync on its own descriptor — can acknowledge it), so
// even a SQLite that wrote commits differently could not leave acknowledged bytes in the buffer;
// tests assert the buffer is empty after each commit, which would catch such a SQLite.
// Database files, journals and the shared-memory index are the default VFS's own objects.
#ifndef CLAWGUARD_STORE_SQLITE_SQLITE_WAL_VFS_H_
#define CLAWGUARD_STORE_SQLITE_SQLITE_WAL_VFS_H_

#include <sqlite3.h>

#include <cstddef>
#include <cstdint>

namespace clawguard::sqlite {

// kWalBufferBytes bounds one WAL file handle's buffer (a larger commit is written in runs of at
// most this size; a single write larger than it is not buffered): 29 frames of 4 KiB pages. It
// must stay below 128 KiB: the default unix VFS writes at most 0x1ffff bytes per xWrite call (it
// masks the length; os_unix.c, seekAndWriteFd) and reports a longer one as a short write,
// SQLITE_FULL (the large-commit test fails if this bound is raised past it).
inline constexpr size_t kWalBufferBytes = 120 * 1024;

// WalVfsName registers the VFS on first use (not as the default) and returns its name; nullptr
// if it could not be registered (then callers open with the default VFS).
const char* WalVfsName();

// FlushWalWrites writes what the WAL handle of |db|'s main database holds in its buffer (if it
// was opened through this VFS): SQLITE_OK, or the error of the write.
int FlushWalWrites(sqlite3* db);

// WalWriteCounts: calls of the default VFS's xWrite made for WAL files opened through this VFS,
// the WAL bytes written, the bytes buffered now across them, and the writes below what a handle
// had written already (rewrites, written at once) (for tests).
struct WalWriteCounts {
  int64_t writes = 0;
  int64_t bytes = 0;
  int64_t buffered = 0;
  int64_t rewrites = 0;
};
WalWriteCounts WalWriteCountsForTesting();

}  // namespace clawguard::sqlite

#endif  // CLAWGUARD_STORE_SQLITE_SQLITE_WAL_VFS_H_
