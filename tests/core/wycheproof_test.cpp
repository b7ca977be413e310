// wycheproof_test.cpp — VerifySignature (and EcdsaRawToDer) over the Wycheproof vectors in
// tests/vectors/wycheproof/: every "valid" vector verifies, every "invalid" one is refused with
// kSignatureInvalid; "acceptable" ones may go either way and are counted.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "clawguard/bundle.h"
#include "clawguard/encoding.h"
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard {
namespace {

enum class Form { kEcdsaDer, kEcdsaP1363, kEd25519 };

struct VectorFile {
  const char* file;
  Form form;
};

struct Counts {
  int valid_ok = 0, invalid_refused = 0, acceptable_ok = 0, acceptable_refused = 0,
      refused_by_raw_to_der = 0;
};

std::string Bytes(const nlohmann::json& hex) {
  auto b = HexDecode(hex.get<std::string>());
  EXPECT_TRUE(b.has_value()) << hex;
  return b.value_or("");
}

ossl::UniquePtr<EVP_PKEY> KeyOf(const nlohmann::json& group, Form form) {
  if (form == Form::kEd25519) {
    const std::string pk = Bytes(group.at("publicKey").at("pk"));
    return ossl::UniquePtr<EVP_PKEY>(EVP_PKEY_new_raw_public_key(
        EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(pk.data()), pk.size()));
  }
  const std::string der = Bytes(group.at("publicKeyDer"));
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  return ossl::UniquePtr<EVP_PKEY>(d2i_PUBKEY(nullptr, &p, static_cast<long>(der.size())));
}

class WycheproofTest : public ::testing::TestWithParam<VectorFile> {};

TEST_P(WycheproofTest, ValidVerifiesInvalidIsRefused) {
  const VectorFile& vf = GetParam();
  std::ifstream in(std::string(CLAWGUARD_VECTORS_DIR) + "/wycheproof/" + vf.file);
  ASSERT_TRUE(in) << "missing vector file " << vf.file;
  std::stringstream ss;
  ss << in.rdbuf();
  const nlohmann::json doc = nlohmann::json::parse(ss.str());
  Counts n;
  int total = 0;
  for (const auto& group : doc.at("testGroups")) {
    auto key = KeyOf(group, vf.form);
    ASSERT_NE(key, nullptr) << vf.file << ": cannot load a group's public key";
    ASSERT_TRUE(AlgorithmOfKey(key.get()).ok()) << vf.file;
    for (const auto& t : group.at("tests")) {
      ++total;
      const int id = t.at("tcId").get<int>();
      const std::string result = t.at("result").get<std::string>();
      const std::string msg = Bytes(t.at("msg"));
      std::string sig = Bytes(t.at("sig"));
      Status st = Status::Ok();
      bool raw_refused = false;
      if (vf.form == Form::kEcdsaP1363) {
        auto der = EcdsaRawToDer(sig);
        if (der.ok()) {
          sig = std::move(der).value();
        } else {
          st = der.error();
          raw_refused = true;
        }
      }
      if (st.ok()) st = VerifySignature(key.get(), msg, sig);
      if (result == "valid") {
        EXPECT_TRUE(st.ok()) << vf.file << " tcId " << id << " (" << t.at("comment")
                             << "): " << st.ToString();
        n.valid_ok += st.ok();
      } else if (result == "invalid") {
        EXPECT_THAT(st, HasReason(Reason::kSignatureInvalid))
            << vf.file << " tcId " << id << " (" << t.at("comment") << ")";
        n.invalid_refused += !st.ok();
        n.refused_by_raw_to_der += raw_refused;
      } else {
        ASSERT_EQ(result, "acceptable") << vf.file << " tcId " << id;
        (st.ok() ? n.acceptable_ok : n.acceptable_refused)++;
      }
    }
  }
  EXPECT_GT(total, 100) << vf.file;
  std::cout << "[wycheproof] " << vf.file << ": " << total << " vectors; valid verified "
            << n.valid_ok << "; invalid refused " << n.invalid_refused
            << " (by EcdsaRawToDer: " << n.refused_by_raw_to_der << "); acceptable verified "
            << n.acceptable_ok << ", refused " << n.acceptable_refused << "\n";
  RecordProperty("vectors", total);
  RecordProperty("valid_verified", n.valid_ok);
  RecordProperty("invalid_refused", n.invalid_refused);
}

INSTANTIATE_TEST_SUITE_P(
    Vectors, WycheproofTest,
    ::testing::Values(VectorFile{"ecdsa_secp256r1_sha256_test.json", Form::kEcdsaDer},
                      VectorFile{"ecdsa_secp256r1_sha256_p1363_test.json", Form::kEcdsaP1363},
                      VectorFile{"ed25519_test.json", Form::kEd25519}),
    [](const auto& param_info) {
      switch (param_info.param.form) {
        case Form::kEcdsaDer: return std::string("EcdsaP256Der");
        case Form::kEcdsaP1363: return std::string("EcdsaP256P1363");
        case Form::kEd25519: return std::string("Ed25519");
      }
      return std::string("Unknown");
    });

}  // namespace
}  // namespace clawguard
