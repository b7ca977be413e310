// host_config_secrets_test.cpp — host.yaml's secrets and transport rules: env:VAR secrets leave
// the environment when read (TakeEnvSecret), secrets under limits::kMinSecretBytes are refused
// with a message that names the setting and never the value, an http:// ERP off the machine needs
// erp.allow_plaintext, and listen's connection bounds. (The end-to-end check that a plugin in a
// real host finds none of them is tests/e2e/host_secrets_e2e_test.cpp.)
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include "clawguard/encoding.h"
#include "clawguard/limits.h"
#include "clawguard/secret_bytes.h"
#include "host/app/host_config.h"
#include "support/reason_matchers.h"
#include "support/temp_dir.h"

using ::clawguard::testing::HasReason;

namespace clawguard::host {
namespace {

constexpr char kSecretOrderHook[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";  // 24 bytes decoded
constexpr char kSecretAdminToken[] = "adm-0123456789abcdef0123456789abcdef";
constexpr char kSecretErpCredential[] = "Bearer erp-token-value-never-printed";

std::string SecretsDataPath() {
  return std::string(CLAWGUARD_SOURCE_DIR) + "/tests/host/data/host.yaml";
}

std::map<std::string, std::string> Env() {
  return {{"CG_TEST_ADMIN_TOKEN", kSecretAdminToken},
          {"CG_TEST_ORDER_SECRET", kSecretOrderHook},
          {"CG_TEST_ORDER_SECRET_OLD", "whsec_" + Base64Encode("previous-secret-0123456789")},
          {"CG_TEST_ERP_TOKEN", kSecretErpCredential}};
}

Result<std::shared_ptr<const HostConfig>> ParseWith(const std::string& text,
                                                    const std::map<std::string, std::string>& env) {
  return HostConfig::Parse(
      text, SecretsDataPath(), [env](const std::string& name) -> std::optional<std::string> {
        auto it = env.find(name);
        return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
      });
}

std::string SecretsData() { return clawguard::testing::ReadFile(SecretsDataPath()); }

std::string ReplaceText(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// The process environment is the test's: every case restores what it set.
TEST(TakeEnvSecretTest, OverwritesTheValueInPlaceAndUnsetsIt) {
  ASSERT_EQ(::setenv("CG_TAKE_TEST", "value-0123456789-abcdef", 1), 0);
  char* where = std::getenv("CG_TAKE_TEST");
  ASSERT_NE(where, nullptr);
  const size_t len = std::strlen(where);
  std::optional<SecretBytes> taken = TakeEnvSecret("CG_TAKE_TEST");
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(InsecureSecretAccess::View(*taken), "value-0123456789-abcdef");
  EXPECT_EQ(std::getenv("CG_TAKE_TEST"), nullptr);
  // The bytes the variable's string held are zero now (glibc keeps setenv's strings allocated;
  // for the initial environment they are the bytes /proc/self/environ shows).
  for (size_t i = 0; i < len; ++i) EXPECT_EQ(where[i], '\0') << i;
  EXPECT_FALSE(TakeEnvSecret("CG_TAKE_TEST").has_value());
}

TEST(HostConfigSecretsTest, LoadTakesEverySecretOutOfTheEnvironment) {
  for (const auto& [k, v] : Env()) ::setenv(k.c_str(), v.c_str(), 1);
  auto c = HostConfig::Load(SecretsDataPath());
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  for (const auto& [k, v] : Env()) EXPECT_EQ(std::getenv(k.c_str()), nullptr) << k;
  // Read once: CG_TEST_ORDER_SECRET is named by two routes, both got it.
  EXPECT_TRUE((*c)->webhooks.routes.at("acme-orders/order.cancelled")
                  .current.Equals((*c)->webhooks.routes.at("acme-orders/order.created").current));
  EXPECT_TRUE((*c)->erp.auth.Equals(SecretBytes(kSecretErpCredential)));
}

TEST(HostConfigSecretsTest, LoadTakesTheSecretsOutEvenWhenTheFileIsRefused) {
  for (const auto& [k, v] : Env()) ::setenv(k.c_str(), v.c_str(), 1);
  ::setenv("CG_TEST_ERP_TOKEN", "Bearer short", 1);  // refused below
  auto c = HostConfig::Load(SecretsDataPath());
  ASSERT_FALSE(c.ok());
  for (const auto& [k, v] : Env()) EXPECT_EQ(std::getenv(k.c_str()), nullptr) << k;
}

struct ShortCase {
  std::string var;
  std::string value;
  std::string setting;  // what the message must name
};

TEST(HostConfigSecretsTest, SecretsUnder24BytesAreRefusedNamingTheSettingNeverTheValue) {
  const std::string short_key = "short-key-23-bytes-long";  // 23 bytes decoded
  ASSERT_EQ(short_key.size(), limits::kMinSecretBytes - 1);
  const std::vector<ShortCase> cases = {
      {"CG_TEST_ORDER_SECRET", "whsec_" + Base64Encode(short_key), "current"},
      {"CG_TEST_ORDER_SECRET_OLD", "whsec_" + Base64Encode(short_key), "previous"},
      {"CG_TEST_ERP_TOKEN", "Bearer " + short_key, "erp.auth"},
      {"CG_TEST_ERP_TOKEN", short_key, "erp.auth"},  // no scheme: the whole value
  };
  for (const ShortCase& k : cases) {
    std::map<std::string, std::string> env = Env();
    env[k.var] = k.value;
    auto c = ParseWith(SecretsData(), env);
    ASSERT_FALSE(c.ok()) << k.var;
    EXPECT_THAT(c, HasReason(Reason::kConfigInvalid));
    const std::string m = c.error().message();
    EXPECT_NE(m.find(k.setting), std::string::npos) << m;
    EXPECT_NE(m.find("at least 24"), std::string::npos) << m;
    EXPECT_EQ(m.find(short_key), std::string::npos) << m;
    EXPECT_EQ(m.find(Base64Encode(short_key)), std::string::npos) << m;
  }
  // Exactly 24 bytes pass.
  std::map<std::string, std::string> env = Env();
  env["CG_TEST_ORDER_SECRET"] = "whsec_" + Base64Encode(short_key + "x");
  env["CG_TEST_ERP_TOKEN"] = "Bearer " + short_key + "x";
  auto ok = ParseWith(SecretsData(), env);
  EXPECT_TRUE(ok.ok()) << ok.error().ToString();
  // The admin token keeps its stricter minimum.
  env = Env();
  env["CG_TEST_ADMIN_TOKEN"] = std::string(31, 'a');
  auto admin = ParseWith(SecretsData(), env);
  ASSERT_FALSE(admin.ok());
  EXPECT_NE(admin.error().message().find("admin.token"), std::string::npos)
      << admin.error().message();
}

// file:PATH: a regular file holding the secret (one trailing newline stripped), as systemd's
// LoadCredential= provides; refused when others may read it, or others or its group may write it.
TEST(HostConfigSecretsTest, SecretsCanComeFromFilesOnlyOthersCannotRead) {
  clawguard::testing::TempDir dir;
  const std::string admin = dir.Sub("admin-token");
  const std::string hook = dir.Sub("order-secret");
  const std::string erp = dir.Sub("erp-auth");
  // Values other than the environment's: what is read must be the files'.
  const std::string admin_value = "adm-from-a-file-0123456789abcdef0123";
  const std::string erp_value = "Bearer erp-token-from-a-file-0000";
  clawguard::testing::WriteFile(admin, admin_value + "\n");
  clawguard::testing::WriteFile(hook, kSecretOrderHook);
  clawguard::testing::WriteFile(erp, erp_value + "\r\n");
  for (const std::string& f : {admin, hook, erp}) ASSERT_EQ(::chmod(f.c_str(), 0640), 0);
  std::string text = SecretsData();
  text = ReplaceText(text, "token: env:CG_TEST_ADMIN_TOKEN", "token: file:" + admin);
  text = ReplaceText(text, "current: env:CG_TEST_ORDER_SECRET", "current: file:" + hook);
  text = ReplaceText(text, "auth: env:CG_TEST_ERP_TOKEN", "auth: file:" + erp);
  auto c = ParseWith(text, Env());
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(InsecureSecretAccess::View((*c)->admin.token), admin_value);
  EXPECT_EQ(InsecureSecretAccess::View((*c)->erp.auth), erp_value);

  const auto refused = [&](const std::string& why) {
    auto r = ParseWith(text, Env());
    EXPECT_FALSE(r.ok()) << why;
    if (r.ok()) return std::string();
    EXPECT_THAT(r, HasReason(Reason::kConfigInvalid));
    EXPECT_EQ(r.error().message().find(admin_value), std::string::npos);
    return r.error().message();
  };
  ASSERT_EQ(::chmod(admin.c_str(), 0644), 0);  // others may read it
  std::string m = refused("world-readable");
  EXPECT_NE(m.find("mode 0644"), std::string::npos) << m;
  EXPECT_NE(m.find(admin), std::string::npos) << m;
  ASSERT_EQ(::chmod(admin.c_str(), 0660), 0);  // its group may write it
  m = refused("group-writable");
  EXPECT_NE(m.find("mode 0660"), std::string::npos) << m;
  ASSERT_EQ(::chmod(admin.c_str(), 0600), 0);
  clawguard::testing::WriteFile(admin, "\n");
  m = refused("empty");
  EXPECT_NE(m.find("is empty"), std::string::npos) << m;
  clawguard::testing::WriteFile(admin, std::string(limits::kMaxSecretFile + 1, 'a'));
  m = refused("too large");
  EXPECT_NE(m.find("more than"), std::string::npos) << m;
  std::filesystem::remove(admin);
  m = refused("missing");
  EXPECT_NE(m.find("secret file " + admin), std::string::npos) << m;
  // A literal in host.yaml is still refused, naming both forms.
  m = [&] {
    auto r = ParseWith(ReplaceText(SecretsData(), "token: env:CG_TEST_ADMIN_TOKEN",
                                   "token: adm-0123456789abcdef0123456789abcdef"),
                       Env());
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.error().message();
  }();
  EXPECT_NE(m.find("env:VAR or file:PATH"), std::string::npos) << m;
}

TEST(HostConfigSecretsTest, PlaintextErpOffTheMachineNeedsAllowPlaintext) {
  const std::string https = "base_url: https://erp.internal:8443";
  for (const std::string url : {"http://erp.internal:8080", "http://10.1.2.3",
                                "http://[2001:db8::1]:80/x", "http://user@erp.internal"}) {
    auto refused = ParseWith(ReplaceText(SecretsData(), https, "base_url: " + url), Env());
    ASSERT_FALSE(refused.ok()) << url;
    EXPECT_NE(refused.error().message().find("erp.allow_plaintext"), std::string::npos)
        << refused.error().message();
    auto allowed = ParseWith(
        ReplaceText(SecretsData(), https, "base_url: " + url + "\n  allow_plaintext: true"), Env());
    ASSERT_TRUE(allowed.ok()) << url << ": " << allowed.error().ToString();
    EXPECT_TRUE((*allowed)->erp.allow_plaintext);
  }
  for (const std::string url : {"http://127.0.0.1:9000", "http://127.8.9.10", "http://localhost:80",
                                "http://[::1]:80", "https://erp.internal:8443"}) {
    auto ok = ParseWith(ReplaceText(SecretsData(), https, "base_url: " + url), Env());
    ASSERT_TRUE(ok.ok()) << url << ": " << ok.error().ToString();
    EXPECT_FALSE((*ok)->erp.allow_plaintext);
  }
  auto not_bool =
      ParseWith(ReplaceText(SecretsData(), https, https + "\n  allow_plaintext: yes"), Env());
  EXPECT_FALSE(not_bool.ok());
}

TEST(HostConfigSecretsTest, ListenConnectionBoundsHaveDefaultsAndLimits) {
  auto c = ParseWith(SecretsData(), Env());
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ((*c)->listen.max_connections, limits::kDefaultMaxConnections);
  EXPECT_EQ((*c)->listen.max_connections_per_peer, limits::kDefaultMaxConnectionsPerPeer);
  const std::string workers = "workers: 4 }";
  auto set =
      ParseWith(ReplaceText(SecretsData(), workers,
                            "workers: 4, max_connections: 500, max_connections_per_peer: 20 }"),
                Env());
  ASSERT_TRUE(set.ok()) << set.error().ToString();
  EXPECT_EQ((*set)->listen.max_connections, 500u);
  EXPECT_EQ((*set)->listen.max_connections_per_peer, 20u);
  auto small =
      ParseWith(ReplaceText(SecretsData(), workers, "workers: 4, max_connections: 100 }"), Env());
  ASSERT_TRUE(small.ok()) << small.error().ToString();
  EXPECT_EQ((*small)->listen.max_connections_per_peer, 100u);  // the default, lowered to the bound
  for (const std::string bad :
       {"max_connections: 15", "max_connections: 0", "max_connections_per_peer: 0",
        "max_connections: 100, max_connections_per_peer: 101"}) {
    auto r = ParseWith(ReplaceText(SecretsData(), workers, "workers: 4, " + bad + " }"), Env());
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r, HasReason(Reason::kConfigInvalid));
    EXPECT_NE(r.error().message().find("max_connections"), std::string::npos)
        << r.error().message();
  }
}

}  // namespace
}  // namespace clawguard::host
