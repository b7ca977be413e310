// strict_json.cpp — nlohmann-json with a parser callback that tracks keys per object.
#include "clawguard/strict_json.h"

#include <set>
#include <vector>

#include "clawguard/limits.h"

namespace clawguard {

Result<nlohmann::json> ParseJsonStrict(std::string_view text, Reason reason,
                                       std::string_view what) {
  std::vector<std::set<std::string>> keys;
  std::string problem;
  auto cb = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) -> bool {
    using E = nlohmann::json::parse_event_t;
    if (depth > limits::kMaxJsonDepth && problem.empty()) {
      problem = "nesting is deeper than " + std::to_string(limits::kMaxJsonDepth) + " levels";
    }
    switch (event) {
      case E::object_start: keys.emplace_back(); break;
      case E::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case E::key:
        if (!keys.empty() && parsed.is_string() &&
            !keys.back().insert(parsed.get<std::string>()).second && problem.empty()) {
          problem = "duplicate key \"" + parsed.get<std::string>() + "\"";
        }
        break;
      default: break;
    }
    return true;
  };
  try {
    nlohmann::json j =
        nlohmann::json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/true,
                              /*ignore_comments=*/false);
    if (!problem.empty()) return Status(reason, std::string(what) + ": " + problem);
    return j;
  } catch (const nlohmann::json::exception& e) {
    return Status(reason, std::string(what) + " is not valid JSON: " + e.what());
  }
}

}  // namespace clawguard
