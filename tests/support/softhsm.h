// softhsm.h — SoftHSM2 tokens and a test PKI for tests that sign (signer, loader, demo tests).
//
// SoftHsmToken makes a private SoftHSM2 token store in a temp dir:
//   DIR/softhsm2.conf   directories.tokendir = DIR/tokens, objectstore.backend = file,
//                       log.level = ERROR
// exports SOFTHSM2_CONF=DIR/softhsm2.conf in this process (setenv; the PKCS#11 module reads it at
// C_Initialize, so in-process signers see this store) and returns the same settings as env pairs
// for RunClawguard/RunCommand through Env(). The token is initialised with softhsm2-util (a
// throwaway PIN on softhsm2-util's command line is fine in tests; clawguard itself only ever
// gets it through PinSource(), i.e. env:CLAWGUARD_TEST_PIN, which Env() sets).
//
//   clawguard::testing::SoftHsmToken hsm;                      // token "clawguard-test"
//   auto key = hsm.GenerateKey("acme-release");                // `clawguard keys generate`
//   auto pki = MakeTestPki(dir.Sub("pki"));                    // ci/make-test-pki
//   std::string chain = IssueLeaf(hsm, key, pki, "acme", "/O=acme/CN=acme release");
//   RunClawguard({"sign", "--module", hsm.module_path(), "--key", key.uri, "--pin-source",
//                 hsm.PinSource(), "--chain", chain, "--no-ledger", pkg}, hsm.Env());
//
// Keep Ed25519 keys in their own token (InitToken("ed-token")): the OpenSSL pkcs11 engine and
// some tools misbehave on tokens that mix them with EC keys. Every helper throws
// std::runtime_error with the failing command's output when a setup step fails (GoogleTest
// reports it as a test failure). Not thread-safe (setenv); one SoftHsmToken at a time per process.
#ifndef CLAWGUARD_TESTS_SUPPORT_SOFTHSM_H_
#define CLAWGUARD_TESTS_SUPPORT_SOFTHSM_H_

#include <string>
#include <utility>
#include <vector>

#include "support/temp_dir.h"

namespace clawguard::testing {

using EnvPairs = std::vector<std::pair<std::string, std::string>>;

// SoftHsmModulePath is $CLAWGUARD_PKCS11_MODULE if set, else /usr/lib/softhsm/libsofthsm2.so.
std::string SoftHsmModulePath();

// TestKey is a key in a token: its label, token, key URI (for --key) and keyid (hex sha256 of
// the SubjectPublicKeyInfo DER, as in bundles).
struct TestKey {
  std::string token, label, uri, keyid;
};

class SoftHsmToken {
 public:
  static constexpr const char* kPinEnv = "CLAWGUARD_TEST_PIN";
  static constexpr const char* kPinSource = "env:CLAWGUARD_TEST_PIN";
  static constexpr const char* kDefaultPin = "test-pin-4821";

  // Creates the store and initialises token |label| with user PIN |pin|.
  explicit SoftHsmToken(std::string label = "clawguard-test", std::string pin = kDefaultPin);
  ~SoftHsmToken();  // unsets SOFTHSM2_CONF if it still names this store
  SoftHsmToken(const SoftHsmToken&) = delete;
  SoftHsmToken& operator=(const SoftHsmToken&) = delete;

  const std::string& label() const { return label_; }
  const std::string& pin() const { return pin_; }
  std::string conf_path() const { return dir_.Sub("softhsm2.conf"); }
  std::string dir() const { return dir_.path().string(); }
  std::string module_path() const { return SoftHsmModulePath(); }
  // PinSource is "env:CLAWGUARD_TEST_PIN"; Env() sets that variable.
  std::string PinSource() const { return kPinSource; }
  // Env: SOFTHSM2_CONF, CLAWGUARD_TEST_PIN and CLAWGUARD_PKCS11_MODULE for child processes.
  EnvPairs Env() const;

  // InitToken initialises another token (same PIN) in this store, e.g. one for Ed25519 keys.
  void InitToken(const std::string& token_label);
  // GenerateKey runs `clawguard keys generate` (algo "ecdsa-p256" or "ed25519"); |token|
  // defaults to label().
  TestKey GenerateKey(const std::string& key_label, const std::string& algo = "ecdsa-p256",
                      const std::string& token = "");
  // ImportKey makes a P-256 key with openssl and imports it with softhsm2-util --import
  // (CKA_LOCAL false: the signer refuses it as key_imported without --allow-imported-key).
  // The PKCS#8 PEM stays in dir()/LABEL.pem.
  TestKey ImportKey(const std::string& key_label, const std::string& token = "");
  // GenerateExtractableKey makes a P-256 pair with pkcs11-tool --keypairgen --extractable
  // (CKA_EXTRACTABLE true: the signer refuses it as key_extractable).
  TestKey GenerateExtractableKey(const std::string& key_label, const std::string& token = "");
  // KeyIdOf reads the keyid of |key_label| with `clawguard keys list --json` ("" if none).
  std::string KeyIdOf(const std::string& key_label, const std::string& token = "");

 private:
  TempDir dir_;
  std::string label_, pin_;
};

// TestPki is what ci/make-test-pki --out DIR wrote: file-key root and intermediate CAs.
struct TestPki {
  std::string dir, root_pem, intermediate_pem, root_sha256;  // root_sha256: hex of the root's DER
};

// MakeTestPki runs ci/make-test-pki --out |dir|.
TestPki MakeTestPki(const std::string& dir);

// IssueLeaf makes a CSR for |key| with `clawguard keys csr --subject |subject|`, has
// ci/make-test-pki issue leaf |name| for it (|extra_args|, e.g. {"--eku", "none"} or
// {"--startdate", …, "--enddate", …}) and returns the path of NAME-chain.pem (leaf + intermediate).
std::string IssueLeaf(const SoftHsmToken& hsm, const TestKey& key, const TestPki& pki,
                      const std::string& name, const std::string& subject,
                      const std::vector<std::string>& extra_args = {});

}  // namespace clawguard::testing

#endif  // CLAWGUARD_TESTS_SUPPORT_SOFTHSM_H_
