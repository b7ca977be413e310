// reason_matchers.h — HasReason(Reason::kX): a GoogleMock matcher for a Status or a Result<T>.
//
//   EXPECT_THAT(loader.Load(path), HasReason(Reason::kDigestMismatch));
//
// It matches when the Status (or the Result's error) has that reason; a mismatch prints the
// reason's stable name and the message, or that a value was held, instead of two enum numbers.
// HasReason(Reason::kOk) matches an ok Status or a Result holding a value.
#ifndef CLAWGUARD_TESTS_SUPPORT_REASON_MATCHERS_H_
#define CLAWGUARD_TESTS_SUPPORT_REASON_MATCHERS_H_

#include <gmock/gmock.h>

#include <ostream>
#include <string>

#include "clawguard/error.h"

namespace clawguard::testing {

namespace internal {

inline const Status& StatusOf(const Status& s) { return s; }
template <typename T>
Status StatusOf(const Result<T>& r) {
  return r.error();
}

template <typename T>
std::string Describe(const T& v) {
  const Status s = StatusOf(v);
  if (s.ok()) return "ok (a value or no error)";
  return std::string(ReasonName(s.reason())) + ": " + s.message();
}

class HasReasonMatcher {
 public:
  explicit HasReasonMatcher(Reason want) : want_(want) {}

  template <typename T>
  bool MatchAndExplain(const T& v, ::testing::MatchResultListener* listener) const {
    const bool match = StatusOf(v).reason() == want_;
    if (!match) *listener << "which is " << Describe(v);
    return match;
  }
  void DescribeTo(std::ostream* os) const { *os << "has reason " << ReasonName(want_); }
  void DescribeNegationTo(std::ostream* os) const {
    *os << "does not have reason " << ReasonName(want_);
  }

 private:
  Reason want_;
};

}  // namespace internal

// HasReason matches a Status or Result<T> whose reason is |want|.
inline ::testing::PolymorphicMatcher<internal::HasReasonMatcher> HasReason(Reason want) {
  return ::testing::MakePolymorphicMatcher(internal::HasReasonMatcher(want));
}

}  // namespace clawguard::testing

#endif  // CLAWGUARD_TESTS_SUPPORT_REASON_MATCHERS_H_
