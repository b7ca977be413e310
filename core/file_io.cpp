// file_io.cpp — bounded reads and atomic writes on POSIX fds.
#include "clawguard/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <new>
#include <stdexcept>

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
    return Status(Reason::kFileUnreadable, "'" + path + "' is not a regular file: it is " +
                                               std::string(FileTypeName(mode)) +
                                               (hint.empty() ? std::string() : "; " + std::string(hint)));
  };
  // A first look by path keeps us from even opening a device (opening some has side effects);
  // the fstat of the opened fd below is what decides, since the path may change in between.
  struct stat before {};
  if (::stat(path.c_str(), &before) == 0 && !S_ISREG(before.st_mode)) return not_regular(before.st_mode);
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

Result<std::string> ReadOpenedFile(const UniqueFd& fd, const std::string& path, uint64_t max_size, Reason too_large) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return Status(Reason::kFileUnreadable, "cannot stat '" + path + "': " + std::strerror(errno));
  }
  if (static_cast<uint64_t>(st.st_size) > max_size) {
    return Status(too_large, "'" + path + "' is " + std::to_string(st.st_size) + " bytes; the limit is " +
                                 std::to_string(max_size));
  }
  // Read exactly the size fstat reported, then probe one byte: a file that grew since fstat is
  // read on in chunks (still bounded), without ever allocating more than needed up front.
  std::string out;
  out.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  auto read_some = [&](char* dst, size_t len) -> ssize_t {
    while (true) {
      const ssize_t n = ::read(fd.get(), dst, len);
      if (n < 0 && errno == EINTR) continue;
      return n;
    }
  };
  while (got < out.size()) {
    const ssize_t n = read_some(out.data() + got, out.size() - got);
    if (n < 0) return Status(Reason::kFileUnreadable, "cannot read '" + path + "': " + std::strerror(errno));
    if (n == 0) break;  // shrank since fstat
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  const bool shrank = got < static_cast<size_t>(st.st_size);
  while (!shrank) {
    char chunk[65536];
    const ssize_t n = read_some(chunk, sizeof(chunk));
    if (n < 0) return Status(Reason::kFileUnreadable, "cannot read '" + path + "': " + std::strerror(errno));
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_size) {
      return Status(too_large, "'" + path + "' grew beyond the limit of " + std::to_string(max_size) + " bytes");
    }
    out.append(chunk, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace

Result<std::string> ReadFileBounded(const std::string& path, uint64_t max_size, Reason too_large) {
  CLAWGUARD_ASSIGN_OR_RETURN(UniqueFd fd, OpenRegularFile(path));
  return ReadOpenedFileBounded(fd, path, max_size, too_large);
}

Result<std::string> ReadOpenedFileBounded(const UniqueFd& fd, const std::string& path, uint64_t max_size,
                                          Reason too_large) {
  try {
    return ReadOpenedFile(fd, path, max_size, too_large);
  } catch (const std::bad_alloc&) {
    return Status(Reason::kFileUnreadable, "not enough memory to read '" + path + "' (limit " +
                                               std::to_string(max_size) + " bytes)");
  } catch (const std::length_error&) {
    return Status(Reason::kFileUnreadable, "'" + path + "' is too large to hold in memory");
  }
}

Status WriteFileAtomic(const std::string& path, std::string_view bytes, unsigned mode) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmpl = (dir / ("." + target.filename().string() + ".tmpXXXXXX")).string();
  UniqueFd fd(::mkstemp(tmpl.data()));
  if (!fd.valid()) {
    return Status(Reason::kInternal, "cannot create a temp file in '" + dir.string() + "': " + std::strerror(errno));
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
  if (::rename(tmpl.c_str(), path.c_str()) != 0) return fail("cannot rename over '" + path + "' from");
  UniqueFd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.valid()) (void)::fsync(dfd.get());
  return Status::Ok();
}

}  // namespace clawguard
