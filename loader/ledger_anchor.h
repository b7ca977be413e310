// ledger_anchor.h — LedgerAnchorFile: the ledger checkpoint's durable home, a small file of its
// own (ARCHITECTURE.md "Verification (loader)", Ledger paragraph). The audit log keeps its
// checkpoint lines too, but a log is rotated and deleted; this file is not a log.
//
// Contents, one JSON object (≤ kMaxAnchorBytes):
//   {"schema":"clawguard/ledger-anchor/v1","count":N,"head":"<64 hex>","time":"<RFC 3339>",
//    "trust_on_first_use":null | {"count":N,"head":"<64 hex>","time":"<RFC 3339>"}}
// count/head is a checkpoint the chain must still hold (row count has hash head).
// trust_on_first_use records that the anchor began on a ledger that already had rows and nothing
// to check them against (no anchor, no checkpoint line): rows up to that count were taken on
// trust. It stays until a person confirms the chain against a checkpoint from elsewhere
// (`clawguard ledger verify --anchor FILE --expect-head N:HEX --write-anchor`), and
// `clawguard audit` grades it high until then.
//
// Read opens with O_NONBLOCK and refuses anything but a regular file (kConfigInvalid: a FIFO
// must not hang the host's start); a file that is not a valid anchor is kLedgerTampered (it was
// edited or truncated — it is only ever replaced whole). Write replaces the file atomically
// (temp file beside it, fsync, rename, fsync of the directory; mode 0640). Thread-compatible.
#ifndef CLAWGUARD_LOADER_LEDGER_ANCHOR_H_
#define CLAWGUARD_LOADER_LEDGER_ANCHOR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "clawguard/error.h"
#include "clawguard/store/ledger.h"

namespace clawguard {

inline constexpr std::string_view kLedgerAnchorSchema = "clawguard/ledger-anchor/v1";
inline constexpr size_t kMaxAnchorBytes = 4096;
// kDefaultLedgerAnchorName is the anchor's file name beside the audit log when none is configured.
inline constexpr std::string_view kDefaultLedgerAnchorName = "ledger-anchor.json";

struct LedgerAnchor {
  LedgerCheckpoint checkpoint;                         // the chain must still hold it
  int64_t time = 0;                                    // Unix seconds it was written
  std::optional<LedgerCheckpoint> trust_on_first_use;  // adopted without proof (see above)
  int64_t trusted_at = 0;                              // when trust_on_first_use was adopted
};

class LedgerAnchorFile {
 public:
  explicit LedgerAnchorFile(std::string path) : path_(std::move(path)) {}
  const std::string& path() const { return path_; }

  // Read returns the anchor, nullopt when the file does not exist. kConfigInvalid when the path
  // is not a regular file or cannot be read; kLedgerTampered when the file is not a valid anchor.
  Result<std::optional<LedgerAnchor>> Read() const;
  // Write replaces the file with |anchor| (time: anchor.time). kInternal on an I/O failure.
  Status Write(const LedgerAnchor& anchor) const;

 private:
  const std::string path_;
};

// DefaultLedgerAnchorPath is kDefaultLedgerAnchorName in the directory of |audit_log_path|.
std::string DefaultLedgerAnchorPath(const std::string& audit_log_path);

}  // namespace clawguard

#endif  // CLAWGUARD_LOADER_LEDGER_ANCHOR_H_
