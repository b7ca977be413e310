// verify_cli_test.cpp — `clawguard verify --json`: the exact object, exit codes 0/1/2; the CLI
// against a real SQLite ledger, also from two recording processes at once.
#include <thread>

#include "loader_fixture.h"

namespace clawguard::testing {
namespace {

class VerifyCliTest : public LoaderFixture {
 protected:
  // The CLI runs on the system clock: give it a leaf valid now and a far allowlist expiry.
  std::string SignedForNow() {
    const std::string pkg = MakePackage(PackageOpts{});
    Sign(pkg);
    Allow({pkg}, 3, "2099-12-31T00:00:00Z");
    return pkg;
  }
};

TEST_F(VerifyCliTest, PrintsExactJsonForVerifiedPackage) {
  const std::string pkg = SignedForNow();
  auto r = RunClawguard({"verify", pkg, "--trust", WriteTrust(TrustOpts{}), "--allowlist",
                         dir_.Sub("allowlist.yaml"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "verified");
  EXPECT_TRUE(j["reason"].is_null());
  EXPECT_EQ(j["name"], "acme-orders");
  EXPECT_EQ(j["version"], "1.4.2");
  EXPECT_EQ(j["publisher"], "acme");
  EXPECT_EQ(j["sha256"], Sha256Hex(ReadFile(pkg)));
  EXPECT_EQ(j["signers"], nlohmann::json::array({KeyIdOf(W().key1.get()).value()}));
  EXPECT_EQ(j["mode"], "enforce");
  EXPECT_EQ(j["ledger"], "skipped");
  EXPECT_EQ(j["package"], pkg);
  EXPECT_TRUE(j["detail"].is_string());
  EXPECT_EQ(j.size(), 11u) << j.dump();
}

TEST_F(VerifyCliTest, RefusedExitsOneWithReason) {
  const std::string pkg = SignedForNow();
  std::string b = ReadFile(pkg);
  b[b.size() / 2] = static_cast<char>(b[b.size() / 2] ^ 1);
  WriteFile(pkg, b);
  auto r = RunClawguard({"verify", pkg, "--trust", WriteTrust(TrustOpts{}), "--allowlist",
                         dir_.Sub("allowlist.yaml"), "--json"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "refused");
  EXPECT_EQ(j["reason"], "digest_mismatch");
}

TEST_F(VerifyCliTest, BadPolicyExitsTwo) {
  const std::string pkg = SignedForNow();
  WriteFile(dir_.Sub("bad.yaml"), "schema: clawguard/trust/v1\nmode: maybe\n");
  auto r = RunClawguard(
      {"verify", pkg, "--trust", dir_.Sub("bad.yaml"), "--allowlist", dir_.Sub("allowlist.yaml")});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
}

// The CLI against a real SQLite ledger: --record writes the deploy row; a later package with the
// same version and other bytes is version_overwritten; an older version is version_rollback.
TEST_F(VerifyCliTest, SqliteLedgerRecordsThenRefusesOverwriteAndRollback) {
  const std::string store = "sqlite:" + dir_.Sub("state.db");
  const std::string trust = WriteTrust(TrustOpts{});
  auto verify = [&](const std::string& pkg, bool record) {
    std::vector<std::string> args{"verify",   pkg,           "--trust",
                                  trust,      "--allowlist", dir_.Sub("allowlist.yaml"),
                                  "--ledger", store,         "--json"};
    if (record) args.push_back("--record");
    return RunClawguard(args);
  };

  const std::string good = SignedForNow();
  auto first = verify(good, /*record=*/false);
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_EQ(nlohmann::json::parse(first.out)["ledger"], "checked");
  auto recorded = verify(good, /*record=*/true);
  ASSERT_EQ(recorded.exit_code, 0) << recorded.out << recorded.err;
  EXPECT_EQ(nlohmann::json::parse(recorded.out)["ledger"], "recorded");
  auto again = verify(good, /*record=*/true);  // recording an identical row again is a no-op
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;

  PackageOpts other;
  other.plugin = "beta";  // same name and version, other bytes
  const std::string overwritten = MakePackage(other);
  Sign(overwritten);
  Allow({overwritten}, 3, "2099-12-31T00:00:00Z");
  auto r1 = verify(overwritten, /*record=*/true);
  ASSERT_EQ(r1.exit_code, 1) << r1.out << r1.err;
  EXPECT_EQ(nlohmann::json::parse(r1.out)["reason"], "version_overwritten");

  PackageOpts older;
  older.version = "1.4.1";
  const std::string rolled_back = MakePackage(older);
  Sign(rolled_back);
  Allow({rolled_back}, 3, "2099-12-31T00:00:00Z");
  auto r2 = verify(rolled_back, /*record=*/true);
  ASSERT_EQ(r2.exit_code, 1) << r2.out << r2.err;
  EXPECT_EQ(nlohmann::json::parse(r2.out)["reason"], "version_rollback");

  auto ledger = RunClawguard({"ledger", "verify", "--store", store});
  EXPECT_EQ(ledger.exit_code, 0) << ledger.out << ledger.err;
}

// Two `verify --record` processes deploy 1.5.0 and 1.4.0 of one name on one SQLite ledger at the
// same moment, round after round: whichever commits first, the ledger never holds the lower
// deploy after the higher one — the loser of that race is refused as version_rollback.
TEST_F(VerifyCliTest, TwoConcurrentRecordingProcessesNeverDeployALowerVersionLast) {
  constexpr int kRounds = 4;
  const std::string store = "sqlite:" + dir_.Sub("state.db");
  const std::string trust = WriteTrust(TrustOpts{});
  const std::string audit_log = dir_.Sub("audit.jsonl");
  int refused = 0;
  for (int round = 0; round < kRounds; ++round) {
    const std::string name = "acme-race-" + std::to_string(round);
    std::vector<std::string> pkgs;
    std::string allow =
        "schema: clawguard/allowlist/v1\nversion: 3\nexpires: 2099-12-31T00:00:00Z\nplugins:\n";
    for (const std::string version : {"1.5.0", "1.4.0"}) {
      PackageOpts o;
      o.name = name;
      o.version = version;
      pkgs.push_back(MakePackage(o));
      Sign(pkgs.back());
      allow += "  - { name: " + name + ", version: " + version +
               ", sha256: " + Sha256Hex(ReadFile(pkgs.back())) + " }\n";
    }
    WriteFile(dir_.Sub("allowlist.yaml"), allow);
    CommandResult high, low;
    auto run = [&](const std::string& pkg, CommandResult& out) {
      out =
          RunClawguard({"verify", pkg, "--trust", trust, "--allowlist", dir_.Sub("allowlist.yaml"),
                        "--ledger", store, "--record", "--audit-log", audit_log, "--json"});
    };
    std::thread a(run, pkgs[0], std::ref(high));
    std::thread b(run, pkgs[1], std::ref(low));
    a.join();
    b.join();
    ASSERT_EQ(high.exit_code, 0) << high.out << high.err;
    if (low.exit_code != 0) {
      ASSERT_EQ(low.exit_code, 1) << low.out << low.err;
      EXPECT_EQ(nlohmann::json::parse(low.out)["reason"], "version_rollback") << low.out;
      ++refused;
    }
    auto shown = RunClawguard({"ledger", "show", "--store", store, "--json"});
    ASSERT_EQ(shown.exit_code, 0) << shown.err;
    std::vector<std::string> deployed;
    const nlohmann::json doc = nlohmann::json::parse(shown.out);
    for (const auto& row : doc["rows"]) {
      if (row["name"] == name && row["kind"] == "deploy") deployed.push_back(row["version"]);
    }
    ASSERT_FALSE(deployed.empty()) << shown.out;
    EXPECT_EQ(deployed.back(), "1.5.0")
        << "round " << round << ": the lower version was deployed last";
    EXPECT_EQ(deployed.size(), low.exit_code == 0 ? 2u : 1u);
  }
  auto verified = RunClawguard(
      {"ledger", "verify", "--store", store, "--anchor", dir_.Sub("ledger-anchor.json")});
  EXPECT_EQ(verified.exit_code, 0) << verified.out << verified.err;
  ::testing::Test::RecordProperty("rollbacks_refused", refused);
}

}  // namespace
}  // namespace clawguard::testing
