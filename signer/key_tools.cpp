// key_tools.cpp — key generation, CSRs signed inside the token, and token/key listings.
#include "signer/key_tools.h"

#include <openssl/pem.h>
#include <openssl/rand.h>

#include <memory>

#include "clawguard/encoding.h"
#include "signer/pkcs11_key.h"
#include "signer/pkcs11_session.h"
#include "signer/pkcs11_uri.h"

namespace clawguard::signer {
namespace {

CK_ATTRIBUTE Attr(CK_ATTRIBUTE_TYPE type, const void* value, size_t len) {
  return CK_ATTRIBUTE{type, const_cast<void*>(value), static_cast<CK_ULONG>(len)};
}

Result<GeneratedKey> GenerateKeyPair(Pkcs11Session& session, const std::string& label,
                                     SigAlgorithm alg, KeyProtection protection);

KeyListing ToListing(const std::string& token, const TokenKey& k) {
  KeyListing out;
  out.label = k.label;
  out.id = k.id;
  out.algorithm = k.algorithm_name;
  // A key whose public half cannot be named canonically is still listed (one odd key must not hide
  // the others), without a keyid and with the reason.
  if (k.public_key) {
    if (auto keyid = KeyIdOf(k.public_key.get()); keyid.ok()) {
      out.keyid = *keyid;
    } else {
      out.keyid_error = keyid.error().WithContext("the public key of '" + k.label + "'").ToString();
    }
  }
  out.uri = FormatPkcs11Uri(Pkcs11Uri{token, k.label, std::nullopt});
  out.sensitive = k.flags.sensitive;
  out.always_sensitive = k.flags.always_sensitive;
  out.extractable = k.flags.extractable;
  out.never_extractable = k.flags.never_extractable;
  out.local = k.flags.local;
  return out;
}

}  // namespace

Result<SigAlgorithm> ParseKeyAlgorithm(std::string_view name) {
  if (name == "ecdsa-p256") return SigAlgorithm::kEcdsaP256Sha256;
  if (name == "ed25519") return SigAlgorithm::kEd25519;
  return Status(Reason::kUsage, "unknown key algorithm '" + std::string(name) +
                                    "' (expected ecdsa-p256 or ed25519)");
}

std::string_view KeyAlgorithmName(SigAlgorithm alg) {
  return alg == SigAlgorithm::kEd25519 ? "ed25519" : "ecdsa-p256";
}

namespace {
Result<GeneratedKey> GenerateKeyPair(Pkcs11Session& session, const std::string& label,
                                     SigAlgorithm alg, KeyProtection protection) {
  if (label.empty()) return Status(Reason::kUsage, "a key label must not be empty");
  std::vector<CK_ATTRIBUTE> by_label{Attr(CKA_LABEL, label.data(), label.size())};
  CLAWGUARD_ASSIGN_OR_RETURN(std::vector<CK_OBJECT_HANDLE> existing,
                             session.FindObjects(by_label, 1));
  if (!existing.empty()) {
    return Status(Reason::kKeyAmbiguous, "a key labelled '" + label +
                                             "' already exists in token '" + session.token().label +
                                             "'; choose another --label");
  }
  std::string id(16, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(id.data()), static_cast<int>(id.size())) != 1) {
    return Status(Reason::kInternal, "RAND_bytes failed: " + ossl::GetSslErrors());
  }
  const std::string params = alg == SigAlgorithm::kEd25519 ? Ed25519EcParams() : P256EcParams();
  CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
  CK_BBOOL sensitive = protection.sensitive ? CK_TRUE : CK_FALSE;
  CK_BBOOL extractable = protection.extractable ? CK_TRUE : CK_FALSE;
  std::vector<CK_ATTRIBUTE> pub{Attr(CKA_TOKEN, &yes, sizeof(yes)),
                                Attr(CKA_PRIVATE, &no, sizeof(no)),
                                Attr(CKA_VERIFY, &yes, sizeof(yes)),
                                Attr(CKA_EC_PARAMS, params.data(), params.size()),
                                Attr(CKA_LABEL, label.data(), label.size()),
                                Attr(CKA_ID, id.data(), id.size())};
  std::vector<CK_ATTRIBUTE> priv{Attr(CKA_TOKEN, &yes, sizeof(yes)),
                                 Attr(CKA_PRIVATE, &yes, sizeof(yes)),
                                 Attr(CKA_SENSITIVE, &sensitive, sizeof(sensitive)),
                                 Attr(CKA_EXTRACTABLE, &extractable, sizeof(extractable)),
                                 Attr(CKA_SIGN, &yes, sizeof(yes)),
                                 Attr(CKA_LABEL, label.data(), label.size()),
                                 Attr(CKA_ID, id.data(), id.size())};
  CK_MECHANISM mech{
      alg == SigAlgorithm::kEd25519 ? CKM_EC_EDWARDS_KEY_PAIR_GEN : CKM_EC_KEY_PAIR_GEN, nullptr,
      0};
  CK_OBJECT_HANDLE pub_handle = CK_INVALID_HANDLE, priv_handle = CK_INVALID_HANDLE;
  CK_RV rv = session.fn()->C_GenerateKeyPair(session.handle(), &mech, pub.data(), pub.size(),
                                             priv.data(), priv.size(), &pub_handle, &priv_handle);
  if (rv != CKR_OK) {
    return Pkcs11Error(
        Reason::kHsmUnavailable, "C_GenerateKeyPair", rv,
        std::string(KeyAlgorithmName(alg)) + " in token '" + session.token().label + "'" +
            (rv == CKR_MECHANISM_INVALID ? "; this token cannot generate that algorithm" : ""));
  }
  CLAWGUARD_ASSIGN_OR_RETURN(TokenKey key, FindPrivateKey(session, label, id));
  GeneratedKey out;
  out.uri = FormatPkcs11Uri(Pkcs11Uri{session.token().label, label, std::nullopt});
  CLAWGUARD_ASSIGN_OR_RETURN(out.keyid, KeyIdOf(key.public_key.get()));
  out.id = id;
  out.algorithm = alg;
  return out;
}

}  // namespace

Result<GeneratedKey> GenerateKey(const std::string& module_path, const std::string& token,
                                 const std::string& label, SigAlgorithm alg, SecretBytes pin,
                                 KeyProtection protection) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::shared_ptr<Pkcs11Module> module, Pkcs11Module::Load(module_path));
  CLAWGUARD_ASSIGN_OR_RETURN(Pkcs11Session session,
                             Pkcs11Session::Open(module, token, /*read_write=*/true));
  CLAWGUARD_RETURN_IF_ERROR(session.Login(std::move(pin)));
  return GenerateKeyPair(session, label, alg, protection);
}

Result<ossl::UniquePtr<X509_NAME>> ParseSubject(std::string_view subject) {
  const std::string hint = " (expected a subject like \"/O=acme/CN=acme release\")";
  if (subject.empty() || subject.front() != '/')
    return Status(Reason::kUsage, "the subject must start with '/'" + hint);
  ossl::UniquePtr<X509_NAME> name(X509_NAME_new());
  std::vector<std::string> parts(1);
  for (size_t i = 1; i < subject.size(); ++i) {
    if (subject[i] == '\\' && i + 1 < subject.size() && subject[i + 1] == '/') {
      parts.back().push_back('/');
      ++i;
    } else if (subject[i] == '/') {
      parts.emplace_back();
    } else {
      parts.back().push_back(subject[i]);
    }
  }
  for (const std::string& part : parts) {
    const size_t eq = part.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == part.size()) {
      return Status(Reason::kUsage, "subject component '" + part + "' is not TYPE=value" + hint);
    }
    const std::string type = part.substr(0, eq), value = part.substr(eq + 1);
    if (X509_NAME_add_entry_by_txt(name.get(), type.c_str(), MBSTRING_UTF8,
                                   reinterpret_cast<const unsigned char*>(value.data()),
                                   static_cast<int>(value.size()), -1, 0) != 1) {
      (void)ossl::GetSslErrors();
      return Status(Reason::kUsage,
                    "subject attribute '" + type + "' is unknown or its value is invalid" + hint);
    }
  }
  return name;
}

Result<std::string> MakeCsrPem(Signer& signer, std::string_view subject) {
  CLAWGUARD_ASSIGN_OR_RETURN(ossl::UniquePtr<X509_NAME> name, ParseSubject(subject));
  ossl::UniquePtr<X509_REQ> req(X509_REQ_new());
  // X509_REQ_set_subject_name and X509_REQ_set_pubkey copy / up-ref: we keep ownership of ours.
  if (!req || X509_REQ_set_version(req.get(), 0) != 1 ||
      X509_REQ_set_subject_name(req.get(), name.get()) != 1 ||
      X509_REQ_set_pubkey(req.get(), signer.public_key()) != 1) {
    return Status(Reason::kInternal, "cannot build the CSR: " + ossl::GetSslErrors());
  }
  const int nid =
      signer.algorithm() == SigAlgorithm::kEd25519 ? NID_ED25519 : NID_ecdsa_with_SHA256;
  ossl::UniquePtr<X509_ALGOR> algor(X509_ALGOR_new());
  // X509_ALGOR_set0 takes the (static) OID object; the parameters are absent (RFC 5758, RFC 8410).
  if (!algor || X509_ALGOR_set0(algor.get(), OBJ_nid2obj(nid), V_ASN1_UNDEF, nullptr) != 1 ||
      X509_REQ_set1_signature_algo(req.get(), algor.get()) != 1) {  // set1: copies |algor|
    return Status(Reason::kInternal,
                  "cannot set the CSR signature algorithm: " + ossl::GetSslErrors());
  }
  unsigned char* raw = nullptr;
  const int tbs_len = i2d_re_X509_REQ_tbs(req.get(), &raw);  // allocates |raw|; owned by |tbs|
  const ossl::UniqueBuffer tbs(raw);
  if (tbs_len <= 0 || tbs == nullptr)
    return Status(Reason::kInternal, "cannot encode the CSR: " + ossl::GetSslErrors());
  const std::string tbs_der(reinterpret_cast<const char*>(tbs.get()), static_cast<size_t>(tbs_len));
  CLAWGUARD_ASSIGN_OR_RETURN(std::string sig, signer.Sign(tbs_der));
  ossl::UniquePtr<ASN1_BIT_STRING> bits(ASN1_BIT_STRING_new());
  if (!bits || ASN1_BIT_STRING_set(bits.get(), reinterpret_cast<unsigned char*>(sig.data()),
                                   static_cast<int>(sig.size())) != 1) {
    return Status(Reason::kInternal, "cannot store the CSR signature: " + ossl::GetSslErrors());
  }
  // A signature is a whole number of bytes: "0 unused bits", as ASN1_item_sign sets it.
  bits->flags &= ~(ASN1_STRING_FLAG_BITS_LEFT | 0x07);
  bits->flags |= ASN1_STRING_FLAG_BITS_LEFT;
  X509_REQ_set0_signature(req.get(), bits.release());  // set0: |req| owns the bit string now
  if (X509_REQ_verify(req.get(), signer.public_key()) != 1) {
    return Status(Reason::kInternal,
                  "the CSR signed in the token does not verify: " + ossl::GetSslErrors());
  }
  ossl::UniquePtr<BIO> bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509_REQ(bio.get(), req.get()) != 1) {
    return Status(Reason::kInternal, "cannot write the CSR as PEM: " + ossl::GetSslErrors());
  }
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);  // get0: points into |bio|
  return std::string(data, static_cast<size_t>(len));
}

Result<std::vector<TokenListing>> ListTokens(const std::string& module_path,
                                             const std::optional<std::string>& token,
                                             std::optional<SecretBytes> pin) {
  if (pin && !token)
    return Status(Reason::kUsage, "--pin-source needs --token: a PIN unlocks one token");
  CLAWGUARD_ASSIGN_OR_RETURN(std::shared_ptr<Pkcs11Module> module, Pkcs11Module::Load(module_path));
  std::vector<TokenInfo> tokens;
  if (token) {
    CLAWGUARD_ASSIGN_OR_RETURN(TokenInfo t, module->FindToken(*token));
    tokens.push_back(std::move(t));
  } else {
    CLAWGUARD_ASSIGN_OR_RETURN(tokens, module->Tokens());
  }
  std::vector<TokenListing> out;
  for (TokenInfo& t : tokens) {
    TokenListing listing;
    listing.slot = t.slot;
    listing.label = t.label;
    listing.manufacturer = t.manufacturer;
    listing.model = t.model;
    listing.serial = t.serial;
    listing.initialized = t.initialized;
    if (t.initialized) {
      CLAWGUARD_ASSIGN_OR_RETURN(Pkcs11Session session,
                                 Pkcs11Session::Open(module, t.label, /*read_write=*/false));
      std::vector<TokenKey> keys;
      if (pin) {
        CLAWGUARD_RETURN_IF_ERROR(session.Login(std::move(*pin)));
        listing.logged_in = true;
        CLAWGUARD_ASSIGN_OR_RETURN(keys, ListPrivateKeys(session));
      } else {
        CLAWGUARD_ASSIGN_OR_RETURN(keys, ListPublicKeys(session));
      }
      for (const auto& k : keys) listing.keys.push_back(ToListing(t.label, k));
    }
    out.push_back(std::move(listing));
  }
  return out;
}

nlohmann::json ListingToJson(const std::string& module_path,
                             const std::vector<TokenListing>& listings) {
  nlohmann::json tokens = nlohmann::json::array();
  for (const auto& l : listings) {
    nlohmann::json keys = nlohmann::json::array();
    for (const auto& k : l.keys) {
      nlohmann::json key = {{"label", k.label},
                            {"id", HexEncode(k.id)},
                            {"algorithm", k.algorithm},
                            {"keyid", k.keyid.empty() ? nlohmann::json() : nlohmann::json(k.keyid)},
                            {"uri", k.uri}};
      if (!k.keyid_error.empty()) key["keyid_error"] = k.keyid_error;
      if (l.logged_in) {
        key["sensitive"] = k.sensitive;
        key["always_sensitive"] = k.always_sensitive;
        key["extractable"] = k.extractable;
        key["never_extractable"] = k.never_extractable;
        key["local"] = k.local;
      }
      keys.push_back(std::move(key));
    }
    tokens.push_back({{"label", l.label},
                      {"slot", l.slot},
                      {"manufacturer", l.manufacturer},
                      {"model", l.model},
                      {"serial", l.serial},
                      {"initialized", l.initialized},
                      {"logged_in", l.logged_in},
                      {"key_class", l.logged_in ? "private" : "public"},
                      {"keys", std::move(keys)}});
  }
  return {{"module", module_path}, {"tokens", std::move(tokens)}};
}

}  // namespace clawguard::signer
