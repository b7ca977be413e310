// bundle.cpp — the signature bundle and in-toto statement (strict JSON), DSSE PAE, and signature
// verification over OpenSSL EVP. Every OpenSSL result is checked before the error queue is
// drained into the message (Tink GetSslErrors).
// Over 500 lines on purpose: the bundle format and the key and certificate encodings it carries
// (key ids, SPKI, ECDSA signature forms) are one wire format, parsed and produced in one place.
#include "clawguard/bundle.h"

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/pem.h>

#include <algorithm>
#include <climits>
#include <initializer_list>
#include <new>
#include <set>

#include "clawguard/encoding.h"
#include "clawguard/json_dump.h"
#include "clawguard/limits.h"
#include "clawguard/sha256.h"
#include "clawguard/strict_json.h"

namespace clawguard {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

Status Invalid(std::string message) { return Status(Reason::kBundleInvalid, std::move(message)); }

// CheckObject: |j| is an object holding exactly |keys| (none missing, none unknown).
Status CheckObject(const json& j, std::string_view where,
                   std::initializer_list<std::string_view> keys) {
  if (!j.is_object())
    return Invalid(std::string(where) + ": expected an object, found " + j.type_name());
  for (std::string_view k : keys) {
    if (!j.contains(std::string(k)))
      return Invalid(std::string(where) + ": missing \"" + std::string(k) + "\"");
  }
  for (const auto& [k, v] : j.items()) {
    bool known = false;
    for (std::string_view allowed : keys) known = known || allowed == k;
    if (!known) return Invalid(std::string(where) + ": unknown key \"" + k + "\"");
  }
  return Status::Ok();
}

Result<std::string> GetString(const json& obj, const char* key, std::string_view where) {
  const json& v = obj.at(key);  // CheckObject ran first: present
  if (!v.is_string()) {
    return Invalid(std::string(where) + "." + key + ": expected a string, found " + v.type_name());
  }
  return v.get<std::string>();
}

Result<std::string> GetBase64(const json& obj, const char* key, std::string_view where) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::string text, GetString(obj, key, where));
  auto bytes = Base64Decode(text);
  if (!bytes) {
    return Invalid(std::string(where) + "." + key +
                   ": expected standard base64 with padding, found \"" + text.substr(0, 16) +
                   (text.size() > 16 ? "…\"" : "\""));
  }
  return *bytes;
}

Result<std::string> GetLowerHex64(const json& obj, const char* key, std::string_view where) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::string text, GetString(obj, key, where));
  if (!IsLowerHex(text, 64)) {
    return Invalid(std::string(where) + "." + key +
                   ": expected 64 lowercase hex characters, found \"" + text.substr(0, 70) + "\"");
  }
  return text;
}

Status ParseSignatures(const json& arr, Bundle& b) {
  const char* where = "bundle.dsseEnvelope.signatures";
  if (!arr.is_array())
    return Invalid(std::string(where) + ": expected an array, found " + arr.type_name());
  if (arr.empty() || arr.size() > limits::kMaxSignatures) {
    return Invalid(std::string(where) + ": expected 1 to " +
                   std::to_string(limits::kMaxSignatures) + " signatures, found " +
                   std::to_string(arr.size()));
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < arr.size(); ++i) {
    const std::string at = std::string(where) + "[" + std::to_string(i) + "]";
    CLAWGUARD_RETURN_IF_ERROR(CheckObject(arr[i], at, {"keyid", "sig"}));
    BundleSignature s;
    CLAWGUARD_ASSIGN_OR_RETURN(s.keyid, GetLowerHex64(arr[i], "keyid", at));
    CLAWGUARD_ASSIGN_OR_RETURN(s.sig, GetBase64(arr[i], "sig", at));
    if (s.sig.empty()) return Invalid(at + ".sig: expected a signature, found an empty string");
    // A key signs once: k-of-n counts distinct keys, so a repeated keyid is a malformed bundle.
    if (!seen.insert(s.keyid).second) return Invalid(at + ": keyid " + s.keyid + " appears twice");
    b.signatures.push_back(std::move(s));
  }
  return Status::Ok();
}

Status ParseCertificates(const json& certs, Bundle& b) {
  const char* where = "bundle.verificationMaterial.certificates";
  if (!certs.is_object())
    return Invalid(std::string(where) + ": expected an object, found " + certs.type_name());
  for (const auto& [keyid, chain] : certs.items()) {
    const std::string at = std::string(where) + "." + keyid.substr(0, 70);
    if (!IsLowerHex(keyid, 64))
      return Invalid(at + ": expected a keyid of 64 lowercase hex characters");
    if (!chain.is_array() || chain.empty() || chain.size() > limits::kMaxChainLength) {
      return Invalid(
          at + ": expected an array of 1 to " + std::to_string(limits::kMaxChainLength) +
          " base64 DER certificates, found " +
          (chain.is_array() ? std::to_string(chain.size()) + " entries" : chain.type_name()));
    }
    std::vector<std::string> ders;
    for (size_t i = 0; i < chain.size(); ++i) {
      const std::string ati = at + "[" + std::to_string(i) + "]";
      if (!chain[i].is_string())
        return Invalid(ati + ": expected a base64 string, found " + chain[i].type_name());
      auto der = Base64Decode(chain[i].get<std::string>());
      if (!der || der->empty())
        return Invalid(ati + ": expected standard base64 with padding of a DER certificate");
      ders.push_back(std::move(*der));
    }
    b.certificates[keyid] = std::move(ders);
  }
  for (const auto& s : b.signatures) {
    if (b.certificates.count(s.keyid) == 0) {
      return Invalid(std::string(where) + ": no certificates for signature keyid " + s.keyid);
    }
  }
  if (b.certificates.size() != b.signatures.size()) {
    return Invalid(std::string(where) + ": expected certificates only for the " +
                   std::to_string(b.signatures.size()) + " signing keys, found " +
                   std::to_string(b.certificates.size()) + " entries");
  }
  return Status::Ok();
}

Result<Bundle> ParseBundleJson(const json& j) {
  CLAWGUARD_RETURN_IF_ERROR(
      CheckObject(j, "bundle", {"mediaType", "dsseEnvelope", "verificationMaterial"}));
  CLAWGUARD_ASSIGN_OR_RETURN(std::string media_type, GetString(j, "mediaType", "bundle"));
  if (media_type != kBundleMediaType) {
    return Invalid("bundle.mediaType: expected \"" + std::string(kBundleMediaType) +
                   "\", found \"" + media_type.substr(0, 80) + "\"");
  }
  Bundle b;
  const json& env = j.at("dsseEnvelope");
  CLAWGUARD_RETURN_IF_ERROR(
      CheckObject(env, "bundle.dsseEnvelope", {"payloadType", "payload", "signatures"}));
  CLAWGUARD_ASSIGN_OR_RETURN(b.payload_type, GetString(env, "payloadType", "bundle.dsseEnvelope"));
  if (b.payload_type.empty())
    return Invalid("bundle.dsseEnvelope.payloadType: expected a media type, found \"\"");
  CLAWGUARD_ASSIGN_OR_RETURN(b.payload, GetBase64(env, "payload", "bundle.dsseEnvelope"));
  CLAWGUARD_RETURN_IF_ERROR(ParseSignatures(env.at("signatures"), b));
  const json& vm = j.at("verificationMaterial");
  CLAWGUARD_RETURN_IF_ERROR(CheckObject(vm, "bundle.verificationMaterial", {"certificates"}));
  CLAWGUARD_RETURN_IF_ERROR(ParseCertificates(vm.at("certificates"), b));
  return b;
}

Result<Statement> ParseStatementJson(const json& j) {
  CLAWGUARD_RETURN_IF_ERROR(
      CheckObject(j, "statement", {"_type", "subject", "predicateType", "predicate"}));
  CLAWGUARD_ASSIGN_OR_RETURN(std::string type, GetString(j, "_type", "statement"));
  if (type != kStatementType) {
    return Invalid("statement._type: expected \"" + std::string(kStatementType) + "\", found \"" +
                   type.substr(0, 80) + "\"");
  }
  CLAWGUARD_ASSIGN_OR_RETURN(std::string predicate_type,
                             GetString(j, "predicateType", "statement"));
  if (predicate_type != kPluginPredicateType) {
    return Invalid("statement.predicateType: expected \"" + std::string(kPluginPredicateType) +
                   "\", found \"" + predicate_type.substr(0, 80) + "\"");
  }
  const json& subjects = j.at("subject");
  if (!subjects.is_array() || subjects.size() != 1) {
    return Invalid("statement.subject: expected an array of exactly one subject, found " +
                   (subjects.is_array() ? std::to_string(subjects.size()) + " subjects"
                                        : subjects.type_name()));
  }
  Statement s;
  CLAWGUARD_RETURN_IF_ERROR(CheckObject(subjects[0], "statement.subject[0]", {"name", "digest"}));
  CLAWGUARD_ASSIGN_OR_RETURN(s.subject_name,
                             GetString(subjects[0], "name", "statement.subject[0]"));
  const json& digest = subjects[0].at("digest");
  CLAWGUARD_RETURN_IF_ERROR(CheckObject(digest, "statement.subject[0].digest", {"sha256"}));
  CLAWGUARD_ASSIGN_OR_RETURN(s.subject_sha256,
                             GetLowerHex64(digest, "sha256", "statement.subject[0].digest"));

  const json& p = j.at("predicate");
  const char* where = "statement.predicate";
  CLAWGUARD_RETURN_IF_ERROR(
      CheckObject(p, where, {"name", "version", "publisher", "abi", "manifestSha256", "manifest"}));
  CLAWGUARD_ASSIGN_OR_RETURN(s.name, GetString(p, "name", where));
  CLAWGUARD_ASSIGN_OR_RETURN(s.version, GetString(p, "version", where));
  CLAWGUARD_ASSIGN_OR_RETURN(s.publisher, GetString(p, "publisher", where));
  const json& abi = p.at("abi");
  if (!abi.is_number_integer()) {
    return Invalid(std::string(where) + ".abi: expected an integer, found " +
                   abi.dump().substr(0, 40));
  }
  if (abi.is_number_unsigned() && abi.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return Invalid(std::string(where) + ".abi: expected a 64-bit integer, found " + abi.dump());
  }
  s.abi = abi.get<int64_t>();
  CLAWGUARD_ASSIGN_OR_RETURN(s.manifest_sha256, GetLowerHex64(p, "manifestSha256", where));
  if (!p.at("manifest").is_object()) {
    return Invalid(std::string(where) + ".manifest: expected an object, found " +
                   p.at("manifest").type_name());
  }
  s.manifest = p.at("manifest");
  return s;
}

// NoThrow runs |parse| so that nothing escapes: nlohmann's exceptions (a malformed value) and
// std::exception (a library invariant) are kBundleInvalid, std::bad_alloc is kInternal (inputs
// are bounded first, so only a host out of memory gets there).
template <typename T, typename F>
Result<T> NoThrow(std::string_view what, F&& parse) {
  try {
    return parse();
  } catch (const nlohmann::json::exception& e) {
    return Invalid(std::string(what) + ": " + e.what());
  } catch (const std::bad_alloc&) {
    return Status(Reason::kInternal, std::string(what) + ": out of memory");
  } catch (const std::exception& e) {
    return Invalid(std::string(what) + ": " + e.what());
  }
}

// CheckSize bounds text read from outside before any allocation depends on it.
Status CheckSize(std::string_view text, std::string_view what) {
  if (text.size() > limits::kMaxBundle) {
    return Invalid(std::string(what) + ": expected at most " + std::to_string(limits::kMaxBundle) +
                   " bytes, found " + std::to_string(text.size()));
  }
  return Status::Ok();
}

}  // namespace

Result<Bundle> ParseBundle(std::string_view text) {
  CLAWGUARD_RETURN_IF_ERROR(CheckSize(text, "bundle"));
  return NoThrow<Bundle>("bundle", [&]() -> Result<Bundle> {
    CLAWGUARD_ASSIGN_OR_RETURN(json j, ParseJsonStrict(text, Reason::kBundleInvalid, "bundle"));
    return ParseBundleJson(j);
  });
}

std::string SerializeBundle(const Bundle& b) {
  ordered_json sigs = ordered_json::array();
  for (const auto& s : b.signatures) {
    ordered_json o;
    o["keyid"] = s.keyid;
    o["sig"] = Base64Encode(s.sig);
    sigs.push_back(std::move(o));
  }
  ordered_json certs = ordered_json::object();
  for (const auto& [keyid, ders] : b.certificates) {
    ordered_json chain = ordered_json::array();
    for (const auto& der : ders) chain.push_back(Base64Encode(der));
    certs[keyid] = std::move(chain);
  }
  ordered_json j;
  j["mediaType"] = kBundleMediaType;
  j["dsseEnvelope"]["payloadType"] = b.payload_type;
  j["dsseEnvelope"]["payload"] = Base64Encode(b.payload);
  j["dsseEnvelope"]["signatures"] = std::move(sigs);
  j["verificationMaterial"]["certificates"] = std::move(certs);
  return DumpJson(j, 2) + "\n";
}

std::string Pae(std::string_view payload_type, std::string_view payload) {
  std::string out = "DSSEv1 ";
  out += std::to_string(payload_type.size());
  out += ' ';
  out += payload_type;
  out += ' ';
  out += std::to_string(payload.size());
  out += ' ';
  out += payload;
  return out;
}

Result<Statement> ParseStatement(std::string_view payload) {
  CLAWGUARD_RETURN_IF_ERROR(CheckSize(payload, "statement"));
  return NoThrow<Statement>("statement", [&]() -> Result<Statement> {
    CLAWGUARD_ASSIGN_OR_RETURN(json j,
                               ParseJsonStrict(payload, Reason::kBundleInvalid, "statement"));
    return ParseStatementJson(j);
  });
}

std::string SerializeStatement(const Statement& s) {
  ordered_json subject;
  subject["name"] = s.subject_name;
  subject["digest"]["sha256"] = s.subject_sha256;
  ordered_json j;
  j["_type"] = kStatementType;
  j["subject"] = ordered_json::array({std::move(subject)});
  j["predicateType"] = kPluginPredicateType;
  ordered_json& p = j["predicate"];
  p["name"] = s.name;
  p["version"] = s.version;
  p["publisher"] = s.publisher;
  p["abi"] = s.abi;
  p["manifestSha256"] = s.manifest_sha256;
  p["manifest"] = ordered_json(s.manifest);  // keeps json's sorted key order
  return DumpJson(j);
}

// ---- Keys and signatures ----

Result<SigAlgorithm> AlgorithmOfKey(EVP_PKEY* key) {
  if (key == nullptr) return Status(Reason::kAlgorithmRefused, "expected a public key, found none");
  const int id = EVP_PKEY_get_base_id(key);
  if (id == EVP_PKEY_ED25519) return SigAlgorithm::kEd25519;
  if (id == EVP_PKEY_EC) {
    char group[64] = {0};
    size_t len = 0;
    if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof(group),
                                       &len) != 1) {
      return Status(Reason::kAlgorithmRefused,
                    "EC key without a named curve: " + ossl::GetSslErrors());
    }
    const std::string name(group, len);
    const int nid = OBJ_sn2nid(name.c_str());
    if (nid == NID_X9_62_prime256v1 || EC_curve_nist2nid(name.c_str()) == NID_X9_62_prime256v1) {
      return SigAlgorithm::kEcdsaP256Sha256;
    }
    return Status(Reason::kAlgorithmRefused,
                  "expected an ECDSA key on P-256 (prime256v1), found curve " + name);
  }
  // EVP_PKEY_get0_type_name: get0, the string is owned by the key's method.
  const char* type = EVP_PKEY_get0_type_name(key);
  return Status(Reason::kAlgorithmRefused, "expected an ECDSA P-256 or Ed25519 key, found " +
                                               std::string(type ? type : "an unknown type") + " (" +
                                               std::to_string(EVP_PKEY_get_bits(key)) + " bits)");
}

Status VerifySignature(EVP_PKEY* key, std::string_view message, std::string_view sig) {
  CLAWGUARD_ASSIGN_OR_RETURN(SigAlgorithm alg, AlgorithmOfKey(key));
  if (alg == SigAlgorithm::kEd25519 && sig.size() != 64) {
    return Status(Reason::kSignatureInvalid, "expected a 64-byte Ed25519 signature, found " +
                                                 std::to_string(sig.size()) + " bytes");
  }
  if (sig.empty())
    return Status(Reason::kSignatureInvalid, "expected a DER ECDSA signature, found 0 bytes");
  ossl::UniquePtr<EVP_MD_CTX> ctx(EVP_MD_CTX_new());
  if (!ctx) return Status(Reason::kInternal, "EVP_MD_CTX_new failed: " + ossl::GetSslErrors());
  // Ed25519 is "pure" EdDSA: no digest is named (RFC 8032); ECDSA hashes with SHA-256.
  const EVP_MD* md = alg == SigAlgorithm::kEd25519 ? nullptr : EVP_sha256();
  if (EVP_DigestVerifyInit(ctx.get(), /*pctx=*/nullptr, md, /*engine=*/nullptr, key) != 1) {
    return Status(Reason::kInternal, "EVP_DigestVerifyInit failed: " + ossl::GetSslErrors());
  }
  // WARNING: 0 is "does not verify", a negative value a malformed signature (not DER, trailing
  // bytes, BER): both are refusals. OpenSSL re-encodes ECDSA signatures and refuses non-DER ones.
  const int rc =
      EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                       reinterpret_cast<const unsigned char*>(message.data()), message.size());
  const std::string errors = ossl::GetSslErrors();
  if (rc != 1) {
    return Status(Reason::kSignatureInvalid,
                  std::string(alg == SigAlgorithm::kEd25519 ? "Ed25519" : "ECDSA P-256") +
                      " signature does not verify with this key" +
                      (errors.empty() ? "" : " (" + errors + ")"));
  }
  return Status::Ok();
}

namespace {

// The fixed DER prefixes of the two canonical SubjectPublicKeyInfo forms; the key bytes follow.
// P-256: SEQUENCE(89) { SEQUENCE(19) { OID 1.2.840.10045.2.1, OID 1.2.840.10045.3.1.7 },
//        BIT STRING(66) { 0 unused bits, 65-byte uncompressed point } }.
constexpr unsigned char kP256SpkiPrefix[] = {0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48,
                                             0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48,
                                             0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00};
constexpr size_t kP256PointSize = 65;
// Ed25519: SEQUENCE(42) { SEQUENCE(5) { OID 1.3.101.112 }, BIT STRING(33) { 0, 32-byte key } }.
constexpr unsigned char kEd25519SpkiPrefix[] = {0x30, 0x2a, 0x30, 0x05, 0x06, 0x03,
                                                0x2b, 0x65, 0x70, 0x03, 0x21, 0x00};
constexpr size_t kEd25519KeySize = 32;

std::string Bytes(const unsigned char* p, size_t n) {
  return std::string(reinterpret_cast<const char*>(p), n);
}

// UncompressedP256Point decodes |key|'s public point on the P-256 group and re-encodes it
// uncompressed (SEC 1 §2.3.3), whatever form the key was read in.
Result<std::string> UncompressedP256Point(EVP_PKEY* key) {
  // Large enough for any form of a P-256 point (65 bytes uncompressed or hybrid).
  unsigned char encoded[2 * kP256PointSize];
  size_t encoded_len = 0;
  if (EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_PUB_KEY, encoded, sizeof(encoded),
                                      &encoded_len) != 1) {
    return Status(Reason::kAlgorithmRefused,
                  "the P-256 key's public point cannot be read: " + ossl::GetSslErrors());
  }
  ossl::UniquePtr<EC_GROUP> group(EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1));
  if (!group)
    return Status(Reason::kInternal,
                  "EC_GROUP_new_by_curve_name(P-256) failed: " + ossl::GetSslErrors());
  ossl::UniquePtr<EC_POINT> point(EC_POINT_new(group.get()));
  if (!point) return Status(Reason::kInternal, "EC_POINT_new failed: " + ossl::GetSslErrors());
  // EC_POINT_oct2point refuses a point that is not on the curve.
  if (EC_POINT_oct2point(group.get(), point.get(), encoded, encoded_len, /*ctx=*/nullptr) != 1 ||
      EC_POINT_is_at_infinity(group.get(), point.get()) == 1) {
    return Status(Reason::kAlgorithmRefused,
                  "the key's public point (" + std::to_string(encoded_len) +
                      " bytes) is not a point on P-256: " + ossl::GetSslErrors());
  }
  unsigned char out[kP256PointSize];
  const size_t n =
      EC_POINT_point2oct(group.get(), point.get(), POINT_CONVERSION_UNCOMPRESSED, out, sizeof(out),
                         /*ctx=*/nullptr);
  if (n != kP256PointSize) {
    return Status(Reason::kInternal,
                  "cannot encode the P-256 point uncompressed: " + ossl::GetSslErrors());
  }
  return Bytes(out, n);
}

// EncodedSpki is i2d_PUBKEY: the form OpenSSL keeps for keys that have no canonical form here.
Result<std::string> EncodedSpki(EVP_PKEY* key) {
  const int len = i2d_PUBKEY(key, nullptr);
  if (len <= 0)
    return Status(Reason::kAlgorithmRefused,
                  "the public key cannot be encoded: " + ossl::GetSslErrors());
  std::string der(static_cast<size_t>(len), '\0');
  auto* p = reinterpret_cast<unsigned char*>(der.data());
  if (i2d_PUBKEY(key, &p) != len)
    return Status(Reason::kInternal, "i2d_PUBKEY failed: " + ossl::GetSslErrors());
  return der;
}

}  // namespace

Result<std::string> CanonicalSpkiDer(EVP_PKEY* key) {
  if (key == nullptr) return Status(Reason::kAlgorithmRefused, "expected a public key, found none");
  auto alg = AlgorithmOfKey(key);
  if (!alg.ok()) {
    (void)ossl::GetSslErrors();
    return EncodedSpki(key);  // refused later by AlgorithmOfKey; the keyid only names it
  }
  if (*alg == SigAlgorithm::kEd25519) {
    unsigned char raw[kEd25519KeySize];
    size_t len = sizeof(raw);
    if (EVP_PKEY_get_raw_public_key(key, raw, &len) != 1 || len != kEd25519KeySize) {
      return Status(Reason::kAlgorithmRefused,
                    "the Ed25519 public key cannot be read: " + ossl::GetSslErrors());
    }
    return Bytes(kEd25519SpkiPrefix, sizeof(kEd25519SpkiPrefix)) + Bytes(raw, len);
  }
  CLAWGUARD_ASSIGN_OR_RETURN(std::string point, UncompressedP256Point(key));
  return Bytes(kP256SpkiPrefix, sizeof(kP256SpkiPrefix)) + point;
}

Result<std::string> KeyIdOf(EVP_PKEY* key) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::string spki, CanonicalSpkiDer(key));
  return Sha256Hex(spki);
}

Result<std::vector<std::string>> KeyIdAliasesOf(EVP_PKEY* key) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::string canonical, KeyIdOf(key));
  std::vector<std::string> out{canonical};
  auto alg = AlgorithmOfKey(key);
  (void)ossl::GetSslErrors();
  if (!alg.ok() || *alg != SigAlgorithm::kEcdsaP256Sha256) return out;  // one encoding only
  for (const char* form : {"uncompressed", "compressed", "hybrid"}) {
    for (const char* params : {"named_curve", "explicit"}) {
      ossl::UniquePtr<EVP_PKEY> copy(EVP_PKEY_dup(key));
      if (!copy ||
          EVP_PKEY_set_utf8_string_param(copy.get(), OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT,
                                         form) != 1 ||
          EVP_PKEY_set_utf8_string_param(copy.get(), OSSL_PKEY_PARAM_EC_ENCODING, params) != 1) {
        return Status(Reason::kInternal, "cannot re-encode a P-256 key: " + ossl::GetSslErrors());
      }
      CLAWGUARD_ASSIGN_OR_RETURN(std::string der, EncodedSpki(copy.get()));
      std::string digest = Sha256Hex(der);
      if (std::find(out.begin(), out.end(), digest) == out.end()) out.push_back(std::move(digest));
    }
  }
  return out;
}

Result<std::string> EcdsaRawToDer(std::string_view raw) {
  if (raw.size() != 64) {
    return Status(Reason::kSignatureInvalid,
                  "expected a raw P-256 signature r||s of 64 bytes, found " +
                      std::to_string(raw.size()) + " bytes");
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(raw.data());
  ossl::UniquePtr<BIGNUM> r(BN_bin2bn(bytes, 32, nullptr));
  ossl::UniquePtr<BIGNUM> s(BN_bin2bn(bytes + 32, 32, nullptr));
  ossl::UniquePtr<ECDSA_SIG> sig(ECDSA_SIG_new());
  if (!r || !s || !sig)
    return Status(Reason::kInternal, "cannot allocate an ECDSA signature: " + ossl::GetSslErrors());
  // ECDSA_SIG_set0: set0, on success |sig| takes ownership of r and s (released below); on
  // failure ownership stays with the caller.
  if (ECDSA_SIG_set0(sig.get(), r.get(), s.get()) != 1) {
    return Status(Reason::kInternal, "ECDSA_SIG_set0 failed: " + ossl::GetSslErrors());
  }
  (void)r.release();
  (void)s.release();
  const int len = i2d_ECDSA_SIG(sig.get(), nullptr);
  if (len <= 0) return Status(Reason::kInternal, "i2d_ECDSA_SIG failed: " + ossl::GetSslErrors());
  std::string der(static_cast<size_t>(len), '\0');
  auto* p = reinterpret_cast<unsigned char*>(der.data());
  if (i2d_ECDSA_SIG(sig.get(), &p) != len) {
    return Status(Reason::kInternal, "i2d_ECDSA_SIG failed: " + ossl::GetSslErrors());
  }
  return der;
}

// ---- Certificates ----

Result<ossl::UniquePtr<X509>> ParseCertificateDer(std::string_view der, Reason reason) {
  if (der.empty() || der.size() > static_cast<size_t>(LONG_MAX)) {
    return Status(reason,
                  "expected a DER certificate, found " + std::to_string(der.size()) + " bytes");
  }
  const auto* begin = reinterpret_cast<const unsigned char*>(der.data());
  const unsigned char* p = begin;
  ossl::UniquePtr<X509> cert(d2i_X509(nullptr, &p, static_cast<long>(der.size())));
  if (!cert) return Status(reason, "not a DER X.509 certificate: " + ossl::GetSslErrors());
  if (p != begin + der.size()) {
    return Status(reason, "expected one DER certificate, found " +
                              std::to_string(begin + der.size() - p) + " trailing bytes after it");
  }
  return cert;
}

namespace {
// NoPassword refuses to prompt for a passphrase (certificates are never encrypted).
int NoPassword(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*u*/) { return 0; }
}  // namespace

Result<std::vector<ossl::UniquePtr<X509>>> ParsePemCertificates(std::string_view pem,
                                                                Reason reason) {
  if (pem.size() > static_cast<size_t>(INT_MAX)) return Status(reason, "PEM text is too large");
  ossl::UniquePtr<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return Status(Reason::kInternal, "BIO_new_mem_buf failed: " + ossl::GetSslErrors());
  std::vector<ossl::UniquePtr<X509>> certs;
  while (true) {
    ossl::UniquePtr<X509> cert(PEM_read_bio_X509(bio.get(), nullptr, NoPassword, nullptr));
    if (!cert) break;
    certs.push_back(std::move(cert));
  }
  // The loop ends with PEM_R_NO_START_LINE at the end of the text; anything else is a bad block.
  const unsigned long last = ERR_peek_last_error();
  const bool clean_end = last == 0 || (ERR_GET_LIB(last) == ERR_LIB_PEM &&
                                       ERR_GET_REASON(last) == PEM_R_NO_START_LINE);
  const std::string errors = ossl::GetSslErrors();
  if (!clean_end) {
    return Status(reason,
                  "malformed PEM certificate #" + std::to_string(certs.size() + 1) + ": " + errors);
  }
  if (certs.empty()) return Status(reason, "expected at least one PEM certificate, found none");
  return certs;
}

Result<std::string> CertificateDer(X509* cert) {
  if (cert == nullptr)
    return Status(Reason::kInternal, "expected a certificate to encode as DER, found none");
  const int len = i2d_X509(cert, nullptr);
  if (len <= 0) {
    return Status(Reason::kInternal,
                  "expected a certificate OpenSSL can encode as DER, but i2d_X509 failed: " +
                      ossl::GetSslErrors());
  }
  std::string der(static_cast<size_t>(len), '\0');
  auto* p = reinterpret_cast<unsigned char*>(der.data());
  if (const int written = i2d_X509(cert, &p); written != len) {
    return Status(Reason::kInternal, "expected i2d_X509 to write the " + std::to_string(len) +
                                         " DER bytes it announced, "
                                         "found " +
                                         std::to_string(written) + ": " + ossl::GetSslErrors());
  }
  return der;
}

}  // namespace clawguard
