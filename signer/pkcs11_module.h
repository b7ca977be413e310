// pkcs11_module.h — Pkcs11Module: one loaded and initialised PKCS#11 module (RAII), and the
// CK_RV → "CKR_NAME" helpers every PKCS#11 caller uses for its messages.
//
// The module is dlopen'ed with RTLD_NOW|RTLD_LOCAL, C_GetFunctionList is called and C_Initialize
// runs with CKF_OS_LOCKING_OK; the destructor calls C_Finalize and dlclose. A PKCS#11 module may
// be initialised once per process, so Load() hands out one shared instance per path while any
// holder is alive (a second Load of the same path shares it; the last holder finalises it).
// Thread-safe: Load and the login bookkeeping take a mutex; the function list is immutable.
#ifndef CLAWGUARD_SIGNER_PKCS11_MODULE_H_
#define CLAWGUARD_SIGNER_PKCS11_MODULE_H_

#include <p11-kit/pkcs11.h>

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/error.h"
#include "core/mutex.h"
#include "signer/hsm_signer.h"

namespace clawguard::signer {

// CkrName returns the PKCS#11 name of |rv| ("CKR_PIN_INCORRECT"), or "CKR_0x…" when unknown.
std::string CkrName(CK_RV rv);
// Pkcs11Error builds a Status "<function> failed: CKR_…" + |hint| with |reason|.
Status Pkcs11Error(Reason reason, std::string_view function, CK_RV rv, std::string_view hint = "");

// TokenInfo describes one slot that holds a token (labels are trimmed of their blank padding).
struct TokenInfo {
  CK_SLOT_ID slot = 0;
  std::string label, manufacturer, model, serial;
  bool initialized = false;
};

class Pkcs11Module {
 public:
  // Load loads and initialises the module at |path| (or shares the live instance for that path).
  // kHsmUnavailable naming the path when dlopen, C_GetFunctionList or C_Initialize fails.
  static Result<std::shared_ptr<Pkcs11Module>> Load(const std::string& path);
  ~Pkcs11Module();
  Pkcs11Module(const Pkcs11Module&) = delete;
  Pkcs11Module& operator=(const Pkcs11Module&) = delete;

  CK_FUNCTION_LIST* fn() const { return fn_; }
  const std::string& path() const { return path_; }

  // Tokens lists the slots with a token present. kHsmUnavailable if the module cannot list them.
  Result<std::vector<TokenInfo>> Tokens() const;
  // FindToken returns the slot of the token labelled |label|: kHsmUnavailable if none (the
  // message lists the labels present), kKeyAmbiguous if several tokens carry that label.
  Result<TokenInfo> FindToken(std::string_view label) const;

  // Login bookkeeping for Pkcs11Session. PKCS#11 login state is per application and token, so
  // the last session that logged in to a slot is the one that logs out.
  void NoteLogin(CK_SLOT_ID slot) CLAWGUARD_EXCLUDES(mu_);
  // NoteLogout returns true when the caller was the last logged-in holder of |slot|.
  bool NoteLogout(CK_SLOT_ID slot) CLAWGUARD_EXCLUDES(mu_);

 private:
  Pkcs11Module(std::string path, void* handle, CK_FUNCTION_LIST* fn)
      : path_(std::move(path)), handle_(handle), fn_(fn) {}

  const std::string path_;
  void* const handle_;
  CK_FUNCTION_LIST* const fn_;
  Mutex mu_;
  std::map<CK_SLOT_ID, int> logins_ CLAWGUARD_GUARDED_BY(mu_);
};

// PaddedToString trims the blank padding of a fixed-size PKCS#11 text field.
std::string PaddedToString(const unsigned char* field, size_t size);

}  // namespace clawguard::signer

#endif  // CLAWGUARD_SIGNER_PKCS11_MODULE_H_
