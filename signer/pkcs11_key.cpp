// pkcs11_key.cpp — key lookup, protection flags and public key reconstruction.
#include "signer/pkcs11_key.h"

#include <openssl/core_names.h>
#include <openssl/objects.h>

#include "clawguard/encoding.h"

namespace clawguard::signer {
namespace {

constexpr unsigned char kP256Oid[] = {0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07};
constexpr unsigned char kEd25519Oid[] = {0x06, 0x03, 0x2b, 0x65, 0x70};
// Some modules carry Ed25519's parameters as PrintableString "edwards25519" (PKCS#11 3.0 §2.3.10).
constexpr unsigned char kEd25519Printable[] = {0x13, 0x0c, 'e', 'd', 'w', 'a', 'r',
                                               'd',  's',  '2', '5', '5', '1', '9'};

std::string Bytes(const unsigned char* p, size_t n) {
  return std::string(reinterpret_cast<const char*>(p), n);
}

CK_ATTRIBUTE Attr(CK_ATTRIBUTE_TYPE type, const void* value, size_t len) {
  return CK_ATTRIBUTE{type, const_cast<void*>(value), static_cast<CK_ULONG>(len)};
}

// UnwrapOctetString returns the contents of a DER OCTET STRING, or |der| itself when the module
// returns the bare point (some do, against the spec).
std::string UnwrapOctetString(const std::string& der) {
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  ossl::UniquePtr<ASN1_OCTET_STRING> os(
      d2i_ASN1_OCTET_STRING(nullptr, &p, static_cast<long>(der.size())));
  if (os && p == reinterpret_cast<const unsigned char*>(der.data()) + der.size()) {
    return Bytes(ASN1_STRING_get0_data(os.get()),
                 static_cast<size_t>(ASN1_STRING_length(os.get())));
  }
  (void)ossl::GetSslErrors();
  return der;
}

Result<ossl::UniquePtr<EVP_PKEY>> P256FromPoint(const std::string& point) {
  ossl::UniquePtr<OSSL_PARAM_BLD> bld(OSSL_PARAM_BLD_new());
  if (!bld ||
      OSSL_PARAM_BLD_push_utf8_string(bld.get(), OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) !=
          1 ||
      OSSL_PARAM_BLD_push_octet_string(bld.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(),
                                       point.size()) != 1) {
    return Status(Reason::kInternal, "cannot build EC key parameters: " + ossl::GetSslErrors());
  }
  ossl::UniquePtr<OSSL_PARAM> params(OSSL_PARAM_BLD_to_param(bld.get()));
  ossl::UniquePtr<EVP_PKEY_CTX> ctx(EVP_PKEY_CTX_new_from_name(nullptr, "EC", nullptr));
  EVP_PKEY* raw = nullptr;
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
      EVP_PKEY_fromdata(ctx.get(), &raw, EVP_PKEY_PUBLIC_KEY, params.get()) != 1) {
    return Status(Reason::kInternal,
                  "the token's CKA_EC_POINT is not a P-256 point: " + ossl::GetSslErrors());
  }
  return ossl::UniquePtr<EVP_PKEY>(raw);  // we own |raw|
}

struct KeyType {
  std::optional<SigAlgorithm> algorithm;
  std::string name;
};

Result<KeyType> ClassifyKey(Pkcs11Session& s, CK_OBJECT_HANDLE obj) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::optional<CK_ULONG> type, s.GetUlong(obj, CKA_KEY_TYPE));
  if (!type) return KeyType{std::nullopt, "unknown"};
  if (*type == CKK_RSA) return KeyType{std::nullopt, "rsa"};
  if (*type != CKK_EC && *type != CKK_EC_EDWARDS) return KeyType{std::nullopt, "other"};
  CLAWGUARD_ASSIGN_OR_RETURN(std::optional<std::string> params, s.GetAttribute(obj, CKA_EC_PARAMS));
  const std::string p = params.value_or("");
  if (*type == CKK_EC) {
    if (p == P256EcParams()) return KeyType{SigAlgorithm::kEcdsaP256Sha256, "ecdsa-p256"};
    return KeyType{std::nullopt, "ec-other-curve"};
  }
  if (p == Ed25519EcParams() || p == Bytes(kEd25519Printable, sizeof(kEd25519Printable))) {
    return KeyType{SigAlgorithm::kEd25519, "ed25519"};
  }
  return KeyType{std::nullopt, "eddsa-other-curve"};
}

Result<ossl::UniquePtr<EVP_PKEY>> PublicKeyOf(Pkcs11Session& s, CK_OBJECT_HANDLE pub,
                                              SigAlgorithm alg) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::optional<std::string> point_der,
                             s.GetAttribute(pub, CKA_EC_POINT));
  if (!point_der) return Status(Reason::kKeyNotFound, "the public key object has no CKA_EC_POINT");
  const std::string point = UnwrapOctetString(*point_der);
  if (alg == SigAlgorithm::kEcdsaP256Sha256) return P256FromPoint(point);
  if (point.size() != 32) {
    return Status(Reason::kInternal, "the token's Ed25519 CKA_EC_POINT has " +
                                         std::to_string(point.size()) + " bytes, expected 32");
  }
  EVP_PKEY* raw = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                              reinterpret_cast<const unsigned char*>(point.data()),
                                              point.size());
  if (raw == nullptr)
    return Status(Reason::kInternal, "bad Ed25519 public key: " + ossl::GetSslErrors());
  return ossl::UniquePtr<EVP_PKEY>(raw);  // we own |raw|
}

// Describe reads label, id, type and flags of one key object; the public key is filled by caller.
Result<TokenKey> Describe(Pkcs11Session& s, CK_OBJECT_HANDLE obj, bool is_private) {
  TokenKey key;
  key.handle = obj;
  CLAWGUARD_ASSIGN_OR_RETURN(std::optional<std::string> label, s.GetAttribute(obj, CKA_LABEL));
  CLAWGUARD_ASSIGN_OR_RETURN(std::optional<std::string> id, s.GetAttribute(obj, CKA_ID));
  key.label = label.value_or("");
  key.id = id.value_or("");
  CLAWGUARD_ASSIGN_OR_RETURN(KeyType type, ClassifyKey(s, obj));
  key.algorithm = type.algorithm;
  key.algorithm_name = type.name;
  if (is_private) {
    auto flag = [&](CK_ATTRIBUTE_TYPE t, bool absent) -> Result<bool> {
      CLAWGUARD_ASSIGN_OR_RETURN(std::optional<bool> v, s.GetBool(obj, t));
      return v.value_or(absent);
    };
    // An absent attribute reads as the unsafe value, so a module that omits one fails closed.
    CLAWGUARD_ASSIGN_OR_RETURN(key.flags.sensitive, flag(CKA_SENSITIVE, false));
    CLAWGUARD_ASSIGN_OR_RETURN(key.flags.always_sensitive, flag(CKA_ALWAYS_SENSITIVE, false));
    CLAWGUARD_ASSIGN_OR_RETURN(key.flags.extractable, flag(CKA_EXTRACTABLE, true));
    CLAWGUARD_ASSIGN_OR_RETURN(key.flags.never_extractable, flag(CKA_NEVER_EXTRACTABLE, false));
    CLAWGUARD_ASSIGN_OR_RETURN(key.flags.local, flag(CKA_LOCAL, false));
  }
  return key;
}

// MatchingPublic finds the public key object for |key| (same CKA_ID, or same label without id).
Result<std::optional<CK_OBJECT_HANDLE>> MatchingPublic(Pkcs11Session& s, const TokenKey& key) {
  CK_OBJECT_CLASS cls = CKO_PUBLIC_KEY;
  std::vector<CK_ATTRIBUTE> tmpl{Attr(CKA_CLASS, &cls, sizeof(cls))};
  if (!key.id.empty()) {
    tmpl.push_back(Attr(CKA_ID, key.id.data(), key.id.size()));
  } else {
    tmpl.push_back(Attr(CKA_LABEL, key.label.data(), key.label.size()));
  }
  CLAWGUARD_ASSIGN_OR_RETURN(std::vector<CK_OBJECT_HANDLE> found, s.FindObjects(tmpl, 2));
  if (found.size() > 1) {
    return Status(Reason::kKeyAmbiguous, "several public key objects share the CKA_ID of key '" +
                                             key.label + "'; give each key pair its own id");
  }
  if (found.empty()) return std::optional<CK_OBJECT_HANDLE>();
  return std::optional<CK_OBJECT_HANDLE>(found.front());
}

Status FillPublicKey(Pkcs11Session& s, TokenKey& key) {
  if (!key.algorithm) return Status::Ok();
  CLAWGUARD_ASSIGN_OR_RETURN(std::optional<CK_OBJECT_HANDLE> pub, MatchingPublic(s, key));
  if (!pub) return Status::Ok();
  CLAWGUARD_ASSIGN_OR_RETURN(key.public_key, PublicKeyOf(s, *pub, *key.algorithm));
  return Status::Ok();
}

Result<std::vector<TokenKey>> ListKeys(Pkcs11Session& s, CK_OBJECT_CLASS cls) {
  std::vector<CK_ATTRIBUTE> tmpl{Attr(CKA_CLASS, &cls, sizeof(cls))};
  CLAWGUARD_ASSIGN_OR_RETURN(std::vector<CK_OBJECT_HANDLE> found, s.FindObjects(tmpl));
  std::vector<TokenKey> keys;
  for (CK_OBJECT_HANDLE obj : found) {
    CLAWGUARD_ASSIGN_OR_RETURN(TokenKey key, Describe(s, obj, cls == CKO_PRIVATE_KEY));
    if (cls == CKO_PUBLIC_KEY && key.algorithm) {
      CLAWGUARD_ASSIGN_OR_RETURN(key.public_key, PublicKeyOf(s, obj, *key.algorithm));
    } else {
      CLAWGUARD_RETURN_IF_ERROR(FillPublicKey(s, key));
    }
    keys.push_back(std::move(key));
  }
  return keys;
}

}  // namespace

std::string P256EcParams() { return Bytes(kP256Oid, sizeof(kP256Oid)); }
std::string Ed25519EcParams() { return Bytes(kEd25519Oid, sizeof(kEd25519Oid)); }

Result<std::vector<TokenKey>> ListPrivateKeys(Pkcs11Session& session) {
  return ListKeys(session, CKO_PRIVATE_KEY);
}
Result<std::vector<TokenKey>> ListPublicKeys(Pkcs11Session& session) {
  return ListKeys(session, CKO_PUBLIC_KEY);
}

Result<TokenKey> FindPrivateKey(Pkcs11Session& s, const std::optional<std::string>& label,
                                const std::optional<std::string>& id) {
  CLAWGUARD_CHECK(label || id);
  CK_OBJECT_CLASS cls = CKO_PRIVATE_KEY;
  std::vector<CK_ATTRIBUTE> tmpl{Attr(CKA_CLASS, &cls, sizeof(cls))};
  if (label) tmpl.push_back(Attr(CKA_LABEL, label->data(), label->size()));
  if (id) tmpl.push_back(Attr(CKA_ID, id->data(), id->size()));
  CLAWGUARD_ASSIGN_OR_RETURN(std::vector<CK_OBJECT_HANDLE> found, s.FindObjects(tmpl, 16));
  std::string what = label ? "labelled '" + *label + "'" : "";
  if (id) what += std::string(label ? " and " : "") + "with id " + HexEncode(*id);
  const std::string token = "token '" + s.token().label + "'";
  if (found.size() > 1) {
    return Status(Reason::kKeyAmbiguous, std::to_string(found.size()) + " private keys " + what +
                                             " in " + token +
                                             "; add id=… to the key URI or relabel the keys");
  }
  if (found.empty()) {
    std::string present;
    auto all = ListPrivateKeys(s);
    if (all.ok()) {
      for (const auto& k : *all) present += (present.empty() ? "'" : ", '") + k.label + "'";
    }
    return Status(Reason::kKeyNotFound,
                  "no private key " + what + " in " + token +
                      " (private keys there: " + (present.empty() ? "none" : present) +
                      "); check the URI's object=/id= or run `clawguard keys list`");
  }
  CLAWGUARD_ASSIGN_OR_RETURN(TokenKey key, Describe(s, found.front(), /*is_private=*/true));
  if (!key.algorithm) {
    return Status(Reason::kAlgorithmRefused,
                  "key '" + key.label + "' is " + key.algorithm_name +
                      "; ClawGuard signs with ecdsa-p256 or ed25519 keys only");
  }
  CLAWGUARD_RETURN_IF_ERROR(FillPublicKey(s, key));
  if (!key.public_key) {
    return Status(Reason::kKeyNotFound,
                  "key '" + key.label + "' in " + token +
                      " has no public key object with the same CKA_ID; "
                      "import the public key or regenerate with `clawguard keys generate`");
  }
  return key;
}

Status CheckSigningKeyPolicy(const TokenKey& key, bool allow_imported_key) {
  const std::string name = "key '" + key.label + "'";
  if (!key.flags.sensitive || key.flags.extractable) {
    return Status(Reason::kKeyExtractable,
                  name + " can be read out of the token (CKA_SENSITIVE=" +
                      (key.flags.sensitive ? "true" : "false") +
                      ", CKA_EXTRACTABLE=" + (key.flags.extractable ? "true" : "false") +
                      "); generate a new key with `clawguard keys generate`");
  }
  if (!key.flags.local) {
    if (!allow_imported_key) {
      return Status(Reason::kKeyImported,
                    name +
                        " was imported into the token (CKA_LOCAL=false), so a copy may "
                        "exist outside it; generate one in the HSM with `clawguard keys "
                        "generate`, or pass --allow-imported-key if your key ceremony "
                        "requires an imported key");
    }
    return Status::Ok();
  }
  if (!key.flags.always_sensitive || !key.flags.never_extractable) {
    return Status(Reason::kKeyExtractable,
                  name +
                      " was readable out of the token at some point "
                      "(CKA_ALWAYS_SENSITIVE=" +
                      (key.flags.always_sensitive ? "true" : "false") + ", CKA_NEVER_EXTRACTABLE=" +
                      (key.flags.never_extractable ? "true" : "false") +
                      "); generate a new key with `clawguard keys generate`");
  }
  return Status::Ok();
}

}  // namespace clawguard::signer
