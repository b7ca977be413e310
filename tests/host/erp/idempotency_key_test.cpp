// idempotency_key_test.cpp — every vector of idempotency-keys.json, plus business key extraction.
#include "host/erp/idempotency_key.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "clawguard/sha256.h"
#include "host/intake/business_key.h"
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard::host {
namespace {

using nlohmann::json;

json Vectors() {
  std::ifstream in(std::string(CLAWGUARD_VECTORS_DIR) + "/idempotency-keys.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

// BusinessValue renders a vector's business_key the way ExtractBusinessKey does, by extracting
// it from a body — so the vectors also exercise the extraction.
std::string BusinessValue(const json& c) {
  if (!c.value("route_has_business_key", false)) return "";
  const json body = {{"order", {{"id", c["business_key"]}}}};
  auto v = ExtractBusinessKey(body.dump(), "/order/id");
  EXPECT_TRUE(v.ok()) << v.error().ToString();
  return v.ok() ? *v : "";
}

TEST(IdempotencyKeyVectorsTest, EveryLevel1Vector) {
  const json v = Vectors();
  ASSERT_EQ(v["level1"].size(), 3u);
  for (const json& c : v["level1"]) {
    SCOPED_TRACE(c.dump());
    const std::string bv = BusinessValue(c);
    EXPECT_EQ(Level1Key(c["plugin"].get<std::string>(), c["route"].get<std::string>(), bv),
              c["key"]);
    const EventKey ek = DeriveEventKey(1, c["plugin"].get<std::string>(),
                                       c["route"].get<std::string>(), "msg_any", bv, "any body");
    EXPECT_EQ(ek.key, c["key"]);
    EXPECT_EQ(ek.fingerprint, bv);
  }
}

TEST(IdempotencyKeyVectorsTest, EveryLevel2Vector) {
  const json v = Vectors();
  ASSERT_EQ(v["level2"].size(), 2u);
  for (const json& c : v["level2"]) {
    SCOPED_TRACE(c.dump());
    const std::string bv = BusinessValue(c);
    const std::string plugin = c["plugin"], route = c["route"], id = c["webhook_id"];
    EXPECT_EQ(Level2Key(plugin, route, id, bv), c["key"]);
    for (int level : {2, 3}) {
      const EventKey ek = DeriveEventKey(level, plugin, route, id, bv, "{\"raw\": 1}");
      EXPECT_EQ(ek.key, c["key"]);
      EXPECT_EQ(ek.fingerprint, Sha256Hex("{\"raw\": 1}"));
    }
  }
}

TEST(IdempotencyKeyVectorsTest, EveryErpCallVector) {
  const json v = Vectors();
  ASSERT_EQ(v["erp"].size(), 2u);
  for (const json& c : v["erp"]) {
    SCOPED_TRACE(c.dump());
    EXPECT_EQ(ErpCallKey(c["event_key"].get<std::string>(), c["plugin"].get<std::string>(),
                         c["call_index"].get<uint32_t>()),
              c["key"]);
  }
}

TEST(IdempotencyKeyTest, FieldsAreLengthPrefixedSoBoundariesMatter) {
  EXPECT_NE(Level1Key("acme-orders", "order.created", "1"),
            Level1Key("acme-orders", "order.created1", ""));
  EXPECT_NE(Level2Key("a", "b", "c", ""), Level1Key("a", "b", "c"));
}

TEST(BusinessKeyTest, StringsAndIntegersOnly) {
  EXPECT_EQ(*ExtractBusinessKey(R"({"order":{"id":"ORD-1001"}})", "/order/id"), "ORD-1001");
  EXPECT_EQ(*ExtractBusinessKey(R"({"order":{"id":1001}})", "/order/id"), "1001");
  EXPECT_EQ(*ExtractBusinessKey(R"({"order":{"id":-7}})", "/order/id"), "-7");
  EXPECT_EQ(*ExtractBusinessKey(R"({"a/b":{"m~n":"x"}})", "/a~1b/m~0n"), "x");
  EXPECT_EQ(*ExtractBusinessKey(R"({"items":["first","second"]})", "/items/1"), "second");
  EXPECT_EQ(*ExtractBusinessKey(R"({"k":"订单-7"})", "/k"), "订单-7");
}

TEST(BusinessKeyTest, EverythingElseIsIdempotencyKeyMissing) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"order":{}})", "/order/id"},                      // absent
      {R"({"order":{"id":null}})", "/order/id"},             // null
      {R"({"order":{"id":true}})", "/order/id"},             // bool
      {R"({"order":{"id":1.5}})", "/order/id"},              // float
      {R"({"order":{"id":1e3}})", "/order/id"},              // float written as exponent
      {R"({"order":{"id":{"x":1}}})", "/order/id"},          // object
      {R"({"order":{"id":[1]}})", "/order/id"},              // array
      {"not json", "/order/id"},                             // body not JSON
      {R"({"a":1,"a":2})", "/a"},                            // duplicate key (strict JSON)
      {R"({"items":[1]})", "/items/x"},                      // non-numeric array index
      {R"({"items":[1]})", "/items/-"},                      // past-the-end index
      {R"({"order":{"id":"x"}})", "order/id"},               // malformed pointer
      {R"({"order":{"id":"x"}})", "/order/id~2"},            // bad escape
      {R"({"order":{"id":""}})", "/order/id"},               // empty string
      {"{\"k\":\"" + std::string(1025, 'k') + "\"}", "/k"},  // over kMaxBusinessKeyBytes
  };
  for (const auto& [body, ptr] : cases) {
    auto r = ExtractBusinessKey(body, ptr);
    ASSERT_FALSE(r.ok()) << body << " " << ptr;
    EXPECT_THAT(r, HasReason(Reason::kIdempotencyKeyMissing)) << body << " " << ptr;
  }
}

}  // namespace
}  // namespace clawguard::host
