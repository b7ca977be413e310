// fuzz-requires: clawguard_host
// webhook_auth_fuzz.cpp — Standard Webhooks header extraction and verification on arbitrary
// header values and bodies. Input: id \n timestamp \n signature \n svix-id \n body.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/clock.h"
#include "host/intake/webhook_auth.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> parts;
  for (int i = 0; i < 4; ++i) {
    const size_t nl = in.find('\n');
    if (nl == std::string_view::npos) break;
    parts.emplace_back(in.substr(0, nl));
    in.remove_prefix(nl + 1);
  }
  parts.resize(4);
  static const clawguard::FixedClock clock(1700000000000);
  static auto verifier = clawguard::host::WebhookVerifier::Create(
      clawguard::SecretBytes("0123456789abcdef0123456789abcdef"), std::nullopt, std::nullopt,
      std::chrono::milliseconds(300000), clock);
  clawguard::host::HttpHeaders h;
  if (!parts[0].empty()) h.Add("webhook-id", parts[0]);
  if (!parts[1].empty()) h.Add("webhook-timestamp", parts[1]);
  if (!parts[2].empty()) h.Add("webhook-signature", parts[2]);
  if (!parts[3].empty()) h.Add("svix-id", parts[3]);
  (void)clawguard::host::ExtractWebhookHeaders(h);
  (void)clawguard::host::DecodeWebhookSecret(parts[2]);
  if (verifier.ok()) (void)verifier->Verify(h, in);
  return 0;
}
