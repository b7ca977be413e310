// pack_cli_test.cpp — `clawguard pack` through the built binary: output, --json, exit codes
// 0/1/2; and the staged example plugin packs and passes the ELF properties the loader checks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "clawguard/sha256.h"
#include "support/temp_dir.h"

namespace clawguard {
namespace {

namespace fs = std::filesystem;
using ::clawguard::testing::ReadFile;
using ::clawguard::testing::RunClawguard;
using ::clawguard::testing::RunCommand;
using ::clawguard::testing::TempDir;
using ::clawguard::testing::WriteFile;
using ::testing::HasSubstr;

constexpr const char* kCliManifest = R"(schema: clawguard/plugin/v1
name: tiny
version: 0.3.1
publisher: acme
abi: 1
entry: lib/libtiny.so
files:
  lib/libtiny.so: null
)";

const std::string kStage = std::string(CLAWGUARD_BINARY_DIR) + "/examples/acme-orders/stage";

TEST(PackCliTest, PrintsPathAndSha256) {
  TempDir t;
  WriteFile(t.Sub("src/manifest.yaml"), kCliManifest);
  WriteFile(t.Sub("src/lib/libtiny.so"), "tiny");
  auto r = RunClawguard({"pack", "--manifest", t.Sub("src/manifest.yaml"), "--out", t.Sub("out")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string pkg = t.Sub("out/tiny-0.3.1.claw");
  EXPECT_THAT(r.out, HasSubstr("packed " + pkg + "\n"));
  EXPECT_THAT(r.out, HasSubstr("sha256 " + Sha256Hex(ReadFile(pkg)) + "\n"));
}

TEST(PackCliTest, JsonPrintsOneObject) {
  TempDir t;
  WriteFile(t.Sub("m/manifest.yaml"), kCliManifest);
  WriteFile(t.Sub("root/lib/libtiny.so"), "tiny");
  auto r = RunClawguard({"pack", "--manifest", t.Sub("m/manifest.yaml"), "--root", t.Sub("root"),
                         "--out", t.Sub("out"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.size(), 4u);
  EXPECT_EQ(j["package"], t.Sub("out/tiny-0.3.1.claw"));
  EXPECT_EQ(j["sha256"], Sha256Hex(ReadFile(t.Sub("out/tiny-0.3.1.claw"))));
  EXPECT_EQ(j["name"], "tiny");
  EXPECT_EQ(j["version"], "0.3.1");
}

TEST(PackCliTest, RefusedManifestExitsOne) {
  TempDir t;
  std::string m = kCliManifest;
  m.replace(m.find("0.3.1"), 5, "0.3.1+build.2");
  WriteFile(t.Sub("src/manifest.yaml"), m);
  WriteFile(t.Sub("src/lib/libtiny.so"), "tiny");
  auto r = RunClawguard({"pack", "--manifest", t.Sub("src/manifest.yaml"), "--out", t.Sub("out")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("clawguard pack: manifest_invalid: "));
  EXPECT_THAT(r.err, HasSubstr("build metadata would dodge the ledger"));

  auto j = RunClawguard(
      {"pack", "--manifest", t.Sub("src/manifest.yaml"), "--out", t.Sub("out"), "--json"});
  EXPECT_EQ(j.exit_code, 1);
  EXPECT_EQ(nlohmann::json::parse(j.out)["error"], "manifest_invalid");
}

TEST(PackCliTest, MissingFileExitsTwo) {
  TempDir t;
  WriteFile(t.Sub("src/manifest.yaml"), kCliManifest);
  auto r = RunClawguard({"pack", "--manifest", t.Sub("src/manifest.yaml"), "--out", t.Sub("out")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("file_unreadable"));
  EXPECT_THAT(r.err, HasSubstr("lib/libtiny.so"));
  EXPECT_FALSE(fs::exists(t.Sub("out/tiny-0.3.1.claw")));
}

TEST(PackCliTest, UsageErrorsExitTwo) {
  TempDir t;
  EXPECT_EQ(RunClawguard({"pack", "--out", t.Sub("out")}).exit_code, 2);          // no --manifest
  EXPECT_EQ(RunClawguard({"pack", "--manifest", t.Sub("m.yaml")}).exit_code, 2);  // no --out
  EXPECT_EQ(RunClawguard({"pack", "--manifest", "m", "--out", "o", "--bogus"}).exit_code, 2);
}

TEST(PackCliTest, PacksTheStagedExamplePluginReproducibly) {
  ASSERT_TRUE(fs::exists(kStage + "/manifest.yaml")) << "build the acme_orders_stage target";
  TempDir t;
  auto a = RunClawguard(
      {"pack", "--manifest", kStage + "/manifest.yaml", "--out", t.Sub("a"), "--json"});
  auto b = RunClawguard(
      {"pack", "--manifest", kStage + "/manifest.yaml", "--out", t.Sub("b"), "--json"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(nlohmann::json::parse(a.out)["sha256"], nlohmann::json::parse(b.out)["sha256"]);
  EXPECT_EQ(nlohmann::json::parse(a.out)["package"], t.Sub("a/acme-orders-1.4.2.claw"));
  auto list = RunCommand(
      {"/bin/sh", "-c", "zstd -dc \"$0\" | tar -tvf -", t.Sub("a/acme-orders-1.4.2.claw")});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("-rwxr-xr-x 0/0"));
  EXPECT_THAT(list.out, HasSubstr(" lib/libacme_orders.so\n"));
}

TEST(PackCliTest, ExamplePluginPassesTheLoadersElfRules) {
  const std::string so = kStage + "/lib/libacme_orders.so";
  ASSERT_TRUE(fs::exists(so)) << "build the acme_orders_stage target";
  auto dyn = RunCommand({"readelf", "-dW", so});
  ASSERT_EQ(dyn.exit_code, 0) << dyn.err;
  EXPECT_EQ(dyn.out.find("RPATH"), std::string::npos) << dyn.out;
  EXPECT_EQ(dyn.out.find("RUNPATH"), std::string::npos) << dyn.out;
  EXPECT_EQ(dyn.out.find("TEXTREL"), std::string::npos) << dyn.out;
  EXPECT_THAT(dyn.out, HasSubstr("Shared library: [libc.so.6]"));
  size_t needed = 0;
  for (size_t at = 0; (at = dyn.out.find("(NEEDED)", at)) != std::string::npos; ++at) ++needed;
  EXPECT_EQ(needed, 1u) << dyn.out;
  auto seg = RunCommand({"readelf", "-lW", so});
  ASSERT_EQ(seg.exit_code, 0) << seg.err;
  const size_t stack = seg.out.find("GNU_STACK");
  ASSERT_NE(stack, std::string::npos);
  const std::string line = seg.out.substr(stack, seg.out.find('\n', stack) - stack);
  EXPECT_THAT(line, HasSubstr(" RW "));
  EXPECT_EQ(line.find("RWE"), std::string::npos) << line;
  auto syms = RunCommand({"readelf", "--dyn-syms", "-W", so});
  EXPECT_THAT(syms.out, HasSubstr("GLOBAL DEFAULT"));
  EXPECT_THAT(syms.out, HasSubstr(" clawguard_plugin_v1\n"));
}

}  // namespace
}  // namespace clawguard
