// fd_budget_test.cpp — RLIMIT_NOFILE raised to its hard limit, and the webhook listener's bound
// within the descriptors that leaves (host/http/fd_budget.h). The end-to-end check under a real
// `ulimit -n 1024` is tests/e2e/host_flood_e2e_test.cpp.
#include "host/http/fd_budget.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include "clawguard/limits.h"
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard::host {
namespace {

TEST(FdBudgetTest, RaisesTheSoftLimitToTheHardOne) {
  rlimit before{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &before), 0);
  rlimit lowered = before;
  lowered.rlim_cur = std::min<rlim_t>(before.rlim_max, 512);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lowered), 0);
  const FdLimit got = RaiseFdLimit();
  EXPECT_EQ(got.soft_before, lowered.rlim_cur);
  rlimit after{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &after), 0);
  EXPECT_EQ(after.rlim_cur, after.rlim_max);
  EXPECT_EQ(got.soft, after.rlim_cur);
  EXPECT_EQ(got.hard, after.rlim_max);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &before), 0);
}

TEST(FdBudgetTest, TheListenerGetsWhatTheReserveLeaves) {
  // 1024 − (256 reserved + 64 handlers + 64 admin) = 640.
  EXPECT_EQ(FdsReserved(64), 384u);
  auto b = ListenerBudget(limits::kDefaultMaxConnections, 1024, 64);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, 640u);
  auto configured = ListenerBudget(100, 1024, 64);  // a smaller setting is kept
  ASSERT_TRUE(configured.ok());
  EXPECT_EQ(*configured, 100u);
  auto plenty = ListenerBudget(limits::kDefaultMaxConnections, 1'048'576, 64);
  ASSERT_TRUE(plenty.ok());
  EXPECT_EQ(*plenty, limits::kDefaultMaxConnections);
}

TEST(FdBudgetTest, TooFewDescriptorsStopTheHostNamingWhatItNeeds) {
  for (const uint64_t soft : {uint64_t{0}, uint64_t{256}, uint64_t{399}}) {
    auto b = ListenerBudget(limits::kDefaultMaxConnections, soft, 64);
    ASSERT_FALSE(b.ok()) << soft;
    EXPECT_THAT(b, HasReason(Reason::kConfigInvalid));
    EXPECT_NE(b.error().message().find("RLIMIT_NOFILE is " + std::to_string(soft)),
              std::string::npos)
        << b.error().message();
    EXPECT_NE(b.error().message().find("at least 400"), std::string::npos) << b.error().message();
  }
  auto edge = ListenerBudget(limits::kDefaultMaxConnections, 400, 64);
  ASSERT_TRUE(edge.ok());
  EXPECT_EQ(*edge, 16u);
}

}  // namespace
}  // namespace clawguard::host
