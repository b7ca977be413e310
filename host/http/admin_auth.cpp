// admin_auth.cpp — bearer-token gate for the admin listener (see admin_auth.h).
#include "host/http/admin_auth.h"

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "clawguard/limits.h"

namespace clawguard::host {
namespace {

constexpr std::string_view kChallenge = "Bearer realm=\"clawguard-admin\"";
constexpr std::string_view kInvalidTokenChallenge =
    "Bearer realm=\"clawguard-admin\", error=\"invalid_token\"";

HttpResponse Unauthorized(std::string_view challenge, std::string_view detail) {
  HttpResponse r;
  r.status = 401;
  r.headers.Set("WWW-Authenticate", std::string(challenge));
  r.headers.Set("Content-Type", "application/problem+json");
  r.headers.Set("Cache-Control", "no-store");
  r.body = R"({"type":"about:blank","title":"Unauthorized","status":401,"detail":")" +
           std::string(detail) + "\"}";
  return r;
}

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

// PresentedToken extracts the token of "Bearer <token>"; nullopt if the scheme is not Bearer or
// the token is empty or holds whitespace.
std::optional<std::string_view> PresentedToken(std::string_view value) {
  constexpr std::string_view kScheme = "bearer";
  if (value.size() <= kScheme.size() || !AsciiCaseEqual(value.substr(0, kScheme.size()), kScheme) ||
      !IsSpace(value[kScheme.size()])) {
    return std::nullopt;
  }
  value.remove_prefix(kScheme.size());
  while (!value.empty() && IsSpace(value.front())) value.remove_prefix(1);
  while (!value.empty() && IsSpace(value.back())) value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  for (char c : value) {
    if (IsSpace(c)) return std::nullopt;
  }
  return value;
}

}  // namespace

Result<Handler> RequireBearerToken(SecretBytes token, Handler inner) {
  if (token.size() < limits::kMinAdminTokenLength) {
    return Status(Reason::kConfigInvalid, "admin.token must be at least " +
                                              std::to_string(limits::kMinAdminTokenLength) +
                                              " characters, got " + std::to_string(token.size()));
  }
  if (!inner) return Status(Reason::kConfigInvalid, "no admin handler");
  auto secret = std::make_shared<const SecretBytes>(std::move(token));
  return Handler([secret, inner = std::move(inner)](const HttpRequest& request) -> HttpResponse {
    const size_t count = request.headers.Count("Authorization");
    if (count == 0) return Unauthorized(kChallenge, "a bearer token is required");
    if (count > 1)
      return Unauthorized(kInvalidTokenChallenge, "more than one Authorization header");
    const std::optional<std::string_view> presented =
        PresentedToken(*request.headers.Get("Authorization"));
    if (!presented || !ConstantTimeEquals(*presented, InsecureSecretAccess::View(*secret))) {
      return Unauthorized(kInvalidTokenChallenge, "the bearer token is not valid");
    }
    return inner(request);
  });
}

}  // namespace clawguard::host
