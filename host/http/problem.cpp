// problem.cpp — problem+json rendering (nlohmann-json writes the escaping).
#include "host/http/problem.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "clawguard/json_dump.h"

namespace clawguard::host {

int ProblemStatus(Reason reason) {
  switch (reason) {
    case Reason::kRequestTooLarge: return 413;
    case Reason::kNotFound: return 404;
    case Reason::kHeaderConflict:
    case Reason::kIdempotencyKeyMissing: return 400;
    case Reason::kSignatureInvalid:
    case Reason::kTimestampOutOfTolerance: return 401;
    case Reason::kFingerprintMismatch: return 422;
    case Reason::kInProgress:
    case Reason::kExpiredKeySeen: return 409;
    case Reason::kRateLimited: return 429;
    case Reason::kBreakerOpen:
    case Reason::kStoreUnavailable:
    case Reason::kPluginTimeout:
    case Reason::kErpPending:
    case Reason::kPluginUnavailable: return 503;
    default: return 500;  // kPluginFailed and every other reason
  }
}

std::string_view ProblemTitle(Reason reason) {
  switch (reason) {
    case Reason::kRequestTooLarge: return "Request too large";
    case Reason::kNotFound: return "Not found";
    case Reason::kHeaderConflict: return "Conflicting webhook headers";
    case Reason::kIdempotencyKeyMissing: return "Idempotency key missing";
    case Reason::kSignatureInvalid: return "Signature invalid";
    case Reason::kTimestampOutOfTolerance: return "Timestamp out of tolerance";
    case Reason::kFingerprintMismatch: return "Idempotency key reused with another request";
    case Reason::kInProgress: return "Request in progress";
    case Reason::kExpiredKeySeen: return "Expired idempotency key seen";
    case Reason::kRateLimited: return "Rate limited";
    case Reason::kBreakerOpen: return "Circuit breaker open";
    case Reason::kStoreUnavailable: return "Store unavailable";
    case Reason::kPluginTimeout: return "Plugin timed out";
    case Reason::kErpPending: return "ERP call pending";
    case Reason::kPluginUnavailable: return "Plugin unavailable";
    case Reason::kPluginFailed: return "Plugin failed";
    default: return "Internal error";
  }
}

std::string ProblemJson(Reason reason, int status, std::string_view detail) {
  // Unknown or non-host reasons are reported as "internal" so no other code leaks out.
  const Reason shown =
      ProblemStatus(reason) == 500 && reason != Reason::kPluginFailed ? Reason::kInternal : reason;
  nlohmann::ordered_json j;
  j["type"] = std::string(kProblemTypeBase) + std::string(ReasonName(shown));
  j["title"] = std::string(ProblemTitle(shown));
  j["status"] = status;
  j["detail"] = std::string(detail);
  // Invalid UTF-8 in a detail (e.g. an echoed header) is replaced, never thrown.
  return DumpJson(j);
}

HttpResponse ProblemResponse(Reason reason, std::string_view detail,
                             std::optional<int64_t> retry_after_s,
                             std::optional<int> status_override) {
  HttpResponse r;
  r.status = status_override.value_or(ProblemStatus(reason));
  r.headers.Set("Content-Type", std::string(kProblemContentType));
  if (retry_after_s)
    r.headers.Set("Retry-After", std::to_string(std::max<int64_t>(1, *retry_after_s)));
  r.body = ProblemJson(reason, r.status, detail);
  return r;
}

HttpResponse BlankProblemResponse(int status, std::string_view detail) {
  std::string_view title = "Error";
  switch (status) {
    case 400: title = "Bad Request"; break;
    case 404: title = "Not Found"; break;
    case 405: title = "Method Not Allowed"; break;
    case 408: title = "Request Timeout"; break;
    case 413: title = "Content Too Large"; break;
    case 431: title = "Request Header Fields Too Large"; break;
    case 500: title = "Internal Server Error"; break;
    case 503: title = "Service Unavailable"; break;
    default: break;
  }
  nlohmann::ordered_json j;
  j["type"] = "about:blank";
  j["title"] = std::string(title);
  j["status"] = status;
  j["detail"] = std::string(detail);
  HttpResponse r;
  r.status = status;
  r.headers.Set("Content-Type", std::string(kProblemContentType));
  r.body = DumpJson(j);
  return r;
}

HttpResponse ProblemFromStatus(const Status& status, std::optional<int64_t> retry_after_s) {
  return ProblemResponse(status.reason(), status.message(), retry_after_s);
}

}  // namespace clawguard::host
