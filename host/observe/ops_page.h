// ops_page.h — the read-only operator page (`/ops` on the admin listener): one self-contained
// HTML document (no scripts, no external assets, no forms) rendered from an OpsSnapshot, sent
// with a strict Content-Security-Policy whose only allowance is the page's own stylesheet, by
// hash. Every value from the snapshot is HTML-escaped, so a plugin name or detail holding
// `<script>` renders as text.
//
// Thread-safety: the functions are pure; the Handler from MakeOpsHandler is thread-safe when its
// snapshot function is.
#ifndef CLAWGUARD_HOST_OBSERVE_OPS_PAGE_H_
#define CLAWGUARD_HOST_OBSERVE_OPS_PAGE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/limits.h"
#include "host/http/http_server.h"
#include "host/http/http_types.h"

namespace clawguard::host {

// kMaxOpsRows bounds every table (plugins, breakers, leaves); further rows are counted, not shown.
inline constexpr std::size_t kMaxOpsRows = 1000;

// OpsPlugin is one plugin package the host looked at.
struct OpsPlugin {
  std::string name;
  std::string version;
  std::string publisher;
  std::string digest;  // sha256 hex of the package
  bool loaded = false;
  std::string reason;  // refusal reason code ("" when loaded)
  std::string detail;  // refusal detail (never a secret)
  // Loaded plugins: "none" (in process) or "sandbox"; a sandboxed one's worker state ("serving",
  // or "failed" after a crash loop: its routes answer 503 until the host restarts) and deaths.
  std::string isolation{};
  std::string state{};
  int64_t worker_faults = 0;
};

// OpsBreaker is one ERP endpoint's breaker ("closed", "open" or "half_open").
struct OpsBreaker {
  std::string endpoint;  // capability string "POST /orders/{id}/fulfil"
  std::string state;
  int64_t failures = 0;  // in the current window
};

// OpsDlqClass counts one DLQ class's entries by age.
struct OpsDlqClass {
  std::string dlq_class;
  int64_t under_1h = 0;
  int64_t under_24h = 0;  // 1 h ≤ age < 24 h
  int64_t older = 0;
};

// OpsLeaf is one signing leaf certificate in use.
struct OpsLeaf {
  std::string plugin;
  std::string subject;
  int64_t not_after = 0;  // Unix seconds
};

struct OpsSnapshot {
  int64_t now_ms = 0;      // the host clock when taken
  std::string trust_mode;  // "enforce" or "audit"
  std::vector<OpsPlugin> plugins;
  std::vector<OpsBreaker> breakers;
  int64_t open_key_breakers = 0;
  std::vector<OpsDlqClass> dlq;
  uint64_t deliveries = 0;  // webhook deliveries seen since start
  uint64_t duplicates = 0;  // of which duplicates (replayed or lease held)
  std::vector<OpsLeaf> leaves;
  int64_t expiry_window_s = limits::kLeafExpiryWarningSeconds;  // "near expiry"
};

// DlqEntryAge is what GroupDlqByAge needs of one DLQ entry.
struct DlqEntryAge {
  std::string dlq_class;
  int64_t created_ms = 0;
};

// GroupDlqByAge counts |entries| per class into < 1 h, < 24 h and older at |now_ms| (an entry
// from the future counts as < 1 h). Classes come out in first-seen order.
std::vector<OpsDlqClass> GroupDlqByAge(const std::vector<DlqEntryAge>& entries, int64_t now_ms);

// HtmlEscape escapes & < > " ' for text and attribute values.
std::string HtmlEscape(std::string_view text);

// RenderOpsPage renders the whole document (deterministic for a given snapshot).
std::string RenderOpsPage(const OpsSnapshot& snapshot);

// OpsPageCsp is the Content-Security-Policy header value to send with the page:
// default-src 'none', the stylesheet allowed by its SHA-256, no frames, forms or base URI.
const std::string& OpsPageCsp();

// OpsPageResponse is the 200 answer: text/html, the CSP, nosniff, no-store, no referrer, DENY
// framing.
HttpResponse OpsPageResponse(const OpsSnapshot& snapshot);

// MakeOpsHandler answers GET with OpsPageResponse(snapshot()) and any other method with 405.
// It does not check the bearer token: wrap it in RequireBearerToken (host/http/admin_auth.h).
Handler MakeOpsHandler(std::function<OpsSnapshot()> snapshot);

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_OBSERVE_OPS_PAGE_H_
