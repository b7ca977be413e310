// idempotency_key.h — derivation of event keys, fingerprints and ERP call keys
// (ARCHITECTURE.md "Host request pipeline" steps 3 and 5; vectors in
// tests/vectors/idempotency-keys.json).
//
// Every key is the lowercase hex SHA-256 of EncodeFields(fields): each field a 4-byte big-endian
// length then its bytes, the domain tag first as a field too. Pure functions; thread-safe.
#ifndef CLAWGUARD_HOST_ERP_IDEMPOTENCY_KEY_H_
#define CLAWGUARD_HOST_ERP_IDEMPOTENCY_KEY_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace clawguard::host {

inline constexpr std::string_view kIdemTagLevel1 = "cg-idem-v1-l1";
inline constexpr std::string_view kIdemTagLevel2 = "cg-idem-v1-l2";
inline constexpr std::string_view kErpCallTag = "cg-erp-v1";

// EventKey is a derived key and the fingerprint that goes with it.
struct EventKey {
  std::string key;          // 64 lowercase hex characters
  std::string fingerprint;  // level 1: the business value; levels 2/3: sha256 hex of the raw body
};

// Level1Key: fields "cg-idem-v1-l1", plugin, route, business value. Clones with new ids and
// changed bodies are the same event.
std::string Level1Key(std::string_view plugin, std::string_view route,
                      std::string_view business_value);

// Level2Key (also level 3): fields "cg-idem-v1-l2", plugin, route, the authenticated webhook-id,
// business value ("" when the route has no business_key).
std::string Level2Key(std::string_view plugin, std::string_view route, std::string_view webhook_id,
                      std::string_view business_value);

// DeriveEventKey picks the level's key and fingerprint. |level| is 1, 2 or 3 (anything else
// aborts: levels are validated when routes are configured).
EventKey DeriveEventKey(int level, std::string_view plugin, std::string_view route,
                        std::string_view webhook_id, std::string_view business_value,
                        std::string_view raw_body);

// ErpCallKey: fields "cg-erp-v1", the event key's 64 hex characters (as text), plugin, the call
// index as 4 bytes big-endian. Sent as the ERP request's Idempotency-Key.
std::string ErpCallKey(std::string_view event_key, std::string_view plugin, uint32_t call_index);

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_ERP_IDEMPOTENCY_KEY_H_
