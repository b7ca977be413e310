// ledger_overwrite_test.cpp — the PostgreSQL store as the shared ledger of several hosts.
// Overwrite: host A loads acme-orders 1.4.2 (its attempt and deploy rows go into the shared
// ledger); a package with the same name and version but other bytes — re-signed by the same key
// and allowlisted, as a registry that lets a version be overwritten would serve it — is refused by
// host B as version_overwritten: listed under "refused" in its admin /readyz, and its route
// answers 404. Host B's first start against a ledger it never anchored is trust on first use,
// and visibly so (/readyz, audit line, `clawguard audit`). Rollback race: two hosts starting at
// once with 1.5.0 and 1.4.2 never leave the lower version deployed last.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "clawguard/encoding.h"
#include "clawguard/sha256.h"
#include "pg/support/pg_test_db.h"
#include "postgresql/pg_conn.h"
#include "support/host_fixture.h"
#include "support/softhsm.h"

namespace clawguard::host {
namespace {

namespace fs = std::filesystem;
using clawguard::testing::ReadFile;
using clawguard::testing::RunClawguard;
using clawguard::testing::WriteFile;
using testing::HostFixture;
using testing::HostProcess;
using testing::RawConnection;

constexpr char kAdminToken[] = "multihost-admin-token-0123456789abcdefgh";
constexpr char kPackage[] = "acme-orders-1.4.2.claw";

std::vector<std::pair<std::string, std::string>> OverwriteHostEnv() {
  return {{"E2E_ADMIN", kAdminToken},
          {"E2E_SECRET", "whsec_" + Base64Encode(HostFixture::kHookKey)},
          {"E2E_ERP", "Bearer e2e-erp-token-0123456789abcdef"}};
}

// Replace swaps the one occurrence of |from| in file |path| for |to|.
void Replace(const std::string& path, const std::string& from, const std::string& to) {
  std::string text = ReadFile(path);
  const size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << path << " has no '" << from << "':\n" << text;
  text.replace(at, from.size(), to);
  WriteFile(path, text);
}

uint16_t PortOf(const HostProcess& p, const char* which) {
  const auto j = nlohmann::json::parse(p.first_line(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains(which)) return 0;
  const std::string address = j[which].get<std::string>();
  return static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
}

// AdminReady reads the detailed admin /readyz of |p|.
nlohmann::json AdminReady(const HostProcess& p) {
  auto conn = RawConnection::Connect(PortOf(p, "admin"));
  if (conn == nullptr) return nullptr;
  if (!conn->Send(testing::SimpleRequest(
          "GET", "/readyz", "", std::string("Authorization: Bearer ") + kAdminToken + "\r\n"))) {
    return nullptr;
  }
  const auto r = conn->ReadResponse();
  return nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
}

// SignWith signs |pkg| (replacing its bundle) with |key| and |chain|, outside any ledger.
void SignWith(const clawguard::testing::SoftHsmToken& hsm, const clawguard::testing::TestKey& key,
              const std::string& chain, const std::string& pkg) {
  const auto r =
      RunClawguard({"sign", "--module", hsm.module_path(), "--key", key.uri, "--pin-source",
                    hsm.PinSource(), "--chain", chain, "--no-ledger", pkg},
                   hsm.Env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

TEST(MultiHostLedgerTest, OverwrittenVersionIsRefusedOnHostBAfterHostAAcceptedTheOriginal) {
  clawguard::testing::PgTestDb db;
  ASSERT_FALSE(db.url().empty());
  HostFixture a;  // host A's directory: the signed example plugin, trust, allowlist, host.yaml
  ASSERT_NO_FATAL_FAILURE(a.Prepare());
  ASSERT_NO_FATAL_FAILURE(Replace(a.dir().Sub("host.yaml"), "store: sqlite:state/state.db\n",
                                  "store: " + db.url() + "\n"));

  // One release key (a leaf of the fixture's test PKI) signs both packages.
  clawguard::testing::SoftHsmToken hsm;
  const auto key = hsm.GenerateKey("acme-release-2");
  clawguard::testing::TestPki pki;
  pki.dir = a.dir().Sub("pki");
  pki.root_pem = pki.dir + "/root.pem";
  pki.intermediate_pem = pki.dir + "/intermediate.pem";
  pki.root_sha256 = ReadFile(pki.dir + "/root.sha256");
  const std::string chain =
      clawguard::testing::IssueLeaf(hsm, key, pki, "acme-2", "/O=acme/CN=acme release");
  ASSERT_NO_FATAL_FAILURE(
      SignWith(hsm, key, chain, a.dir().Sub(std::string("plugins/") + kPackage)));

  // Host B's directory: the same config and trust; 1.4.2 rebuilt with other bytes, re-signed by
  // the same key and allowlisted by its digest — only the shared ledger can tell.
  clawguard::testing::TempDir b;
  fs::copy(a.dir().path() / "stage", b.path() / "stage", fs::copy_options::recursive);
  {
    const std::string so = b.Sub("stage/lib/libacme_orders.so");
    WriteFile(so, ReadFile(so) + "injected");
  }
  auto packed =
      RunClawguard({"pack", "--manifest", b.Sub("stage/manifest.yaml"), "--out", b.Sub("plugins")});
  ASSERT_EQ(packed.exit_code, 0) << packed.err;
  const std::string pkg_b = b.Sub(std::string("plugins/") + kPackage);
  ASSERT_NO_FATAL_FAILURE(SignWith(hsm, key, chain, pkg_b));
  const std::string sha_a = Sha256Hex(ReadFile(a.dir().Sub(std::string("plugins/") + kPackage)));
  const std::string sha_b = Sha256Hex(ReadFile(pkg_b));
  ASSERT_NE(sha_a, sha_b);
  fs::copy_file(a.dir().path() / "host.yaml", b.path() / "host.yaml");
  fs::copy_file(a.dir().path() / "trust.yaml", b.path() / "trust.yaml");
  WriteFile(b.Sub("allowlist.yaml"), ReadFile(a.dir().Sub("allowlist.yaml")));
  ASSERT_NO_FATAL_FAILURE(Replace(b.Sub("allowlist.yaml"), sha_a, sha_b));

  HostProcess host_a, host_b;
  ASSERT_TRUE(host_a.Start(a.dir().Sub("host.yaml"), OverwriteHostEnv()))
      << ReadFile(a.audit_log());
  const nlohmann::json ready_a = AdminReady(host_a);
  ASSERT_TRUE(ready_a.is_object()) << host_a.first_line();
  ASSERT_EQ(ready_a["plugins"].size(), 1u) << ready_a.dump();
  EXPECT_EQ(ready_a["plugins"][0]["sha256"], sha_a);
  EXPECT_TRUE(ready_a["refused"].empty()) << ready_a.dump();

  ASSERT_TRUE(host_b.Start(b.Sub("host.yaml"), OverwriteHostEnv()))
      << ReadFile(b.Sub("audit.jsonl"));
  const nlohmann::json ready_b = AdminReady(host_b);
  ASSERT_TRUE(ready_b.is_object()) << host_b.first_line();
  EXPECT_TRUE(ready_b["plugins"].empty()) << ready_b.dump();
  ASSERT_EQ(ready_b["refused"].size(), 1u) << ready_b.dump();
  EXPECT_EQ(ready_b["refused"][0]["reason"], "version_overwritten") << ready_b.dump();

  // Host B serves no route for the refused plugin; host A still serves the original.
  auto conn_b = RawConnection::Connect(PortOf(host_b, "main"));
  ASSERT_NE(conn_b, nullptr);
  const auto refused =
      HostFixture::DeliverOn(*conn_b, "msg_overwrite_1", HostFixture::OrderBody("ord_ow_1"));
  ASSERT_TRUE(refused.ok);
  EXPECT_EQ(refused.status, 404) << refused.body;
  auto conn_a = RawConnection::Connect(PortOf(host_a, "main"));
  ASSERT_NE(conn_a, nullptr);
  const auto served =
      HostFixture::DeliverOn(*conn_a, "msg_overwrite_1", HostFixture::OrderBody("ord_ow_1"));
  ASSERT_TRUE(served.ok);
  EXPECT_EQ(served.status, 200) << served.body;

  // The shared ledger holds host A's attempt and deploy rows of the original, nothing of B's bytes.
  auto pool = clawguard::pg::PgPool::Create(db.url(), clawguard::pg::PgOptions{});
  ASSERT_TRUE(pool.ok());
  auto lease = (*pool)->Acquire();
  ASSERT_TRUE(lease.ok()) << lease.error().ToString();
  auto rows = lease->Exec(
      "ledger rows", "SELECT kind, sha256 FROM ledger WHERE name = 'acme-orders' ORDER BY seq");
  ASSERT_TRUE(rows.ok()) << rows.error().ToString();
  ASSERT_EQ(rows->rows(), 2);
  EXPECT_EQ(rows->Text(0, 0), "attempt");
  EXPECT_EQ(rows->Text(1, 0), "deploy");
  EXPECT_EQ(rows->Text(1, 1), sha_a);
  const std::string log_b = ReadFile(b.Sub("audit.jsonl"));
  EXPECT_NE(log_b.find("version_overwritten"), std::string::npos);

  // Host A anchored the ledger it wrote; host B met a ledger it had never anchored: trusted on
  // first use, and it says so in /readyz, in its audit log and to `clawguard audit`.
  EXPECT_EQ(ready_a["ledger_anchor"]["state"], "anchored") << ready_a.dump();
  EXPECT_EQ(ready_b["ledger_anchor"]["state"], "trust_on_first_use") << ready_b.dump();
  EXPECT_NE(log_b.find("\"event\":\"ledger_anchor_adopted\""), std::string::npos) << log_b;
  auto audited =
      RunClawguard({"audit", "--config", b.Sub("host.yaml"), "--json"}, OverwriteHostEnv());
  ASSERT_EQ(audited.exit_code, 1) << audited.out << audited.err;
  bool adopted_high = false;
  const nlohmann::json report = nlohmann::json::parse(audited.out);
  for (const auto& f : report["findings"]) {
    adopted_high |= f["id"] == "ledger.anchor_adopted" && f["severity"] == "high";
  }
  EXPECT_TRUE(adopted_high) << audited.out;
  EXPECT_EQ(host_b.Stop(), 0);
  EXPECT_EQ(host_a.Stop(), 0);
}

// Host A starts with acme-orders 1.5.0, host B with 1.4.2, at the same moment, on one ledger.
// Whichever host's deploy commits first, the ledger never ends with 1.4.2 deployed after 1.5.0:
// the rollback floor is checked again inside each Record's transaction, after the chain lock.
TEST(MultiHostLedgerTest, TwoHostsDeployingTwoVersionsAtOnceNeverDeployTheLowerOneLast) {
  clawguard::testing::PgTestDb db;
  ASSERT_FALSE(db.url().empty());
  HostFixture a;
  ASSERT_NO_FATAL_FAILURE(a.Prepare());
  ASSERT_NO_FATAL_FAILURE(Replace(a.dir().Sub("host.yaml"), "store: sqlite:state/state.db\n",
                                  "store: " + db.url() + "\n"));
  clawguard::testing::SoftHsmToken hsm;
  const auto key = hsm.GenerateKey("acme-release-3");
  clawguard::testing::TestPki pki;
  pki.dir = a.dir().Sub("pki");
  pki.root_pem = pki.dir + "/root.pem";
  pki.intermediate_pem = pki.dir + "/intermediate.pem";
  pki.root_sha256 = ReadFile(pki.dir + "/root.sha256");
  const std::string chain =
      clawguard::testing::IssueLeaf(hsm, key, pki, "acme-3", "/O=acme/CN=acme release");
  const std::string pkg_142 = a.dir().Sub(std::string("plugins/") + kPackage);
  ASSERT_NO_FATAL_FAILURE(SignWith(hsm, key, chain, pkg_142));
  const std::string sha_142 = Sha256Hex(ReadFile(pkg_142));

  // Host B: the fixture's 1.4.2, same config and trust.
  clawguard::testing::TempDir b;
  fs::create_directories(b.path() / "plugins");
  fs::copy_file(pkg_142, b.path() / "plugins" / kPackage);
  fs::copy_file(pkg_142 + ".sig", b.path() / "plugins" / (std::string(kPackage) + ".sig"));
  for (const char* f : {"host.yaml", "trust.yaml", "allowlist.yaml"})
    fs::copy_file(a.dir().path() / f, b.path() / f);

  // Host A: 1.5.0 built from the same stage, signed by the same key, the only package it has.
  clawguard::testing::TempDir stage;
  fs::copy(a.dir().path() / "stage", stage.path() / "stage", fs::copy_options::recursive);
  ASSERT_NO_FATAL_FAILURE(
      Replace(stage.Sub("stage/manifest.yaml"), "version: 1.4.2\n", "version: 1.5.0\n"));
  auto packed = RunClawguard(
      {"pack", "--manifest", stage.Sub("stage/manifest.yaml"), "--out", a.dir().Sub("plugins")});
  ASSERT_EQ(packed.exit_code, 0) << packed.err;
  const std::string pkg_150 = a.dir().Sub("plugins/acme-orders-1.5.0.claw");
  ASSERT_NO_FATAL_FAILURE(SignWith(hsm, key, chain, pkg_150));
  fs::remove(pkg_142);
  fs::remove(pkg_142 + ".sig");
  ASSERT_NO_FATAL_FAILURE(Replace(a.dir().Sub("allowlist.yaml"),
                                  "version: 1.4.2, sha256: " + sha_142,
                                  "version: 1.5.0, sha256: " + Sha256Hex(ReadFile(pkg_150))));

  HostProcess host_a, host_b;
  bool started_a = false, started_b = false;
  std::thread ta([&] { started_a = host_a.Start(a.dir().Sub("host.yaml"), OverwriteHostEnv()); });
  std::thread tb([&] { started_b = host_b.Start(b.Sub("host.yaml"), OverwriteHostEnv()); });
  ta.join();
  tb.join();
  ASSERT_TRUE(started_a) << ReadFile(a.audit_log());
  ASSERT_TRUE(started_b) << ReadFile(b.Sub("audit.jsonl"));
  const nlohmann::json ready_a = AdminReady(host_a);
  const nlohmann::json ready_b = AdminReady(host_b);
  ASSERT_TRUE(ready_a.is_object() && ready_b.is_object());
  ASSERT_EQ(ready_a["plugins"].size(), 1u) << ready_a.dump();
  EXPECT_EQ(ready_a["plugins"][0]["version"], "1.5.0");

  auto pool = clawguard::pg::PgPool::Create(db.url(), clawguard::pg::PgOptions{});
  ASSERT_TRUE(pool.ok());
  auto lease = (*pool)->Acquire();
  ASSERT_TRUE(lease.ok()) << lease.error().ToString();
  auto rows = lease->Exec(
      "deploy rows",
      "SELECT version FROM ledger WHERE name = 'acme-orders' AND kind = 'deploy' ORDER BY seq");
  ASSERT_TRUE(rows.ok()) << rows.error().ToString();
  ASSERT_GE(rows->rows(), 1);
  EXPECT_EQ(rows->Text(rows->rows() - 1, 0), "1.5.0") << "1.4.2 was deployed after 1.5.0";
  if (ready_b["plugins"].empty()) {
    // B lost the race: refused (before dlopen, or at its deploy row), nothing of it deployed.
    ASSERT_EQ(ready_b["refused"].size(), 1u) << ready_b.dump();
    EXPECT_EQ(ready_b["refused"][0]["reason"], "version_rollback") << ready_b.dump();
    EXPECT_EQ(rows->rows(), 1);
  } else {
    // B deployed first: 1.4.2 then 1.5.0 is an ordinary upgrade.
    EXPECT_EQ(ready_b["plugins"][0]["version"], "1.4.2");
    ASSERT_EQ(rows->rows(), 2);
    EXPECT_EQ(rows->Text(0, 0), "1.4.2");
  }
  auto verified = RunClawguard({"ledger", "verify", "--store", db.url()});
  EXPECT_EQ(verified.exit_code, 0) << verified.out << verified.err;
  EXPECT_EQ(host_b.Stop(), 0);
  EXPECT_EQ(host_a.Stop(), 0);
}

}  // namespace
}  // namespace clawguard::host
