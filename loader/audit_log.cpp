// audit_log.cpp — see audit_log.h.
#include "audit_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "clawguard/encoding.h"

namespace clawguard {
namespace {

std::string FileTypeName(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

// ParseCheckpointLine returns the checkpoint of one audit-log line, or nullopt.
std::optional<LedgerCheckpoint> ParseCheckpointLine(std::string_view line) {
  if (line.find("ledger_checkpoint") == std::string_view::npos) return std::nullopt;
  const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  // Every member is checked for its type before it is read: a hostile line must not throw.
  const auto event = j.find("event");
  if (event == j.end() || !event->is_string() || event->get<std::string>() != "ledger_checkpoint")
    return std::nullopt;
  const auto count = j.find("count");
  const auto head = j.find("head");
  if (count == j.end() || !count->is_number_integer() || head == j.end() || !head->is_string())
    return std::nullopt;
  const std::string h = head->get<std::string>();
  if (!IsLowerHex(h, 64) || count->get<int64_t>() < 0) return std::nullopt;
  return LedgerCheckpoint{count->get<int64_t>(), h};
}

}  // namespace

Result<UniqueFd> OpenRegularFileNonBlocking(const std::string& path, int flags,
                                            std::string_view what) {
  UniqueFd fd(::open(path.c_str(), flags | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0640));
  if (!fd.valid()) {
    const int err = errno;
    if (err == ENOENT && (flags & O_CREAT) == 0) return UniqueFd();
    // ENXIO: a FIFO opened for writing with no reader (O_NONBLOCK); say what it is.
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      return Status(Reason::kConfigInvalid, "the " + std::string(what) + " '" + path + "' is " +
                                                FileTypeName(st.st_mode) +
                                                ", expected a regular file");
    }
    return Status(Reason::kConfigInvalid, "cannot open the " + std::string(what) + " '" + path +
                                              "': " + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return Status(Reason::kConfigInvalid, "cannot stat the " + std::string(what) + " '" + path +
                                              "': " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return Status(Reason::kConfigInvalid, "the " + std::string(what) + " '" + path + "' is " +
                                              FileTypeName(st.st_mode) +
                                              ", expected a regular file");
  }
  return fd;
}

Status AuditLog::Append(const nlohmann::json& line) const {
  std::string text;
  try {
    // Details may quote hostile bytes: invalid UTF-8 is replaced, never a throw.
    text =
        line.dump(-1, ' ', /*ensure_ascii=*/true, nlohmann::json::error_handler_t::replace) + "\n";
  } catch (const std::exception& e) {
    return Status(Reason::kInternal, std::string("cannot render an audit line: ") + e.what());
  }
  CLAWGUARD_ASSIGN_OR_RETURN(
      UniqueFd fd, OpenRegularFileNonBlocking(path_, O_WRONLY | O_APPEND | O_CREAT, "audit log"));
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t w = ::write(fd.get(), text.data() + off, text.size() - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status(Reason::kInternal,
                    "cannot write the audit log '" + path_ + "': " + std::strerror(errno));
    }
    off += static_cast<size_t>(w);
  }
  if (::fsync(fd.get()) != 0)
    return Status(Reason::kInternal, "cannot fsync the audit log '" + path_ + "'");
  return Status::Ok();
}

Result<std::optional<LedgerCheckpoint>> AuditLog::LastCheckpoint() const {
  CLAWGUARD_ASSIGN_OR_RETURN(UniqueFd fd, OpenRegularFileNonBlocking(path_, O_RDONLY, "audit log"));
  if (!fd.valid()) return std::optional<LedgerCheckpoint>();
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return Status(Reason::kConfigInvalid,
                  "cannot stat the audit log '" + path_ + "': " + std::strerror(errno));
  }
  // Only the tail: start inside it and drop the (possibly partial) first line.
  const auto size = static_cast<uint64_t>(st.st_size);
  bool skip_first = false;
  if (size > kMaxAuditTailBytes) {
    if (::lseek(fd.get(), static_cast<off_t>(size - kMaxAuditTailBytes), SEEK_SET) < 0) {
      return Status(Reason::kConfigInvalid,
                    "cannot seek in the audit log '" + path_ + "': " + std::strerror(errno));
    }
    skip_first = true;
  }
  uint64_t budget = kMaxAuditTailBytes;  // a log that grows while it is read is not read past this
  std::optional<LedgerCheckpoint> last;
  std::string line;       // the current line so far (bounded by kMaxAuditLineBytes)
  bool too_long = false;  // the current line outgrew the bound: skipped up to its newline
  char chunk[65536];
  while (true) {
    if (budget == 0) break;
    const ssize_t n =
        ::read(fd.get(), chunk, static_cast<size_t>(std::min<uint64_t>(sizeof(chunk), budget)));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status(Reason::kConfigInvalid,
                    "cannot read the audit log '" + path_ + "': " + std::strerror(errno));
    }
    if (n == 0) break;
    budget -= static_cast<uint64_t>(n);
    std::string_view rest(chunk, static_cast<size_t>(n));
    if (skip_first) {
      const size_t nl = rest.find('\n');
      if (nl == std::string_view::npos) continue;
      rest.remove_prefix(nl + 1);
      skip_first = false;
    }
    while (!rest.empty()) {
      const size_t nl = rest.find('\n');
      const std::string_view piece = rest.substr(0, nl);
      if (!too_long) {
        if (line.size() + piece.size() > kMaxAuditLineBytes) {
          too_long = true;
          line.clear();
        } else {
          line.append(piece);
        }
      }
      if (nl == std::string_view::npos) break;
      if (!too_long) {
        if (auto cp = ParseCheckpointLine(line)) last = std::move(cp);
      }
      line.clear();
      too_long = false;
      rest.remove_prefix(nl + 1);
    }
  }
  if (!too_long) {
    if (auto cp = ParseCheckpointLine(line)) last = std::move(cp);
  }
  return last;
}

}  // namespace clawguard
