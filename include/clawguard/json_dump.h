// json_dump.h — JSON written the one way ClawGuard writes it: compact, UTF-8 as is, and never a
// throw for a string that is not valid UTF-8.
#ifndef CLAWGUARD_JSON_DUMP_H_
#define CLAWGUARD_JSON_DUMP_H_

#include <nlohmann/json.hpp>

#include <concepts>
#include <string>

namespace clawguard {

namespace internal {
// DumpReplacingInvalidUtf8 holds the flags of DumpJson for either nlohmann type.
template <typename Json>
std::string DumpReplacingInvalidUtf8(const Json& j, int indent) {
  return j.dump(indent, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
}
}  // namespace internal

// DumpJson renders |j| on one line with no spaces between tokens, non-ASCII UTF-8 written as is
// (ensure_ascii false) and every byte sequence that is not valid UTF-8 replaced by U+FFFD
// (error_handler_t::replace): nlohmann's default handler would throw type_error 316 on bytes a
// plugin, a client or a file put into a string. With |indent| ≥ 0 it pretty-prints with that many
// spaces instead. Thread-safe.
std::string DumpJson(const nlohmann::json& j, int indent = -1);

// DumpJson for ordered_json (keys in insertion order), the same way. A template only so that a
// braced list, DumpJson({{"key", value}}), still means nlohmann::json.
template <typename Json>
requires std::same_as<Json, nlohmann::ordered_json> std::string DumpJson(const Json& j,
                                                                         int indent = -1) {
  return internal::DumpReplacingInvalidUtf8(j, indent);
}

}  // namespace clawguard

#endif  // CLAWGUARD_JSON_DUMP_H_
