// memfd_loader.h — LoadFromMemfd: the checked library bytes into a sealed memfd, then dlopen.
//
// memfd_create(name, MFD_CLOEXEC|MFD_ALLOW_SEALING), write the exact bytes, seal
// F_SEAL_WRITE|F_SEAL_GROW|F_SEAL_SHRINK|F_SEAL_SEAL, open "/proc/self/fd/N" with Boost.DLL
// (rtld_now | rtld_local). The memfd stays open while the library is loaded: glibc matches
// loaded libraries by path, and a reused fd number would hand back the previous plugin
// (MACHINE-FACTS.md), so a dlopen handle already held by this process's loader is refused.
// Then clawguard_plugin_v1() is called: abi must equal the manifest's and CLAWGUARD_PLUGIN_ABI
// (kAbiMismatch), flags only CG_PLUGIN_SERIAL (kLoadFailed), init(host) must return 0
// (kLoadFailed). Where the kernel refuses executable memfds (noexec mounts, vm.memfd_noexec),
// the load fails closed with kLoadFailed saying so.
// WARNING: the library's constructors run inside dlopen; every check must be done before.
#ifndef CLAWGUARD_LOADER_MEMFD_LOADER_H_
#define CLAWGUARD_LOADER_MEMFD_LOADER_H_

#include <memory>
#include <string>
#include <string_view>

#include "clawguard/error.h"
#include "clawguard/plugin.h"

namespace clawguard {

// MemfdLibrary owns one loaded plugin library and its memfd. On destruction: shutdown() (if
// init succeeded), dlclose, forget the handle, close the memfd — in that order.
class MemfdLibrary {
 public:
  ~MemfdLibrary();
  MemfdLibrary(const MemfdLibrary&) = delete;
  MemfdLibrary& operator=(const MemfdLibrary&) = delete;

  // plugin is the entry point's table (owned by the library; valid while this object lives).
  const cg_plugin* plugin() const { return plugin_; }
  int fd() const;

 private:
  friend Result<std::unique_ptr<MemfdLibrary>> LoadFromMemfd(std::string_view, std::string_view, int64_t,
                                                             const cg_host_api*);
  struct Impl;
  explicit MemfdLibrary(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  const cg_plugin* plugin_ = nullptr;
};

// LoadFromMemfd loads |library| (already checked) under the memfd name |name|; |manifest_abi|
// is the signed manifest's abi; |host| is passed to init (may be null only in tests whose
// plugin ignores it). Thread-safe.
Result<std::unique_ptr<MemfdLibrary>> LoadFromMemfd(std::string_view library, std::string_view name,
                                                    int64_t manifest_abi, const cg_host_api* host);

}  // namespace clawguard

#endif  // CLAWGUARD_LOADER_MEMFD_LOADER_H_
