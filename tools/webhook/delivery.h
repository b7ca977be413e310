// delivery.h — WebhookSender: signs webhook deliveries (Standard Webhooks v1, the host's own
// WebhookSignature) and sends them over HTTP(S) with the host's ErpClient as the HTTP client.
// Used by every mode of clawguard-webhook.
//
// The secret comes from an environment variable only (never argv): ReadSecretFromEnv.
// Thread-safe: Send may be called from several threads at once (ErpClient is thread-safe).
#ifndef CLAWGUARD_TOOLS_WEBHOOK_DELIVERY_H_
#define CLAWGUARD_TOOLS_WEBHOOK_DELIVERY_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "clawguard/error.h"
#include "clawguard/secret_bytes.h"
#include "host/erp/erp_client.h"

namespace clawguard::tools {

// ReadSecretFromEnv reads the Standard Webhooks secret ("whsec_<base64>" or "<base64>") named by
// |var| and decodes it into the HMAC key. kConfigInvalid when the variable is unset or not a
// valid secret; the message names the variable, never its value.
Result<SecretBytes> ReadSecretFromEnv(const std::string& var);

// SplitUrl splits "http(s)://host:port/path" into the base ("http(s)://host:port") and the path
// ("/path"). kUsage when it is not of that shape.
Result<std::pair<std::string, std::string>> SplitUrl(std::string_view url);

// Signed is one pre-signed delivery: the three webhook-* header values and the body.
struct Signed {
  std::string id;
  int64_t timestamp = 0;
  std::string signature;  // "v1,<base64>"
  std::string body;
};

// WebhookSender sends signed deliveries of one route URL.
class WebhookSender {
 public:
  // Create: |url| is the full route URL; |ca_file| is needed for https only. Reasons: kUsage
  // (bad URL), kConfigInvalid (from ErpClient::Create).
  static Result<std::unique_ptr<WebhookSender>> Create(std::string_view url, SecretBytes key,
                                                       std::string ca_file,
                                                       std::chrono::milliseconds timeout);

  // Sign signs |body| for |id| at Unix second |timestamp|.
  Signed Sign(std::string id, int64_t timestamp, std::string body) const;

  // Send posts one signed delivery (Content-Type: application/json). Any HTTP answer is a value;
  // no answer is the ErpClient's Status (connect, timeout, protocol).
  Result<host::ErpReply> Send(const Signed& delivery);

 private:
  WebhookSender(std::unique_ptr<host::ErpClient> client, std::string path, SecretBytes key)
      : client_(std::move(client)), path_(std::move(path)), key_(std::move(key)) {}

  std::unique_ptr<host::ErpClient> client_;
  const std::string path_;
  const SecretBytes key_;
};

}  // namespace clawguard::tools

#endif  // CLAWGUARD_TOOLS_WEBHOOK_DELIVERY_H_
