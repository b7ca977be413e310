// file_io.h — bounded reads and atomic writes.
#ifndef CLAWGUARD_FILE_IO_H_
#define CLAWGUARD_FILE_IO_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "clawguard/error.h"
#include "clawguard/sha256.h"
#include "clawguard/unique_fd.h"

namespace clawguard {

// OpenRegularFile opens |path| read-only for a caller that reads it itself. It never blocks and
// never opens a device: the path is looked at first (a FIFO, device, directory or socket is
// refused without being opened), then opened with O_NONBLOCK|O_NOCTTY|O_CLOEXEC (a FIFO swapped
// in meanwhile cannot hang the open), and the opened fd is fstat'ed — that, not the path, decides
// that it is a regular file. kFileUnreadable otherwise, saying "is not a regular file: it is a
// FIFO (named pipe)" (or what it is), followed by |hint| when given. Reads from a regular file
// ignore O_NONBLOCK. Every file the loader and signer read goes through here.
Result<UniqueFd> OpenRegularFile(const std::string& path, std::string_view hint = {});

// ReadFileBounded reads a whole regular file of at most |max_size| bytes, through one fd from
// OpenRegularFile (fstat of the opened file, not of the path). Returns kFileUnreadable if missing,
// unreadable, not a regular file, or if the host cannot allocate it; |too_large| (default
// kFileUnreadable) when it exceeds |max_size|. Never throws.
Result<std::string> ReadFileBounded(const std::string& path, uint64_t max_size,
                                    Reason too_large = Reason::kFileUnreadable);

// ReadOpenedFileBounded is ReadFileBounded on |fd|, already opened by OpenRegularFile (|path|
// names it in messages), read from its current offset. Never throws.
Result<std::string> ReadOpenedFileBounded(const UniqueFd& fd, const std::string& path,
                                          uint64_t max_size,
                                          Reason too_large = Reason::kFileUnreadable);

// HashedFile is a file's bytes and their SHA-256.
struct HashedFile {
  std::string bytes;
  Sha256Digest sha256{};
};

// ReadOpenedFileHashed is ReadOpenedFileBounded that also returns the SHA-256 of exactly the
// bytes returned, hashed on a second thread while the file is read (Sha256Behind). Never throws.
Result<HashedFile> ReadOpenedFileHashed(const UniqueFd& fd, const std::string& path,
                                        uint64_t max_size,
                                        Reason too_large = Reason::kFileUnreadable);

// AdviseHugePages asks the kernel to back the 2 MiB-aligned interior of [data, data + size) with
// transparent huge pages when they are first touched (madvise MADV_HUGEPAGE; advice only, errors
// ignored). For buffers of many MiB that are about to be filled once: a 64 MiB buffer then costs
// 32 page faults instead of 16,384. Call it before the first write; smaller ranges are left alone.
void AdviseHugePages(const void* data, size_t size);

// WriteFileAtomic writes |bytes| to a temp file beside |path|, fsyncs it, renames it over |path|
// and fsyncs the directory. |mode| is the new file's mode. Returns kInternal on failure.
Status WriteFileAtomic(const std::string& path, std::string_view bytes, unsigned mode = 0644);

}  // namespace clawguard

#endif  // CLAWGUARD_FILE_IO_H_
