// webhook_auth.h — Standard Webhooks v1 authentication of one delivery.
//
// Spec: github.com/standard-webhooks/standard-webhooks spec/standard-webhooks.md. The signed
// content is "<webhook-id>.<webhook-timestamp>.<raw body>"; each signature is
// "v1,<base64 HMAC-SHA256(key, content)>", several separated by spaces. The key is the base64
// decoding of the secret, with or without its "whsec_" prefix.
//
// Deviations from the reference libraries (all stricter):
//   - a header present under both its webhook-* and svix-* names must be byte-equal, and a name
//     repeated with different values is refused (kHeaderConflict → 400), never "first wins";
//   - webhook-id must be 1..limits::kMaxWebhookIdLength visible ASCII characters (it is keyed on);
//   - webhook-timestamp must be plain decimal digits (no sign, no spaces);
//   - at most limits::kMaxWebhookSignatures signature entries are examined.
#ifndef CLAWGUARD_HOST_INTAKE_WEBHOOK_AUTH_H_
#define CLAWGUARD_HOST_INTAKE_WEBHOOK_AUTH_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "clawguard/clock.h"
#include "clawguard/error.h"
#include "clawguard/secret_bytes.h"
#include "host/http/http_types.h"

namespace clawguard::host {

// RouteSecrets are one plugin/route's webhook keys (decoded HMAC keys; host.yaml
// `webhooks.routes`).
struct RouteSecrets {
  SecretBytes current;
  std::optional<int64_t> current_since;  // Unix seconds (rotation audit)
  std::optional<SecretBytes> previous;
  std::optional<int64_t> previous_until;  // Unix seconds; set iff previous is
};

// DecodeWebhookSecret turns a Standard Webhooks secret ("whsec_<base64>" or "<base64>") into the
// HMAC key. kConfigInvalid (message never contains the secret) when empty, not base64, or longer
// than limits::kMaxWebhookSecretBytes.
Result<SecretBytes> DecodeWebhookSecret(std::string_view secret);

// WebhookSignature computes "v1,<base64 HMAC-SHA256(key, id.timestamp.body)>" (for tests and
// test clients; the verifier does not compare strings).
std::string WebhookSignature(const SecretBytes& key, std::string_view id, int64_t timestamp,
                             std::string_view body);

// WebhookHeaders are the three authentication headers after the webhook-*/svix-* merge.
struct WebhookHeaders {
  std::string id;
  std::string timestamp;
  std::string signature;
};

// ExtractWebhookHeaders reads webhook-id/-timestamp/-signature or their svix-* aliases.
// kHeaderConflict when both names (or repeats of one name) carry different bytes;
// kSignatureInvalid when one of the three is missing.
Result<WebhookHeaders> ExtractWebhookHeaders(const HttpHeaders& headers);

// VerifiedWebhook is what authentication established.
struct VerifiedWebhook {
  std::string id;              // the authenticated webhook-id
  int64_t timestamp = 0;       // Unix seconds
  bool used_previous = false;  // the route's previous secret matched (rotation in progress)
};

// WebhookVerifier checks deliveries for one route. Immutable after Create; thread-safe. The
// Clock must outlive the verifier.
class WebhookVerifier {
 public:
  // Create takes the route's current key, optionally the previous key with the Unix second
  // until which it is accepted (both or neither), and the ±tolerance. kConfigInvalid when a key
  // is empty, previous comes without previous_until (or the reverse), or tolerance is negative.
  static Result<WebhookVerifier> Create(SecretBytes current, std::optional<SecretBytes> previous,
                                        std::optional<int64_t> previous_until_s,
                                        std::chrono::milliseconds tolerance, const Clock& clock);

  WebhookVerifier(WebhookVerifier&&) noexcept = default;
  WebhookVerifier& operator=(WebhookVerifier&&) = delete;

  // Verify authenticates |headers| + |body|. Checks, in order: header conflicts
  // (kHeaderConflict), presence and shape (kSignatureInvalid), timestamp within ±tolerance of the
  // clock (kTimestampOutOfTolerance), then at least one "v1," entry whose MAC equals the current
  // key's — or the previous key's while now < previous_until — in constant time
  // (kSignatureInvalid). Messages never contain a secret or a MAC.
  Result<VerifiedWebhook> Verify(const HttpHeaders& headers, std::string_view body) const;

 private:
  WebhookVerifier(SecretBytes current, std::optional<SecretBytes> previous,
                  int64_t previous_until_s, std::chrono::milliseconds tolerance, const Clock& clock)
      : current_(std::move(current)),
        previous_(std::move(previous)),
        previous_until_s_(previous_until_s),
        tolerance_(tolerance),
        clock_(&clock) {}

  // Not const so the verifier can move into a Result; nothing mutates them after Create.
  SecretBytes current_;
  std::optional<SecretBytes> previous_;
  int64_t previous_until_s_;
  std::chrono::milliseconds tolerance_;
  const Clock* clock_;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_INTAKE_WEBHOOK_AUTH_H_
