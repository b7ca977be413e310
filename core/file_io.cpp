// file_io.cpp — bounded reads and atomic writes on POSIX fds.
#include "clawguard/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <new>
#include <stdexcept>

#include "clawguard/sha256.h"
#include "clawguard/unique_fd.h"

namespace clawguard {

namespace {

std::string_view FileTypeName(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISREG(mode)) return "a regular file";
  return "of an unknown type";
}

}  // namespace

Result<UniqueFd> OpenRegularFile(const std::string& path, std::string_view hint) {
  auto not_regular = [&](mode_t mode) {
    return Status(Reason::kFileUnreadable,
                  "'" + path + "' is not a regular file: it is " + std::string(FileTypeName(mode)) +
                      (hint.empty() ? std::string() : "; " + std::string(hint)));
  };
  // A first look by path keeps us from even opening a device (opening some has side effects);
  // the fstat of the opened fd below is what decides, since the path may change in between.
  struct stat before {};
  if (::stat(path.c_str(), &before) == 0 && !S_ISREG(before.st_mode))
    return not_regular(before.st_mode);
  // O_NONBLOCK: opening a FIFO without a writer would otherwise block forever (a hang at host
  // start); it changes nothing for a regular file.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) {
    return Status(Reason::kFileUnreadable, "cannot open '" + path + "': " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return Status(Reason::kFileUnreadable, "cannot stat '" + path + "': " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) return not_regular(st.st_mode);
  return fd;
}

namespace {

// ReadOpenedFile reads |fd| whole. With |hasher|, each chunk is published to it as soon as it
// is read, so that hashing runs behind the reads.
// |out| is the caller's, so that it outlives |hasher| on every path.
Status ReadOpenedFile(const UniqueFd& fd, const std::string& path, uint64_t max_size,
                      Reason too_large, std::string& out, Sha256Behind* hasher) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return Status(Reason::kFileUnreadable, "cannot stat '" + path + "': " + std::strerror(errno));
  }
  if (static_cast<uint64_t>(st.st_size) > max_size) {
    return Status(too_large, "'" + path + "' is " + std::to_string(st.st_size) +
                                 " bytes; the limit is " + std::to_string(max_size));
  }
  // Reserve exactly the size fstat reported and read it in chunks (each zero-filled only just
  // before it is read, in cache), then probe one byte: a file that grew since fstat is read on
  // in chunks (still bounded), without ever allocating more than needed up front.
  constexpr size_t kChunk = size_t{1} << 20;
  const size_t expected = static_cast<size_t>(st.st_size);
  out.clear();
  out.reserve(expected);
  AdviseHugePages(out.data(), out.capacity());
  auto read_some = [&](char* dst, size_t len) -> ssize_t {
    while (true) {
      const ssize_t n = ::read(fd.get(), dst, len);
      if (n < 0 && errno == EINTR) continue;
      return n;
    }
  };
  size_t got = 0;
  while (got < expected) {
    const size_t want = std::min(kChunk, expected - got);
    out.resize(got + want);  // within the reservation: the buffer never moves here
    const ssize_t n = read_some(out.data() + got, want);
    if (n < 0)
      return Status(Reason::kFileUnreadable, "cannot read '" + path + "': " + std::strerror(errno));
    got += static_cast<size_t>(n);
    out.resize(got);
    if (n == 0) break;  // shrank since fstat
    if (hasher != nullptr) hasher->Publish(out);
  }
  const bool shrank = got < expected;
  while (!shrank) {
    char chunk[65536];
    const ssize_t n = read_some(chunk, sizeof(chunk));
    if (n < 0)
      return Status(Reason::kFileUnreadable, "cannot read '" + path + "': " + std::strerror(errno));
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_size) {
      return Status(too_large, "'" + path + "' grew beyond the limit of " +
                                   std::to_string(max_size) + " bytes");
    }
    if (hasher != nullptr) hasher->Wait();  // the append below may move the buffer
    out.append(chunk, static_cast<size_t>(n));
    if (hasher != nullptr) hasher->Publish(out);
  }
  return Status::Ok();
}

// ReadOpenedFileInto is ReadOpenedFile that never throws.
Status ReadOpenedFileInto(const UniqueFd& fd, const std::string& path, uint64_t max_size,
                          Reason too_large, std::string& out, Sha256Behind* hasher) {
  try {
    return ReadOpenedFile(fd, path, max_size, too_large, out, hasher);
  } catch (const std::bad_alloc&) {
    return Status(Reason::kFileUnreadable, "not enough memory to read '" + path + "' (limit " +
                                               std::to_string(max_size) + " bytes)");
  } catch (const std::length_error&) {
    return Status(Reason::kFileUnreadable, "'" + path + "' is too large to hold in memory");
  }
}

}  // namespace

void AdviseHugePages(const void* data, size_t size) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const auto begin = reinterpret_cast<uintptr_t>(data);
  if (size < 2 * kHuge || begin > UINTPTR_MAX - size) return;
  const uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t last = (begin + size) & ~(kHuge - 1);
  if (last <= first) return;
  (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

Result<std::string> ReadFileBounded(const std::string& path, uint64_t max_size, Reason too_large) {
  CLAWGUARD_ASSIGN_OR_RETURN(UniqueFd fd, OpenRegularFile(path));
  return ReadOpenedFileBounded(fd, path, max_size, too_large);
}

Result<std::string> ReadOpenedFileBounded(const UniqueFd& fd, const std::string& path,
                                          uint64_t max_size, Reason too_large) {
  std::string bytes;
  CLAWGUARD_RETURN_IF_ERROR(ReadOpenedFileInto(fd, path, max_size, too_large, bytes, nullptr));
  return bytes;
}

Result<HashedFile> ReadOpenedFileHashed(const UniqueFd& fd, const std::string& path,
                                        uint64_t max_size, Reason too_large) {
  struct stat st {};
  const uint64_t hint =
      ::fstat(fd.get(), &st) == 0 && st.st_size > 0 ? static_cast<uint64_t>(st.st_size) : 0;
  HashedFile out;
  Sha256Behind hasher(hint);  // declared after |out|: destroyed first on every path
  CLAWGUARD_RETURN_IF_ERROR(ReadOpenedFileInto(fd, path, max_size, too_large, out.bytes, &hasher));
  out.sha256 = hasher.Finish();
  return out;
}

Status WriteFileAtomic(const std::string& path, std::string_view bytes, unsigned mode) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmpl = (dir / ("." + target.filename().string() + ".tmpXXXXXX")).string();
  UniqueFd fd(::mkstemp(tmpl.data()));
  if (!fd.valid()) {
    return Status(Reason::kInternal,
                  "cannot create a temp file in '" + dir.string() + "': " + std::strerror(errno));
  }
  auto fail = [&](const std::string& what) {
    const int saved = errno;
    ::unlink(tmpl.c_str());
    return Status(Reason::kInternal, what + " '" + tmpl + "': " + std::strerror(saved));
  };
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::write(fd.get(), bytes.data() + off, bytes.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("cannot write");
    }
    off += static_cast<size_t>(n);
  }
  if (::fchmod(fd.get(), mode) != 0) return fail("cannot chmod");
  if (::fsync(fd.get()) != 0) return fail("cannot fsync");
  fd.Reset();
  if (::rename(tmpl.c_str(), path.c_str()) != 0)
    return fail("cannot rename over '" + path + "' from");
  UniqueFd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.valid()) (void)::fsync(dfd.get());
  return Status::Ok();
}

}  // namespace clawguard
