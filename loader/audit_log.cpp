// audit_log.cpp — see audit_log.h.
#include "audit_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "clawguard/encoding.h"
#include "clawguard/unique_fd.h"

namespace clawguard {

Status AuditLog::Append(const nlohmann::json& line) const {
  std::string text;
  try {
    // Details may quote hostile bytes: invalid UTF-8 is replaced, never a throw.
    text = line.dump(-1, ' ', /*ensure_ascii=*/true, nlohmann::json::error_handler_t::replace) + "\n";
  } catch (const std::exception& e) {
    return Status(Reason::kInternal, std::string("cannot render an audit line: ") + e.what());
  }
  UniqueFd fd(::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640));
  if (!fd.valid()) return Status(Reason::kInternal, "cannot open the audit log '" + path_ + "': " + std::strerror(errno));
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t w = ::write(fd.get(), text.data() + off, text.size() - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status(Reason::kInternal, "cannot write the audit log '" + path_ + "': " + std::strerror(errno));
    }
    off += static_cast<size_t>(w);
  }
  if (::fsync(fd.get()) != 0) return Status(Reason::kInternal, "cannot fsync the audit log '" + path_ + "'");
  return Status::Ok();
}

Result<std::optional<LedgerCheckpoint>> AuditLog::LastCheckpoint() const {
  std::ifstream in(path_);
  if (!in) {
    if (::access(path_.c_str(), F_OK) != 0) return std::optional<LedgerCheckpoint>();
    return Status(Reason::kInternal, "cannot read the audit log '" + path_ + "'");
  }
  std::optional<LedgerCheckpoint> last;
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("ledger_checkpoint") == std::string::npos) continue;
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || j.value("event", "") != "ledger_checkpoint") continue;
    const auto count = j.find("count");
    const auto head = j.find("head");
    if (count == j.end() || !count->is_number_integer() || head == j.end() || !head->is_string()) continue;
    const std::string h = head->get<std::string>();
    if (!IsLowerHex(h, 64) || count->get<int64_t>() < 0) continue;
    last = LedgerCheckpoint{count->get<int64_t>(), h};
  }
  return last;
}

}  // namespace clawguard
