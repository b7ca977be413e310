// json_dump_test.cpp — DumpJson: compact, UTF-8 as is, invalid UTF-8 replaced (json_dump.h).
#include "clawguard/json_dump.h"

#include <gtest/gtest.h>

#include <string>

namespace clawguard {
namespace {

TEST(JsonDumpTest, CompactWithoutSpaces) {
  EXPECT_EQ(DumpJson({{"a", 1}, {"b", {true, nullptr}}, {"c", "x"}}),
            R"({"a":1,"b":[true,null],"c":"x"})");
}

TEST(JsonDumpTest, ReplacesInvalidUtf8WithTheReplacementCharacter) {
  const nlohmann::json j = {{"detail", std::string("a\xff"
                                                   "b\xc3")}};
  EXPECT_THROW((void)j.dump(), nlohmann::json::type_error);  // what the default handler does
  EXPECT_EQ(DumpJson(j),
            "{\"detail\":\"a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD\"}");
}

TEST(JsonDumpTest, KeepsValidUtf8AsIsAndEscapesControlCharacters) {
  const nlohmann::json j = std::string("caf\xC3\xA9 \xE2\x82\xAC\n\"");
  EXPECT_EQ(DumpJson(j), "\"caf\xC3\xA9 \xE2\x82\xAC\\n\\\"\"");
}

TEST(JsonDumpTest, SameBytesAsTheFlagsItReplaces) {
  const nlohmann::json j = {{"k", std::string("\x80ok")}, {"n", -1.5}, {"o", {{"z", 1}, {"a", 2}}}};
  EXPECT_EQ(DumpJson(j), j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  EXPECT_EQ(DumpJson(j, 2), j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
}

TEST(JsonDumpTest, OrderedJsonKeepsInsertionOrder) {
  nlohmann::ordered_json j;
  j["z"] = std::string("\xfe");
  j["a"] = 1;
  EXPECT_EQ(DumpJson(j), "{\"z\":\"\xEF\xBF\xBD\",\"a\":1}");
  EXPECT_EQ(DumpJson(j, 2), "{\n  \"z\": \"\xEF\xBF\xBD\",\n  \"a\": 1\n}");
}

}  // namespace
}  // namespace clawguard
