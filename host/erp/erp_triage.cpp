// erp_triage.cpp — classification of ERP answers (see the table in erp_triage.h).
#include "host/erp/erp_triage.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>

namespace clawguard::host {

std::string_view ErpVerdictName(ErpVerdict v) {
  switch (v) {
    case ErpVerdict::kSuccess: return "success";
    case ErpVerdict::kRateLimited: return "rate_limited";
    case ErpVerdict::kAuth: return "auth";
    case ErpVerdict::kNotFound: return "not_found";
    case ErpVerdict::kConflict: return "conflict";
    case ErpVerdict::kInProgress: return "in_progress";
    case ErpVerdict::kRejected: return "rejected";
    case ErpVerdict::kTransient: return "transient";
  }
  return "transient";
}

std::optional<int64_t> ParseRetryAfterSeconds(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  for (char c : value) {
    if (c < '0' || c > '9') return std::nullopt;  // HTTP-date, sign, fraction, garbage
  }
  // Very long digit strings overflow from_chars: any such value is "more than the cap".
  if (value.size() > 12) return kMaxRetryAfterSeconds;
  int64_t seconds = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (ec != std::errc() || end != value.data() + value.size()) return std::nullopt;
  return std::min(seconds, kMaxRetryAfterSeconds);
}

namespace {

bool NamesIdempotency(const nlohmann::json& v) {
  if (!v.is_string()) return false;
  std::string text = v.get<std::string>();
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) {
    return static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  });
  return text.find("idempoten") != std::string::npos;
}

}  // namespace

bool SaysKeyInProgress(const ErpReply& reply) {
  if (reply.headers.Get("Retry-After").has_value()) return true;
  if (reply.body.empty() || reply.body.size() > kMaxInProgressBody) return false;
  const nlohmann::json j = nlohmann::json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return false;  // also a parse error (discarded)
  const auto error = j.find("error");
  if (error != j.end() && error->is_object()) {
    const auto type = error->find("type");
    if (type != error->end() && type->is_string() &&
        type->get<std::string>() == "idempotency_error")
      return true;
  }
  for (const char* member : {"type", "title"}) {
    const auto it = j.find(member);
    if (it != j.end() && NamesIdempotency(*it)) return true;
  }
  return false;
}

ErpTriage TriageAnswer(const Result<ErpReply>& result, int64_t attempt) {
  ErpTriage t;
  if (!result.ok()) {
    // No answer: the ERP may or may not have acted; a resend with the same key is safe.
    const std::optional<ErpFailure> failure = ErpFailureOf(result.error());
    t.verdict = ErpVerdict::kTransient;
    t.breaker_failure = true;
    t.outcome = failure == ErpFailure::kTimeout ? ErpCallOutcome::kTimeout
                                                : ErpCallOutcome::kTransportError;
    t.detail = result.error().message();
    return t;
  }
  const int status = result->status;
  t.status = status;
  t.outcome = ErpCallOutcomeForStatus(status);
  t.detail = "status " + std::to_string(status);
  if (status >= 200 && status <= 299) {
    t.verdict = ErpVerdict::kSuccess;
    t.final = true;
    return t;
  }
  if (status == 408 || status == 425 || status < 200 || (status >= 300 && status <= 399) ||
      status >= 500) {
    t.verdict = ErpVerdict::kTransient;
    t.breaker_failure = true;
    return t;
  }
  switch (status) {
    case 429: {
      t.verdict = ErpVerdict::kRateLimited;
      const std::optional<std::string_view> ra = result->headers.Get("Retry-After");
      const std::optional<int64_t> seconds = ra ? ParseRetryAfterSeconds(*ra) : std::nullopt;
      if (seconds) t.retry_after_ms = *seconds * 1000;
      return t;
    }
    case 401:
    case 403: t.verdict = ErpVerdict::kAuth; return t;
    case 404:
      t.verdict = ErpVerdict::kNotFound;
      t.final = true;
      return t;
    case 409: {
      // Our own key still being processed is "ask again", not a conflict (erp_triage.h).
      t.key_in_progress_said = SaysKeyInProgress(*result);
      if (!t.key_in_progress_said && attempt <= 1) {
        t.verdict = ErpVerdict::kConflict;
        t.final = true;
        return t;
      }
      t.verdict = ErpVerdict::kInProgress;
      const std::optional<std::string_view> ra = result->headers.Get("Retry-After");
      const std::optional<int64_t> seconds = ra ? ParseRetryAfterSeconds(*ra) : std::nullopt;
      if (seconds) t.retry_after_ms = *seconds * 1000;
      return t;
    }
    default:
      t.verdict = ErpVerdict::kRejected;
      t.final = true;
      return t;
  }
}

}  // namespace clawguard::host
