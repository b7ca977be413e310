// encoding.h — hex and base64 on libsodium (nothing hand-rolled). Decoders are strict: they
// refuse characters outside the alphabet, bad padding and trailing garbage.
#ifndef CLAWGUARD_ENCODING_H_
#define CLAWGUARD_ENCODING_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clawguard {

// HexEncode renders bytes as lowercase hex.
std::string HexEncode(std::string_view bytes);
// HexDecode parses hex (either case); nullopt on an odd length or a non-hex character.
std::optional<std::string> HexDecode(std::string_view hex);
// IsLowerHex is true when |s| has exactly |len| characters of [0-9a-f].
bool IsLowerHex(std::string_view s, size_t len);

// Base64Encode renders standard base64 with padding (RFC 4648 §4).
std::string Base64Encode(std::string_view bytes);
// Base64Decode parses standard base64 with padding; nullopt on anything else.
std::optional<std::string> Base64Decode(std::string_view b64);

// EncodeFields writes each field as a 4-byte big-endian length then its bytes (the encoding of
// idempotency keys, ERP call keys and ledger row hashes).
std::string EncodeFields(const std::vector<std::string_view>& fields);

}  // namespace clawguard

#endif  // CLAWGUARD_ENCODING_H_
