// manifest_test.cpp — strict manifest reading: every refusal is kManifestInvalid with a message
// that says where and what; rendering is deterministic and round-trips.
#include "clawguard/manifest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard {
namespace {

using ::testing::HasSubstr;

constexpr const char* kValid = R"(schema: clawguard/plugin/v1
name: acme-orders
version: 1.4.2
publisher: acme
abi: 1
entry: lib/libacme_orders.so
files:
  lib/libacme_orders.so: null
  share/README.txt: sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
capabilities:
  erp:
    - POST /inventory/adjust
    - POST /orders/{id}/fulfil
webhooks:
  - route: order.created
    idempotency: { level: 2, business_key: /order_id, retention: 7d }
  - route: order.cancelled
    idempotency:
      level: 1
      business_key: /data/id
)";

// Replace swaps the first |from| in kValid for |to| (the test fails if |from| is absent).
std::string Replace(const std::string& from, const std::string& to) {
  std::string s = kValid;
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

// ExpectRefused parses |text| and checks the exact reason and a part of the message.
void ExpectRefused(const std::string& text, const std::string& message_part) {
  auto m = ParseManifest(text, "manifest.yaml");
  ASSERT_FALSE(m.ok()) << "accepted:\n" << text;
  EXPECT_THAT(m, HasReason(Reason::kManifestInvalid)) << m.error().ToString();
  EXPECT_THAT(m.error().message(), HasSubstr(message_part));
  EXPECT_THAT(m.error().message(), HasSubstr("manifest.yaml"));  // says where
}

TEST(ManifestTest, ParsesValidManifest) {
  auto m = ParseManifest(kValid, "manifest.yaml");
  ASSERT_TRUE(m.ok()) << m.error().ToString();
  EXPECT_EQ(m->name, "acme-orders");
  EXPECT_EQ(m->version, "1.4.2");
  EXPECT_EQ(m->publisher, "acme");
  EXPECT_EQ(m->abi, 1);
  EXPECT_EQ(m->entry, "lib/libacme_orders.so");
  ASSERT_EQ(m->files.size(), 2u);
  EXPECT_EQ(m->files.at("lib/libacme_orders.so"), std::nullopt);
  EXPECT_EQ(m->files.at("share/README.txt"),
            "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
  EXPECT_EQ(m->erp_capabilities,
            (std::vector<std::string>{"POST /inventory/adjust", "POST /orders/{id}/fulfil"}));
  ASSERT_EQ(m->webhooks.size(), 2u);
  EXPECT_EQ(m->webhooks[0].route, "order.created");
  EXPECT_EQ(m->webhooks[0].level, 2);
  EXPECT_EQ(m->webhooks[0].business_key, "/order_id");
  EXPECT_EQ(m->webhooks[0].retention, std::chrono::hours(24 * 7));
  EXPECT_EQ(m->webhooks[0].retention_text, "7d");
  EXPECT_EQ(m->webhooks[1].level, 1);
  EXPECT_EQ(m->webhooks[1].retention, std::nullopt);
  EXPECT_EQ(PackageFileName(*m), "acme-orders-1.4.2.claw");
}

TEST(ManifestTest, LevelDefaultsToTwoAndSectionsAreOptional) {
  auto m = ParseManifest(
      "schema: clawguard/plugin/v1\nname: a\nversion: 0.1.0-rc.1\npublisher: A Corp\nabi: 1\n"
      "entry: x.so\nfiles: { x.so: null }\nwebhooks:\n  - route: r\n    idempotency: {}\n",
      "m.yaml");
  ASSERT_TRUE(m.ok()) << m.error().ToString();
  EXPECT_TRUE(m->erp_capabilities.empty());
  ASSERT_EQ(m->webhooks.size(), 1u);
  EXPECT_EQ(m->webhooks[0].level, 2);
  EXPECT_EQ(m->webhooks[0].business_key, std::nullopt);
}

TEST(ManifestTest, RefusesDuplicateKey) {
  ExpectRefused(Replace("publisher: acme\n", "publisher: acme\npublisher: evil\n"),
                "duplicate key 'publisher'");
}
TEST(ManifestTest, RefusesDuplicateFile) {
  ExpectRefused(Replace("  lib/libacme_orders.so: null\n",
                        "  lib/libacme_orders.so: null\n  lib/libacme_orders.so: null\n"),
                "duplicate key");
}
TEST(ManifestTest, RefusesUnknownKeys) {
  ExpectRefused(Replace("abi: 1\n", "abi: 1\nsignature: x\n"), "unknown key 'signature'");
  ExpectRefused(Replace("level: 2,", "level: 2, lvl: 3,"), "unknown key 'lvl'");
  ExpectRefused(Replace("  erp:\n", "  shell: []\n  erp:\n"), "unknown key 'shell'");
  ExpectRefused(Replace("  - route: order.created\n", "  - route: order.created\n    secret: x\n"),
                "unknown key 'secret'");
}
TEST(ManifestTest, RefusesMissingKey) {
  ExpectRefused(Replace("publisher: acme\n", ""), "required key 'publisher' is missing");
}
TEST(ManifestTest, RefusesWrongSchema) {
  ExpectRefused(Replace("plugin/v1", "plugin/v2"), "expected clawguard/plugin/v1");
}

TEST(ManifestTest, RefusesBuildMetadataWithItsOwnMessage) {
  ExpectRefused(Replace("version: 1.4.2", "version: 1.4.2+build.5"),
                "build metadata would dodge the ledger");
}
TEST(ManifestTest, RefusesBadVersions) {
  ExpectRefused(Replace("version: 1.4.2", "version: 1.04.2"), "SemVer");
  ExpectRefused(Replace("version: 1.4.2", "version: 1.4"), "SemVer");
  ExpectRefused(Replace("version: 1.4.2", "version: v1.4.2"), "SemVer");
}

TEST(ManifestTest, RefusesBadNames) {
  for (const char* bad : {"Acme", "-acme", "acme_orders", "acme.orders", "\"\"",
                          "a1234567890123456789012345678901234567890123456789012345678901234"}) {
    ExpectRefused(Replace("name: acme-orders", std::string("name: ") + bad), "name:");
  }
}

TEST(ManifestTest, RefusesBadPublisher) {
  ExpectRefused(Replace("publisher: acme", "publisher: \"\""), "publisher");
  ExpectRefused(Replace("publisher: acme", "publisher: \"acme\\t\""), "publisher");
  ExpectRefused(Replace("publisher: acme", "publisher: [acme]"), "publisher");
}

TEST(ManifestTest, RefusesWrongTypes) {
  ExpectRefused(Replace("abi: 1", "abi: \"1\""), "expected a plain decimal integer");
  ExpectRefused(Replace("abi: 1", "abi: 0x1"), "expected a plain decimal integer");
  ExpectRefused(Replace("abi: 1", "abi: 0"), "abi");
  ExpectRefused(Replace("abi: 1", "abi: 1.0"), "abi");
  ExpectRefused(Replace("level: 2,", "level: \"2\","), "level");
  ExpectRefused(Replace("level: 2,", "level: 4,"), "level");
  ExpectRefused(Replace("files:\n", "files: []\nx:\n"), "files must be a mapping");
  ExpectRefused(Replace("  erp:\n    - POST /inventory/adjust\n    - POST /orders/{id}/fulfil\n",
                        "  erp: POST /x\n"),
                "expected a list");
  ExpectRefused(Replace("retention: 7d", "retention: 7"), "expected a duration");
  ExpectRefused(Replace("retention: 7d", "retention: 0d"), "positive duration");
}

TEST(ManifestTest, RefusesNonCanonicalPaths) {
  for (const char* bad :
       {"../x", "/abs", "a//b", "a/./b", "a\\b", "a/", "./a", "a/..", "\"a\\tb\""}) {
    ExpectRefused(Replace("  share/README.txt:", std::string("  ") + bad + ":"),
                  "canonical relative path");
  }
  EXPECT_FALSE(IsCanonicalPath(std::string(256, 'a')));
  EXPECT_TRUE(IsCanonicalPath(std::string(255, 'a')));
  EXPECT_FALSE(IsCanonicalPath(std::string("a\0b", 3)));
  EXPECT_FALSE(IsCanonicalPath(""));
}

TEST(ManifestTest, RefusesManifestListedAndFileFolderClash) {
  ExpectRefused(Replace("  share/README.txt:", "  manifest.yaml:"), "may not be listed");
  ExpectRefused(Replace("  share/README.txt:", "  lib:"), "also as the folder");
}

TEST(ManifestTest, RefusesEntryNotListedAndBadDigest) {
  ExpectRefused(Replace("entry: lib/libacme_orders.so", "entry: lib/other.so"),
                "must be one of the paths listed under files");
  ExpectRefused(Replace("sha256:9f86", "sha256:9F86"), "sha256:<64 lowercase hex>");
  ExpectRefused(Replace("sha256:9f86", "sha512:9f86"), "sha256:<64 lowercase hex>");
  ExpectRefused(Replace("  lib/libacme_orders.so: null", "  lib/libacme_orders.so: \"null\""),
                "sha256:<64 lowercase hex>");
}

TEST(ManifestTest, RefusesBadCapabilities) {
  for (const char* bad :
       {"FETCH /x", "POST x", "POST /a//b", "POST /a/../b", "POST /a/./b", "POST /a?x=1",
        "POST /a%2Fb", "POST /a#f", "POST /a/", "POST /{Id}", "POST /{1d}", "POST /a{id}",
        "POST /{id}/{id}", "post /x", "POST  /x", "POST /a b", "POST /{}"}) {
    ExpectRefused(Replace("- POST /inventory/adjust", std::string("- \"") + bad + "\""),
                  "is not a capability");
  }
  ExpectRefused(Replace("- POST /orders/{id}/fulfil", "- POST /inventory/adjust"), "listed twice");
  EXPECT_TRUE(IsValidErpCapability("DELETE /v1/items/{item_id}/x.y~z-_"));
}

TEST(ManifestTest, FlowListWithBraceErrorPointsAtBlockStyle) {
  ExpectRefused(Replace("  erp:\n    - POST /inventory/adjust\n    - POST /orders/{id}/fulfil\n",
                        "  erp: [POST /inventory/adjust, POST /orders/{id}/fulfil]\n"),
                "block style");
  ExpectRefused(Replace("  erp:\n    - POST /inventory/adjust\n    - POST /orders/{id}/fulfil\n",
                        "  erp: [POST /orders/{id}/fulfil]\n"),
                "block style");
}

TEST(ManifestTest, RefusesBadWebhooks) {
  ExpectRefused(Replace("      level: 1\n      business_key: /data/id\n", "      level: 1\n"),
                "business_key");
  ExpectRefused(Replace("route: order.cancelled", "route: order.created"), "declared twice");
  ExpectRefused(Replace("route: order.created", "route: Order.Created"), "route");
  ExpectRefused(Replace("route: order.created", "route: .created"), "route");
  ExpectRefused(Replace("business_key: /order_id", "business_key: order_id"), "JSON Pointer");
  ExpectRefused(Replace("business_key: /order_id", "business_key: /a~2b"), "JSON Pointer");
  ExpectRefused(
      Replace("    idempotency: { level: 2, business_key: /order_id, retention: 7d }\n", ""),
      "idempotency");
  EXPECT_TRUE(IsValidJsonPointer(""));
  EXPECT_TRUE(IsValidJsonPointer("/a~0b/~1/0"));
  EXPECT_FALSE(IsValidJsonPointer("/a~"));
}

TEST(ManifestTest, RefusesTooLargeAndNonMapping) {
  ExpectRefused(std::string(kValid) + "#" + std::string(300 * 1024, 'x') + "\n", "limit");
  ExpectRefused("- a\n- b\n", "must be a mapping");
  ExpectRefused("a: *x\n", "manifest.yaml");
}

TEST(ManifestTest, RenderRoundTripsAndIsDeterministic) {
  auto m = ParseManifest(kValid, "manifest.yaml");
  ASSERT_TRUE(m.ok()) << m.error().ToString();
  m->files["lib/libacme_orders.so"] = "sha256:" + std::string(64, 'a');
  const std::string yaml = RenderManifestYaml(*m);
  EXPECT_EQ(yaml, RenderManifestYaml(*m));
  EXPECT_THAT(yaml, HasSubstr("\n    - POST /orders/{id}/fulfil\n"));  // block style
  EXPECT_THAT(yaml, HasSubstr("version: 1.4.2\n"));
  EXPECT_THAT(yaml, HasSubstr("  lib/libacme_orders.so: sha256:aaaa"));
  auto back = ParseManifest(yaml, "rendered.yaml");
  ASSERT_TRUE(back.ok()) << back.error().ToString() << "\n" << yaml;
  EXPECT_EQ(*back, *m);
  EXPECT_EQ(RenderManifestYaml(*back), yaml);
}

TEST(ManifestTest, RenderQuotesWordsYamlWouldReadAsOtherTypes) {
  Manifest m;
  m.name = "null";
  m.version = "1.0.0";
  m.publisher = "yes";
  m.abi = 1;
  m.entry = "true";
  m.files = {{"true", std::nullopt}, {"007", std::nullopt}, {"a: b", std::nullopt},
             {"#x", std::nullopt},   {"a:", std::nullopt},  {"b:c", std::nullopt}};
  m.webhooks.push_back(
      {"1e5", 3, std::string(""), std::chrono::milliseconds(90'000), std::nullopt});
  auto back = ParseManifest(RenderManifestYaml(m), "rendered.yaml");
  ASSERT_TRUE(back.ok()) << back.error().ToString() << "\n" << RenderManifestYaml(m);
  m.webhooks[0].retention_text = "90s";  // rendered in the largest exact unit
  EXPECT_EQ(*back, m);
}

TEST(ManifestTest, JsonIsDeterministicAndKeepsRetentionText) {
  auto m = ParseManifest(kValid, "manifest.yaml");
  ASSERT_TRUE(m.ok());
  const nlohmann::json j = ManifestToJson(*m);
  EXPECT_EQ(j.dump(), ManifestToJson(*ParseManifest(kValid, "again.yaml")).dump());
  EXPECT_EQ(j["schema"], "clawguard/plugin/v1");
  EXPECT_EQ(j["abi"], 1);
  EXPECT_TRUE(j["files"]["lib/libacme_orders.so"].is_null());
  EXPECT_EQ(j["capabilities"]["erp"][1], "POST /orders/{id}/fulfil");
  EXPECT_EQ(j["webhooks"][0]["idempotency"]["retention"], "7d");
  EXPECT_EQ(j["webhooks"][0]["idempotency"]["business_key"], "/order_id");
  EXPECT_FALSE(j["webhooks"][1]["idempotency"].contains("retention"));
}

}  // namespace
}  // namespace clawguard
