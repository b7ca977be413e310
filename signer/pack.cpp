// pack.cpp — see pack.h. Reads the listed files without following symlinks, fills in their
// digests, builds the archive in memory with libarchive and checks it before writing it.
#include "signer/pack.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <new>

#include "clawguard/file_io.h"
#include "clawguard/limits.h"
#include "clawguard/sha256.h"
#include "clawguard/unique_fd.h"
#include "core/archive_ptr.h"
#include "signer/package_manifest.h"

namespace clawguard::signer {
namespace {

constexpr const char* kZstdLevel = "6";

Status Unreadable(const std::string& m) { return Status(Reason::kFileUnreadable, m); }
Status ArchiveError(archive* a, const std::string& what) {
  const char* detail = archive_error_string(a);
  return Status(Reason::kInternal, "cannot build the package: " + what + ": " +
                                       (detail ? detail : "unknown libarchive error"));
}

// AppendToString is libarchive's write callback: the archive grows in a std::string.
la_ssize_t AppendToString(archive*, void* client, const void* buffer, size_t length) {
  try {
    static_cast<std::string*>(client)->append(static_cast<const char*>(buffer), length);
  } catch (const std::bad_alloc&) {
    return -1;  // no exception may cross libarchive's C frames
  }
  return static_cast<la_ssize_t>(length);
}

// OpenListedFile opens root/rel one component at a time with O_NOFOLLOW, so neither the file nor
// a folder on its way may be a symlink: pack takes exactly the bytes under |root|, never what a
// link points at. O_NONBLOCK keeps a FIFO planted under a listed name from hanging the open.
Result<UniqueFd> OpenListedFile(int root_fd, const std::string& shown, const std::string& rel) {
  UniqueFd dir;
  int at = root_fd;
  size_t start = 0;
  while (true) {
    const size_t slash = rel.find('/', start);
    const bool last = slash == std::string::npos;
    const std::string seg = rel.substr(start, last ? std::string::npos : slash - start);
    const int flags =
        O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | (last ? O_NONBLOCK : O_DIRECTORY);
    UniqueFd fd(::openat(at, seg.c_str(), flags));
    if (!fd.valid()) {
      const int err = errno;
      const std::string part = rel.substr(0, last ? rel.size() : slash);
      // O_NOFOLLOW reports a symlink as ELOOP, or as ENOTDIR with O_DIRECTORY: look again to say
      // which.
      struct stat st {};
      if ((err == ELOOP || err == ENOTDIR) &&
          ::fstatat(at, seg.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
        return Unreadable(
            "'" + shown + "/" + part +
            "' is a symlink; pack takes regular files only, copy the file in place of the link");
      }
      return Unreadable("cannot open listed file '" + shown + "/" + rel +
                        "': " + std::strerror(err));
    }
    if (last) return fd;
    dir = std::move(fd);
    at = dir.get();
    start = slash + 1;
  }
}

// ReadAll reads a regular file through |fd|, refusing it once it passes |budget| bytes.
Result<std::string> ReadAll(const UniqueFd& fd, const std::string& shown, uint64_t budget) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    return Unreadable("cannot stat '" + shown + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return Unreadable("'" + shown + "' is not a regular file; pack takes regular files only");
  std::string out;
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Unreadable("cannot read '" + shown + "': " + std::strerror(errno));
    if (n == 0) return out;
    if (out.size() + static_cast<uint64_t>(n) > budget) {
      return Status(Reason::kPackageTooLarge, "the listed files total more than " +
                                                  std::to_string(limits::kDefaultMaxPackage) +
                                                  " bytes (limit reached at '" + shown + "')");
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

Status AddEntry(archive* a, const std::string& path, std::string_view bytes, int mode) {
  ArchiveEntry e(archive_entry_new());
  if (!e) return Status(Reason::kInternal, "cannot build the package: out of memory");
  // Only these fields are set: no atime/ctime/uname/gname, so pax-restricted writes a plain
  // ustar header and nothing about the machine that packed it.
  archive_entry_set_pathname_utf8(e.get(), path.c_str());
  archive_entry_set_filetype(e.get(), AE_IFREG);
  archive_entry_set_perm(e.get(), static_cast<mode_t>(mode));
  archive_entry_set_size(e.get(), static_cast<la_int64_t>(bytes.size()));
  archive_entry_set_mtime(e.get(), 0, 0);
  archive_entry_set_uid(e.get(), 0);
  archive_entry_set_gid(e.get(), 0);
  if (archive_write_header(a, e.get()) != ARCHIVE_OK)
    return ArchiveError(a, "header of '" + path + "'");
  size_t off = 0;
  while (off < bytes.size()) {
    const la_ssize_t n = archive_write_data(a, bytes.data() + off, bytes.size() - off);
    if (n <= 0) return ArchiveError(a, "data of '" + path + "'");
    off += static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> BuildPackage(const Manifest& manifest,
                                 const std::map<std::string, std::string>& contents) {
  if (contents.size() != manifest.files.size()) {
    return Status(Reason::kManifestInvalid,
                  "the package contents do not match the manifest's file list");
  }
  for (const auto& [path, digest] : manifest.files) {
    if (!digest || contents.count(path) == 0) {
      return Status(
          Reason::kManifestInvalid,
          "'" + path + "' has no digest or no contents; pack fills in every digest first");
    }
  }
  ArchiveWriter a(archive_write_new());
  if (!a) return Status(Reason::kInternal, "cannot build the package: out of memory");
  std::string out;
  if (archive_write_set_format_pax_restricted(a.get()) != ARCHIVE_OK)
    return ArchiveError(a.get(), "pax format");
  // ARCHIVE_WARN here means libarchive would pipe through an external zstd program, whose output
  // we do not control: refuse it.
  if (archive_write_add_filter_zstd(a.get()) != ARCHIVE_OK)
    return ArchiveError(a.get(), "zstd filter (libzstd)");
  if (archive_write_set_filter_option(a.get(), "zstd", "compression-level", kZstdLevel) !=
      ARCHIVE_OK) {
    return ArchiveError(a.get(), "zstd compression level");
  }
  // threads=0 is zstd's single-threaded mode. "1" would not mean one thread but the multi-threaded
  // frame layout with one worker, whose bytes differ. libarchive before 3.6 lacks the option
  // (ARCHIVE_WARN) and is single-threaded anyway.
  const int threads = archive_write_set_filter_option(a.get(), "zstd", "threads", "0");
  if (threads != ARCHIVE_OK && threads != ARCHIVE_WARN)
    return ArchiveError(a.get(), "zstd threads");
  // No padding after the zstd frame: libarchive would otherwise fill the last 10240-byte block
  // with zeros, which zstd readers (libarchive's own included) refuse as a bad next frame.
  if (archive_write_set_bytes_in_last_block(a.get(), 1) != ARCHIVE_OK)
    return ArchiveError(a.get(), "block size");
  if (archive_write_open2(a.get(), &out, nullptr, AppendToString, nullptr, nullptr) != ARCHIVE_OK) {
    return ArchiveError(a.get(), "open");
  }
  CLAWGUARD_RETURN_IF_ERROR(
      AddEntry(a.get(), std::string(kManifestFileName), RenderManifestYaml(manifest), 0644));
  for (const auto& [path, bytes] : contents) {  // std::map: sorted by path
    CLAWGUARD_RETURN_IF_ERROR(AddEntry(a.get(), path, bytes, path == manifest.entry ? 0755 : 0644));
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK) return ArchiveError(a.get(), "close");
  return out;
}

Result<PackResult> PackPlugin(const std::string& manifest_path,
                              const std::optional<std::string>& root, const std::string& out_dir) {
  namespace fs = std::filesystem;
  CLAWGUARD_ASSIGN_OR_RETURN(std::string text, ReadFileBounded(manifest_path, limits::kMaxManifest,
                                                               Reason::kManifestInvalid));
  CLAWGUARD_ASSIGN_OR_RETURN(Manifest manifest, ParseManifest(text, manifest_path));
  std::string root_dir = root.value_or(fs::path(manifest_path).parent_path().string());
  if (root_dir.empty()) root_dir = ".";
  // O_DIRECTORY refuses a FIFO or device before it is opened; O_NONBLOCK is there all the same.
  UniqueFd root_fd(::open(root_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK));
  if (!root_fd.valid())
    return Unreadable("cannot open the package root '" + root_dir + "': " + std::strerror(errno));

  std::map<std::string, std::string> contents;
  uint64_t total = 0;
  for (auto& [path, digest] : manifest.files) {
    const std::string shown = root_dir + "/" + path;
    CLAWGUARD_ASSIGN_OR_RETURN(UniqueFd fd, OpenListedFile(root_fd.get(), root_dir, path));
    CLAWGUARD_ASSIGN_OR_RETURN(std::string bytes,
                               ReadAll(fd, shown, limits::kDefaultMaxPackage - total));
    total += bytes.size();
    const std::string actual = "sha256:" + Sha256Hex(bytes);
    if (digest && *digest != actual) {
      return Status(Reason::kManifestInvalid,
                    manifest_path + ": files." + path + ": the manifest gives " + *digest +
                        " but '" + shown + "' has " + actual +
                        "; fix the digest, or write null and let pack fill it in");
    }
    digest = actual;
    contents.emplace(path, std::move(bytes));
  }

  CLAWGUARD_ASSIGN_OR_RETURN(std::string package, BuildPackage(manifest, contents));
  if (package.size() > limits::kDefaultMaxPackage) {
    return Status(Reason::kPackageTooLarge,
                  "the package would be " + std::to_string(package.size()) +
                      " bytes; the limit is " + std::to_string(limits::kDefaultMaxPackage));
  }
  // Check our own output the way the signer will read it before anything is written.
  auto first = ReadFirstEntryManifest(package);
  auto reparsed =
      first ? ParseManifest(*first, "packed manifest.yaml") : Result<Manifest>(first.error());
  if (!reparsed || !(*reparsed == manifest)) {
    return Status(Reason::kInternal,
                  "the package just built does not read back as its manifest" +
                      (reparsed ? std::string() : ": " + reparsed.error().ToString()));
  }

  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec)
    return Status(Reason::kInternal,
                  "cannot create the output folder '" + out_dir + "': " + ec.message());
  PackResult result{(fs::path(out_dir) / PackageFileName(manifest)).string(), Sha256Hex(package),
                    std::move(manifest)};
  CLAWGUARD_RETURN_IF_ERROR(WriteFileAtomic(result.package_path, package, 0644));
  return result;
}

}  // namespace clawguard::signer
