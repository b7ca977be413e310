// cmd_sign.cpp — `clawguard sign [--allowlist]`: argument parsing over signer/sign.h.
//
// Order: usage checks → read package/allowlist and chain (cheap, no HSM) → open the ledger →
// read the PIN → log in and find the key → sign, self-verify, record, write. The PIN comes
// only from --pin-source and never reaches any output.
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "signer/hsm_signer.h"
#include "signer/pin_source.h"
#include "signer/sign.h"
#include "store_url.h"

namespace clawguard::cli {
namespace {

struct SignOptions {
  std::string module, key, pin_source, chain, ledger, target;
  bool no_ledger = false, append = false, allow_imported_key = false, allowlist = false,
       json = false;
};

int RunSign(const SignOptions& o) {
  const char* cmd = "sign";
  if (o.allowlist && !o.ledger.empty()) {
    return ReportError(cmd,
                       Status(Reason::kUsage,
                              "--ledger does not apply to --allowlist (allowlist versions are "
                              "checked by verifiers); drop it"),
                       o.json);
  }
  if (!o.allowlist && o.ledger.empty() && !o.no_ledger) {
    return ReportError(cmd,
                       Status(Reason::kUsage,
                              "say where the release is recorded: --ledger URL (e.g. "
                              "sqlite:/srv/clawguard/ledger.db) or, deliberately, --no-ledger"),
                       o.json);
  }
  auto module = signer::ResolveModulePath(o.module);
  if (!module.ok()) return ReportError(cmd, module.error(), o.json);

  auto prepared = o.allowlist ? signer::PrepareAllowlist(o.target, o.chain)
                              : signer::PreparePackage(o.target, o.chain);
  if (!prepared.ok()) return ReportError(cmd, prepared.error(), o.json);

  std::unique_ptr<Ledger> ledger;
  if (!o.allowlist && !o.ledger.empty()) {
    auto opened = OpenLedger(o.ledger, StoreOpen::kCreate);
    if (!opened.ok()) return ReportError(cmd, opened.error(), o.json);
    ledger = std::move(opened).value();
  }

  auto pin = signer::ReadPin(o.pin_source);
  if (!pin.ok()) return ReportError(cmd, pin.error(), o.json);
  auto signer =
      signer::HsmSigner::Create(*module, o.key, std::move(pin).value(), o.allow_imported_key);
  if (!signer.ok()) return ReportError(cmd, signer.error(), o.json);

  auto outcome = signer::SignPrepared(*prepared, **signer, ledger.get(), o.append);
  if (!outcome.ok()) return ReportError(cmd, outcome.error(), o.json);

  for (const auto& w : outcome->warnings) std::cerr << "clawguard sign: warning: " << w << "\n";
  std::string ledger_state = "skipped";
  if (outcome->ledger) ledger_state = outcome->ledger->appended ? "recorded" : "already recorded";
  if (o.json) {
    nlohmann::json j = {{"signed", o.target},
                        {"bundle", outcome->sig_path},
                        {"keyid", outcome->keyid},
                        {"signatures", outcome->signatures},
                        {"already_signed", outcome->already_signed},
                        {"payloadType", prepared->payload_type},
                        {"ledger", o.allowlist ? "n/a" : ledger_state}};
    if (prepared->is_package) {
      j["name"] = prepared->name;
      j["version"] = prepared->version;
      j["sha256"] = prepared->sha256;
    }
    std::cout << j.dump() << "\n";
    return 0;
  }
  if (outcome->already_signed) {
    std::cout << outcome->sig_path << " is already signed by keyid " << outcome->keyid
              << "; nothing changed";
  } else {
    std::cout << "signed " << o.target << " -> " << outcome->sig_path << " (keyid "
              << outcome->keyid << ", " << outcome->signatures
              << (outcome->signatures == 1 ? " signature" : " signatures") << ")";
  }
  if (prepared->is_package) {
    std::cout << "\n"
              << prepared->name << " " << prepared->version << " sha256:" << prepared->sha256
              << "\nledger: " << ledger_state;
  }
  std::cout << "\n";
  return 0;
}

}  // namespace

void RegisterSign(CLI::App& app, CommandContext& ctx) {
  auto o = std::make_shared<SignOptions>();
  auto* cmd = app.add_subcommand(
      "sign", "sign a package (or, with --allowlist, an allowlist) inside the HSM");
  cmd->add_option("--module", o->module, "PKCS#11 module (default: $CLAWGUARD_PKCS11_MODULE)");
  cmd->add_option("--key", o->key, "key URI, e.g. pkcs11:token=release;object=acme-release")
      ->required();
  cmd->add_option("--pin-source", o->pin_source,
                  "env:VAR | file:PATH | fd:N (never the PIN itself)")
      ->required();
  cmd->add_option("--chain", o->chain, "PEM: the leaf certificate for the key, then intermediates")
      ->required();
  auto* ledger = cmd->add_option("--ledger", o->ledger,
                                 "record the release here: sqlite:PATH or postgresql://…");
  auto* no_ledger =
      cmd->add_flag("--no-ledger", o->no_ledger, "do not record the release (must be explicit)");
  ledger->excludes(no_ledger);
  cmd->add_flag("--append", o->append,
                "add this key's signature to the existing PKG.sig (k-of-n signing)");
  cmd->add_flag("--allow-imported-key", o->allow_imported_key,
                "accept a key that was imported (CKA_LOCAL false)");
  cmd->add_flag("--allowlist", o->allowlist, "sign allowlist.yaml: writes allowlist.yaml.sig");
  cmd->add_flag("--json", o->json, "print one JSON object");
  cmd->add_option("target", o->target, "the package NAME-VERSION.claw (or allowlist.yaml)")
      ->required();
  cmd->callback([o, &ctx] { ctx.exit_code = RunSign(*o); });
}

}  // namespace clawguard::cli
