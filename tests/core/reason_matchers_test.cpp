// reason_matchers_test.cpp — HasReason matches Status and Result<T> by reason and explains a
// mismatch with the reason's name and message.
#include "support/reason_matchers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "clawguard/error.h"

namespace clawguard::testing {
namespace {

template <typename T>
std::string Explain(const T& v, Reason want) {
  ::testing::StringMatchResultListener listener;
  ::testing::Matcher<const T&> m = HasReason(want);
  m.MatchAndExplain(v, &listener);
  return listener.str();
}

TEST(HasReasonTest, MatchesAStatusOrAResultByItsReason) {
  const Status refused(Reason::kDigestMismatch, "sha256 differs");
  EXPECT_THAT(refused, HasReason(Reason::kDigestMismatch));
  EXPECT_THAT(refused, ::testing::Not(HasReason(Reason::kOk)));
  EXPECT_THAT(Status::Ok(), HasReason(Reason::kOk));

  const Result<int> error = Status(Reason::kUsage, "no package");
  const Result<int> value = 7;
  EXPECT_THAT(error, HasReason(Reason::kUsage));
  EXPECT_THAT(value, HasReason(Reason::kOk));
  EXPECT_THAT(value, ::testing::Not(HasReason(Reason::kUsage)));
}

TEST(HasReasonTest, AMismatchNamesTheReasonAndMessageFound) {
  const Status refused(Reason::kDigestMismatch, "sha256 differs");
  EXPECT_EQ(Explain(refused, Reason::kUsage), "which is digest_mismatch: sha256 differs");
  const Result<int> value = 7;
  EXPECT_EQ(Explain(value, Reason::kUsage), "which is ok (a value or no error)");
  std::ostringstream os;
  ::testing::Matcher<const Status&>(HasReason(Reason::kUsage)).DescribeTo(&os);
  EXPECT_EQ(os.str(), "has reason usage");
}

}  // namespace
}  // namespace clawguard::testing
