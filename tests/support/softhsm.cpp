// softhsm.cpp — SoftHSM2 token fixtures and the test PKI (see softhsm.h).
#include "support/softhsm.h"

#include <cstdlib>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace clawguard::testing {
namespace {

CommandResult MustRun(const std::vector<std::string>& argv, const EnvPairs& env,
                      const std::string& what) {
  CommandResult r = RunCommand(argv, env);
  if (r.exit_code != 0) {
    throw std::runtime_error(what + " failed (exit " + std::to_string(r.exit_code) + "): " + r.out +
                             r.err);
  }
  return r;
}

CommandResult MustRunClawguard(const std::vector<std::string>& args, const EnvPairs& env,
                               const std::string& what) {
  CommandResult r = RunClawguard(args, env);
  if (r.exit_code != 0) {
    throw std::runtime_error(what + " failed (exit " + std::to_string(r.exit_code) + "): " + r.out +
                             r.err);
  }
  return r;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

std::string SoftHsmModulePath() {
  const char* env = std::getenv("CLAWGUARD_PKCS11_MODULE");
  return env != nullptr && *env != '\0' ? env : "/usr/lib/softhsm/libsofthsm2.so";
}

SoftHsmToken::SoftHsmToken(std::string label, std::string pin)
    : label_(std::move(label)), pin_(std::move(pin)) {
  WriteFile(conf_path(),
            "directories.tokendir = " + dir_.Sub("tokens") +
                "\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n");
  std::filesystem::create_directories(dir_.Sub("tokens"));
  ::setenv("SOFTHSM2_CONF", conf_path().c_str(), 1);
  InitToken(label_);
}

SoftHsmToken::~SoftHsmToken() {
  const char* current = std::getenv("SOFTHSM2_CONF");
  if (current != nullptr && current == conf_path()) ::unsetenv("SOFTHSM2_CONF");
}

EnvPairs SoftHsmToken::Env() const {
  return {
      {"SOFTHSM2_CONF", conf_path()}, {kPinEnv, pin_}, {"CLAWGUARD_PKCS11_MODULE", module_path()}};
}

void SoftHsmToken::InitToken(const std::string& token_label) {
  MustRun({"softhsm2-util", "--init-token", "--free", "--label", token_label, "--pin", pin_,
           "--so-pin", "so-" + pin_},
          Env(), "softhsm2-util --init-token " + token_label);
}

TestKey SoftHsmToken::GenerateKey(const std::string& key_label, const std::string& algo,
                                  const std::string& token) {
  const std::string t = token.empty() ? label_ : token;
  CommandResult r =
      MustRunClawguard({"keys", "generate", "--module", module_path(), "--token", t, "--label",
                        key_label, "--algo", algo, "--pin-source", PinSource(), "--json"},
                       Env(), "clawguard keys generate " + key_label);
  const auto j = nlohmann::json::parse(r.out);
  return TestKey{t, key_label, j.at("uri").get<std::string>(), j.at("keyid").get<std::string>()};
}

TestKey SoftHsmToken::ImportKey(const std::string& key_label, const std::string& token) {
  const std::string t = token.empty() ? label_ : token;
  const std::string raw = dir_.Sub(key_label + "-raw.pem"), pem = dir_.Sub(key_label + ".pem");
  MustRun({"openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
           raw},
          {}, "openssl genpkey");
  MustRun({"openssl", "pkcs8", "-topk8", "-nocrypt", "-in", raw, "-out", pem}, {}, "openssl pkcs8");
  MustRun({"softhsm2-util", "--import", pem, "--token", t, "--label", key_label, "--id", "a1b2c3",
           "--pin", pin_},
          Env(), "softhsm2-util --import");
  return TestKey{t, key_label, "pkcs11:token=" + t + ";object=" + key_label, KeyIdOf(key_label, t)};
}

TestKey SoftHsmToken::GenerateExtractableKey(const std::string& key_label,
                                             const std::string& token) {
  const std::string t = token.empty() ? label_ : token;
  MustRun({"pkcs11-tool", "--module", module_path(), "--token-label", t, "--login", "--pin", pin_,
           "--keypairgen", "--key-type", "EC:prime256v1", "--label", key_label, "--id", "d4e5f6",
           "--usage-sign", "--extractable"},
          Env(), "pkcs11-tool --keypairgen --extractable");
  return TestKey{t, key_label, "pkcs11:token=" + t + ";object=" + key_label, KeyIdOf(key_label, t)};
}

std::string SoftHsmToken::KeyIdOf(const std::string& key_label, const std::string& token) {
  const std::string t = token.empty() ? label_ : token;
  CommandResult r = MustRunClawguard({"keys", "list", "--module", module_path(), "--token", t,
                                      "--pin-source", PinSource(), "--json"},
                                     Env(), "clawguard keys list");
  const auto j = nlohmann::json::parse(r.out);
  for (const auto& tok : j.at("tokens")) {
    for (const auto& k : tok.at("keys")) {
      if (k.at("label") == key_label && k.at("keyid").is_string())
        return k.at("keyid").get<std::string>();
    }
  }
  return "";
}

TestPki MakeTestPki(const std::string& dir) {
  MustRun({std::string(CLAWGUARD_SOURCE_DIR) + "/ci/make-test-pki", "--out", dir}, {},
          "ci/make-test-pki");
  TestPki pki;
  pki.dir = dir;
  pki.root_pem = dir + "/root.pem";
  pki.intermediate_pem = dir + "/intermediate.pem";
  pki.root_sha256 = Trim(ReadFile(dir + "/root.sha256"));
  return pki;
}

std::string IssueLeaf(const SoftHsmToken& hsm, const TestKey& key, const TestPki& pki,
                      const std::string& name, const std::string& subject,
                      const std::vector<std::string>& extra_args) {
  const std::string csr = pki.dir + "/" + name + ".csr";
  MustRunClawguard({"keys", "csr", "--module", hsm.module_path(), "--key", key.uri, "--pin-source",
                    hsm.PinSource(), "--subject", subject, "--out", csr},
                   hsm.Env(), "clawguard keys csr");
  std::vector<std::string> argv{std::string(CLAWGUARD_SOURCE_DIR) + "/ci/make-test-pki",
                                "--out",
                                pki.dir,
                                "--csr",
                                csr,
                                "--leaf",
                                name};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  MustRun(argv, {}, "ci/make-test-pki --leaf " + name);
  return pki.dir + "/" + name + "-chain.pem";
}

}  // namespace clawguard::testing
