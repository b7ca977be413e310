// business_key.h — the business key value of a webhook body (ARCHITECTURE.md step 3).
//
// The route's business_key is an RFC 6901 JSON Pointer evaluated on the raw body read strictly
// (ParseJsonStrict: duplicate keys refused). A string target gives its UTF-8 bytes, an integer
// its decimal ASCII; anything else — absent, null, bool, float, object, array, a body that is
// not JSON, a malformed pointer, an empty string, a value over limits::kMaxBusinessKeyBytes — is
// kIdempotencyKeyMissing (400). Deviation: the contract does not name the empty string; it is
// refused because a level-1 key on "" would merge unrelated events. Pure; thread-safe.
#ifndef CLAWGUARD_HOST_INTAKE_BUSINESS_KEY_H_
#define CLAWGUARD_HOST_INTAKE_BUSINESS_KEY_H_

#include <string>
#include <string_view>

#include "clawguard/error.h"

namespace clawguard::host {

// ExtractBusinessKey returns the value at |pointer| in |raw_body|. It reads the body in one
// streaming pass that builds no document; every refusal (and any body it does not stream: an
// object of more than 64 keys, an overflowing array index in the pointer) is decided and worded
// by ExtractBusinessKeyReference, so the two never differ (tests/fuzz/business_key_fuzz.cpp
// compares them on every input).
Result<std::string> ExtractBusinessKey(std::string_view raw_body, std::string_view pointer);

// ExtractBusinessKeyReference is the document-based definition: ParseJsonStrict, then
// nlohmann::json_pointer's contains/at.
Result<std::string> ExtractBusinessKeyReference(std::string_view raw_body,
                                                std::string_view pointer);

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_INTAKE_BUSINESS_KEY_H_
