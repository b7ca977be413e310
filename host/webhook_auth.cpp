// webhook_auth.cpp — Standard Webhooks v1 verification (HMAC-SHA256 through OpenSSL).
#include "host/webhook_auth.h"

#include <sodium.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <vector>

#include "clawguard/encoding.h"
#include "clawguard/limits.h"

namespace clawguard::host {
namespace {

constexpr std::string_view kSecretPrefix = "whsec_";
constexpr size_t kMacSize = 32;  // SHA-256

using Mac = std::array<unsigned char, kMacSize>;

// ComputeMac returns HMAC-SHA256(key, id "." timestamp "." body), or nullopt if it fails. libsodium's
// streaming HMAC: no copy of the body and no per-call algorithm fetch (OpenSSL 3's one-shot HMAC()
// fetched the digest on every call — the largest cost of a replay, measured with callgrind).
std::optional<Mac> ComputeMac(const SecretBytes& key, std::string_view id, std::string_view timestamp,
                              std::string_view body) {
  const std::string_view k = InsecureSecretAccess::View(key);  // reviewed: HMAC key, never logged
  crypto_auth_hmacsha256_state state;
  const auto update = [&state](std::string_view part) {
    return crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(part.data()), part.size());
  };
  Mac mac{};
  static_assert(sizeof(Mac) == crypto_auth_hmacsha256_BYTES);
  const bool ok = crypto_auth_hmacsha256_init(&state, reinterpret_cast<const unsigned char*>(k.data()), k.size()) == 0 &&
                  update(id) == 0 && update(".") == 0 && update(timestamp) == 0 && update(".") == 0 &&
                  update(body) == 0 && crypto_auth_hmacsha256_final(&state, mac.data()) == 0;
  sodium_memzero(&state, sizeof state);  // it holds the key's pads
  if (!ok) return std::nullopt;
  return mac;
}

// OneHeader returns the single value of |name|: nullopt if absent, kHeaderConflict if repeated
// with different bytes.
Result<std::optional<std::string>> OneHeader(const HttpHeaders& headers, std::string_view name) {
  std::optional<std::string> value;
  for (const auto& [n, v] : headers) {
    if (!AsciiCaseEqual(n, name)) continue;
    if (value && *value != v) {
      return Status(Reason::kHeaderConflict, "header " + std::string(name) + " appears twice with different values");
    }
    value = v;
  }
  return value;
}

Result<std::string> MergedHeader(const HttpHeaders& headers, std::string_view suffix) {
  const std::string std_name = "webhook-" + std::string(suffix);
  const std::string svix_name = "svix-" + std::string(suffix);
  CLAWGUARD_ASSIGN_OR_RETURN(std::optional<std::string> a, OneHeader(headers, std_name));
  CLAWGUARD_ASSIGN_OR_RETURN(std::optional<std::string> b, OneHeader(headers, svix_name));
  if (a && b && *a != *b) {
    return Status(Reason::kHeaderConflict, std_name + " and " + svix_name + " are both present and differ");
  }
  if (a) return *a;
  if (b) return *b;
  return Status(Reason::kSignatureInvalid, "missing header " + std_name + " (or " + svix_name + ")");
}

bool IsVisibleAscii(std::string_view s) {
  for (char c : s) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

}  // namespace

Result<SecretBytes> DecodeWebhookSecret(std::string_view secret) {
  if (secret.substr(0, kSecretPrefix.size()) == kSecretPrefix) secret.remove_prefix(kSecretPrefix.size());
  if (secret.empty()) return Status(Reason::kConfigInvalid, "webhook secret is empty");
  std::optional<std::string> key = Base64Decode(secret);
  if (!key) {
    return Status(Reason::kConfigInvalid,
                  "webhook secret is not base64 (expected whsec_<base64> as issued by Standard Webhooks/Svix)");
  }
  SecretBytes out(*key);
  std::fill(key->begin(), key->end(), '\0');
  if (out.empty()) return Status(Reason::kConfigInvalid, "webhook secret decodes to an empty key");
  if (out.size() > limits::kMaxWebhookSecretBytes) {
    return Status(Reason::kConfigInvalid, "webhook secret is longer than " +
                                              std::to_string(limits::kMaxWebhookSecretBytes) + " bytes");
  }
  return out;
}

std::string WebhookSignature(const SecretBytes& key, std::string_view id, int64_t timestamp, std::string_view body) {
  auto mac = ComputeMac(key, id, std::to_string(timestamp), body);
  CLAWGUARD_CHECK(mac.has_value());
  return "v1," + Base64Encode(std::string_view(reinterpret_cast<const char*>(mac->data()), mac->size()));
}

Result<WebhookHeaders> ExtractWebhookHeaders(const HttpHeaders& headers) {
  // Conflicts first: a conflicting pair is a 400 even when another header is missing.
  WebhookHeaders out;
  Status missing;
  for (auto [suffix, field] : {std::pair<std::string_view, std::string*>{"id", &out.id},
                               {"timestamp", &out.timestamp},
                               {"signature", &out.signature}}) {
    auto v = MergedHeader(headers, suffix);
    if (!v.ok()) {
      if (v.error().reason() == Reason::kHeaderConflict) return v.error();
      if (missing.ok()) missing = v.error();
      continue;
    }
    *field = std::move(v).value();
  }
  if (!missing.ok()) return missing;
  return out;
}

Result<WebhookVerifier> WebhookVerifier::Create(SecretBytes current, std::optional<SecretBytes> previous,
                                                std::optional<int64_t> previous_until_s,
                                                std::chrono::milliseconds tolerance, const Clock& clock) {
  if (current.empty()) return Status(Reason::kConfigInvalid, "webhook route: current secret is empty");
  if (previous.has_value() != previous_until_s.has_value()) {
    return Status(Reason::kConfigInvalid, "webhook route: previous and previous_until go together");
  }
  if (previous && previous->empty()) return Status(Reason::kConfigInvalid, "webhook route: previous secret is empty");
  if (tolerance.count() < 0) return Status(Reason::kConfigInvalid, "webhook tolerance is negative");
  return WebhookVerifier(std::move(current), std::move(previous), previous_until_s.value_or(0), tolerance, clock);
}

Result<VerifiedWebhook> WebhookVerifier::Verify(const HttpHeaders& headers, std::string_view body) const {
  CLAWGUARD_ASSIGN_OR_RETURN(WebhookHeaders h, ExtractWebhookHeaders(headers));

  if (h.id.empty() || h.id.size() > limits::kMaxWebhookIdLength || !IsVisibleAscii(h.id)) {
    return Status(Reason::kSignatureInvalid, "webhook-id must be 1 to " + std::to_string(limits::kMaxWebhookIdLength) +
                                                 " visible ASCII characters");
  }
  int64_t ts = 0;
  const char* tb = h.timestamp.data();
  const char* te = tb + h.timestamp.size();
  auto [tp, ec] = std::from_chars(tb, te, ts);
  if (h.timestamp.empty() || h.timestamp[0] < '0' || h.timestamp[0] > '9' || ec != std::errc() || tp != te) {
    return Status(Reason::kSignatureInvalid, "webhook-timestamp must be Unix seconds in decimal digits");
  }

  // Cheap check before crypto: the timestamp window (replay protection).
  const int64_t now_ms = clock_->NowMillis();
  const int64_t tol_s = tolerance_.count() / 1000;
  const int64_t now_s = now_ms / 1000;
  if (ts > now_s + tol_s || ts < now_s - tol_s) {
    return Status(Reason::kTimestampOutOfTolerance, "webhook-timestamp " + h.timestamp + " is outside ±" +
                                                        std::to_string(tol_s) + " s of the host clock (" +
                                                        std::to_string(now_s) + ")");
  }

  const auto cur = ComputeMac(current_, h.id, h.timestamp, body);
  if (!cur) return Status(Reason::kInternal, "HMAC-SHA256 failed");
  std::optional<Mac> prev;
  if (previous_ && now_s < previous_until_s_) {
    prev = ComputeMac(*previous_, h.id, h.timestamp, body);
    if (!prev) return Status(Reason::kInternal, "HMAC-SHA256 failed");
  }
  const auto view = [](const Mac& m) { return std::string_view(reinterpret_cast<const char*>(m.data()), m.size()); };

  // Every entry is examined (no early exit): a match with the current key wins over the previous.
  bool matched_current = false;
  bool matched_previous = false;
  size_t examined = 0;
  std::string_view rest = h.signature;
  while (!rest.empty() && examined < limits::kMaxWebhookSignatures) {
    const size_t sp = rest.find(' ');
    std::string_view entry = rest.substr(0, sp);
    rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
    if (entry.empty()) continue;
    ++examined;
    const size_t comma = entry.find(',');
    if (comma == std::string_view::npos || entry.substr(0, comma) != "v1") continue;  // other versions ignored
    std::optional<std::string> mac = Base64Decode(entry.substr(comma + 1));
    if (!mac || mac->size() != kMacSize) continue;
    matched_current = ConstantTimeEquals(*mac, view(*cur)) || matched_current;
    matched_previous = (prev && ConstantTimeEquals(*mac, view(*prev))) || matched_previous;
  }
  if (matched_current || matched_previous) return VerifiedWebhook{h.id, ts, !matched_current};
  return Status(Reason::kSignatureInvalid, "no v1 signature in webhook-signature matches the route's secret");
}

}  // namespace clawguard::host
