// error_test.cpp — every Reason has a unique stable name, a meaning and a defined exit code.
#include "clawguard/error.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard {
namespace {

TEST(ReasonTest, EveryReasonHasAUniqueNameMeaningAndExitCode) {
  std::set<std::string_view> names;
  for (int i = 0; i <= static_cast<int>(Reason::kInternal); ++i) {
    const auto r = static_cast<Reason>(i);
    const auto name = ReasonName(r);
    EXPECT_FALSE(name.empty());
    EXPECT_FALSE(ReasonMeaning(r).empty());
    EXPECT_TRUE(names.insert(name).second) << "duplicate name " << name;
    EXPECT_EQ(ReasonFromName(name), r);
    const int exit = ExitCodeFor(r);
    EXPECT_TRUE(exit == 0 || exit == 1 || exit == 2);
  }
}

// The contract (docs/ARCHITECTURE.md) names every reason code, and every code it lists in
// "Reason codes" is one: a code added or renamed on one side only fails here.
std::string Contract() {
  std::ifstream in(std::string(CLAWGUARD_SOURCE_DIR) + "/docs/ARCHITECTURE.md");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ReasonTest, EveryReasonIsInTheContract) {
  const std::string contract = Contract();
  ASSERT_FALSE(contract.empty()) << "docs/ARCHITECTURE.md not found under " << CLAWGUARD_SOURCE_DIR;
  for (int i = static_cast<int>(Reason::kOk) + 1; i <= static_cast<int>(Reason::kInternal); ++i) {
    const std::string name(ReasonName(static_cast<Reason>(i)));
    EXPECT_NE(contract.find("`" + name + "`"), std::string::npos)
        << name << " is not in docs/ARCHITECTURE.md";
  }
}

TEST(ReasonTest, ArchitectureCodesAreSpelledExactly) {
  const std::string contract = Contract();
  const size_t start = contract.find("### Reason codes");
  ASSERT_NE(start, std::string::npos);
  const size_t end = contract.find("\n\n", start);
  const std::string section = contract.substr(start, end - start);
  const std::regex code("`([a-z0-9_]+)`");
  int codes = 0;
  for (auto it = std::sregex_iterator(section.begin(), section.end(), code);
       it != std::sregex_iterator(); ++it) {
    EXPECT_TRUE(ReasonFromName((*it)[1].str()).has_value()) << (*it)[1].str();
    ++codes;
  }
  EXPECT_GT(codes, 30);
}

TEST(ReasonTest, ExitCodesFollowTheContract) {
  EXPECT_EQ(ExitCodeFor(Reason::kOk), 0);
  EXPECT_EQ(ExitCodeFor(Reason::kDigestMismatch), 1);
  EXPECT_EQ(ExitCodeFor(Reason::kVersionOverwritten), 1);
  EXPECT_EQ(ExitCodeFor(Reason::kKeyExtractable), 1);
  EXPECT_EQ(ExitCodeFor(Reason::kCertKeyMismatch), 1);
  EXPECT_EQ(ExitCodeFor(Reason::kManifestInvalid), 1);
  EXPECT_EQ(ExitCodeFor(Reason::kHsmLoginFailed), 2);
  EXPECT_EQ(ExitCodeFor(Reason::kKeyUriInvalid), 2);
  EXPECT_EQ(ExitCodeFor(Reason::kFileUnreadable), 2);
  EXPECT_EQ(ExitCodeFor(Reason::kStoreUnavailable), 2);
  EXPECT_EQ(ExitCodeFor(Reason::kConfigInvalid), 2);
}

TEST(ResultTest, HoldsValueOrStatus) {
  Result<int> ok = 3;
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 3);
  Result<int> bad = Status(Reason::kUnsigned, "no bundle");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad, HasReason(Reason::kUnsigned));
  EXPECT_EQ(bad.error().ToString(), "unsigned: no bundle");
}

}  // namespace
}  // namespace clawguard
