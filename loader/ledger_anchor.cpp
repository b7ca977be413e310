// ledger_anchor.cpp — see ledger_anchor.h.
#include "ledger_anchor.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "audit_log.h"
#include "clawguard/clock.h"
#include "clawguard/encoding.h"
#include "clawguard/file_io.h"

namespace clawguard {
namespace {

nlohmann::json CheckpointJson(const LedgerCheckpoint& cp, int64_t time) {
  return {{"count", cp.count}, {"head", cp.head}, {"time", FormatRfc3339Utc(time)}};
}

// ReadCheckpoint reads {"count","head","time"} of |j|; false if any is missing or malformed.
bool ReadCheckpoint(const nlohmann::json& j, LedgerCheckpoint& cp, int64_t& time) {
  if (!j.is_object()) return false;
  const auto count = j.find("count");
  const auto head = j.find("head");
  const auto at = j.find("time");
  if (count == j.end() || !count->is_number_integer() || count->get<int64_t>() < 0) return false;
  if (head == j.end() || !head->is_string() || !IsLowerHex(head->get<std::string>(), 64))
    return false;
  if (at == j.end() || !at->is_string()) return false;
  const auto t = ParseRfc3339Utc(at->get<std::string>());
  if (!t) return false;
  cp = LedgerCheckpoint{count->get<int64_t>(), head->get<std::string>()};
  time = *t;
  return true;
}

}  // namespace

std::string DefaultLedgerAnchorPath(const std::string& audit_log_path) {
  const std::filesystem::path log(audit_log_path);
  return (log.parent_path() / std::string(kDefaultLedgerAnchorName)).string();
}

Result<std::optional<LedgerAnchor>> LedgerAnchorFile::Read() const {
  CLAWGUARD_ASSIGN_OR_RETURN(UniqueFd fd,
                             OpenRegularFileNonBlocking(path_, O_RDONLY, "ledger anchor"));
  if (!fd.valid()) return std::optional<LedgerAnchor>();
  std::string text;
  char buf[1024];
  while (true) {
    const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status(Reason::kConfigInvalid,
                    "cannot read the ledger anchor '" + path_ + "': " + std::strerror(errno));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxAnchorBytes) {
      return Status(Reason::kLedgerTampered, "the ledger anchor '" + path_ + "' is over " +
                                                 std::to_string(kMaxAnchorBytes) +
                                                 " bytes: it is not an anchor this build wrote");
    }
  }
  const auto invalid = [&](const std::string& why) {
    return Status(Reason::kLedgerTampered, "the ledger anchor '" + path_ +
                                               "' is not a valid anchor (" + why +
                                               "): it is only ever replaced whole, so it was "
                                               "edited or damaged; restore it from a backup, or "
                                               "re-anchor with `clawguard ledger verify --anchor "
                                               "FILE --expect-head N:HEX --write-anchor`");
  };
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return invalid("expected one JSON object");
  const auto schema = j.find("schema");
  if (schema == j.end() || !schema->is_string() ||
      schema->get<std::string>() != kLedgerAnchorSchema) {
    return invalid("expected schema " + std::string(kLedgerAnchorSchema));
  }
  LedgerAnchor anchor;
  if (!ReadCheckpoint(j, anchor.checkpoint, anchor.time)) {
    return invalid("expected count ≥ 0, head of 64 lowercase hex and an RFC 3339 time");
  }
  const auto tofu = j.find("trust_on_first_use");
  if (tofu == j.end()) return invalid("no trust_on_first_use");
  if (!tofu->is_null()) {
    LedgerCheckpoint cp;
    if (!ReadCheckpoint(*tofu, cp, anchor.trusted_at))
      return invalid("trust_on_first_use is malformed");
    anchor.trust_on_first_use = std::move(cp);
  }
  for (const auto& [key, value] : j.items()) {
    if (key != "schema" && key != "count" && key != "head" && key != "time" &&
        key != "trust_on_first_use") {
      return invalid("unknown key '" + key.substr(0, 40) + "'");
    }
  }
  return std::optional<LedgerAnchor>(std::move(anchor));
}

Status LedgerAnchorFile::Write(const LedgerAnchor& anchor) const {
  const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  if (!parent.empty()) {
    std::error_code ec;  // a directory that cannot be made shows as WriteFileAtomic's error
    std::filesystem::create_directories(parent, ec);
  }
  nlohmann::json j = CheckpointJson(anchor.checkpoint, anchor.time);
  j["schema"] = std::string(kLedgerAnchorSchema);
  j["trust_on_first_use"] = anchor.trust_on_first_use
                                ? CheckpointJson(*anchor.trust_on_first_use, anchor.trusted_at)
                                : nlohmann::json(nullptr);
  return WriteFileAtomic(path_, j.dump() + "\n", 0640);
}

}  // namespace clawguard
