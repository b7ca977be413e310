// file_io.h — bounded reads and atomic writes.
#ifndef CLAWGUARD_FILE_IO_H_
#define CLAWGUARD_FILE_IO_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "clawguard/error.h"

namespace clawguard {

// ReadFileBounded reads a whole regular file of at most |max_size| bytes, through one open fd
// (fstat of the opened file, not of the path). Returns kFileUnreadable if missing, unreadable or
// not a regular file; |too_large| (default kFileUnreadable) when it exceeds |max_size|.
Result<std::string> ReadFileBounded(const std::string& path, uint64_t max_size,
                                    Reason too_large = Reason::kFileUnreadable);

// WriteFileAtomic writes |bytes| to a temp file beside |path|, fsyncs it, renames it over |path|
// and fsyncs the directory. |mode| is the new file's mode. Returns kInternal on failure.
Status WriteFileAtomic(const std::string& path, std::string_view bytes, unsigned mode = 0644);

}  // namespace clawguard

#endif  // CLAWGUARD_FILE_IO_H_
