// cmd_keys.cpp — `clawguard keys generate|csr|list`: argument parsing over signer/key_tools.h.
// The PIN comes only from --pin-source (env:VAR, file:PATH, fd:N) and never reaches any output.
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "clawguard/encoding.h"
#include "clawguard/file_io.h"
#include "commands.h"
#include "signer/hsm_signer.h"
#include "signer/key_tools.h"
#include "signer/pin_source.h"

namespace clawguard::cli {
namespace {

struct KeysOptions {
  std::string module, token, label, algo = "ecdsa-p256", pin_source, key, subject, out;
  bool json = false;
};

int Generate(const KeysOptions& o) {
  auto module = signer::ResolveModulePath(o.module);
  if (!module.ok()) return ReportError("keys generate", module.error(), o.json);
  auto alg = signer::ParseKeyAlgorithm(o.algo);
  if (!alg.ok()) return ReportError("keys generate", alg.error(), o.json);
  auto pin = signer::ReadPin(o.pin_source);
  if (!pin.ok()) return ReportError("keys generate", pin.error(), o.json);
  auto key = signer::GenerateKey(*module, o.token, o.label, *alg, std::move(pin).value());
  if (!key.ok()) return ReportError("keys generate", key.error(), o.json);
  if (o.json) {
    nlohmann::json j = {{"uri", key->uri},
                        {"keyid", key->keyid},
                        {"id", HexEncode(key->id)},
                        {"algorithm", std::string(signer::KeyAlgorithmName(key->algorithm))}};
    std::cout << j.dump() << "\n";
  } else {
    std::cout << "uri: " << key->uri << "\nkeyid: " << key->keyid
              << "\nalgorithm: " << signer::KeyAlgorithmName(key->algorithm) << "\n";
  }
  return 0;
}

int Csr(const KeysOptions& o) {
  auto module = signer::ResolveModulePath(o.module);
  if (!module.ok()) return ReportError("keys csr", module.error());
  // A bad subject is refused before the PIN is read or the HSM touched.
  auto subject = signer::ParseSubject(o.subject);
  if (!subject.ok()) return ReportError("keys csr", subject.error());
  auto pin = signer::ReadPin(o.pin_source);
  if (!pin.ok()) return ReportError("keys csr", pin.error());
  // A CSR may be made for an imported key too: whether it may sign is decided at `sign` time.
  auto signer = signer::HsmSigner::Create(*module, o.key, std::move(pin).value(),
                                          /*allow_imported_key=*/true);
  if (!signer.ok()) return ReportError("keys csr", signer.error());
  auto pem = signer::MakeCsrPem(**signer, o.subject);
  if (!pem.ok()) return ReportError("keys csr", pem.error());
  if (o.out.empty()) {
    std::cout << *pem;
    return 0;
  }
  Status written = WriteFileAtomic(o.out, *pem, 0644);
  if (!written.ok()) return ReportError("keys csr", written);
  const auto keyid = KeyIdOf((*signer)->public_key());
  std::cerr << "wrote " << o.out << " (keyid "
            << (keyid.ok() ? *keyid : "unknown: " + keyid.error().message()) << ")\n";
  return 0;
}

int List(const KeysOptions& o) {
  auto module = signer::ResolveModulePath(o.module);
  if (!module.ok()) return ReportError("keys list", module.error(), o.json);
  std::optional<SecretBytes> pin;
  if (!o.pin_source.empty()) {
    if (o.token.empty()) {
      return ReportError(
          "keys list",
          Status(Reason::kUsage, "--pin-source needs --token: a PIN unlocks one token"), o.json);
    }
    auto read = signer::ReadPin(o.pin_source);
    if (!read.ok()) return ReportError("keys list", read.error(), o.json);
    pin = std::move(read).value();
  }
  auto listings = signer::ListTokens(
      *module, o.token.empty() ? std::nullopt : std::optional<std::string>(o.token),
      std::move(pin));
  if (!listings.ok()) return ReportError("keys list", listings.error(), o.json);
  if (o.json) {
    std::cout << signer::ListingToJson(*module, *listings).dump() << "\n";
    return 0;
  }
  for (const auto& l : *listings) {
    std::cout << "token '" << l.label << "' (slot " << l.slot << ", " << l.manufacturer << " "
              << l.model << ", serial " << l.serial << ")"
              << (l.logged_in
                      ? ""
                      : " — public keys only; add --pin-source to see private keys and flags")
              << "\n";
    if (l.keys.empty()) std::cout << "  (no keys)\n";
    for (const auto& k : l.keys) {
      std::cout << "  " << k.label << "  id=" << HexEncode(k.id) << "  " << k.algorithm
                << "  keyid=" << (k.keyid.empty() ? std::string("-") : k.keyid)
                << (k.keyid_error.empty() ? std::string() : " (" + k.keyid_error + ")");
      if (l.logged_in) {
        std::cout << "  sensitive=" << (k.sensitive ? "yes" : "no")
                  << " extractable=" << (k.extractable ? "yes" : "no")
                  << " local=" << (k.local ? "yes" : "no");
      }
      std::cout << "\n";
    }
  }
  return 0;
}

}  // namespace

void RegisterKeys(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<KeysOptions>();
  auto* keys =
      app.add_subcommand("keys", "generate, certify and list signing keys in a PKCS#11 token");
  keys->require_subcommand(1);
  const std::string module_help = "PKCS#11 module (default: $CLAWGUARD_PKCS11_MODULE)";
  const std::string pin_help =
      "where the user PIN is read: env:VAR | file:PATH | fd:N (never the PIN itself)";

  auto* gen =
      keys->add_subcommand("generate", "generate a non-extractable key pair inside the token");
  gen->add_option("--module", opts->module, module_help);
  gen->add_option("--token", opts->token, "token label")->required();
  gen->add_option("--label", opts->label, "label of the new key (must not exist yet)")->required();
  gen->add_option("--algo", opts->algo, "ecdsa-p256 (default) or ed25519");
  gen->add_option("--pin-source", opts->pin_source, pin_help)->required();
  gen->add_flag("--json", opts->json, "print one JSON object");
  gen->callback([opts, &ctx] { ctx.exit_code = Generate(*opts); });

  auto* csr = keys->add_subcommand("csr", "make a certificate request signed inside the token");
  csr->add_option("--module", opts->module, module_help);
  csr->add_option("--key", opts->key, "key URI, e.g. pkcs11:token=release;object=acme-release")
      ->required();
  csr->add_option("--pin-source", opts->pin_source, pin_help)->required();
  csr->add_option("--subject", opts->subject, "subject, e.g. \"/O=acme/CN=acme release\"")
      ->required();
  csr->add_option("--out", opts->out, "write the PEM here (default: stdout)");
  csr->callback([opts, &ctx] { ctx.exit_code = Csr(*opts); });

  auto* list = keys->add_subcommand("list", "list tokens and their keys");
  list->add_option("--module", opts->module, module_help);
  list->add_option("--token", opts->token, "only this token");
  list->add_option("--pin-source", opts->pin_source, pin_help + "; needs --token");
  list->add_flag("--json", opts->json, "print one JSON object");
  list->callback([opts, &ctx] { ctx.exit_code = List(*opts); });
}

}  // namespace clawguard::cli
