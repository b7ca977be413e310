// pkcs11_uri.h — a strict RFC 7512 PKCS#11 URI parser for signing-key references.
//
// Accepted: "pkcs11:" path attributes separated by ';' — token, object, id, type — each at most
// once, values percent-decoded strictly (every '%' followed by two hex digits; characters outside
// RFC 7512's pk11-pchar must be percent-encoded; %00 refused except in id). `token` and one of
// `object`/`id` are required; `type`, when given, must be `private`. Deviations from RFC 7512, on
// purpose:
//   * pin-value and pin-source are refused: the PIN comes only from --pin-source (env:/file:/fd:),
//     never from a URI that ends up in shell history, CI logs or process listings;
//   * module-path and module-name are refused: the module is chosen by --module or
//     CLAWGUARD_PKCS11_MODULE, so a URI from a config file cannot make us dlopen another library;
//   * every other attribute (manufacturer, serial, slot-id, x-*, any query attribute) is refused
//     rather than ignored, so a URI never selects less precisely than its author believed.
// Every refusal is Reason::kKeyUriInvalid with the attribute named. Thread-safe (pure functions).
#ifndef CLAWGUARD_SIGNER_PKCS11_URI_H_
#define CLAWGUARD_SIGNER_PKCS11_URI_H_

#include <optional>
#include <string>
#include <string_view>

#include "clawguard/error.h"

namespace clawguard::signer {

struct Pkcs11Uri {
  std::string token;                  // CKA_LABEL of the token (CK_TOKEN_INFO.label)
  std::optional<std::string> object;  // CKA_LABEL of the key
  std::optional<std::string> id;      // CKA_ID of the key (raw bytes)
};

// ParsePkcs11Uri parses |uri|; kKeyUriInvalid on any deviation described above.
Result<Pkcs11Uri> ParsePkcs11Uri(std::string_view uri);

// FormatPkcs11Uri renders "pkcs11:token=…;object=…[;id=…];type=private" with every byte outside
// RFC 3986 unreserved characters percent-encoded. ParsePkcs11Uri(FormatPkcs11Uri(u)) == u.
std::string FormatPkcs11Uri(const Pkcs11Uri& uri);

// PercentEncode encodes every byte that is not ALPHA / DIGIT / "-" / "." / "_" / "~".
std::string PercentEncode(std::string_view raw);

}  // namespace clawguard::signer

#endif  // CLAWGUARD_SIGNER_PKCS11_URI_H_
