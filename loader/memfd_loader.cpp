// memfd_loader.cpp — see memfd_loader.h.
#include "memfd_loader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <boost/dll/shared_library.hpp>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>

#include "clawguard/unique_fd.h"

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U  // Linux 6.3: ask for an executable memfd where vm.memfd_noexec is set
#endif

namespace clawguard {
namespace {

// HeldHandles is this process's loader registry of dlopen handles.
std::mutex g_held_mu;
std::set<void*>& HeldHandles() {
  static std::set<void*> held;
  return held;
}

Result<UniqueFd> MakeSealedMemfd(std::string_view bytes, std::string_view name) {
  const std::string n(name.substr(0, 200));
  int raw = ::memfd_create(n.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
  if (raw < 0 && errno == EINVAL) raw = ::memfd_create(n.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (raw < 0) {
    const int e = errno;
    return Status(Reason::kLoadFailed, std::string("memfd_create failed: ") + std::strerror(e) +
                                           (e == EACCES || e == EPERM ? " (the kernel refuses executable memfds: "
                                                                        "vm.memfd_noexec; loading fails closed)" : ""));
  }
  UniqueFd fd(raw);
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t w = ::write(fd.get(), bytes.data() + off, bytes.size() - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status(Reason::kLoadFailed, std::string("cannot write the memfd: ") + std::strerror(errno));
    }
    off += static_cast<size_t>(w);
  }
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0) {
    return Status(Reason::kLoadFailed, std::string("cannot seal the memfd: ") + std::strerror(errno));
  }
  return fd;
}

}  // namespace

struct MemfdLibrary::Impl {
  UniqueFd fd;
  boost::dll::shared_library lib;
  void* handle = nullptr;
  bool initialised = false;
};

MemfdLibrary::MemfdLibrary(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

int MemfdLibrary::fd() const { return impl_->fd.get(); }

MemfdLibrary::~MemfdLibrary() {
  if (!impl_) return;
  if (impl_->initialised && plugin_ != nullptr && plugin_->shutdown != nullptr) plugin_->shutdown();
  impl_->lib.unload();
  if (impl_->handle != nullptr) {
    std::lock_guard<std::mutex> lock(g_held_mu);
    HeldHandles().erase(impl_->handle);
  }
  impl_->fd.Reset();  // only after dlclose: the path must not be reused while loaded
}

Result<std::unique_ptr<MemfdLibrary>> LoadFromMemfd(std::string_view library, std::string_view name,
                                                    int64_t manifest_abi, const cg_host_api* host) {
  auto impl = std::make_unique<MemfdLibrary::Impl>();
  CLAWGUARD_ASSIGN_OR_RETURN(impl->fd, MakeSealedMemfd(library, name));
  const std::string path = "/proc/self/fd/" + std::to_string(impl->fd.get());
  boost::dll::fs::error_code ec;
  try {
    impl->lib.load(path, ec, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    return Status(Reason::kLoadFailed, std::string("dlopen threw: ") + e.what());
  }
  if (ec || !impl->lib.is_loaded()) {
    std::string msg = "dlopen of the sealed memfd failed: " + ec.message();
    if (ec.value() == EACCES || ec.value() == EPERM || msg.find("ermission") != std::string::npos ||
        msg.find("map segment") != std::string::npos) {
      msg += " (the kernel may refuse executable memfds: noexec or vm.memfd_noexec; loading fails closed)";
    }
    return Status(Reason::kLoadFailed, msg);
  }
  impl->handle = reinterpret_cast<void*>(impl->lib.native());
  {
    std::lock_guard<std::mutex> lock(g_held_mu);
    if (!HeldHandles().insert(impl->handle).second) {
      impl->handle = nullptr;  // not ours to forget; lib.unload() drops only our reference
      return Status(Reason::kLoadFailed, "dlopen returned a handle this loader already holds (glibc matched an "
                                         "already-loaded library); refusing it");
    }
  }
  std::unique_ptr<MemfdLibrary> out(new MemfdLibrary(std::move(impl)));
  using EntryFn = const cg_plugin* (*)();
  if (!out->impl_->lib.has(std::string("clawguard_plugin_v1"))) {
    return Status(Reason::kLoadFailed, "clawguard_plugin_v1 not found by dlsym");
  }
  EntryFn entry = nullptr;
  try {
    entry = out->impl_->lib.get<const cg_plugin*()>(std::string("clawguard_plugin_v1"));
  } catch (const std::exception& e) {
    return Status(Reason::kLoadFailed, std::string("dlsym(clawguard_plugin_v1) failed: ") + e.what());
  }
  const cg_plugin* plugin = entry != nullptr ? entry() : nullptr;
  if (plugin == nullptr) return Status(Reason::kLoadFailed, "clawguard_plugin_v1() returned NULL");
  if (plugin->abi != CLAWGUARD_PLUGIN_ABI || static_cast<int64_t>(plugin->abi) != manifest_abi) {
    return Status(Reason::kAbiMismatch, "the plugin reports abi " + std::to_string(plugin->abi) + "; the manifest says " +
                                            std::to_string(manifest_abi) + " and this host speaks " +
                                            std::to_string(CLAWGUARD_PLUGIN_ABI));
  }
  if ((plugin->flags & ~CG_PLUGIN_SERIAL) != 0) {
    return Status(Reason::kLoadFailed, "the plugin sets unknown flag bits " + std::to_string(plugin->flags));
  }
  if (plugin->init == nullptr || plugin->handle_webhook == nullptr) {
    return Status(Reason::kLoadFailed, "the plugin's init or handle_webhook is NULL");
  }
  const int rc = plugin->init(host);
  if (rc != 0) return Status(Reason::kLoadFailed, "the plugin's init returned " + std::to_string(rc));
  out->plugin_ = plugin;
  out->impl_->initialised = true;
  return out;
}

}  // namespace clawguard
