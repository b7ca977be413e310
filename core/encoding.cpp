// encoding.cpp — hex and base64 through libsodium's constant-time codecs.
#include "clawguard/encoding.h"

#include <sodium.h>

#include <cstdint>

namespace clawguard {

std::string HexEncode(std::string_view bytes) {
  std::string out(bytes.size() * 2 + 1, '\0');
  sodium_bin2hex(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()),
                 bytes.size());
  out.pop_back();  // the terminating NUL
  return out;
}

std::optional<std::string> HexDecode(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string out(hex.size() / 2, '\0');
  size_t len = 0;
  const char* end = nullptr;
  if (sodium_hex2bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), hex.data(),
                     hex.size(),
                     /*ignore=*/nullptr, &len, &end) != 0 ||
      len != out.size() || end != hex.data() + hex.size()) {
    return std::nullopt;
  }
  return out;
}

bool IsLowerHex(std::string_view s, size_t len) {
  if (s.size() != len) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string Base64Encode(std::string_view bytes) {
  const size_t cap = sodium_base64_encoded_len(bytes.size(), sodium_base64_VARIANT_ORIGINAL);
  std::string out(cap, '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()),
                    bytes.size(), sodium_base64_VARIANT_ORIGINAL);
  out.resize(cap - 1);  // drop the NUL
  return out;
}

std::optional<std::string> Base64Decode(std::string_view b64) {
  if (b64.size() % 4 != 0) return std::nullopt;
  std::string out(b64.size() / 4 * 3, '\0');
  size_t len = 0;
  const char* end = nullptr;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), b64.data(),
                        b64.size(),
                        /*ignore=*/nullptr, &len, &end, sodium_base64_VARIANT_ORIGINAL) != 0 ||
      end != b64.data() + b64.size()) {
    return std::nullopt;
  }
  out.resize(len);
  return out;
}

std::string EncodeFields(const std::vector<std::string_view>& fields) {
  std::string out;
  for (std::string_view f : fields) {
    const auto n = static_cast<uint32_t>(f.size());
    out.push_back(static_cast<char>((n >> 24) & 0xff));
    out.push_back(static_cast<char>((n >> 16) & 0xff));
    out.push_back(static_cast<char>((n >> 8) & 0xff));
    out.push_back(static_cast<char>(n & 0xff));
    out.append(f);
  }
  return out;
}

}  // namespace clawguard
