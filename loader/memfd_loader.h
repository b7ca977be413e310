// memfd_loader.h — LoadFromMemfd: the checked library bytes into a sealed memfd, then dlopen, and
// proof that the object dlopen returned is the one that was checked.
//
// memfd_create(name, MFD_CLOEXEC|MFD_ALLOW_SEALING), write the exact bytes, seal
// F_SEAL_WRITE|F_SEAL_GROW|F_SEAL_SHRINK|F_SEAL_SEAL, dlopen("/proc/self/fd/N",
// RTLD_NOW|RTLD_LOCAL). glibc matches an already-loaded object by path (and by SONAME) before it
// opens anything, so the object it returns is confirmed before any use:
//   - its link map's name is this path, its dynamic array lies in a mapping of this memfd's
//     inode (/proc/self/maps: device and inode), and dlsym's clawguard_plugin_v1 belongs to it;
//   - its handle is not one this process's loader already holds.
// Any failure drops the reference and refuses (kLoadFailed). Then clawguard_plugin_v1() is
// called: abi must equal the manifest's and CLAWGUARD_PLUGIN_ABI (kAbiMismatch), flags only
// CG_PLUGIN_SERIAL (kLoadFailed), init(host) must return 0 (kLoadFailed).
//
// Unloading: after dlclose the path is probed with RTLD_NOLOAD. A library that stayed mapped
// (DF_1_NODELETE, an STB_GNU_UNIQUE symbol such as a C++ inline static, pending thread_local
// destructors) would still answer to "/proc/self/fd/N": its memfd is then kept open for the life
// of the process, so the number is never reused and no later plugin can be handed the old code.
// The same holds after a refused load (the constructors ran; the library may stay).
// Where the kernel refuses executable memfds (noexec mounts, vm.memfd_noexec) the load fails
// closed with kLoadFailed saying so.
// WARNING: the library's constructors run inside dlopen; every check must be done before.
#ifndef CLAWGUARD_LOADER_MEMFD_LOADER_H_
#define CLAWGUARD_LOADER_MEMFD_LOADER_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "clawguard/error.h"
#include "clawguard/plugin.h"
#include "clawguard/unique_fd.h"

namespace clawguard {

// MemfdLibrary owns one loaded plugin library and its memfd. On destruction: shutdown() (if
// init succeeded), dlclose, then the memfd is closed — or kept for the life of the process when
// the library is still mapped.
class MemfdLibrary {
 public:
  ~MemfdLibrary();
  MemfdLibrary(const MemfdLibrary&) = delete;
  MemfdLibrary& operator=(const MemfdLibrary&) = delete;

  // plugin is the entry point's table (owned by the library; valid while this object lives).
  const cg_plugin* plugin() const { return plugin_; }
  int fd() const;

  struct Impl;

 private:
  friend Result<std::unique_ptr<MemfdLibrary>> LoadFromSealedMemfd(UniqueFd, int, int64_t,
                                                                   const cg_host_api*);
  explicit MemfdLibrary(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  const cg_plugin* plugin_ = nullptr;
};

// LoadFromMemfd loads |library| (already checked) under the memfd name |name|; |manifest_abi|
// is the signed manifest's abi; |host| is passed to init (may be null only in tests whose
// plugin ignores it). Thread-safe.
Result<std::unique_ptr<MemfdLibrary>> LoadFromMemfd(std::string_view library, std::string_view name,
                                                    int64_t manifest_abi, const cg_host_api* host);

// CreateSealedMemfd returns a memfd named |name| holding exactly |library|, sealed against
// writing, growing and shrinking (the first half of LoadFromMemfd; a worker process gets it).
Result<UniqueFd> CreateSealedMemfd(std::string_view library, std::string_view name);

// LoadFromSealedMemfd is the second half: |fd| must carry the seals CreateSealedMemfd sets (else
// kLoadFailed). |maps_fd|, when >= 0, is an open /proc/self/maps to read the mapping check from
// (a sandboxed worker cannot open it once confined); -1 opens it here.
Result<std::unique_ptr<MemfdLibrary>> LoadFromSealedMemfd(UniqueFd fd, int maps_fd,
                                                          int64_t manifest_abi,
                                                          const cg_host_api* host);

// RetainedLibraryCount is how many unloaded plugin libraries stayed mapped after dlclose (their
// memfds are kept open for the life of the process). Thread-safe.
size_t RetainedLibraryCount();

}  // namespace clawguard

#endif  // CLAWGUARD_LOADER_MEMFD_LOADER_H_
