// host_secrets_e2e_test.cpp — a nosy plugin in a real `clawguard host` process finds none of the
// host's secrets: the signed package is built from tests/host/plugins/env_probe.c, which answers
// with /proc/self/environ (the process's initial environment block) and getenv of the fixture's
// secret variables. The host took them out of the environment (overwritten in place, then unset)
// before loading any plugin. And a short secret stops the host at start with a message naming the
// setting, never the value.
#include <gtest/gtest.h>

#include "clawguard/encoding.h"
#include "support/host_fixture.h"

namespace clawguard::host {
namespace {

using testing::HostFixture;
using testing::HostFixtureOptions;

constexpr const char* kCanary = "visible-canary-not-a-secret";

TEST(HostSecretsE2eTest, ANosyPluginFindsNoSecretInTheEnvironment) {
  HostFixture fixture;
  HostFixtureOptions o;
  o.plugin_source = "env_probe";
  // In process: the environment is the host's, scrubbed. (A sandboxed worker starts with an empty
  // one and cannot open /proc/self/environ: SandboxHandleTest.)
  o.isolation = "none";
  o.extra_env = {{"E2E_CANARY", kCanary}};
  ASSERT_NO_FATAL_FAILURE(fixture.Prepare(o));
  ASSERT_TRUE(fixture.StartHost());
  const testing::Reply r = fixture.Deliver("msg_env_probe", HostFixture::OrderBody("1"));
  ASSERT_TRUE(r.ok);
  ASSERT_EQ(r.status, 200) << r.body;
  // The probe did read the environment: a variable that is no secret is there.
  EXPECT_NE(r.body.find(std::string("E2E_CANARY=") + kCanary), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("getenv(E2E_ADMIN)=(null)"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("getenv(E2E_SECRET)=(null)"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("getenv(E2E_ERP)=(null)"), std::string::npos) << r.body;
  const std::string erp_auth = HostFixture::kErpAuth;
  for (const std::string& secret :
       {std::string(HostFixture::kAdminToken), erp_auth, erp_auth.substr(erp_auth.find(' ') + 1),
        "whsec_" + Base64Encode(HostFixture::kHookKey), Base64Encode(HostFixture::kHookKey),
        std::string(HostFixture::kHookKey)}) {
    EXPECT_EQ(r.body.find(secret), std::string::npos) << "a secret is visible to the plugin";
  }
  // The variables' values were overwritten where /proc/self/environ reads them: the names may
  // remain, followed by nothing but the zeroed bytes.
  for (const std::string name : {"E2E_ADMIN=", "E2E_SECRET=", "E2E_ERP="}) {
    const size_t at = r.body.find(name);
    if (at != std::string::npos) {
      EXPECT_EQ(r.body[at + name.size()], '\n') << name;
    }
  }
  EXPECT_EQ(fixture.StopHost(), 0);
}

TEST(HostSecretsE2eTest, AShortSecretStopsTheHostNamingTheSettingNotTheValue) {
  HostFixture fixture;
  ASSERT_NO_FATAL_FAILURE(fixture.Prepare());
  const std::string short_key = "only-twenty-bytes-key";
  for (const auto& [var, value, setting] :
       {std::tuple<std::string, std::string, std::string>{
            "E2E_SECRET", "whsec_" + Base64Encode(short_key), "current"},
        {"E2E_ERP", "Bearer " + short_key, "erp.auth"}}) {
    std::vector<std::pair<std::string, std::string>> env = fixture.env();
    for (auto& [k, v] : env) {
      if (k == var) v = value;
    }
    const auto r =
        clawguard::testing::RunClawguard({"host", "--config", fixture.dir().Sub("host.yaml")}, env);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(setting), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("at least 24"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(short_key), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(Base64Encode(short_key)), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find(short_key), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace clawguard::host
