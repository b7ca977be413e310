// archive_attack_test.cpp — adversarial suite, part 2: hostile archives and manifests. Every
// package here is correctly signed and allowlisted, so the archive check is what refuses it.
#include "loader_fixture.h"

namespace clawguard::testing {
namespace {

using J = nlohmann::json;

class ArchiveAttackTest : public LoaderFixture {
 protected:
  // SignedWith builds a package with |entries| (manifest first unless told), signs and allows it.
  std::string SignedWith(J entries, PackageOpts o = PackageOpts{}) {
    o.entries_json = std::move(entries);
    const std::string pkg = MakePackage(o);
    Sign(pkg);
    Allow({pkg});
    return pkg;
  }
  static J Manifest() { return {{"path", "manifest.yaml"}, {"file", "@manifest"}}; }
  static J So(const std::string& path = "lib/libacme_orders.so") {
    return {{"path", path}, {"file", "@so"}, {"mode", 0755}};
  }
};

TEST_F(ArchiveAttackTest, RefusesSoSwappedInsideArchiveAndRepacked) {
  // The manifest (and so the signed predicate) lists alpha's digest; beta's bytes are packed.
  PackageOpts o;
  const std::string so_alpha_sha = Sha256Hex(ReadFile(W().Plugin("alpha")));
  o.plugin = "beta";
  o.entries_json = J::array({Manifest(), So()});
  const std::string pkg = MakePackage(o);
  // Rewrite the manifest to claim alpha's digest, then repack with beta and sign honestly.
  std::string m = manifest_text_;
  const std::string beta_sha = Sha256Hex(ReadFile(W().Plugin("beta")));
  m.replace(m.find(beta_sha), beta_sha.size(), so_alpha_sha);
  WriteFile(dir_.Sub("swapped.yaml"), m);
  manifest_text_ = m;
  J spec = {
      {"compress", "zstd"},
      {"entries", J::array({{{"path", "manifest.yaml"}, {"file", dir_.Sub("swapped.yaml")}},
                            {{"path", "lib/libacme_orders.so"}, {"file", W().Plugin("beta")}}})}};
  WriteFile(dir_.Sub("swapped.json"), spec.dump());
  auto r =
      RunCommand({"python3", std::string(CLAWGUARD_SOURCE_DIR) + "/tests/fixtures/make_package.py",
                  dir_.Sub("swapped.json"), pkg});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Sign(pkg);
  Allow({pkg});
  ExpectRefused(pkg, Reason::kFileDigestMismatch);
}

TEST_F(ArchiveAttackTest, RefusesCapabilityEditedInManifest) {
  const std::string honest = MakePackage(PackageOpts{});
  const std::string honest_manifest = manifest_text_;
  PackageOpts o;
  o.capability = "DELETE /inventory/all";
  const std::string pkg = MakePackage(o);
  // The statement still carries the honest manifest: only the archive's copy was edited.
  Sign(pkg, {}, [&](Statement& st) {
    st.manifest_sha256 = Sha256Hex(honest_manifest);
    st.manifest = ManifestToJson(*ParseManifest(honest_manifest, "m"));
  });
  Allow({pkg});
  ExpectRefused(pkg, Reason::kManifestInvalid);
  (void)honest;
}

TEST_F(ArchiveAttackTest, RefusesPredicateThatDiffersFromManifest) {
  const std::string pkg = MakePackage(PackageOpts{});
  Sign(pkg, {}, [](Statement& st) { st.manifest["capabilities"]["erp"].push_back("POST /extra"); });
  Allow({pkg});
  ExpectRefused(pkg, Reason::kManifestInvalid);
}

TEST_F(ArchiveAttackTest, RefusesManifestNotFirst) {
  ExpectRefused(SignedWith(J::array({So(), Manifest()})), Reason::kManifestInvalid);
}

TEST_F(ArchiveAttackTest, RefusesDotDotEntry) {
  ExpectRefused(
      SignedWith(J::array({Manifest(), So(), {{"path", "lib/../../etc/cron.d/x"}, {"data", "x"}}})),
      Reason::kArchiveUnsafe);
}

TEST_F(ArchiveAttackTest, RefusesAbsolutePath) {
  ExpectRefused(SignedWith(J::array({Manifest(), So(), {{"path", "/etc/passwd"}, {"data", "x"}}})),
                Reason::kArchiveUnsafe);
}

TEST_F(ArchiveAttackTest, RefusesSymlink) {
  ExpectRefused(
      SignedWith(J::array({Manifest(),
                           So(),
                           {{"path", "lib/link"}, {"type", "symlink"}, {"link", "/etc/shadow"}}})),
      Reason::kArchiveUnsafe);
}

TEST_F(ArchiveAttackTest, RefusesHardlink) {
  ExpectRefused(
      SignedWith(J::array(
          {Manifest(),
           So(),
           {{"path", "lib/hard"}, {"type", "hardlink"}, {"link", "lib/libacme_orders.so"}}})),
      Reason::kArchiveUnsafe);
}

TEST_F(ArchiveAttackTest, RefusesDeviceNode) {
  ExpectRefused(SignedWith(J::array({Manifest(), So(), {{"path", "lib/null"}, {"type", "chr"}}})),
                Reason::kArchiveUnsafe);
}

TEST_F(ArchiveAttackTest, RefusesFifo) {
  ExpectRefused(SignedWith(J::array({Manifest(), So(), {{"path", "lib/pipe"}, {"type", "fifo"}}})),
                Reason::kArchiveUnsafe);
}

TEST_F(ArchiveAttackTest, RefusesDuplicateEntry) {
  ExpectRefused(SignedWith(J::array({Manifest(), So(), So()})), Reason::kArchiveUnsafe);
}

TEST_F(ArchiveAttackTest, RefusesCaseCollision) {
  ExpectRefused(SignedWith(J::array({Manifest(), So(), So("lib/LIBACME_ORDERS.so")})),
                Reason::kArchiveUnsafe);
}

TEST_F(ArchiveAttackTest, RefusesUnlistedFile) {
  ExpectRefused(SignedWith(J::array({Manifest(), So(), {{"path", "lib/extra.so"}, {"data", "x"}}})),
                Reason::kArchiveUnsafe);
}

TEST_F(ArchiveAttackTest, RefusesListedFileMissing) {
  PackageOpts o;
  o.extra_files = "  data/table.bin: sha256:" + Sha256Hex("table") + "\n";
  ExpectRefused(SignedWith(J::array({Manifest(), So()}), o), Reason::kManifestInvalid);
}

TEST_F(ArchiveAttackTest, RefusesDecompressionBombByRatio) {
  PackageOpts o;
  const uint64_t n = 8 * 1024 * 1024;
  o.extra_files = "  data/bomb.bin: sha256:" + Sha256Hex(std::string(n, '\0')) + "\n";
  ExpectRefused(
      SignedWith(J::array({Manifest(), So(), {{"path", "data/bomb.bin"}, {"zeros", n}}}), o),
      Reason::kArchiveUnsafe);
}

TEST_F(ArchiveAttackTest, RefusesOverMaxUnpacked) {
  // Incompressible bytes: the ratio is fine, the total is not.
  PackageOpts o;
  o.extra_files = "  data/big.bin: sha256:" + std::string(64, '0') + "\n";
  const std::string pkg = SignedWith(
      J::array({Manifest(), So(), {{"path", "data/big.bin"}, {"random", 600000}, {"seed", 7}}}), o);
  TrustOpts t;
  t.limits = "{ max_package: 16MiB, max_unpacked: 512KiB, max_entries: 8, max_ratio: 1000000 }";
  ExpectRefused(pkg, Reason::kArchiveUnsafe, nullptr, t);
}

TEST_F(ArchiveAttackTest, RefusesTooManyEntries) {
  J entries = J::array({Manifest(), So()});
  PackageOpts o;
  for (int i = 0; i < 10; ++i) {
    entries.push_back({{"path", "data/f" + std::to_string(i)}, {"data", "x"}});
    o.extra_files += "  data/f" + std::to_string(i) + ": sha256:" + Sha256Hex("x") + "\n";
  }
  ExpectRefused(SignedWith(entries, o), Reason::kArchiveUnsafe);
}

TEST_F(ArchiveAttackTest, RefusesOversizedPackage) {
  const std::string pkg = SignedWith(J::array({Manifest(), So()}));
  TrustOpts t;
  t.limits = "{ max_package: 1KiB }";
  ExpectRefused(pkg, Reason::kPackageTooLarge, nullptr, t);
}

TEST_F(ArchiveAttackTest, RefusesArchiveNotCompressedWithZstd) {
  PackageOpts o;
  o.compress = "gzip";
  ExpectRefused(SignedWith(J::array({Manifest(), So()}), o), Reason::kArchiveUnsafe);
}

TEST_F(ArchiveAttackTest, RefusesDirectoryEntry) {
  ExpectRefused(SignedWith(J::array({Manifest(), {{"path", "lib"}, {"type", "dir"}}, So()})),
                Reason::kArchiveUnsafe);
}

TEST_F(ArchiveAttackTest, RefusesBuildMetadataVersion) {
  // A "+build" version would dodge the ledger: refused even when signed and allowlisted.
  const std::string pkg = MakePackage(PackageOpts{});
  Sign(pkg, {}, [](Statement& st) {
    st.version = "1.4.2+build.7";
    st.manifest["version"] = "1.4.2+build.7";
  });
  Allow({pkg});
  ExpectRefused(pkg, Reason::kManifestInvalid);
}

}  // namespace
}  // namespace clawguard::testing
