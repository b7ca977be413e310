// json_dump.cpp — see json_dump.h.
#include "clawguard/json_dump.h"

namespace clawguard {

std::string DumpJson(const nlohmann::json& j, int indent) {
  return internal::DumpReplacingInvalidUtf8(j, indent);
}

}  // namespace clawguard
