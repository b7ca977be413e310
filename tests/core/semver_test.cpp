// semver_test.cpp — SemVer 2.0 parsing (build metadata refused) and precedence.
#include "clawguard/semver.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace clawguard {
namespace {

TEST(SemVerTest, ParsesCoreVersion) {
  auto v = ParseSemVer("1.4.2");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->major, 1u);
  EXPECT_EQ(v->minor, 4u);
  EXPECT_EQ(v->patch, 2u);
  EXPECT_TRUE(v->prerelease.empty());
}

TEST(SemVerTest, ParsesPrerelease) {
  auto v = ParseSemVer("1.0.0-alpha.1.x-y");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->prerelease, (std::vector<std::string>{"alpha", "1", "x-y"}));
  EXPECT_TRUE(ParseSemVer("0.0.0-0"));
  EXPECT_TRUE(ParseSemVer("1.0.0-0a"));  // alphanumeric: a leading zero is fine
  EXPECT_TRUE(ParseSemVer("18446744073709551615.0.0"));
}

TEST(SemVerTest, RefusesBuildMetadata) {
  EXPECT_FALSE(ParseSemVer("1.4.2+build.7"));
  EXPECT_FALSE(ParseSemVer("1.4.2-rc.1+build"));
  EXPECT_FALSE(ParseSemVer("1.4.2+"));
}

TEST(SemVerTest, RefusesMalformed) {
  for (const char* bad : {"",
                          "1",
                          "1.2",
                          "1.2.3.4",
                          "01.2.3",
                          "1.02.3",
                          "1.2.03",
                          "v1.2.3",
                          " 1.2.3",
                          "1.2.3 ",
                          "1.2.3-",
                          "1.2.3-01",
                          "1.2.3-a..b",
                          "1.2.3-a.",
                          "1.2.3-a_b",
                          "1..3",
                          "-1.2.3",
                          "1.2.x",
                          "18446744073709551616.0.0",
                          "1.2.3-é"}) {
    EXPECT_FALSE(ParseSemVer(bad)) << bad;
  }
}

int Cmp(const char* a, const char* b) { return CompareSemVer(*ParseSemVer(a), *ParseSemVer(b)); }

TEST(SemVerTest, OrdersBySpecPrecedence) {
  // The chain from semver.org item 11, each strictly lower than the next.
  const std::vector<const char*> chain = {"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta",
                                          "1.0.0-beta",  "1.0.0-beta.2",  "1.0.0-beta.11",
                                          "1.0.0-rc.1",  "1.0.0",         "1.0.1",
                                          "1.1.0",       "2.0.0",         "10.0.0"};
  for (size_t i = 0; i < chain.size(); ++i) {
    EXPECT_EQ(Cmp(chain[i], chain[i]), 0) << chain[i];
    for (size_t j = i + 1; j < chain.size(); ++j) {
      EXPECT_LT(Cmp(chain[i], chain[j]), 0) << chain[i] << " < " << chain[j];
      EXPECT_GT(Cmp(chain[j], chain[i]), 0) << chain[j] << " > " << chain[i];
    }
  }
}

TEST(SemVerTest, ComparesNumericIdentifiersNumericallyBeyond64Bits) {
  EXPECT_LT(Cmp("1.0.0-9", "1.0.0-10"), 0);
  EXPECT_LT(Cmp("1.0.0-99999999999999999999", "1.0.0-100000000000000000000"), 0);
  EXPECT_LT(Cmp("1.0.0-999", "1.0.0-a"), 0);  // numeric before alphanumeric
  EXPECT_LT(Cmp("1.0.0-B", "1.0.0-a"), 0);    // ASCII order
}

}  // namespace
}  // namespace clawguard
