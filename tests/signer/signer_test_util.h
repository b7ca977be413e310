// signer_test_util.h — shared helpers for the signer tests: a token with a certified key, and
// packages built with the tar/zstd CLI (so these tests do not depend on `clawguard pack`).
#ifndef CLAWGUARD_TESTS_SIGNER_SIGNER_TEST_UTIL_H_
#define CLAWGUARD_TESTS_SIGNER_SIGNER_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "clawguard/sha256.h"
#include "support/softhsm.h"
#include "support/temp_dir.h"

namespace clawguard::testing {

// MakePackage writes DIR/NAME-VERSION.claw: a pax tar (zstd) whose first entry is manifest.yaml
// (digest of the library filled in unless |fill_digest| is false), then lib/libplugin.so with
// |so_bytes|. With |manifest_first| false the library comes first. Returns the package path.
inline std::string MakePackage(const std::string& dir, const std::string& name,
                               const std::string& version, const std::string& so_bytes,
                               bool fill_digest = true, bool manifest_first = true,
                               const std::string& publisher = "acme") {
  const std::string root =
      dir + "/src-" + name + "-" + version + "-" + Sha256Hex(so_bytes).substr(0, 8);
  WriteFile(root + "/lib/libplugin.so", so_bytes);
  const std::string digest = fill_digest ? "sha256:" + Sha256Hex(so_bytes) : "null";
  WriteFile(root + "/manifest.yaml",
            "schema: clawguard/plugin/v1\nname: " + name + "\nversion: " + version +
                "\npublisher: " + publisher +
                "\nabi: 1\nentry: lib/libplugin.so\nfiles:\n  lib/libplugin.so: " + digest +
                "\ncapabilities:\n  erp:\n    - POST /inventory/adjust\nwebhooks:\n  - route: "
                "order.created\n"
                "    idempotency: { level: 2, business_key: /order_id, retention: 7d }\n");
  std::string pkg = dir + "/" + name + "-" + version + ".claw";
  const std::string entries =
      manifest_first ? "manifest.yaml lib/libplugin.so" : "lib/libplugin.so manifest.yaml";
  CommandResult r = RunCommand(
      {"bash", "-c",
       "set -o pipefail; tar --format=pax --owner=0 --group=0 --numeric-owner --mtime=@0 -C '" +
           root + "' -cf - " + entries + " | zstd -q -6 -f -o '" + pkg + "'"});
  if (r.exit_code != 0) throw std::runtime_error("making a package failed: " + r.err);
  return pkg;
}

// SigningSetup is a token with one P-256 key and a code-signing chain for it.
struct SigningSetup {
  explicit SigningSetup(const std::string& pin = SoftHsmToken::kDefaultPin)
      : hsm("clawguard-test", pin) {
    key = hsm.GenerateKey("acme-release");
    pki = MakeTestPki(dir.Sub("pki"));
    chain = IssueLeaf(hsm, key, pki, "acme", "/O=acme/CN=acme release");
  }
  // SignArgs is `sign --module … --key … --pin-source … --chain …` + |extra|.
  std::vector<std::string> SignArgs(const std::vector<std::string>& extra,
                                    const TestKey* k = nullptr,
                                    const std::string* chain_path = nullptr) const {
    std::vector<std::string> args{
        "sign",          "--module",         hsm.module_path(),
        "--key",         (k ? *k : key).uri, "--pin-source",
        hsm.PinSource(), "--chain",          chain_path ? *chain_path : chain};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  TempDir dir;
  SoftHsmToken hsm;
  TestKey key;
  TestPki pki;
  std::string chain;
};

// ExpectReason checks exit code and "clawguard CMD: REASON:" on stderr.
inline void ExpectFailure(const CommandResult& r, int exit_code, const std::string& reason) {
  EXPECT_EQ(r.exit_code, exit_code) << r.out << r.err;
  EXPECT_NE(r.err.find(": " + reason + ": "), std::string::npos)
      << "expected reason " << reason << ", got: " << r.err;
}

}  // namespace clawguard::testing

#endif  // CLAWGUARD_TESTS_SIGNER_SIGNER_TEST_UTIL_H_
