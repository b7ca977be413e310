// business_key.cpp — JSON Pointer extraction through nlohmann::json::json_pointer.
#include "host/business_key.h"

#include <nlohmann/json.hpp>

#include "clawguard/limits.h"
#include "clawguard/strict_json.h"

namespace clawguard::host {

Result<std::string> ExtractBusinessKey(std::string_view raw_body, std::string_view pointer) {
  const std::string where = "business key '" + std::string(pointer) + "'";
  auto doc = ParseJsonStrict(raw_body, Reason::kIdempotencyKeyMissing, "webhook body");
  if (!doc.ok()) return Status(Reason::kIdempotencyKeyMissing, where + ": " + doc.error().message());
  std::string value;
  try {
    const nlohmann::json::json_pointer ptr{std::string(pointer)};
    if (!doc->contains(ptr)) return Status(Reason::kIdempotencyKeyMissing, where + " is absent from the body");
    const nlohmann::json& v = doc->at(ptr);
    if (v.is_string()) {
      value = v.get<std::string>();
    } else if (v.is_number_integer()) {  // signed or unsigned; never a float
      value = v.dump();
    } else {
      return Status(Reason::kIdempotencyKeyMissing,
                    where + " must be a string or an integer, found " + std::string(v.type_name()));
    }
  } catch (const nlohmann::json::exception& e) {
    return Status(Reason::kIdempotencyKeyMissing, where + " cannot be evaluated: " + e.what());
  }
  if (value.empty()) {
    // An empty key would make every such event one event (level 1) — refused, not keyed on.
    return Status(Reason::kIdempotencyKeyMissing, where + " is an empty string");
  }
  if (value.size() > limits::kMaxBusinessKeyBytes) {
    return Status(Reason::kIdempotencyKeyMissing,
                  where + " is longer than " + std::to_string(limits::kMaxBusinessKeyBytes) + " bytes");
  }
  return value;
}

}  // namespace clawguard::host
