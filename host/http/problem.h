// problem.h — RFC 9457 problem+json answers for the host's refusals.
//
// Body: {"type": "https://clawguard.dev/problems/<reason>", "title": …, "status": N, "detail": …}
// with Content-Type application/problem+json. Status codes follow ARCHITECTURE.md step 6.
// |detail| is caller-written text: callers never put a secret, a MAC or a token in it.
#ifndef CLAWGUARD_HOST_HTTP_PROBLEM_H_
#define CLAWGUARD_HOST_HTTP_PROBLEM_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "clawguard/error.h"
#include "host/http/http_types.h"

namespace clawguard::host {

inline constexpr std::string_view kProblemTypeBase = "https://clawguard.dev/problems/";
inline constexpr std::string_view kProblemContentType = "application/problem+json";

// ProblemStatus maps a host reason to its HTTP status (413, 404, 400, 401, 422, 409, 429, 503,
// 500); any other reason is 500.
int ProblemStatus(Reason reason);

// ProblemTitle is a short, fixed, human title for |reason|.
std::string_view ProblemTitle(Reason reason);

// ProblemJson renders the problem document (deterministic key order).
std::string ProblemJson(Reason reason, int status, std::string_view detail);

// ProblemResponse builds the whole answer; |retry_after_s| adds Retry-After (seconds, ≥ 1).
// |status_override| replaces ProblemStatus(reason) (e.g. 405 for a wrong method).
HttpResponse ProblemResponse(Reason reason, std::string_view detail,
                             std::optional<int64_t> retry_after_s = std::nullopt,
                             std::optional<int> status_override = std::nullopt);

// ProblemFromStatus is ProblemResponse(status.reason(), status.message()).
HttpResponse ProblemFromStatus(const Status& status,
                               std::optional<int64_t> retry_after_s = std::nullopt);

// BlankProblemResponse is a problem with no reason code of ours (RFC 9457 §4.2.1): type
// "about:blank" and the status phrase as title (e.g. 400 for a request HTTP cannot parse).
HttpResponse BlankProblemResponse(int status, std::string_view detail);

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_HTTP_PROBLEM_H_
