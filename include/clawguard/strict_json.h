// strict_json.h — JSON read strictly: a duplicate key, nesting deeper than
// limits::kMaxJsonDepth, trailing bytes or invalid UTF-8 are refused with |reason|.
// (nlohmann-json alone keeps the last of two duplicate keys.)
#ifndef CLAWGUARD_STRICT_JSON_H_
#define CLAWGUARD_STRICT_JSON_H_

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "clawguard/error.h"

namespace clawguard {

// ParseJsonStrict parses |text|; |what| names the document in messages ("bundle", "statement").
Result<nlohmann::json> ParseJsonStrict(std::string_view text, Reason reason, std::string_view what);

}  // namespace clawguard

#endif  // CLAWGUARD_STRICT_JSON_H_
