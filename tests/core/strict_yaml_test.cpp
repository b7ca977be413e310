// strict_yaml_test.cpp — the strict YAML reader refuses what yaml-cpp would silently accept.
#include "clawguard/strict_yaml.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard {
namespace {

using ::testing::HasSubstr;

Status ParseStatus(const std::string& text) { return ParseYamlStrict(text, "t.yaml").error(); }

TEST(StrictYamlTest, RefusesDuplicateKeyWithLine) {
  const Status s = ParseStatus("a: 1\nb: 2\na: 3\n");
  EXPECT_THAT(s, HasReason(Reason::kConfigInvalid));
  EXPECT_THAT(s.message(), HasSubstr("t.yaml:3:1"));
  EXPECT_THAT(s.message(), HasSubstr("duplicate key 'a'"));
}

TEST(StrictYamlTest, RefusesNestedDuplicateKey) {
  const Status s = ParseStatus("outer:\n  x: 1\n  x: 2\n");
  EXPECT_THAT(s, HasReason(Reason::kConfigInvalid));
  EXPECT_THAT(s.message(), HasSubstr("t.yaml:3:3"));
}

TEST(StrictYamlTest, DuplicateKeysInSiblingMapsAreFine) {
  EXPECT_TRUE(ParseYamlStrict("- {a: 1}\n- {a: 2}\n", "t.yaml").ok());
}

TEST(StrictYamlTest, RefusesAliasesAnchorsAndTags) {
  EXPECT_THAT(ParseStatus("a: &x 1\nb: *x\n").message(), HasSubstr("anchors"));
  EXPECT_THAT(ParseStatus("a: !!int 1\n").message(), HasSubstr("explicit tags"));
}

TEST(StrictYamlTest, RefusesSeveralDocuments) {
  EXPECT_THAT(ParseStatus("a: 1\n---\nb: 2\n").message(), HasSubstr("exactly one YAML document"));
}

TEST(StrictYamlTest, RefusesDeepNesting) {
  std::string deep;
  for (int i = 0; i < 40; ++i) deep += "[";
  for (int i = 0; i < 40; ++i) deep += "]";
  EXPECT_THAT(ParseStatus("a: " + deep + "\n").message(), HasSubstr("deeper"));
}

TEST(StrictYamlTest, SyntaxErrorInFlowListPointsAtBlockStyle) {
  const Status s = ParseStatus("erp: [POST /orders/{id}/fulfil]\n");
  EXPECT_THAT(s, HasReason(Reason::kConfigInvalid));
  EXPECT_THAT(s.message(), HasSubstr("t.yaml:1:"));
}

TEST(StrictYamlTest, UsesTheGivenReason) {
  EXPECT_THAT(ParseYamlStrict("a: 1\na: 1\n", "m.yaml", Reason::kManifestInvalid),
              HasReason(Reason::kManifestInvalid));
}

class YamlMapTest : public ::testing::Test {
 protected:
  YamlMap Map(const std::string& text) {
    auto doc = ParseYamlStrict(text, "t.yaml");
    EXPECT_TRUE(doc.ok()) << doc.error().ToString();
    doc_ = *doc;
    auto m = YamlMap::Create(doc_.root, "t.yaml", "");
    EXPECT_TRUE(m.ok());
    return std::move(m).value();
  }
  YamlDoc doc_;
};

TEST_F(YamlMapTest, StringsKeepYesAndHexAsText) {
  auto m = Map("a: yes\nb: 0x10\nc: 'quoted'\n");
  EXPECT_EQ(*m.String("a"), "yes");
  EXPECT_EQ(*m.String("b"), "0x10");
  EXPECT_EQ(*m.String("c"), "quoted");
  EXPECT_TRUE(m.Finish().ok());
}

TEST_F(YamlMapTest, IntRefusesHexQuotedFloatAndRange) {
  auto m = Map("a: 0x10\nb: \"12\"\nc: 1.5\nd: 12\ne: 07\n");
  EXPECT_THAT(m.Int("a", 0, 100), HasReason(Reason::kConfigInvalid));
  EXPECT_THAT(m.Int("b", 0, 100).error().message(), HasSubstr("plain decimal integer"));
  EXPECT_FALSE(m.Int("c", 0, 100).ok());
  EXPECT_EQ(*m.Int("d", 0, 100), 12);
  EXPECT_FALSE(m.Int("d", 0, 10).ok());
  EXPECT_FALSE(m.Int("e", 0, 100).ok());
}

TEST_F(YamlMapTest, BoolAcceptsOnlyTrueAndFalse) {
  auto m = Map("a: true\nb: yes\nc: 'true'\n");
  EXPECT_TRUE(*m.Bool("a"));
  EXPECT_FALSE(m.Bool("b").ok());
  EXPECT_FALSE(m.Bool("c").ok());
}

TEST_F(YamlMapTest, SizesAndDurations) {
  auto m = Map("a: 16KiB\nb: 1GiB\nc: 5m\nd: 7d\ne: 30\nf: 1TB\n");
  EXPECT_EQ(*m.Size("a", 1ull << 40), 16384u);
  EXPECT_EQ(*m.Size("b", 1ull << 40), 1ull << 30);
  EXPECT_EQ(m.Duration("c")->count(), 300000);
  EXPECT_EQ(m.Duration("d")->count(), 7 * 86400000LL);
  EXPECT_THAT(m.Duration("e").error().message(), HasSubstr("duration"));
  EXPECT_FALSE(m.Size("f", 1ull << 40).ok());
}

TEST_F(YamlMapTest, FinishRefusesUnknownKeysWithLine) {
  auto m = Map("known: 1\ntypo: 2\n");
  ASSERT_TRUE(m.Int("known", 0, 9).ok());
  const Status s = m.Finish();
  EXPECT_THAT(s, HasReason(Reason::kConfigInvalid));
  EXPECT_THAT(s.message(), HasSubstr("t.yaml:2:1"));
  EXPECT_THAT(s.message(), HasSubstr("unknown key 'typo'"));
}

TEST_F(YamlMapTest, MissingRequiredKeyIsNamed) {
  auto m = Map("a: 1\n");
  EXPECT_THAT(m.String("schema").error().message(), HasSubstr("required key 'schema' is missing"));
}

TEST_F(YamlMapTest, EnumListsAllowedValues) {
  auto m = Map("mode: enforcing\n");
  EXPECT_THAT(m.Enum("mode", {"enforce", "audit"}).error().message(), HasSubstr("audit, enforce"));
}

TEST(YamlMapCreateTest, RefusesNonMapping) {
  auto doc = ParseYamlStrict("- a\n- b\n", "t.yaml");
  ASSERT_TRUE(doc.ok());
  EXPECT_THAT(YamlMap::Create(doc->root, "t.yaml", "").error().message(),
              HasSubstr("must be a mapping"));
}

// yaml-cpp 0.7 yields empty documents forever for this input (found by strict_yaml_fuzz; the
// input is also in tests/fuzz/corpus/strict_yaml/): the parser must stop and refuse it.
TEST(StrictYamlRegressionTest, EndlessDocumentStreamIsRefused) {
  auto parsed = ParseYamlStrict(",:: ", "x.yaml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed, HasReason(Reason::kConfigInvalid));
}

// A publisher with bytes that are not UTF-8 parsed, and rendered back (as U+FFFD) to another
// manifest (found by manifest_fuzz; the input is
// tests/fuzz/corpus/manifest/regression-invalid-utf8). YAML is Unicode text: such a file is
// refused, with where.
TEST(StrictYamlRegressionTest, InvalidUtf8IsRefusedWithItsPosition) {
  auto parsed = ParseYamlStrict("name: ok\npublisher: \xaa\xaa\n", "m.yaml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed, HasReason(Reason::kConfigInvalid));
  EXPECT_THAT(parsed.error().message(), HasSubstr("m.yaml:2:12: the file is not valid UTF-8"));
  for (const char* bad : {"a: \xc0\xaf\n", "a: \xed\xa0\x80\n", "a: \xf4\x90\x80\x80\n",
                          "a: \xe2\x82\n", "a: \xe2"}) {
    auto refused = ParseYamlStrict(bad, "m.yaml");
    ASSERT_FALSE(refused.ok()) << "overlong, surrogate, > U+10FFFF or truncated";
    EXPECT_THAT(refused, HasReason(Reason::kConfigInvalid));
  }
  for (const char* good :
       {"a: \xc3\xa9\n", "a: \xe2\x82\xac\n", "a: \xf0\x9f\x94\x92\n", "a: \xf4\x8f\xbf\xbf\n"}) {
    EXPECT_TRUE(ParseYamlStrict(good, "m.yaml").ok()) << good;
  }
}

TEST(StrictYamlTest, FormatsDurationsInTheLargestExactUnitAndReadsThemBack) {
  using std::chrono::milliseconds;
  EXPECT_EQ(FormatDuration(milliseconds(7LL * 86'400'000)), "7d");
  EXPECT_EQ(FormatDuration(milliseconds(61'380'000)), "1023m");
  EXPECT_EQ(FormatDuration(milliseconds(300'000)), "5m");
  EXPECT_EQ(FormatDuration(milliseconds(3'600'000)), "1h");
  EXPECT_EQ(FormatDuration(milliseconds(1500)), "1500ms");
  EXPECT_EQ(FormatDuration(milliseconds(0)), "0s");
  for (int64_t ms : {1LL, 999LL, 1000LL, 61'380'000LL, 7LL * 86'400'000}) {
    EXPECT_EQ(ParseDurationText(FormatDuration(milliseconds(ms))), milliseconds(ms)) << ms;
  }
}

}  // namespace
}  // namespace clawguard
