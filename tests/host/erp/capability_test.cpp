// capability_test.cpp — exact-path capability matching, including path-confusion attacks.
#include "host/erp/capability.h"

#include <gtest/gtest.h>
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard::host {
namespace {

CapabilitySet Caps() {
  auto c = CapabilitySet::Create(
      {"POST /orders/{id}/fulfil", "GET /orders/{id}", "PUT /inventory/v1.2/items/{sku}"});
  EXPECT_TRUE(c.ok()) << c.error().ToString();
  return std::move(c).value();
}

TEST(CapabilityTest, MatchesDeclaredCallsAndNamesTheTemplate) {
  const CapabilitySet caps = Caps();
  EXPECT_EQ(caps.Match("POST", "/orders/1001/fulfil"), "POST /orders/{id}/fulfil");
  EXPECT_EQ(caps.Match("POST", "/orders/ORD_1-a~b/fulfil"), "POST /orders/{id}/fulfil");
  EXPECT_EQ(caps.Match("GET", "/orders/1001"), "GET /orders/{id}");
  EXPECT_EQ(caps.Match("PUT", "/inventory/v1.2/items/SKU-9"), "PUT /inventory/v1.2/items/{sku}");
}

TEST(CapabilityTest, RefusesPathConfusionAndUndeclaredCalls) {
  const CapabilitySet caps = Caps();
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"POST", "/orders/1/../../inventory/adjust"},
      {"POST", "/orders/..%2Finventory%2Fadjust"},
      {"POST", "/orders/..%2Finventory%2Fadjust/fulfil"},
      {"POST", "/orders/1/fulfil?x=1"},
      {"POST", "/orders/1/fulfil#frag"},
      {"POST", "/orders//fulfil"},
      {"POST", "/orders/./fulfil"},
      {"POST", "/orders/../fulfil"},
      {"POST", "/orders/1/fulfil/"},
      {"POST", "orders/1/fulfil"},
      {"POST", "/orders/1.5/fulfil"},  // '.' is not in a {name} segment
      {"POST", "/orders/1%2F2/fulfil"},
      {"POST", "/orders/1/fulfil/extra"},
      {"POST", "/Orders/1/fulfil"},
      {"post", "/orders/1/fulfil"},    // method exact
      {"DELETE", "/orders/1/fulfil"},  // undeclared method
      {"PUT", "/orders/1001"},
      {"GET", "/orders/1 /x"},
      {"GET", std::string("/orders/1\0", 10)},
      {"GET", ""},
  };
  for (const auto& [m, p] : refused) EXPECT_FALSE(caps.Match(m, p).has_value()) << m << " " << p;
}

TEST(CapabilityTest, CreateRefusesMalformedTemplates) {
  for (const char* bad : {"POST", "FETCH /x", "POST x", "POST /a/../b", "POST /a//b", "POST /{Id}",
                          "POST /a b", "POST /%2e"}) {
    auto r = CapabilitySet::Create({bad});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r, HasReason(Reason::kManifestInvalid)) << bad;
  }
}

}  // namespace
}  // namespace clawguard::host
