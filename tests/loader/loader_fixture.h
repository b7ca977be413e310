// loader_fixture.h — the adversarial suite's world: a test PKI (root → intermediate → leaves),
// plugin variants built by tests/fixtures/make_plugins.sh, packages written by
// tests/fixtures/make_package.py (hostile shapes included) and signed with real DSSE bundles,
// policies, an in-memory Ledger (a test engine: the loader never links SQLite), and a marker
// file that each test plugin's ELF constructor writes (so "never ran" is checked).
#ifndef CLAWGUARD_TESTS_LOADER_LOADER_FIXTURE_H_
#define CLAWGUARD_TESTS_LOADER_LOADER_FIXTURE_H_

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "clawguard/loader.h"
#include "clawguard/manifest.h"
#include "support/temp_dir.h"
#include "test_pki.h"

namespace clawguard::testing {

// MemoryLedger is an in-memory Ledger engine with the interface's semantics (the recording rules
// are CheckLedgerRecord, as in the real engines); tests may edit its rows directly to play an
// attacker with write access to the store.
class MemoryLedger final : public Ledger {
 public:
  std::vector<LedgerRow> rows;
  int64_t now = kNow;
  // before_record, when set, runs once at the start of the next Record of |kind| (then is
  // cleared): another host writing between the loader's pre-check and its Record.
  std::function<void(MemoryLedger&)> before_record;
  LedgerKind before_record_kind = LedgerKind::kDeploy;

  Result<std::vector<LedgerRow>> RowsFor(const std::string& name) override {
    std::vector<LedgerRow> out;
    for (const auto& r : rows)
      if (r.name == name) out.push_back(r);
    return out;
  }
  using Ledger::Record;
  Result<LedgerAppend> Record(LedgerKind kind, const std::string& name, const std::string& version,
                              const std::string& sha256, const LedgerRecordRules& rules) override {
    if (before_record && kind == before_record_kind) {
      auto hook = std::move(before_record);
      before_record = nullptr;
      hook(*this);
    }
    auto view = PrepareLedgerRecord(rows, name, rules);
    if (!view) return view.error();
    auto append = CheckLedgerRecord(view->same_name, kind, name, version, sha256, rules);
    if (!append) return append.error();
    if (!*append) return LedgerAppend{false, *Head()};
    LedgerRow row;
    row.seq = static_cast<int64_t>(rows.size()) + 1;
    row.kind = kind;
    row.name = name;
    row.version = version;
    row.sha256 = sha256;
    row.time = now;
    row.prev_hash = rows.empty() ? std::string(64, '0') : rows.back().hash;
    row.hash = LedgerRowHash(row);
    rows.push_back(row);
    return LedgerAppend{true, *Head()};
  }
  Result<std::vector<LedgerRow>> ReadAll() override { return rows; }
  Result<LedgerCheckpoint> Head() override {
    if (rows.empty()) return LedgerCheckpoint{0, std::string(64, '0')};
    return LedgerCheckpoint{static_cast<int64_t>(rows.size()), rows.back().hash};
  }
  // AllowlistFloor is the allowlist floor of the rows (HighestAllowlistVersion).
  std::optional<int64_t> AllowlistFloor() const { return HighestAllowlistVersion(rows); }
  // Kinds lists "kind name version" of every row, in chain order.
  std::vector<std::string> Kinds() const {
    std::vector<std::string> out;
    for (const auto& r : rows)
      out.push_back(std::string(LedgerKindName(r.kind)) + " " + r.name + " " + r.version);
    return out;
  }
  // Rehash recomputes every hash from |from| (1-based) on: a forger re-chaining after an edit.
  void Rehash(size_t from = 1) {
    for (size_t i = from - 1; i < rows.size(); ++i) {
      rows[i].prev_hash = i == 0 ? std::string(64, '0') : rows[i - 1].hash;
      rows[i].hash = LedgerRowHash(rows[i]);
    }
  }
};

// The shared PKI: root → intermediate (pathlen 0) → leaves for the signing keys.
struct World {
  ossl::UniquePtr<EVP_PKEY> root_key, inter_key, key1, key2, key3, rogue_key, allow_key;
  ossl::UniquePtr<X509> root, inter, rogue_root, leaf1, leaf2, leaf3, allow_cert;
  std::string plugins_dir;  // built plugin variants
  std::unique_ptr<TempDir> dir;

  static World& Get() {
    static World* w = [] {
      auto* x = new World();
      x->Init();
      return x;
    }();
    return *w;
  }

  void Init() {
    dir = std::make_unique<TempDir>();
    root_key = NewKey();
    inter_key = NewKey();
    key1 = NewKey();
    key2 = NewKey();
    key3 = NewKey();
    rogue_key = NewKey();
    allow_key = NewKey();
    CertSpec ca;
    ca.ca = true;
    ca.subject = {{"O", "ClawHub"}, {"CN", "ClawHub Test Root"}};
    ca.not_before = kJan2020;
    root = Issue(ca, root_key.get(), nullptr, root_key.get());
    ca.subject = {{"O", "ClawHub"}, {"CN", "ClawHub Test Intermediate"}};
    ca.pathlen = 0;
    ca.serial = 2;
    inter = Issue(ca, inter_key.get(), root.get(), root_key.get());
    CertSpec rogue = ca;
    rogue.pathlen = -1;
    rogue.subject = {{"O", "ClawHub"}, {"CN", "ClawHub Test Root"}};  // same name, other key
    rogue_root = Issue(rogue, rogue_key.get(), nullptr, rogue_key.get());
    leaf1 = Leaf(key1.get(), CertSpec{});
    CertSpec l2;
    l2.serial = 11;
    leaf2 = Leaf(key2.get(), l2);
    CertSpec l3;
    l3.serial = 12;
    leaf3 = Leaf(key3.get(), l3);
    CertSpec al;
    al.subject = {{"O", "ClawHub"}, {"CN", "allowlist signer"}};
    al.serial = 20;
    allow_cert = Leaf(allow_key.get(), al);
    // The plugin variants are built once per source version and shared by every test process
    // (CTest runs each test alone): the folder name carries the sources' hash, a finished build
    // is renamed into place atomically, and processes that start together wait on a lock for the
    // first one's build instead of each compiling the same variants.
    const std::string fixtures = std::string(CLAWGUARD_SOURCE_DIR) + "/tests/fixtures";
    const std::string script = fixtures + "/make_plugins.sh";
    const std::string version =
        Sha256Hex(ReadFile(script) + ReadFile(fixtures + "/plugins/test_plugin.c") +
                  ReadFile(fixtures + "/plugins/evil.c") +
                  ReadFile(fixtures + "/plugins/unique_plugin.cpp") +
                  ReadFile(fixtures + "/patch_elf.py"))
            .substr(0, 16);
    plugins_dir = std::string(CLAWGUARD_BINARY_DIR) + "/tests/loader-plugins-" + version;
    // The last variant make_plugins.sh writes: its presence means the folder is complete.
    const std::string last = "/misalign.so";
    std::filesystem::create_directories(std::string(CLAWGUARD_BINARY_DIR) + "/tests");
    const int lock = ::open((plugins_dir + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock >= 0) (void)::flock(lock, LOCK_EX);
    if (!std::filesystem::exists(plugins_dir + last)) {
      // Built beside the final folder (same filesystem, so the rename is atomic).
      std::string tmpl = plugins_dir + ".tmp-XXXXXX";
      if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + tmpl);
      const std::string tmp = tmpl;
      // Hostile variants name plugins_dir/evil.so by its absolute path (their final home).
      auto r = RunCommand({"sh", script, tmp, plugins_dir});
      if (r.exit_code != 0) throw std::runtime_error("make_plugins.sh failed: " + r.err);
      std::error_code ec;
      std::filesystem::rename(tmp, plugins_dir, ec);  // another process may have won: fine
      if (!std::filesystem::exists(plugins_dir + last)) plugins_dir = tmp;
    }
    if (lock >= 0) ::close(lock);  // and with it the lock
  }

  // Leaf issues a leaf from the intermediate.
  ossl::UniquePtr<X509> Leaf(EVP_PKEY* key, const CertSpec& spec) const {
    return Issue(spec, key, inter.get(), inter_key.get());
  }
  std::string Plugin(const std::string& variant) const {
    return plugins_dir + "/" + variant + ".so";
  }
};

// TrustOpts shapes trust.yaml.
struct TrustOpts {
  std::string mode = "enforce";
  int threshold = 1;
  std::string publishers = "{ acme: [\"acme-*\"] }";
  std::vector<std::string> revoked_certs, revoked_keys, crl_files;
  bool allowlist_signer = false;
  std::string rollback = "refuse";
  std::string limits =
      "{ max_package: 16MiB, max_unpacked: 64MiB, max_entries: 8, max_ratio: 100 }";
  std::string allowed_needed = "[libc.so.6]";
  std::string root_pem;              // non-empty: pin this root (PEM) instead of the World's
  std::string allowlist_signer_pem;  // non-empty: pin this allowlist signer instead of the World's
};

// PackageOpts shapes one package. Empty |entries_json| means the honest layout.
struct PackageOpts {
  std::string name = "acme-orders", version = "1.4.2", publisher = "acme";
  int abi = 1;
  std::string plugin = "alpha";  // variant from make_plugins.sh
  std::string entry = "lib/libacme_orders.so";
  std::string extra_files;  // more "  path: sha256:…" lines under files:
  std::string capability = "POST /inventory/adjust";
  nlohmann::json entries_json;  // full override of the archive entries
  std::string compress = "zstd";
};

class LoaderFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    World::Get();
    marker_ = dir_.Sub("marker");
    ::setenv("CG_TEST_MARKER", marker_.c_str(), 1);
    WriteFile(dir_.Sub("root.pem"), CertPem(W().root.get()));
    WriteFile(dir_.Sub("allow-signer.pem"), CertPem(W().allow_cert.get()));
  }
  static World& W() { return World::Get(); }

  std::string WriteTrust(const TrustOpts& t) {
    std::string root_sha = CertSha256(W().root.get());
    if (!t.root_pem.empty()) {
      WriteFile(dir_.Sub("root.pem"), t.root_pem);
      root_sha = PemSha256(t.root_pem);
    }
    std::string signer_sha = CertSha256(W().allow_cert.get());
    if (!t.allowlist_signer_pem.empty()) {
      WriteFile(dir_.Sub("allow-signer.pem"), t.allowlist_signer_pem);
      signer_sha = PemSha256(t.allowlist_signer_pem);
    }
    std::string y = "schema: clawguard/trust/v1\nmode: " + t.mode +
                    "\nroots:\n  - file: root.pem\n    sha256: " + root_sha +
                    "\nrequire_eku: codeSigning\npublishers: " + t.publishers +
                    "\nthreshold: " + std::to_string(t.threshold) + "\nrevoked:\n  certificates: [";
    for (size_t i = 0; i < t.revoked_certs.size(); ++i) y += (i ? ", " : "") + t.revoked_certs[i];
    y += "]\n  keys: [";
    for (size_t i = 0; i < t.revoked_keys.size(); ++i) y += (i ? ", " : "") + t.revoked_keys[i];
    y += "]\n  crls: [";
    for (size_t i = 0; i < t.crl_files.size(); ++i) y += (i ? ", " : "") + t.crl_files[i];
    y += "]\nallowlist_signer: ";
    y += t.allowlist_signer ? "{ file: allow-signer.pem, sha256: " + signer_sha + " }" : "null";
    y += "\nrollback: " + t.rollback + "\nlimits: " + t.limits +
         "\nelf: { allowed_needed: " + t.allowed_needed + " }\n";
    std::string p = dir_.Sub("trust.yaml");
    WriteFile(p, y);
    return p;
  }

  std::string ManifestText(const PackageOpts& o, const std::string& so_sha) const {
    return "schema: clawguard/plugin/v1\nname: " + o.name + "\nversion: " + o.version +
           "\npublisher: " + o.publisher + "\nabi: " + std::to_string(o.abi) +
           "\nentry: " + o.entry + "\nfiles:\n  " + o.entry + ": sha256:" + so_sha + "\n" +
           o.extra_files + "capabilities:\n  erp:\n    - " + o.capability +
           "\nwebhooks:\n  - route: order.created\n"
           "    idempotency: { level: 2, business_key: /order_id, retention: 7d }\n";
  }

  // MakePackage writes NAME-VERSION.claw (unsigned) and remembers its manifest.
  std::string MakePackage(const PackageOpts& o) {
    const std::string so = W().Plugin(o.plugin);
    const std::string so_sha = Sha256Hex(ReadFile(so));
    manifest_text_ = ManifestText(o, so_sha);
    const std::string mpath = dir_.Sub("manifest-" + std::to_string(++counter_) + ".yaml");
    WriteFile(mpath, manifest_text_);
    nlohmann::json spec;
    spec["compress"] = o.compress;
    if (o.entries_json.is_null()) {
      spec["entries"] = {{{"path", "manifest.yaml"}, {"file", mpath}},
                         {{"path", o.entry}, {"file", so}, {"mode", 0755}}};
    } else {
      spec["entries"] = o.entries_json;
      for (auto& e : spec["entries"]) {
        if (e.value("file", "") == "@manifest") e["file"] = mpath;
        if (e.value("file", "") == "@so") e["file"] = so;
      }
    }
    const std::string spec_path = dir_.Sub("spec-" + std::to_string(counter_) + ".json");
    WriteFile(spec_path, spec.dump());
    std::string pkg = dir_.Sub(o.name + "-" + o.version + "-" + std::to_string(counter_) + ".claw");
    auto r = RunCommand({"python3",
                         std::string(CLAWGUARD_SOURCE_DIR) + "/tests/fixtures/make_package.py",
                         spec_path, pkg});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    opts_ = o;
    return pkg;
  }

  // StatementFor builds the honest statement for |pkg| (the last MakePackage's manifest).
  Statement StatementFor(const std::string& pkg) const {
    Statement st;
    st.subject_name = opts_.name + "-" + opts_.version + ".claw";
    st.subject_sha256 = Sha256Hex(ReadFile(pkg));
    st.name = opts_.name;
    st.version = opts_.version;
    st.publisher = opts_.publisher;
    st.abi = opts_.abi;
    st.manifest_sha256 = Sha256Hex(manifest_text_);
    auto m = ParseManifest(manifest_text_, "manifest.yaml");
    if (m.ok())
      st.manifest = ManifestToJson(*m);
    else
      st.manifest = nlohmann::json::object({{"unparsable", true}});
    return st;
  }

  // Sign writes PKG.sig with |signers| (default: key1 with leaf1 + intermediate).
  void Sign(const std::string& pkg, std::vector<SignerRef> signers = {},
            const std::function<void(Statement&)>& mutate = nullptr,
            const std::string& payload_type = std::string(kInTotoPayloadType)) {
    if (signers.empty()) signers = {Default()};
    Statement st = StatementFor(pkg);
    if (mutate) mutate(st);
    WriteFile(pkg + ".sig", MakeBundle(payload_type, SerializeStatement(st), signers));
  }
  static SignerRef Default() {
    return {W().key1.get(), {W().leaf1.get(), W().inter.get()}, "", false};
  }

  // Allow writes allowlist.yaml listing |pkg| (and |extra| lines).
  std::string Allow(const std::vector<std::string>& pkgs, int version = 3,
                    const std::string& expires = "2027-12-31T00:00:00Z", bool sign = false) {
    std::string y = "schema: clawguard/allowlist/v1\nversion: " + std::to_string(version) +
                    "\nexpires: " + expires + (pkgs.empty() ? "\nplugins: []\n" : "\nplugins:\n");
    for (const auto& p : pkgs) {
      Statement st = StatementFor(p);
      y += "  - { name: " + st.name + ", version: " + st.version +
           ", sha256: " + st.subject_sha256 + " }\n";
    }
    std::string path = dir_.Sub("allowlist.yaml");
    WriteFile(path, y);
    if (sign) {
      WriteFile(
          path + ".sig",
          MakeBundle(std::string(kAllowlistPayloadType), y,
                     {{W().allow_key.get(), {W().allow_cert.get(), W().inter.get()}, "", false}}));
    }
    return path;
  }

  Result<std::unique_ptr<Loader>> MakeLoader(Ledger* ledger = nullptr,
                                             const TrustOpts& t = TrustOpts{}) {
    LoaderOptions o;
    o.trust_policy_path = WriteTrust(t);
    o.allowlist_path = dir_.Sub("allowlist.yaml");
    o.ledger = ledger;
    o.clock = &clock_;
    o.audit_log_path = dir_.Sub("audit.jsonl");
    o.host_api = &host_api_;
    return Loader::Create(std::move(o));
  }

  // ExpectRefused loads |pkg| and asserts the exact reason and that the library never ran.
  void ExpectRefused(const std::string& pkg, Reason want, Ledger* ledger = nullptr,
                     const TrustOpts& t = TrustOpts{}) {
    auto loader = MakeLoader(ledger, t);
    ASSERT_TRUE(loader.ok()) << loader.error().ToString();
    auto loaded = (*loader)->Load(pkg);
    ASSERT_FALSE(loaded.ok()) << "loaded a package that should be refused with "
                              << ReasonName(want);
    EXPECT_EQ(loaded.error().reason(), want) << loaded.error().ToString();
    EXPECT_FALSE(std::filesystem::exists(marker_)) << "the plugin's constructor ran";
  }

  // PemSha256 is the DER sha256 of the first certificate of |pem|.
  static std::string PemSha256(const std::string& pem) {
    auto certs = ParsePemCertificates(pem, Reason::kInternal);
    return certs.ok() ? CertSha256((*certs)[0].get()) : std::string(64, '0');
  }

  bool MarkerExists() const { return std::filesystem::exists(marker_); }
  // AnchorPath is the ledger anchor MakeLoader's loaders use (the default beside the audit log).
  std::string AnchorPath() const { return dir_.Sub("ledger-anchor.json"); }
  std::string AuditLogPath() const { return dir_.Sub("audit.jsonl"); }

  TempDir dir_;
  std::string marker_;
  FixedClock clock_{kNow * 1000};
  cg_host_api host_api_{CLAWGUARD_PLUGIN_ABI, nullptr, nullptr, nullptr};
  std::string manifest_text_;
  PackageOpts opts_;
  int counter_ = 0;
};

}  // namespace clawguard::testing

#endif  // CLAWGUARD_TESTS_LOADER_LOADER_FIXTURE_H_
