// deployment_fixture.cpp — see deployment_fixture.h.
#include "deployment_fixture.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "clawguard/bundle.h"
#include "clawguard/clock.h"
#include "clawguard/manifest.h"
#include "clawguard/ossl.h"
#include "clawguard/sha256.h"
#include "loader/ledger_anchor.h"
#include "sqlite/sqlite_db.h"
#include "sqlite/sqlite_ledger.h"

namespace clawguard::testing {
namespace {

constexpr char kOrderSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr char kOldSecret[] = "whsec_c2VjcmV0LW9mLWxhc3QtcXVhcnRlci0yMDI2";
constexpr char kAdminToken[] = "adm-0123456789abcdef0123456789abcdef";
constexpr char kPackage[] = "acme-orders-1.4.2.claw";
constexpr char kManifest[] =
    "schema: clawguard/plugin/v1\nname: acme-orders\nversion: 1.4.2\npublisher: acme\nabi: 1\n"
    "entry: lib/libacme_orders.so\nfiles:\n  lib/libacme_orders.so: null\n";

struct KeyCert {
  ossl::UniquePtr<EVP_PKEY> key;
  ossl::UniquePtr<X509> cert;
};

// MakeCert makes a self-signed Ed25519 certificate O=|o|, CN=|cn| valid [not_before, not_after].
KeyCert MakeCert(const std::string& o, const std::string& cn, int64_t not_before,
                 int64_t not_after) {
  KeyCert kc;
  kc.key.reset(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
  kc.cert.reset(X509_new());
  X509* x = kc.cert.get();
  EXPECT_TRUE(kc.key && x);
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);  // get0: owned by |x|
  ASN1_TIME_set(X509_getm_notBefore(x), static_cast<time_t>(not_before));
  ASN1_TIME_set(X509_getm_notAfter(x), static_cast<time_t>(not_after));
  X509_NAME* name = X509_get_subject_name(x);  // get0: owned by |x|
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(o.c_str()), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(x, name);     // copies
  X509_set_pubkey(x, kc.key.get());  // up-refs
  EXPECT_GT(X509_sign(x, kc.key.get(), nullptr), 0);
  return kc;
}

std::string Pem(X509* cert) {
  ossl::UniquePtr<BIO> bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), cert);
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);  // get0: points into |bio|
  return std::string(data, static_cast<size_t>(len));
}

std::string Der(X509* cert) {
  unsigned char* raw = nullptr;
  const int len = i2d_X509(cert, &raw);  // allocates |raw|; owned by |der|
  const ossl::UniqueBuffer der(raw);
  return std::string(reinterpret_cast<const char*>(der.get()), static_cast<size_t>(len));
}

std::string SignEd25519(EVP_PKEY* key, const std::string& message) {
  ossl::UniquePtr<EVP_MD_CTX> ctx(EVP_MD_CTX_new());
  std::string sig(64, '\0');
  size_t len = sig.size();
  EXPECT_EQ(EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key), 1);
  EXPECT_EQ(EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                           reinterpret_cast<const unsigned char*>(message.data()), message.size()),
            1);
  return sig;
}

std::string Pin(const std::string& file, X509* cert) {
  return "{ file: " + file + ", sha256: " + Sha256Hex(Der(cert)) + " }";
}

}  // namespace

Deployment::Deployment(const DeploymentSpec& s) : anchor_in_state_dir_(s.anchor_in_state_dir) {
  const int64_t now = s.now;
  env_ = {{"CG_AUDIT_ADMIN_TOKEN", kAdminToken},
          {"CG_AUDIT_ORDER_SECRET", kOrderSecret},
          {"CG_AUDIT_ORDER_SECRET_OLD", kOldSecret},
          {"CG_AUDIT_ERP_TOKEN", "erp-token-never-printed-0123456789"}};

  // Trust: a pinned root and (optionally) a pinned allowlist signer.
  KeyCert root =
      MakeCert("ClawHub", "ClawHub test root", now - 10 * kDay, now + s.root_valid_days * kDay);
  KeyCert signer = MakeCert("ClawHub", "allowlist signer", now - 10 * kDay, now + 365 * kDay);
  WriteFile(dir_.Sub("policies/root.pem"), Pem(root.cert.get()));
  WriteFile(dir_.Sub("policies/signer.pem"), Pem(signer.cert.get()));
  std::string trust =
      "schema: clawguard/trust/v1\nmode: " + s.mode + "\nroots:\n  - " +
      Pin("root.pem", root.cert.get()) +
      "\nrequire_eku: codeSigning\npublishers:\n  acme: [\"acme-*\"]\nthreshold: 1\n";
  if (s.signed_allowlist)
    trust += "allowlist_signer: " + Pin("signer.pem", signer.cert.get()) + "\n";
  WriteFile(dir_.Sub("policies/trust.yaml"), trust);

  // One package on disk whose bundle carries a leaf with the chosen expiry (its signature bytes
  // are not checked by the audit: the loader does that).
  const std::string package = "package bytes of acme-orders 1.4.2";
  WriteFile(dir_.Sub(std::string("plugins/") + kPackage), package);
  KeyCert leaf = MakeCert("acme", "acme release", now - 10 * kDay, now + s.leaf_valid_days * kDay);
  auto manifest = ParseManifest(kManifest, "manifest.yaml");
  EXPECT_TRUE(manifest.ok()) << manifest.error().ToString();
  Statement st;
  st.subject_name = kPackage;
  st.subject_sha256 = Sha256Hex(package);
  st.name = "acme-orders";
  st.version = "1.4.2";
  st.publisher = "acme";
  st.abi = 1;
  st.manifest_sha256 = Sha256Hex(kManifest);
  st.manifest = ManifestToJson(*manifest);
  Bundle pb;
  pb.payload_type = std::string(kInTotoPayloadType);
  pb.payload = SerializeStatement(st);
  const std::string leaf_id = KeyIdOf(leaf.key.get()).value();
  pb.signatures.push_back({leaf_id, SignEd25519(leaf.key.get(), Pae(pb.payload_type, pb.payload))});
  pb.certificates[leaf_id] = {Der(leaf.cert.get())};
  WriteFile(dir_.Sub(std::string("plugins/") + kPackage + ".sig"), SerializeBundle(pb));

  // Allowlist, signed by the pinned signer.
  std::string allowlist = "schema: clawguard/allowlist/v1\nversion: 2\nexpires: " +
                          FormatRfc3339Utc(now + s.allowlist_expires_days * kDay) + "\nplugins:\n";
  const std::string listed_sha = s.package_allowlisted ? Sha256Hex(package) : std::string(64, 'a');
  allowlist += "  - { name: acme-orders, version: 1.4.2, sha256: " + listed_sha + " }\n";
  if (s.extra_allowlist_entry)
    allowlist +=
        "  - { name: acme-billing, version: 2.0.0, sha256: " + std::string(64, 'b') + " }\n";
  WriteFile(dir_.Sub("policies/allowlist.yaml"), allowlist);
  if (s.signed_allowlist) {
    Bundle ab;
    ab.payload_type = std::string(kAllowlistPayloadType);
    ab.payload = allowlist;
    const std::string id = KeyIdOf(signer.key.get()).value();
    ab.signatures.push_back({id, SignEd25519(signer.key.get(), Pae(ab.payload_type, ab.payload))});
    ab.certificates[id] = {Der(signer.cert.get())};
    WriteFile(dir_.Sub("policies/allowlist.yaml.sig"), SerializeBundle(ab));
  }

  // Ledger with one deploy row (and an allowlist row), the anchor file and the audit log's
  // checkpoint.
  std::filesystem::create_directories(dir_.Sub("state"));
  auto ledger = SqliteLedger::Open(store_path());
  EXPECT_TRUE(ledger.ok()) << ledger.error().ToString();
  auto rec = (*ledger)->Record(LedgerKind::kDeploy, "acme-orders", "1.4.2", Sha256Hex(package));
  EXPECT_TRUE(rec.ok()) << rec.error().ToString();
  if (s.allowlist_floor > 0) {
    rec = RecordAllowlist(**ledger, s.allowlist_floor, std::string(64, 'a'));
    EXPECT_TRUE(rec.ok()) << rec.error().ToString();
  }
  std::string log = "{\"event\":\"verified\",\"name\":\"acme-orders\"}\n";
  if (s.write_checkpoint) {
    const std::string head = s.tamper_checkpoint ? std::string(64, 'f') : rec->head.head;
    log +=
        nlohmann::json{{"event", "ledger_checkpoint"}, {"count", rec->head.count}, {"head", head}}
            .dump() +
        "\n";
  }
  WriteFile(dir_.Sub("logs/audit.jsonl"), log);
  if (s.anchor_fifo) {
    EXPECT_EQ(::mkfifo(anchor_path().c_str(), 0600), 0);
  } else if (s.write_anchor) {
    const std::optional<LedgerCheckpoint> tofu =
        s.anchor_trusted_on_first_use ? std::optional<LedgerCheckpoint>(rec->head) : std::nullopt;
    EXPECT_TRUE(
        LedgerAnchorFile(anchor_path()).Write(LedgerAnchor{rec->head, now, tofu, now}).ok());
  }
  if (s.rehash_ledger) {
    auto db = sqlite::SqliteDb::Open(store_path());
    EXPECT_TRUE(db.ok());
    auto rows = (*ledger)->ReadAll().value();
    std::string prev(64, '0');
    for (auto& row : rows) {
      if (row.seq == 1) row.sha256 = std::string(64, 'e');
      row.prev_hash = prev;
      row.hash = LedgerRowHash(row);
      prev = row.hash;
      EXPECT_TRUE((*db)
                      ->Exec("UPDATE ledger SET sha256 = '" + row.sha256 + "', prev_hash = '" +
                             row.prev_hash + "', hash = '" + row.hash +
                             "' WHERE seq = " + std::to_string(row.seq))
                      .ok());
    }
  }

  // host.yaml in the shape of ARCHITECTURE.md.
  host_yaml_ = dir_.Sub("host.yaml");
  WriteFile(
      host_yaml_,
      "schema: clawguard/host/v1\n"
      "listen: { address: \"" +
          s.listen_address +
          "\", tls: null, max_body: 1MiB, max_headers: 16KiB, workers: 2 }\n"
          "admin:  { address: \"" +
          s.admin_address +
          "\", token: env:CG_AUDIT_ADMIN_TOKEN, tls: null }\n"
          "store: sqlite:state/state.db\n"
          "plugins: { dir: plugins, trust: policies/trust.yaml, allowlist: "
          "policies/allowlist.yaml, handler_timeout: 10s }\n"
          "webhooks:\n"
          "  tolerance: 300s\n"
          "  clock_skew: 5m\n"
          "  platform_retry: { schedule: [1m, 2m, 4m, 8m, 16m, 32m, 64m, 128m, 256m, 512m] }\n"
          "  routes:\n"
          "    acme-orders/order.created:\n"
          "      current: env:CG_AUDIT_ORDER_SECRET\n"
          "      current_since: " +
          FormatRfc3339Utc(now - s.secret_since_days * kDay) +
          "\n"
          "      previous: env:CG_AUDIT_ORDER_SECRET_OLD\n"
          "      previous_until: " +
          FormatRfc3339Utc(now + s.previous_until_days * kDay) +
          "\n"
          "  rate_limit: { per_plugin: 200/s, burst: 400 }\n"
          "idempotency: { retention: 7d, lease: 30s, tombstones: 30d, intent_expiry: 24h }\n"
          "erp:\n"
          "  base_url: https://erp.internal:8443\n"
          "  timeout: 5s\n"
          "  ca: policies/root.pem\n"
          "  auth: env:CG_AUDIT_ERP_TOKEN\n"
          "  retry: { base: 1s, max: 10m, attempts: 8, jitter: 20%, floor_429: 60s }\n"
          "breaker:\n"
          "  key: { failures: 3, window: 5s, cooldown: 30s }\n"
          "  erp: { failures: 10, window: 30s, cooldown: 60s, half_open_probes: 1 }\n"
          "log: { audit: logs/audit.jsonl, redact: [password, token, card]" +
          std::string(s.anchor_in_state_dir ? ", anchor: state/ledger-anchor.json" : "") + " }\n");
}

std::shared_ptr<const host::HostConfig> Deployment::Load() const {
  const auto env = env_;
  auto c =
      host::HostConfig::Parse(ReadFile(host_yaml_), host_yaml_, [env](const std::string& name) {
        auto it = env.find(name);
        return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
      });
  EXPECT_TRUE(c.ok()) << c.error().ToString();
  return c.ok() ? *c : nullptr;
}

}  // namespace clawguard::testing
