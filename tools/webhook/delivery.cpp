// delivery.cpp — see delivery.h.
#include "webhook/delivery.h"

#include <cstdlib>

#include "host/intake/webhook_auth.h"

namespace clawguard::tools {

Result<SecretBytes> ReadSecretFromEnv(const std::string& var) {
  const char* value = std::getenv(var.c_str());
  if (value == nullptr || *value == '\0') {
    return Status(Reason::kConfigInvalid,
                  "environment variable " + var + " (the webhook secret) is not set");
  }
  auto key = host::DecodeWebhookSecret(value);
  if (!key.ok()) {
    return Status(Reason::kConfigInvalid,
                  "environment variable " + var +
                      " is not a Standard Webhooks secret (expected whsec_<base64>)");
  }
  return std::move(key).value();
}

Result<std::pair<std::string, std::string>> SplitUrl(std::string_view url) {
  const size_t scheme_end = url.find("://");
  const std::string_view scheme =
      scheme_end == std::string_view::npos ? "" : url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") {
    return Status(Reason::kUsage,
                  "expected a URL http(s)://host:port/path, found '" + std::string(url) + "'");
  }
  const size_t slash = url.find('/', scheme_end + 3);
  if (slash == std::string_view::npos || slash == scheme_end + 3) {
    return Status(
        Reason::kUsage,
        "expected a URL with a host and a path (http://host:port/webhooks/PLUGIN/ROUTE), found '" +
            std::string(url) + "'");
  }
  return std::make_pair(std::string(url.substr(0, slash)), std::string(url.substr(slash)));
}

Result<std::unique_ptr<WebhookSender>> WebhookSender::Create(std::string_view url, SecretBytes key,
                                                             std::string ca_file,
                                                             std::chrono::milliseconds timeout) {
  CLAWGUARD_ASSIGN_OR_RETURN(auto parts, SplitUrl(url));
  host::ErpClientOptions options;
  options.base_url = parts.first;
  options.timeout = timeout;
  options.ca_file = std::move(ca_file);
  CLAWGUARD_ASSIGN_OR_RETURN(std::unique_ptr<host::ErpClient> client,
                             host::ErpClient::Create(std::move(options)));
  return std::unique_ptr<WebhookSender>(
      new WebhookSender(std::move(client), std::move(parts.second), std::move(key)));
}

Signed WebhookSender::Sign(std::string id, int64_t timestamp, std::string body) const {
  std::string signature = host::WebhookSignature(key_, id, timestamp, body);
  return Signed{std::move(id), timestamp, std::move(signature), std::move(body)};
}

Result<host::ErpReply> WebhookSender::Send(const Signed& delivery) {
  host::HttpHeaders headers;
  headers.Set("webhook-id", delivery.id);
  headers.Set("webhook-timestamp", std::to_string(delivery.timestamp));
  headers.Set("webhook-signature", delivery.signature);
  headers.Set("Content-Type", "application/json");
  return client_->Send("POST", path_, headers, delivery.body);
}

}  // namespace clawguard::tools
