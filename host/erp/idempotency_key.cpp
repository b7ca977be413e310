// idempotency_key.cpp — key derivation over EncodeFields + SHA-256.
#include "host/erp/idempotency_key.h"

#include <vector>

#include "clawguard/encoding.h"
#include "clawguard/error.h"
#include "clawguard/sha256.h"

namespace clawguard::host {

std::string Level1Key(std::string_view plugin, std::string_view route,
                      std::string_view business_value) {
  return Sha256Hex(EncodeFields({kIdemTagLevel1, plugin, route, business_value}));
}

std::string Level2Key(std::string_view plugin, std::string_view route, std::string_view webhook_id,
                      std::string_view business_value) {
  return Sha256Hex(EncodeFields({kIdemTagLevel2, plugin, route, webhook_id, business_value}));
}

EventKey DeriveEventKey(int level, std::string_view plugin, std::string_view route,
                        std::string_view webhook_id, std::string_view business_value,
                        std::string_view raw_body) {
  CLAWGUARD_CHECK(level >= 1 && level <= 3);
  if (level == 1)
    return EventKey{Level1Key(plugin, route, business_value), std::string(business_value)};
  return EventKey{Level2Key(plugin, route, webhook_id, business_value), Sha256Hex(raw_body)};
}

std::string ErpCallKey(std::string_view event_key, std::string_view plugin, uint32_t call_index) {
  const char index[4] = {
      static_cast<char>((call_index >> 24) & 0xff), static_cast<char>((call_index >> 16) & 0xff),
      static_cast<char>((call_index >> 8) & 0xff), static_cast<char>(call_index & 0xff)};
  return Sha256Hex(EncodeFields({kErpCallTag, event_key, plugin, std::string_view(index, 4)}));
}

}  // namespace clawguard::host
