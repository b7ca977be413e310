// pkcs11_session.cpp — sessions, login with a wiped PIN, object search and attribute reads.
#include "signer/pkcs11_session.h"

#include <cstring>
#include <string>
#include <utility>

#include "clawguard/limits.h"

namespace clawguard::signer {

Result<Pkcs11Session> Pkcs11Session::Open(std::shared_ptr<Pkcs11Module> module,
                                          std::string_view token_label, bool read_write) {
  CLAWGUARD_ASSIGN_OR_RETURN(TokenInfo token, module->FindToken(token_label));
  CK_FLAGS flags = CKF_SERIAL_SESSION | (read_write ? CKF_RW_SESSION : 0);
  CK_SESSION_HANDLE session = CK_INVALID_HANDLE;
  CK_RV rv = module->fn()->C_OpenSession(token.slot, flags, nullptr, nullptr, &session);
  if (rv != CKR_OK) {
    return Pkcs11Error(Reason::kHsmUnavailable, "C_OpenSession", rv, "token '" + token.label + "'");
  }
  return Pkcs11Session(std::move(module), std::move(token), session);
}

Pkcs11Session::~Pkcs11Session() { Close(); }

Pkcs11Session::Pkcs11Session(Pkcs11Session&& other) noexcept
    : module_(std::move(other.module_)),
      token_(std::move(other.token_)),
      session_(std::exchange(other.session_, CK_INVALID_HANDLE)),
      logged_in_(std::exchange(other.logged_in_, false)) {}

Pkcs11Session& Pkcs11Session::operator=(Pkcs11Session&& other) noexcept {
  if (this != &other) {
    Close();
    module_ = std::move(other.module_);
    token_ = std::move(other.token_);
    session_ = std::exchange(other.session_, CK_INVALID_HANDLE);
    logged_in_ = std::exchange(other.logged_in_, false);
  }
  return *this;
}

void Pkcs11Session::Close() noexcept {
  if (session_ == CK_INVALID_HANDLE || !module_) return;
  if (logged_in_ && module_->NoteLogout(token_.slot)) {
    (void)module_->fn()->C_Logout(session_);  // best effort; closing the last session logs out too
  }
  (void)module_->fn()->C_CloseSession(session_);
  session_ = CK_INVALID_HANDLE;
  logged_in_ = false;
}

Status Pkcs11Session::Login(SecretBytes pin) {
  if (logged_in_) {
    pin.Wipe();
    return Status::Ok();
  }
  const CK_ULONG pin_len = pin.size();
  CK_RV rv = fn()->C_Login(session_, CKU_USER, InsecureSecretAccess::MutableData(pin), pin_len);
  pin.Wipe();
  if (rv == CKR_OK || rv == CKR_USER_ALREADY_LOGGED_IN) {
    logged_in_ = true;
    module_->NoteLogin(token_.slot);
    return Status::Ok();
  }
  const std::string where = "token '" + token_.label + "'";
  switch (rv) {
    case CKR_PIN_INCORRECT:
    case CKR_PIN_LEN_RANGE:
    case CKR_PIN_INVALID:
      return Pkcs11Error(
          Reason::kHsmLoginFailed, "C_Login", rv,
          "the user PIN for " + where + " was refused; check the secret behind --pin-source");
    case CKR_PIN_LOCKED:
    case CKR_PIN_EXPIRED:
      return Pkcs11Error(
          Reason::kHsmLoginFailed, "C_Login", rv,
          "the user PIN of " + where + " must be reset by the token's security officer");
    case CKR_USER_PIN_NOT_INITIALIZED:
      return Pkcs11Error(Reason::kHsmLoginFailed, "C_Login", rv, where + " has no user PIN yet");
    default: return Pkcs11Error(Reason::kHsmUnavailable, "C_Login", rv, where);
  }
}

Result<std::vector<CK_OBJECT_HANDLE>> Pkcs11Session::FindObjects(std::vector<CK_ATTRIBUTE> tmpl,
                                                                 size_t limit) {
  CK_RV rv = fn()->C_FindObjectsInit(session_, tmpl.empty() ? nullptr : tmpl.data(), tmpl.size());
  if (rv != CKR_OK) return Pkcs11Error(Reason::kInternal, "C_FindObjectsInit", rv);
  std::vector<CK_OBJECT_HANDLE> found;
  Status status = Status::Ok();
  while (found.size() < limit) {
    CK_OBJECT_HANDLE batch[32];
    CK_ULONG got = 0;
    rv = fn()->C_FindObjects(session_, batch, 32, &got);
    if (rv != CKR_OK) {
      status = Pkcs11Error(Reason::kInternal, "C_FindObjects", rv);
      break;
    }
    if (got == 0) break;
    found.insert(found.end(), batch, batch + got);
  }
  rv = fn()->C_FindObjectsFinal(session_);
  if (!status.ok()) return status;
  if (rv != CKR_OK) return Pkcs11Error(Reason::kInternal, "C_FindObjectsFinal", rv);
  if (found.size() > limit) found.resize(limit);
  return found;
}

Result<std::optional<std::string>> Pkcs11Session::GetAttribute(CK_OBJECT_HANDLE object,
                                                               CK_ATTRIBUTE_TYPE type) {
  CK_ATTRIBUTE attr{type, nullptr, 0};
  CK_RV rv = fn()->C_GetAttributeValue(session_, object, &attr, 1);
  if (rv == CKR_ATTRIBUTE_TYPE_INVALID || rv == CKR_ATTRIBUTE_SENSITIVE)
    return std::optional<std::string>();
  if (rv != CKR_OK) return Pkcs11Error(Reason::kInternal, "C_GetAttributeValue", rv);
  if (attr.ulValueLen == CK_UNAVAILABLE_INFORMATION) return std::optional<std::string>();
  // The length is the module's word: bound the buffer it makes us allocate.
  if (attr.ulValueLen > limits::kMaxDeclaredReservation) {
    return Status(Reason::kInternal,
                  "C_GetAttributeValue declared a " + std::to_string(attr.ulValueLen) +
                      "-byte attribute; at most " +
                      std::to_string(limits::kMaxDeclaredReservation) + " bytes are accepted");
  }
  std::string value(attr.ulValueLen, '\0');
  attr.pValue = value.data();
  rv = fn()->C_GetAttributeValue(session_, object, &attr, 1);
  if (rv != CKR_OK) return Pkcs11Error(Reason::kInternal, "C_GetAttributeValue", rv);
  if (attr.ulValueLen > value.size()) {
    return Status(Reason::kInternal, "C_GetAttributeValue wrote a longer value than it declared");
  }
  value.resize(attr.ulValueLen);
  return std::optional<std::string>(std::move(value));
}

Result<std::optional<bool>> Pkcs11Session::GetBool(CK_OBJECT_HANDLE object,
                                                   CK_ATTRIBUTE_TYPE type) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::optional<std::string> v, GetAttribute(object, type));
  if (!v || v->size() != sizeof(CK_BBOOL)) return std::optional<bool>();
  return std::optional<bool>((*v)[0] != 0);
}

Result<std::optional<CK_ULONG>> Pkcs11Session::GetUlong(CK_OBJECT_HANDLE object,
                                                        CK_ATTRIBUTE_TYPE type) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::optional<std::string> v, GetAttribute(object, type));
  if (!v || v->size() != sizeof(CK_ULONG)) return std::optional<CK_ULONG>();
  CK_ULONG out = 0;
  std::memcpy(&out, v->data(), sizeof(out));
  return std::optional<CK_ULONG>(out);
}

}  // namespace clawguard::signer
