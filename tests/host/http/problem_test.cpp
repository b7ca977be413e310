// problem_test.cpp — RFC 9457 rendering and the status table of ARCHITECTURE.md step 6.
#include "host/http/problem.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace clawguard::host {
namespace {

TEST(ProblemTest, StatusTable) {
  EXPECT_EQ(ProblemStatus(Reason::kRequestTooLarge), 413);
  EXPECT_EQ(ProblemStatus(Reason::kNotFound), 404);
  EXPECT_EQ(ProblemStatus(Reason::kHeaderConflict), 400);
  EXPECT_EQ(ProblemStatus(Reason::kSignatureInvalid), 401);
  EXPECT_EQ(ProblemStatus(Reason::kTimestampOutOfTolerance), 401);
  EXPECT_EQ(ProblemStatus(Reason::kIdempotencyKeyMissing), 400);
  EXPECT_EQ(ProblemStatus(Reason::kFingerprintMismatch), 422);
  EXPECT_EQ(ProblemStatus(Reason::kInProgress), 409);
  EXPECT_EQ(ProblemStatus(Reason::kRateLimited), 429);
  EXPECT_EQ(ProblemStatus(Reason::kBreakerOpen), 503);
  EXPECT_EQ(ProblemStatus(Reason::kStoreUnavailable), 503);
  EXPECT_EQ(ProblemStatus(Reason::kPluginFailed), 500);
  EXPECT_EQ(ProblemStatus(Reason::kPluginTimeout), 503);
  EXPECT_EQ(ProblemStatus(Reason::kExpiredKeySeen), 409);
  EXPECT_EQ(ProblemStatus(Reason::kInternal), 500);
}

TEST(ProblemTest, RendersProblemJsonWithRetryAfter) {
  const HttpResponse r = ProblemResponse(Reason::kInProgress, "being processed", 3);
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(r.headers.Get("content-type"), "application/problem+json");
  EXPECT_EQ(r.headers.Get("Retry-After"), "3");
  const auto j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["type"], "https://clawguard.dev/problems/in_progress");
  EXPECT_EQ(j["title"], "Request in progress");
  EXPECT_EQ(j["status"], 409);
  EXPECT_EQ(j["detail"], "being processed");
}

TEST(ProblemTest, NonHostReasonsAreShownAsInternal) {
  const HttpResponse r = ProblemResponse(Reason::kHsmLoginFailed, "x");
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(nlohmann::json::parse(r.body)["type"], "https://clawguard.dev/problems/internal");
  EXPECT_FALSE(r.headers.Has("Retry-After"));
}

TEST(ProblemTest, InvalidUtf8InDetailDoesNotThrow) {
  const HttpResponse r = ProblemResponse(Reason::kNotFound, std::string("bad \xff byte"));
  EXPECT_EQ(r.status, 404);
  EXPECT_FALSE(nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false).is_discarded());
}

TEST(ProblemTest, BlankProblemHasAboutBlankTypeAndTheStatusPhrase) {
  const HttpResponse r = BlankProblemResponse(400, "malformed \"HTTP\" request");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.headers.Get("Content-Type"), "application/problem+json");
  EXPECT_EQ(
      r.body,
      R"({"type":"about:blank","title":"Bad Request","status":400,"detail":"malformed \"HTTP\" request"})");
}

}  // namespace
}  // namespace clawguard::host
