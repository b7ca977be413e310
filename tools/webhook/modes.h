// modes.h — the `storm` and `gen` modes of clawguard-webhook (`send` is in main.cpp).
// Not thread-safe to call concurrently on one sender's options; RunStorm starts its own threads.
#ifndef CLAWGUARD_TOOLS_WEBHOOK_MODES_H_
#define CLAWGUARD_TOOLS_WEBHOOK_MODES_H_

#include <chrono>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "clawguard/clock.h"
#include "clawguard/error.h"
#include "clawguard/secret_bytes.h"
#include "webhook/delivery.h"

namespace clawguard::tools {

// kMaxStormDeliveries and kMaxGenRequests bound the counts given on the command line.
inline constexpr int kMaxStormDeliveries = 1000;
inline constexpr int64_t kMaxGenRequests = 10'000'000;

struct StormOptions {
  int deliveries = 17;                // concurrent deliveries of one event
  std::string id;                     // its webhook-id
  std::string body;                   // its body (the same bytes every time)
  int max_attempts = 20;              // per delivery, counting retries after a 409
  std::chrono::seconds max_wait{30};  // longest Retry-After honoured (longer ones are cut to this)
};

// RunStorm sends |options.deliveries| deliveries of one event at once, each signed with a fresh
// timestamp from |clock|; a delivery answered 409 waits for its Retry-After, is re-signed and
// sent again. Returns the summary:
//   {"deliveries", "first_statuses": {"200": n, "409": n}, "final_statuses": {...},
//    "retried_409", "processed" (final 2xx without Idempotent-Replayed), "replayed",
//    "replays_identical" (every replay has the reference answer's status, Content-Type and body),
//    "reference": {"status", "body"} (the processed answer, else the first replay),
//    "failures" (deliveries with no answer), "errors": [...]}.
nlohmann::json RunStorm(WebhookSender& sender, const StormOptions& options, const Clock& clock);

struct GenOptions {
  int64_t count = 0;          // number of requests
  std::string body_template;  // one line of JSON containing "{{seq}}"
  std::string id_prefix = "msg_gen_";
};

// RunGen writes |options.count| distinct pre-signed deliveries to |out_path|, one per line:
//   webhook-id TAB webhook-timestamp TAB webhook-signature TAB body
// where request i (0-based) has id <prefix><i> and the template's "{{seq}}" replaced by i, all
// signed at |clock|'s current second (so they are valid for the host's ±tolerance from now).
// kUsage when the count is out of range or the template lacks "{{seq}}" or holds a TAB, CR or LF;
// kInternal when the file cannot be written (written to PATH.tmp, then renamed).
Status RunGen(const SecretBytes& key, const GenOptions& options, const std::string& out_path,
              const Clock& clock);

}  // namespace clawguard::tools

#endif  // CLAWGUARD_TOOLS_WEBHOOK_MODES_H_
