// webhook_auth.cpp — Standard Webhooks v1 verification (HMAC-SHA256 through OpenSSL).
#include "host/intake/webhook_auth.h"

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

// ComputeMac returns HMAC-SHA256(key, id "." timestamp "." body), or nullopt if it fails.
// libsodium's streaming HMAC: no copy of the body and no per-call algorithm fetch (OpenSSL 3's
// one-shot HMAC() fetched the digest on every call — the largest cost of a replay, measured with
// callgrind).
std::optional<Mac> ComputeMac(const SecretBytes& key, std::string_view id,
                              std::string_view timestamp, std::string_view body) {
  const std::string_view k = InsecureSecretAccess::View(key);  // reviewed: HMAC key, never logged
  crypto_auth_hmacsha256_state state;
  const auto update = [&state](std::string_view part) {
    return crypto_auth_hmacsha256_update(
        &state, reinterpret_cast<const unsigned char*>(part.data()), part.size());
  };
  Mac mac{};
  static_assert(sizeof(Mac) == crypto_auth_hmacsha256_BYTES);
  const bool ok = crypto_auth_hmacsha256_init(
                      &state, reinterpret_cast<const unsigned char*>(k.data()), k.size()) == 0 &&
                  update(id) == 0 && update(".") == 0 && update(timestamp) == 0 &&
                  update(".") == 0 && update(body) == 0 &&
                  crypto_auth_hmacsha256_final(&state, mac.data()) == 0;
  sodium_memzero(&state, sizeof state);  // it holds the key's pads
  if (!ok) return std::nullopt;
  return mac;
}

// A refusal's detail quotes the peer's webhook-timestamp at most this far: leading zeros make a
// number of any length, and a peer that has not authenticated must not choose how large each
// refusal is (answers it never reads would fill the socket buffers sooner).
constexpr size_t kMaxEchoedTimestamp = 64;

// EchoedTimestamp is |ts| (decimal digits only: Verify checked) as a detail quotes it.
std::string EchoedTimestamp(std::string_view ts) {
  if (ts.size() <= kMaxEchoedTimestamp) return std::string(ts);
  return std::string(ts.substr(0, kMaxEchoedTimestamp)) + "... (" + std::to_string(ts.size()) +
         " digits)";
}

// The three headers under their two names each, in the order their errors are reported.
constexpr std::array<std::string_view, 3> kSuffixes = {"id", "timestamp", "signature"};
constexpr std::array<std::string_view, 3> kStdNames = {"webhook-id", "webhook-timestamp",
                                                       "webhook-signature"};
constexpr std::array<std::string_view, 3> kSvixNames = {"svix-id", "svix-timestamp",
                                                        "svix-signature"};

// Seen is one name's value: absent, or its first value and whether a repeat differed from it.
struct Seen {
  std::optional<std::string_view> value;
  bool conflict = false;
  void Add(std::string_view v) {
    if (value && *value != v) conflict = true;
    if (!value) value = v;
  }
};

// DecodeMac decodes one signature's base64 (standard alphabet, padded, nothing else) when it is
// exactly a MAC's size, without an allocation; nullopt otherwise (such an entry is skipped).
std::optional<Mac> DecodeMac(std::string_view b64) {
  constexpr size_t kB64Size = (kMacSize + 2) / 3 * 4;  // 44
  if (b64.size() != kB64Size) return std::nullopt;
  std::array<unsigned char, kB64Size / 4 * 3> buf{};  // 33: room for what 44 characters can hold
  size_t len = 0;
  const char* end = nullptr;
  if (sodium_base642bin(buf.data(), buf.size(), b64.data(), b64.size(), /*ignore=*/nullptr, &len,
                        &end, sodium_base64_VARIANT_ORIGINAL) != 0 ||
      end != b64.data() + b64.size() || len != kMacSize) {
    return std::nullopt;
  }
  Mac mac{};
  std::copy_n(buf.begin(), kMacSize, mac.begin());
  return mac;
}

bool IsVisibleAscii(std::string_view s) {
  for (char c : s) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

}  // namespace

Result<SecretBytes> DecodeWebhookSecret(std::string_view secret) {
  if (secret.substr(0, kSecretPrefix.size()) == kSecretPrefix)
    secret.remove_prefix(kSecretPrefix.size());
  if (secret.empty()) return Status(Reason::kConfigInvalid, "webhook secret is empty");
  std::optional<std::string> key = Base64Decode(secret);
  if (!key) {
    return Status(Reason::kConfigInvalid,
                  "webhook secret is not base64 (expected whsec_<base64> as issued by Standard "
                  "Webhooks/Svix)");
  }
  SecretBytes out(*key);
  std::fill(key->begin(), key->end(), '\0');
  if (out.empty()) return Status(Reason::kConfigInvalid, "webhook secret decodes to an empty key");
  if (out.size() > limits::kMaxWebhookSecretBytes) {
    return Status(Reason::kConfigInvalid, "webhook secret is longer than " +
                                              std::to_string(limits::kMaxWebhookSecretBytes) +
                                              " bytes");
  }
  return out;
}

std::string WebhookSignature(const SecretBytes& key, std::string_view id, int64_t timestamp,
                             std::string_view body) {
  auto mac = ComputeMac(key, id, std::to_string(timestamp), body);
  CLAWGUARD_CHECK(mac.has_value());
  return "v1," +
         Base64Encode(std::string_view(reinterpret_cast<const char*>(mac->data()), mac->size()));
}

Result<WebhookHeaders> ExtractWebhookHeaders(const HttpHeaders& headers) {
  // One pass over the fields, then the checks in order. Conflicts first: a conflicting pair is a
  // 400 even when another header is missing.
  std::array<Seen, 3> std_seen;
  std::array<Seen, 3> svix_seen;
  for (const auto& [n, v] : headers) {
    for (size_t i = 0; i < kSuffixes.size(); ++i) {
      if (n.size() == kStdNames[i].size() && AsciiCaseEqual(n, kStdNames[i])) std_seen[i].Add(v);
      if (n.size() == kSvixNames[i].size() && AsciiCaseEqual(n, kSvixNames[i])) svix_seen[i].Add(v);
    }
  }
  WebhookHeaders out;
  std::array<std::string*, 3> fields = {&out.id, &out.timestamp, &out.signature};
  Status missing;
  for (size_t i = 0; i < kSuffixes.size(); ++i) {
    const Seen& a = std_seen[i];
    const Seen& b = svix_seen[i];
    if (a.conflict || b.conflict) {
      return Status(Reason::kHeaderConflict,
                    "header " + std::string(a.conflict ? kStdNames[i] : kSvixNames[i]) +
                        " appears twice with different values");
    }
    if (a.value && b.value && *a.value != *b.value) {
      return Status(Reason::kHeaderConflict, std::string(kStdNames[i]) + " and " +
                                                 std::string(kSvixNames[i]) +
                                                 " are both present and differ");
    }
    if (!a.value && !b.value) {
      if (missing.ok()) {
        missing = Status(Reason::kSignatureInvalid, "missing header " + std::string(kStdNames[i]) +
                                                        " (or " + std::string(kSvixNames[i]) + ")");
      }
      continue;
    }
    *fields[i] = std::string(a.value ? *a.value : *b.value);
  }
  if (!missing.ok()) return missing;
  return out;
}

Result<WebhookVerifier> WebhookVerifier::Create(SecretBytes current,
                                                std::optional<SecretBytes> previous,
                                                std::optional<int64_t> previous_until_s,
                                                std::chrono::milliseconds tolerance,
                                                const Clock& clock) {
  if (current.empty())
    return Status(Reason::kConfigInvalid, "webhook route: current secret is empty");
  if (previous.has_value() != previous_until_s.has_value()) {
    return Status(Reason::kConfigInvalid, "webhook route: previous and previous_until go together");
  }
  if (previous && previous->empty())
    return Status(Reason::kConfigInvalid, "webhook route: previous secret is empty");
  if (tolerance.count() < 0) return Status(Reason::kConfigInvalid, "webhook tolerance is negative");
  return WebhookVerifier(std::move(current), std::move(previous), previous_until_s.value_or(0),
                         tolerance, clock);
}

Result<VerifiedWebhook> WebhookVerifier::Verify(const HttpHeaders& headers,
                                                std::string_view body) const {
  CLAWGUARD_ASSIGN_OR_RETURN(WebhookHeaders h, ExtractWebhookHeaders(headers));

  if (h.id.empty() || h.id.size() > limits::kMaxWebhookIdLength || !IsVisibleAscii(h.id)) {
    return Status(Reason::kSignatureInvalid, "webhook-id must be 1 to " +
                                                 std::to_string(limits::kMaxWebhookIdLength) +
                                                 " visible ASCII characters");
  }
  int64_t ts = 0;
  const char* tb = h.timestamp.data();
  const char* te = tb + h.timestamp.size();
  auto [tp, ec] = std::from_chars(tb, te, ts);
  if (h.timestamp.empty() || h.timestamp[0] < '0' || h.timestamp[0] > '9' || ec != std::errc() ||
      tp != te) {
    return Status(Reason::kSignatureInvalid,
                  "webhook-timestamp must be Unix seconds in decimal digits");
  }

  // Cheap check before crypto: the timestamp window (replay protection).
  const int64_t now_ms = clock_->NowMillis();
  const int64_t tol_s = tolerance_.count() / 1000;
  const int64_t now_s = now_ms / 1000;
  if (ts > now_s + tol_s || ts < now_s - tol_s) {
    return Status(Reason::kTimestampOutOfTolerance,
                  "webhook-timestamp " + EchoedTimestamp(h.timestamp) + " is outside ±" +
                      std::to_string(tol_s) + " s of the host clock (" + std::to_string(now_s) +
                      ")");
  }

  const auto cur = ComputeMac(current_, h.id, h.timestamp, body);
  if (!cur) return Status(Reason::kInternal, "HMAC-SHA256 failed");
  std::optional<Mac> prev;
  if (previous_ && now_s < previous_until_s_) {
    prev = ComputeMac(*previous_, h.id, h.timestamp, body);
    if (!prev) return Status(Reason::kInternal, "HMAC-SHA256 failed");
  }
  const auto view = [](const Mac& m) {
    return std::string_view(reinterpret_cast<const char*>(m.data()), m.size());
  };

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
    if (comma == std::string_view::npos || entry.substr(0, comma) != "v1")
      continue;  // other versions ignored
    const std::optional<Mac> mac = DecodeMac(entry.substr(comma + 1));
    if (!mac) continue;
    matched_current = ConstantTimeEquals(view(*mac), view(*cur)) || matched_current;
    matched_previous = (prev && ConstantTimeEquals(view(*mac), view(*prev))) || matched_previous;
  }
  if (matched_current || matched_previous) return VerifiedWebhook{h.id, ts, !matched_current};
  return Status(Reason::kSignatureInvalid,
                "no v1 signature in webhook-signature matches the route's secret");
}

}  // namespace clawguard::host
