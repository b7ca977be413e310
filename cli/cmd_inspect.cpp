// cmd_inspect.cpp — `clawguard inspect PKG [--json]`: describes a package and its .sig bundle
// (digest, manifest, statement, signatures, chains). Descriptive only: signatures are checked
// with the leaf key the bundle itself carries, and no trust decision is made (that is `verify`).
#include <openssl/asn1.h>

#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "clawguard/bundle.h"
#include "clawguard/clock.h"
#include "clawguard/file_io.h"
#include "clawguard/limits.h"
#include "clawguard/manifest.h"
#include "clawguard/sha256.h"
#include "commands.h"
#include "signer/package_manifest.h"

namespace clawguard::cli {
namespace {

using nlohmann::json;

struct InspectOptions {
  std::string package;
  bool json = false;
};

std::string NameText(const X509_NAME* name) {
  ossl::UniquePtr<BIO> bio(BIO_new(BIO_s_mem()));
  if (!bio || X509_NAME_print_ex(bio.get(), name, 0, XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB) < 0) {
    (void)ossl::GetSslErrors();
    return "?";
  }
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);  // borrowed from bio
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : std::string();
}

std::string TimeText(const ASN1_TIME* t) {
  std::tm tm{};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) {
    (void)ossl::GetSslErrors();
    return "?";
  }
  return FormatRfc3339Utc(static_cast<int64_t>(timegm(&tm)));
}

json ChainJson(const std::vector<std::string>& ders) {
  json chain = json::array();
  for (const auto& der : ders) {
    auto cert = ParseCertificateDer(der);
    if (!cert.ok()) {
      chain.push_back({{"error", cert.error().ToString()}, {"sha256", Sha256Hex(der)}});
      continue;
    }
    X509* c = cert->get();
    // X509_get_subject_name/issuer_name and X509_get0_notBefore/notAfter: borrowed from c.
    chain.push_back({{"subject", NameText(X509_get_subject_name(c))},
                     {"issuer", NameText(X509_get_issuer_name(c))},
                     {"notBefore", TimeText(X509_get0_notBefore(c))},
                     {"notAfter", TimeText(X509_get0_notAfter(c))},
                     {"sha256", Sha256Hex(der)}});
  }
  return chain;
}

// SignatureJson describes one signature; "detail" is for the text output only.
json SignatureJson(const Bundle& b, const BundleSignature& s) {
  json j = {{"keyid", s.keyid}, {"algorithm", nullptr}, {"verifies", false}};
  const auto certs = b.certificates.find(s.keyid);  // ParseBundle guarantees an entry
  j["chain"] = certs == b.certificates.end() ? json::array() : ChainJson(certs->second);
  auto leaf = certs == b.certificates.end()
                  ? Result<ossl::UniquePtr<X509>>(Status(Reason::kBundleInvalid, "no certificates"))
                  : ParseCertificateDer(certs->second.front());
  if (!leaf.ok()) {
    j["detail"] = "the leaf certificate cannot be read: " + leaf.error().ToString();
    return j;
  }
  EVP_PKEY* key = X509_get0_pubkey(leaf->get());  // get0: borrowed from the leaf
  auto alg = AlgorithmOfKey(key);
  if (!alg.ok()) {
    j["algorithm"] = "refused";
    j["detail"] = alg.error().ToString();
    return j;
  }
  j["algorithm"] = *alg == SigAlgorithm::kEd25519 ? "ed25519" : "ecdsa-p256-sha256";
  const auto keyid = KeyIdOf(key);
  if (!keyid.ok()) {
    j["detail"] = "the leaf's public key cannot be named: " + keyid.error().ToString();
    return j;
  }
  if (*keyid != s.keyid) {
    j["detail"] = "the keyid is not the canonical keyid of the leaf's public key (" + *keyid +
                  ": the sha256 of its canonical SubjectPublicKeyInfo)";
    return j;
  }
  const Status st = VerifySignature(key, Pae(b.payload_type, b.payload), s.sig);
  j["verifies"] = st.ok();
  j["detail"] = st.ok() ? "signature verifies with the included leaf key; trust not evaluated"
                        : "signature does NOT verify with the included leaf key: " + st.ToString();
  return j;
}

Result<json> Describe(const std::string& path) {
  CLAWGUARD_ASSIGN_OR_RETURN(
      std::string pkg, ReadFileBounded(path, limits::kDefaultMaxPackage, Reason::kPackageTooLarge));
  const std::string digest = Sha256Hex(pkg);
  CLAWGUARD_ASSIGN_OR_RETURN(std::string manifest_yaml, signer::ReadFirstEntryManifest(pkg));
  CLAWGUARD_ASSIGN_OR_RETURN(Manifest manifest,
                             ParseManifest(manifest_yaml, path + ":manifest.yaml"));
  json out = {{"package", path},
              {"sha256", digest},
              {"manifest", ManifestToJson(manifest)},
              {"statement", nullptr},
              {"signatures", json::array()},
              {"digestMatches", nullptr}};
  // Only a .sig that is not there at all makes the package "unsigned"; one that is there but
  // cannot be read (a FIFO, a directory, too large) is an error, said as such.
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path + ".sig", ec))) return out;
  CLAWGUARD_ASSIGN_OR_RETURN(std::string bundle_text,
                             ReadFileBounded(path + ".sig", limits::kMaxBundle));
  CLAWGUARD_ASSIGN_OR_RETURN(Bundle bundle, ParseBundle(bundle_text));
  out["payloadType"] = bundle.payload_type;
  if (bundle.payload_type == kInTotoPayloadType) {
    CLAWGUARD_ASSIGN_OR_RETURN(Statement st, ParseStatement(bundle.payload));
    out["statement"] = json::parse(SerializeStatement(st));
    out["digestMatches"] = st.subject_sha256 == digest;
  }
  for (const auto& s : bundle.signatures) out["signatures"].push_back(SignatureJson(bundle, s));
  return out;
}

void PrintText(const json& d, bool has_bundle) {
  std::cout << "package   " << d["package"].get<std::string>() << "\n"
            << "sha256    " << d["sha256"].get<std::string>() << "\n"
            << "manifest\n  " << d["manifest"].dump(2) << "\n";
  if (!has_bundle) {
    std::cout << "signatures: none (" << d["package"].get<std::string>() << ".sig not found)\n";
    return;
  }
  if (d["statement"].is_null()) {
    std::cout << "statement: none (payload type " << d["payloadType"].get<std::string>()
              << " is not an in-toto statement)\n";
  } else {
    const json& st = d["statement"];
    const json& p = st["predicate"];
    std::cout << "statement\n  subject   " << st["subject"][0]["name"].get<std::string>()
              << " sha256 " << st["subject"][0]["digest"]["sha256"].get<std::string>()
              << "\n  digest    "
              << (d["digestMatches"].get<bool>() ? "matches the package sha256"
                                                 : "MISMATCH: differs from the package sha256")
              << "\n  predicate " << p["name"].get<std::string>() << " "
              << p["version"].get<std::string>() << " publisher "
              << p["publisher"].get<std::string>() << " abi " << p["abi"].dump() << "\n";
  }
  std::cout << "signatures (" << d["signatures"].size() << ")\n";
  int i = 0;
  for (const auto& s : d["signatures"]) {
    std::cout << "  [" << ++i << "] keyid " << s["keyid"].get<std::string>() << "\n      algorithm "
              << (s["algorithm"].is_string() ? s["algorithm"].get<std::string>() : "unknown")
              << "\n      " << s.value("detail", "") << "\n      chain\n";
    int k = 0;
    for (const auto& c : s["chain"]) {
      if (c.contains("error")) {
        std::cout << "        [" << k++ << "] unreadable: " << c["error"].get<std::string>()
                  << "\n";
        continue;
      }
      std::cout << "        [" << k++ << "] subject   " << c["subject"].get<std::string>()
                << "\n            issuer    " << c["issuer"].get<std::string>()
                << "\n            notBefore " << c["notBefore"].get<std::string>()
                << "\n            notAfter  " << c["notAfter"].get<std::string>()
                << "\n            sha256    " << c["sha256"].get<std::string>() << "\n";
    }
  }
}

int Run(const InspectOptions& o) {
  Result<json> d = Status(Reason::kInternal, "not run");
  try {
    d = Describe(o.package);
  } catch (const std::exception& e) {  // nlohmann on a malformed value: never expected, never fatal
    d = Status(Reason::kInternal, std::string("inspect failed: ") + e.what());
  }
  if (!d.ok()) return ReportError("inspect", d.error(), o.json);
  const bool has_bundle = d->contains("payloadType");
  if (o.json) {
    json out = *d;
    out.erase("payloadType");
    for (auto& s : out["signatures"]) s.erase("detail");
    std::cout << out.dump() << "\n";
  } else {
    PrintText(*d, has_bundle);
  }
  return 0;
}

}  // namespace

void RegisterInspect(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<InspectOptions>();
  auto* cmd =
      app.add_subcommand("inspect", "describe a package and its signatures (no trust decision)");
  cmd->add_option("PKG", opts->package,
                  "the NAME-VERSION.claw package (its .sig is read beside it)")
      ->required();
  cmd->add_flag("--json", opts->json, "print one JSON object");
  cmd->callback([&ctx, opts] { ctx.exit_code = Run(*opts); });
}

}  // namespace clawguard::cli
