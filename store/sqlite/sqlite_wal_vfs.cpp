// sqlite_wal_vfs.cpp — the "clawguard-wal" VFS (see the header).
#include "sqlite/sqlite_wal_vfs.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "sqlite/sqlite_db.h"

namespace clawguard::sqlite {
namespace {

constexpr int kFrameHeaderBytes = 24;  // a WAL frame header (sqlite/src/wal.c, "WAL FRAME HEADER")

sqlite3_vfs* g_default = nullptr;  // the VFS this one forwards to
sqlite3_vfs g_vfs;
std::atomic<int64_t> g_writes{0};
std::atomic<int64_t> g_bytes{0};
std::atomic<int64_t> g_buffered{0};
std::atomic<int64_t> g_rewrites{0};

// WalFile is the memory SQLite allocates for a WAL file opened through this VFS (szOsFile bytes):
// this header, then the default VFS's file. Any other file is the default VFS's file itself, at
// the start of the allocation, with the default methods.
struct WalFile {
  sqlite3_file base;   // pMethods = &kWalMethods
  sqlite3_file* real;  // the default VFS's file, at kRealOffset
  unsigned char* buf;  // kWalBufferBytes, allocated on first use
  size_t len;          // bytes buffered
  sqlite3_int64 off;   // the file offset of buf[0]
  sqlite3_int64 high;  // the highest offset + 1 this handle wrote or buffered since the WAL header
  bool commit_next;    // the last buffered write was the header of a commit frame
};

constexpr size_t kRealOffset = (sizeof(WalFile) + 15) & ~size_t{15};

WalFile* Wal(sqlite3_file* f) { return reinterpret_cast<WalFile*>(f); }
const sqlite3_io_methods& Real(WalFile* w) { return *w->real->pMethods; }

uint32_t BigEndian32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

int WriteThrough(WalFile* w, const void* data, size_t n, sqlite3_int64 off) {
  g_writes.fetch_add(1, std::memory_order_relaxed);
  g_bytes.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed);
  return Real(w).xWrite(w->real, data, static_cast<int>(n), off);
}

// Flush writes the buffer; it is empty afterwards whatever the result (on failure SQLite fails the
// transaction and writes those frames again).
int Flush(WalFile* w) {
  w->commit_next = false;
  if (w->len == 0) return SQLITE_OK;
  const size_t n = w->len;
  w->len = 0;
  g_buffered.fetch_sub(static_cast<int64_t>(n), std::memory_order_relaxed);
  return WriteThrough(w, w->buf, n, w->off);
}

int WalClose(sqlite3_file* f) {
  WalFile* w = Wal(f);
  const int flushed = Flush(w);
  const int closed = Real(w).xClose(w->real);
  std::free(w->buf);
  w->buf = nullptr;
  return flushed != SQLITE_OK ? flushed : closed;
}

int WalRead(sqlite3_file* f, void* data, int amt, sqlite3_int64 off) {
  WalFile* w = Wal(f);
  if (const int rc = Flush(w); rc != SQLITE_OK) return rc;
  return Real(w).xRead(w->real, data, amt, off);
}

int WalWrite(sqlite3_file* f, const void* data, int amt, sqlite3_int64 off) {
  WalFile* w = Wal(f);
  const size_t n = static_cast<size_t>(amt);
  const sqlite3_int64 end = off + amt;
  // Appending: continues the buffered run, or starts one at or past everything written so far.
  // The WAL header (offset 0) and every rewrite below |high| are written at once.
  const bool appends =
      w->len > 0 ? off == w->off + static_cast<sqlite3_int64>(w->len) : off > 0 && off >= w->high;
  if (appends && w->buf == nullptr)
    w->buf = static_cast<unsigned char*>(std::malloc(kWalBufferBytes));
  if (!appends || n > kWalBufferBytes || w->buf == nullptr) {
    if (const int rc = Flush(w); rc != SQLITE_OK) return rc;
    if (off > 0 && off < w->high) g_rewrites.fetch_add(1, std::memory_order_relaxed);
    const int rc = WriteThrough(w, data, n, off);
    if (rc == SQLITE_OK) w->high = off == 0 ? end : std::max(w->high, end);
    return rc;
  }
  const bool ends_commit = w->commit_next;  // this is the page of a commit frame
  if (w->len + n > kWalBufferBytes) {
    if (const int rc = Flush(w); rc != SQLITE_OK) return rc;
  }
  if (w->len == 0) w->off = off;
  std::memcpy(w->buf + w->len, data, n);
  w->len += n;
  g_buffered.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed);
  w->high = std::max(w->high, end);
  if (ends_commit) return Flush(w);
  // A frame header's second word is the database size after the commit, 0 in other frames.
  w->commit_next =
      amt == kFrameHeaderBytes && BigEndian32(static_cast<const unsigned char*>(data) + 4) != 0;
  return SQLITE_OK;
}

int WalTruncate(sqlite3_file* f, sqlite3_int64 size) {
  WalFile* w = Wal(f);
  if (const int rc = Flush(w); rc != SQLITE_OK) return rc;
  const int rc = Real(w).xTruncate(w->real, size);
  if (rc == SQLITE_OK) w->high = std::min(w->high, size);
  return rc;
}

int WalSync(sqlite3_file* f, int flags) {
  WalFile* w = Wal(f);
  if (const int rc = Flush(w); rc != SQLITE_OK) return rc;
  return Real(w).xSync(w->real, flags);
}

int WalFileSize(sqlite3_file* f, sqlite3_int64* size) {
  WalFile* w = Wal(f);
  if (const int rc = Flush(w); rc != SQLITE_OK) return rc;
  return Real(w).xFileSize(w->real, size);
}

int WalLock(sqlite3_file* f, int level) { return Real(Wal(f)).xLock(Wal(f)->real, level); }
int WalUnlock(sqlite3_file* f, int level) { return Real(Wal(f)).xUnlock(Wal(f)->real, level); }
int WalCheckReservedLock(sqlite3_file* f, int* out) {
  return Real(Wal(f)).xCheckReservedLock(Wal(f)->real, out);
}

// Not flushed first: SQLite ignores the result of some file controls (hints), so a write that
// failed here could go unnoticed; no file control reads or syncs the WAL's contents.
int WalFileControl(sqlite3_file* f, int op, void* arg) {
  return Real(Wal(f)).xFileControl(Wal(f)->real, op, arg);
}

int WalSectorSize(sqlite3_file* f) { return Real(Wal(f)).xSectorSize(Wal(f)->real); }
int WalDeviceCharacteristics(sqlite3_file* f) {
  return Real(Wal(f)).xDeviceCharacteristics(Wal(f)->real);
}

// SQLite maps and locks shared memory and pages through the database file, never the WAL; these
// forward in case a future SQLite does.
int WalShmMap(sqlite3_file* f, int page, int size, int extend, void volatile** out) {
  return Real(Wal(f)).xShmMap(Wal(f)->real, page, size, extend, out);
}
int WalShmLock(sqlite3_file* f, int offset, int n, int flags) {
  return Real(Wal(f)).xShmLock(Wal(f)->real, offset, n, flags);
}
void WalShmBarrier(sqlite3_file* f) { Real(Wal(f)).xShmBarrier(Wal(f)->real); }
int WalShmUnmap(sqlite3_file* f, int delete_flag) {
  return Real(Wal(f)).xShmUnmap(Wal(f)->real, delete_flag);
}
int WalFetch(sqlite3_file* f, sqlite3_int64 off, int amt, void** out) {
  WalFile* w = Wal(f);
  *out = nullptr;
  if (const int rc = Flush(w); rc != SQLITE_OK) return rc;
  return Real(w).iVersion >= 3 ? Real(w).xFetch(w->real, off, amt, out) : SQLITE_OK;
}
int WalUnfetch(sqlite3_file* f, sqlite3_int64 off, void* p) {
  WalFile* w = Wal(f);
  return Real(w).iVersion >= 3 ? Real(w).xUnfetch(w->real, off, p) : SQLITE_OK;
}

const sqlite3_io_methods kWalMethods = {
    3,
    WalClose,
    WalRead,
    WalWrite,
    WalTruncate,
    WalSync,
    WalFileSize,
    WalLock,
    WalUnlock,
    WalCheckReservedLock,
    WalFileControl,
    WalSectorSize,
    WalDeviceCharacteristics,
    WalShmMap,
    WalShmLock,
    WalShmBarrier,
    WalShmUnmap,
    WalFetch,
    WalUnfetch,
};

int Open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* f, int flags, int* out_flags) {
  if ((flags & SQLITE_OPEN_WAL) == 0) return g_default->xOpen(g_default, name, f, flags, out_flags);
  WalFile* w = Wal(f);
  std::memset(static_cast<void*>(w), 0, sizeof(WalFile));
  w->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(f) + kRealOffset);
  const int rc = g_default->xOpen(g_default, name, w->real, flags, out_flags);
  w->base.pMethods = rc == SQLITE_OK ? &kWalMethods : nullptr;  // SQLite closes only opened files
  return rc;
}

const char* Register() {
  ConfigureSqlite();  // sqlite3_vfs_find initializes SQLite
  g_default = sqlite3_vfs_find(nullptr);
  if (g_default == nullptr) return nullptr;
  g_vfs = *g_default;  // every other method (and pAppData) is the default VFS's own
  g_vfs.pNext = nullptr;
  g_vfs.zName = "clawguard-wal";
  g_vfs.szOsFile = static_cast<int>(kRealOffset) + g_default->szOsFile;
  g_vfs.xOpen = Open;
  if (sqlite3_vfs_register(&g_vfs, /*makeDflt=*/0) != SQLITE_OK) return nullptr;
  return g_vfs.zName;
}

}  // namespace

const char* WalVfsName() {
  static const char* const name = Register();
  return name;
}

int FlushWalWrites(sqlite3* db) {
  sqlite3_file* f = nullptr;
  if (sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &f) != SQLITE_OK ||
      f == nullptr || f->pMethods != &kWalMethods) {
    return SQLITE_OK;  // no WAL open, or not one of ours: nothing buffered
  }
  return Flush(Wal(f));
}

WalWriteCounts WalWriteCountsForTesting() {
  return WalWriteCounts{g_writes.load(), g_bytes.load(), g_buffered.load(), g_rewrites.load()};
}

}  // namespace clawguard::sqlite
