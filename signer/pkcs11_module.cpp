// pkcs11_module.cpp — loading, initialising and finalising a PKCS#11 module.
#include "signer/pkcs11_module.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "clawguard/file_io.h"

namespace clawguard::signer {
namespace {

// kMaxSlots bounds the slot list a module may report (SoftHSM2 and hardware HSMs report a few).
constexpr CK_ULONG kMaxSlots = 4096;

// Under AddressSanitizer the module stays mapped after dlclose (RTLD_NODELETE), so that
// LeakSanitizer can name the module in the stacks of what the module itself leaks (SoftHSM2
// 2.6.1 leaks an ASN1 string per Ed25519 C_Sign) and ci/lsan.supp can suppress exactly those.
// Without it the frames are "<unknown module>" and the leak cannot be told from ours.
#if defined(__SANITIZE_ADDRESS__)
constexpr int kSanitizerDlopenFlags = RTLD_NODELETE;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr int kSanitizerDlopenFlags = RTLD_NODELETE;
#else
constexpr int kSanitizerDlopenFlags = 0;
#endif
#else
constexpr int kSanitizerDlopenFlags = 0;
#endif

struct RvName {
  CK_RV rv;
  const char* name;
};

#define CG_RV(x) \
  { x, #x }
constexpr RvName kRvNames[] = {
    CG_RV(CKR_OK),
    CG_RV(CKR_CANCEL),
    CG_RV(CKR_HOST_MEMORY),
    CG_RV(CKR_SLOT_ID_INVALID),
    CG_RV(CKR_GENERAL_ERROR),
    CG_RV(CKR_FUNCTION_FAILED),
    CG_RV(CKR_ARGUMENTS_BAD),
    CG_RV(CKR_CANT_LOCK),
    CG_RV(CKR_ATTRIBUTE_READ_ONLY),
    CG_RV(CKR_ATTRIBUTE_SENSITIVE),
    CG_RV(CKR_ATTRIBUTE_TYPE_INVALID),
    CG_RV(CKR_ATTRIBUTE_VALUE_INVALID),
    CG_RV(CKR_DATA_INVALID),
    CG_RV(CKR_DATA_LEN_RANGE),
    CG_RV(CKR_DEVICE_ERROR),
    CG_RV(CKR_DEVICE_MEMORY),
    CG_RV(CKR_DEVICE_REMOVED),
    CG_RV(CKR_FUNCTION_CANCELED),
    CG_RV(CKR_FUNCTION_NOT_SUPPORTED),
    CG_RV(CKR_KEY_HANDLE_INVALID),
    CG_RV(CKR_KEY_TYPE_INCONSISTENT),
    CG_RV(CKR_KEY_FUNCTION_NOT_PERMITTED),
    CG_RV(CKR_MECHANISM_INVALID),
    CG_RV(CKR_MECHANISM_PARAM_INVALID),
    CG_RV(CKR_OBJECT_HANDLE_INVALID),
    CG_RV(CKR_OPERATION_ACTIVE),
    CG_RV(CKR_OPERATION_NOT_INITIALIZED),
    CG_RV(CKR_PIN_INCORRECT),
    CG_RV(CKR_PIN_INVALID),
    CG_RV(CKR_PIN_LEN_RANGE),
    CG_RV(CKR_PIN_EXPIRED),
    CG_RV(CKR_PIN_LOCKED),
    CG_RV(CKR_SESSION_CLOSED),
    CG_RV(CKR_SESSION_COUNT),
    CG_RV(CKR_SESSION_HANDLE_INVALID),
    CG_RV(CKR_SESSION_READ_ONLY),
    CG_RV(CKR_SESSION_EXISTS),
    CG_RV(CKR_SIGNATURE_INVALID),
    CG_RV(CKR_SIGNATURE_LEN_RANGE),
    CG_RV(CKR_TEMPLATE_INCOMPLETE),
    CG_RV(CKR_TEMPLATE_INCONSISTENT),
    CG_RV(CKR_TOKEN_NOT_PRESENT),
    CG_RV(CKR_TOKEN_NOT_RECOGNIZED),
    CG_RV(CKR_TOKEN_WRITE_PROTECTED),
    CG_RV(CKR_USER_ALREADY_LOGGED_IN),
    CG_RV(CKR_USER_NOT_LOGGED_IN),
    CG_RV(CKR_USER_PIN_NOT_INITIALIZED),
    CG_RV(CKR_USER_TYPE_INVALID),
    CG_RV(CKR_DOMAIN_PARAMS_INVALID),
    CG_RV(CKR_CURVE_NOT_SUPPORTED),
    CG_RV(CKR_BUFFER_TOO_SMALL),
    CG_RV(CKR_CRYPTOKI_NOT_INITIALIZED),
    CG_RV(CKR_CRYPTOKI_ALREADY_INITIALIZED),
};
#undef CG_RV

Mutex g_registry_mu;
std::map<std::string, std::weak_ptr<Pkcs11Module>>& Registry() CLAWGUARD_REQUIRES(g_registry_mu) {
  static auto* registry = new std::map<std::string, std::weak_ptr<Pkcs11Module>>();
  return *registry;
}

}  // namespace

std::string CkrName(CK_RV rv) {
  for (const auto& e : kRvNames) {
    if (e.rv == rv) return e.name;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "CKR_0x%lx", static_cast<unsigned long>(rv));
  return buf;
}

Status Pkcs11Error(Reason reason, std::string_view function, CK_RV rv, std::string_view hint) {
  std::string msg = std::string(function) + " failed: " + CkrName(rv);
  if (!hint.empty()) msg += " (" + std::string(hint) + ")";
  return Status(reason, std::move(msg));
}

std::string PaddedToString(const unsigned char* field, size_t size) {
  std::string s(reinterpret_cast<const char*>(field), size);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\0')) s.pop_back();
  return s;
}

Result<std::shared_ptr<Pkcs11Module>> Pkcs11Module::Load(const std::string& path) {
  MutexLock lock(g_registry_mu);
  if (auto live = Registry()[path].lock()) return live;

  // dlopen of a FIFO or device would block or read endlessly: a path (one with a '/'; a bare
  // soname is searched for by the dynamic linker in the system's library folders) must name a
  // regular file. The check opens it without blocking; dlopen then opens it again by path, and a
  // swap in between needs write access to the module's folder, which already means its code.
  if (path.find('/') != std::string::npos) {
    auto probe = OpenRegularFile(path);
    if (!probe) {
      return Status(Reason::kHsmUnavailable,
                    "cannot load PKCS#11 module: " + probe.error().message() +
                        "; check --module or " + kPkcs11ModuleEnv);
    }
  }
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | kSanitizerDlopenFlags);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    return Status(Reason::kHsmUnavailable, "cannot load PKCS#11 module '" + path +
                                               "': " + (why ? why : "dlopen failed") +
                                               "; check --module or " + kPkcs11ModuleEnv);
  }
  using GetFunctionList = CK_RV (*)(CK_FUNCTION_LIST_PTR_PTR);
  auto get_list = reinterpret_cast<GetFunctionList>(::dlsym(handle, "C_GetFunctionList"));
  CK_FUNCTION_LIST* fn = nullptr;
  CK_RV rv = get_list == nullptr ? CKR_FUNCTION_NOT_SUPPORTED : get_list(&fn);
  if (rv != CKR_OK || fn == nullptr) {
    ::dlclose(handle);
    return Pkcs11Error(Reason::kHsmUnavailable, "C_GetFunctionList", rv,
                       "'" + path + "' is not a PKCS#11 module");
  }
  CK_C_INITIALIZE_ARGS args{};
  args.flags = CKF_OS_LOCKING_OK;
  rv = fn->C_Initialize(&args);
  if (rv != CKR_OK && rv != CKR_CRYPTOKI_ALREADY_INITIALIZED) {
    ::dlclose(handle);
    return Pkcs11Error(Reason::kHsmUnavailable, "C_Initialize", rv,
                       "module '" + path + "'; for SoftHSM2 check SOFTHSM2_CONF and its tokendir");
  }
  std::shared_ptr<Pkcs11Module> module(new Pkcs11Module(path, handle, fn));
  Registry()[path] = module;
  return module;
}

Pkcs11Module::~Pkcs11Module() {
  // Under the registry lock so that a concurrent Load of this path initialises after we finalise.
  MutexLock lock(g_registry_mu);
  fn_->C_Finalize(nullptr);
  ::dlclose(handle_);
}

Result<std::vector<TokenInfo>> Pkcs11Module::Tokens() const {
  CK_ULONG count = 0;
  CK_RV rv = fn_->C_GetSlotList(CK_TRUE, nullptr, &count);
  if (rv != CKR_OK) return Pkcs11Error(Reason::kHsmUnavailable, "C_GetSlotList", rv, path_);
  // The count is the module's word: bound what it makes us allocate.
  if (count > kMaxSlots) {
    return Status(Reason::kHsmUnavailable, "C_GetSlotList reported " + std::to_string(count) +
                                               " slots; at most " + std::to_string(kMaxSlots) +
                                               " are read (" + path_ + ")");
  }
  std::vector<CK_SLOT_ID> slots(count);
  if (count > 0) {
    rv = fn_->C_GetSlotList(CK_TRUE, slots.data(), &count);
    if (rv != CKR_OK) return Pkcs11Error(Reason::kHsmUnavailable, "C_GetSlotList", rv, path_);
    slots.resize(count);
  }
  std::vector<TokenInfo> out;
  for (CK_SLOT_ID slot : slots) {
    CK_TOKEN_INFO info{};
    rv = fn_->C_GetTokenInfo(slot, &info);
    if (rv == CKR_TOKEN_NOT_PRESENT || rv == CKR_TOKEN_NOT_RECOGNIZED) continue;
    if (rv != CKR_OK) return Pkcs11Error(Reason::kHsmUnavailable, "C_GetTokenInfo", rv, path_);
    TokenInfo t;
    t.slot = slot;
    t.label = PaddedToString(info.label, sizeof(info.label));
    t.manufacturer = PaddedToString(info.manufacturerID, sizeof(info.manufacturerID));
    t.model = PaddedToString(info.model, sizeof(info.model));
    t.serial = PaddedToString(info.serialNumber, sizeof(info.serialNumber));
    t.initialized = (info.flags & CKF_TOKEN_INITIALIZED) != 0;
    out.push_back(std::move(t));
  }
  return out;
}

Result<TokenInfo> Pkcs11Module::FindToken(std::string_view label) const {
  CLAWGUARD_ASSIGN_OR_RETURN(std::vector<TokenInfo> tokens, Tokens());
  std::vector<TokenInfo> hits;
  std::string present;
  for (auto& t : tokens) {
    if (!t.initialized) continue;
    if (!present.empty()) present += ", ";
    present += "'" + t.label + "'";
    if (t.label == label) hits.push_back(t);
  }
  if (hits.size() > 1) {
    return Status(Reason::kKeyAmbiguous, std::to_string(hits.size()) + " tokens are labelled '" +
                                             std::string(label) +
                                             "'; relabel one so the key URI names a single token");
  }
  if (hits.empty()) {
    return Status(Reason::kHsmUnavailable,
                  "no token labelled '" + std::string(label) + "' in module '" + path_ +
                      "' (tokens present: " + (present.empty() ? "none" : present) +
                      "); check the URI's token= attribute or --token");
  }
  return hits.front();
}

void Pkcs11Module::NoteLogin(CK_SLOT_ID slot) {
  MutexLock lock(mu_);
  ++logins_[slot];
}

bool Pkcs11Module::NoteLogout(CK_SLOT_ID slot) {
  MutexLock lock(mu_);
  auto it = logins_.find(slot);
  if (it == logins_.end()) return false;
  if (--it->second > 0) return false;
  logins_.erase(it);
  return true;
}

}  // namespace clawguard::signer
