// hsm_signer.cpp — signing inside the token (see hsm_signer.h).
#include "signer/hsm_signer.h"

#include <cstdlib>

#include "clawguard/sha256.h"
#include "signer/pkcs11_key.h"
#include "signer/pkcs11_session.h"
#include "signer/pkcs11_uri.h"

namespace clawguard::signer {
namespace {

class Pkcs11Signer final : public Signer {
 public:
  Pkcs11Signer(Pkcs11Session session, TokenKey key)
      : session_(std::move(session)), key_(std::move(key)) {}

  Result<std::string> Sign(std::string_view message) override {
    CK_FUNCTION_LIST* fn = session_.fn();
    const bool ecdsa = algorithm() == SigAlgorithm::kEcdsaP256Sha256;
    CK_MECHANISM mech{ecdsa ? CKM_ECDSA : CKM_EDDSA, nullptr, 0};
    Sha256Digest digest{};
    std::string_view input = message;
    if (ecdsa) {
      digest = Sha256Of(message);
      input = DigestView(digest);
    }
    CK_RV rv = fn->C_SignInit(session_.handle(), &mech, key_.handle);
    if (rv != CKR_OK)
      return Pkcs11Error(Reason::kInternal, "C_SignInit", rv, "key '" + key_.label + "'");
    // One C_Sign with room for any signature of these algorithms (64 bytes; 132 is P-521's raw
    // size): a separate length query is not needed.
    std::string sig(132, '\0');
    CK_ULONG sig_len = sig.size();
    rv = fn->C_Sign(
        session_.handle(), reinterpret_cast<CK_BYTE_PTR>(const_cast<char*>(input.data())),
        static_cast<CK_ULONG>(input.size()), reinterpret_cast<CK_BYTE_PTR>(sig.data()), &sig_len);
    if (rv != CKR_OK)
      return Pkcs11Error(Reason::kInternal, "C_Sign", rv, "key '" + key_.label + "'");
    if (sig_len > sig.size()) {
      return Status(Reason::kInternal, "C_Sign reported " + std::to_string(sig_len) +
                                           " bytes for a " + std::to_string(sig.size()) +
                                           "-byte buffer");
    }
    sig.resize(sig_len);
    if (ecdsa) return EcdsaRawToDer(sig);
    if (sig.size() != 64) {
      return Status(Reason::kInternal, "C_Sign returned " + std::to_string(sig.size()) +
                                           " bytes for Ed25519, expected 64");
    }
    return sig;
  }

  EVP_PKEY* public_key() const override { return key_.public_key.get(); }
  SigAlgorithm algorithm() const override { return *key_.algorithm; }

 private:
  Pkcs11Session session_;
  const TokenKey key_;
};

}  // namespace

Result<std::string> ResolveModulePath(std::string_view flag) {
  if (!flag.empty()) return std::string(flag);
  const char* env = std::getenv(kPkcs11ModuleEnv);
  if (env != nullptr && *env != '\0') return std::string(env);
  return Status(Reason::kUsage, std::string("no PKCS#11 module given: pass --module PATH or set ") +
                                    kPkcs11ModuleEnv +
                                    " (SoftHSM2: /usr/lib/softhsm/libsofthsm2.so)");
}

Result<std::unique_ptr<Signer>> HsmSigner::Create(const std::string& module_path,
                                                  const std::string& key_uri, SecretBytes pin,
                                                  bool allow_imported_key) {
  // Cheap checks first: a bad URI is refused before any module is loaded.
  CLAWGUARD_ASSIGN_OR_RETURN(Pkcs11Uri uri, ParsePkcs11Uri(key_uri));
  CLAWGUARD_ASSIGN_OR_RETURN(std::shared_ptr<Pkcs11Module> module, Pkcs11Module::Load(module_path));
  CLAWGUARD_ASSIGN_OR_RETURN(Pkcs11Session session,
                             Pkcs11Session::Open(module, uri.token, /*read_write=*/false));
  CLAWGUARD_RETURN_IF_ERROR(session.Login(std::move(pin)));
  CLAWGUARD_ASSIGN_OR_RETURN(TokenKey key, FindPrivateKey(session, uri.object, uri.id));
  CLAWGUARD_RETURN_IF_ERROR(CheckSigningKeyPolicy(key, allow_imported_key));
  return std::unique_ptr<Signer>(new Pkcs11Signer(std::move(session), std::move(key)));
}

}  // namespace clawguard::signer
