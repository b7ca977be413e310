// pkcs11_session.h — Pkcs11Session: one open session on the token with a given label (RAII,
// move-only; Botan p11_session). The destructor logs out (when this was the last logged-in
// session of the token in this process) and closes the session; it never throws.
//
// Not thread-safe: PKCS#11 sessions must not be used by two threads at once; open one per thread.
#ifndef CLAWGUARD_SIGNER_PKCS11_SESSION_H_
#define CLAWGUARD_SIGNER_PKCS11_SESSION_H_

#include <p11-kit/pkcs11.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/error.h"
#include "clawguard/secret_bytes.h"
#include "signer/pkcs11_module.h"

namespace clawguard::signer {

class Pkcs11Session {
 public:
  // Open opens a session on the token labelled |token_label| (kHsmUnavailable if absent,
  // kKeyAmbiguous if two tokens share the label). |read_write| for key generation.
  static Result<Pkcs11Session> Open(std::shared_ptr<Pkcs11Module> module,
                                    std::string_view token_label, bool read_write);
  ~Pkcs11Session();
  Pkcs11Session(Pkcs11Session&& other) noexcept;
  Pkcs11Session& operator=(Pkcs11Session&& other) noexcept;
  Pkcs11Session(const Pkcs11Session&) = delete;
  Pkcs11Session& operator=(const Pkcs11Session&) = delete;

  // Login logs in as CKU_USER with |pin|, which is wiped right after C_Login whatever the outcome.
  // CKR_PIN_INCORRECT, CKR_PIN_LEN_RANGE, CKR_PIN_INVALID, CKR_PIN_LOCKED → kHsmLoginFailed.
  // WARNING: PKCS#11 login state is shared by every session of this process on the token, so a
  // second Login while another session is logged in returns OK without checking the PIN again.
  Status Login(SecretBytes pin);

  // FindObjects returns every object matching |tmpl| (at most |limit|).
  Result<std::vector<CK_OBJECT_HANDLE>> FindObjects(std::vector<CK_ATTRIBUTE> tmpl,
                                                    size_t limit = 1024);
  // GetAttribute returns the bytes of one attribute; nullopt when the object does not have it
  // (CKR_ATTRIBUTE_TYPE_INVALID) or it is sensitive. kInternal on any other failure.
  Result<std::optional<std::string>> GetAttribute(CK_OBJECT_HANDLE object, CK_ATTRIBUTE_TYPE type);
  // GetBool reads a CK_BBOOL attribute; nullopt when absent.
  Result<std::optional<bool>> GetBool(CK_OBJECT_HANDLE object, CK_ATTRIBUTE_TYPE type);
  // GetUlong reads a CK_ULONG attribute; nullopt when absent.
  Result<std::optional<CK_ULONG>> GetUlong(CK_OBJECT_HANDLE object, CK_ATTRIBUTE_TYPE type);

  CK_FUNCTION_LIST* fn() const { return module_->fn(); }
  CK_SESSION_HANDLE handle() const { return session_; }
  const TokenInfo& token() const { return token_; }
  const std::shared_ptr<Pkcs11Module>& module() const { return module_; }

 private:
  Pkcs11Session(std::shared_ptr<Pkcs11Module> module, TokenInfo token, CK_SESSION_HANDLE session)
      : module_(std::move(module)), token_(std::move(token)), session_(session) {}
  void Close() noexcept;

  std::shared_ptr<Pkcs11Module> module_;
  TokenInfo token_;
  CK_SESSION_HANDLE session_ = CK_INVALID_HANDLE;
  bool logged_in_ = false;
};

}  // namespace clawguard::signer

#endif  // CLAWGUARD_SIGNER_PKCS11_SESSION_H_
