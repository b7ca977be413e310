// memfd_loader.cpp — see memfd_loader.h. What glibc does on dlopen: elf/dl-load.c
// (_dl_map_object matches loaded objects by name and SONAME, _dl_map_object_from_fd by file
// identity); on dlclose: elf/dl-close.c (nodelete, unique symbols, TLS destructors keep objects).
#include "memfd_loader.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>
#include <vector>

#include "clawguard/unique_fd.h"
#include "core/mutex.h"

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U  // Linux 6.3: ask for an executable memfd where vm.memfd_noexec is set
#endif

namespace clawguard {
namespace {

// g_mu serialises dlopen + confirmation and dlclose + probe + close, so that an fd number is
// never released while a library still answers to its path. Loads are rare.
Mutex g_mu;
std::set<void*> g_held CLAWGUARD_GUARDED_BY(g_mu);  // handles of loaded plugins
// Memfds of libraries that outlived dlclose.
std::vector<int> g_retained_fds CLAWGUARD_GUARDED_BY(g_mu);

Status LoadFailed(std::string m) { return Status(Reason::kLoadFailed, std::move(m)); }

Result<UniqueFd> MakeSealedMemfd(std::string_view bytes, std::string_view name) {
  const std::string n(name.substr(0, 200));
  int raw = ::memfd_create(n.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
  if (raw < 0 && errno == EINVAL) raw = ::memfd_create(n.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (raw < 0) {
    const int e = errno;
    return LoadFailed(std::string("memfd_create failed: ") + std::strerror(e) +
                      (e == EACCES || e == EPERM
                           ? " (the kernel refuses executable memfds: vm.memfd_noexec; loading "
                             "fails closed)"
                           : ""));
  }
  UniqueFd fd(raw);
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t w = ::write(fd.get(), bytes.data() + off, bytes.size() - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      return LoadFailed(std::string("cannot write the memfd: ") + std::strerror(errno));
    }
    off += static_cast<size_t>(w);
  }
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) !=
      0) {
    return LoadFailed(std::string("cannot seal the memfd: ") + std::strerror(errno));
  }
  return fd;
}

std::string DlError() {
  const char* e = ::dlerror();
  return e != nullptr ? e : "unknown dlerror";
}

// MappingIdentity finds the line of /proc/self/maps (read from |maps_fd| when it is open — a
// worker opens it before its sandbox is closed — else opened here) that holds |addr| and returns
// its device and inode ("maj:min" in hex, inode in decimal).
struct MapIdentity {
  unsigned major = 0, minor = 0;
  uint64_t inode = 0;
};
std::optional<MapIdentity> MappingIdentity(uintptr_t addr, int maps_fd) {
  UniqueFd own;
  if (maps_fd < 0) {
    own.Reset(::open("/proc/self/maps", O_RDONLY | O_CLOEXEC));
    if (!own.valid()) return std::nullopt;
    maps_fd = own.get();
  }
  std::string text;
  char chunk[16384];
  for (off_t off = 0;;) {
    const ssize_t n = ::pread(maps_fd, chunk, sizeof(chunk), off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    text.append(chunk, static_cast<size_t>(n));
    off += n;
    if (text.size() > (size_t{64} << 20)) return std::nullopt;
  }
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    const std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    uintptr_t start = 0, end = 0;
    MapIdentity id;
    unsigned long long inode = 0;
    // NOLINTNEXTLINE(cert-err34-c): the kernel writes these fields, each within its type's width
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " %*s %*s %x:%x %llu", &start, &end,
                    &id.major, &id.minor, &inode) != 5) {
      continue;
    }
    if (addr >= start && addr < end) {
      id.inode = inode;
      return id;
    }
  }
  return std::nullopt;
}

// Confirm proves that |handle| is the object mapped from |fd| under |path| (see the header).
Status Confirm(void* handle, int fd, const std::string& path, int maps_fd) {
  link_map* lm = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || lm == nullptr) {
    return LoadFailed("dlinfo(RTLD_DI_LINKMAP) failed: " + DlError());
  }
  if (lm->l_name == nullptr || path != lm->l_name) {
    return LoadFailed(std::string("dlopen returned the already-loaded object '") +
                      (lm->l_name ? lm->l_name : "") + "' for " + path +
                      " (glibc matched it by name); refusing it");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return LoadFailed(std::string("cannot stat the memfd: ") + std::strerror(errno));
  const auto id = MappingIdentity(reinterpret_cast<uintptr_t>(lm->l_ld), maps_fd);
  if (!id)
    return LoadFailed("the loaded object's dynamic array is in no mapping of /proc/self/maps");
  if (id->major != major(st.st_dev) || id->minor != minor(st.st_dev) || id->inode != st.st_ino) {
    return LoadFailed("the loaded object is not mapped from this memfd (inode " +
                      std::to_string(id->inode) + ", expected " + std::to_string(st.st_ino) +
                      "); refusing it");
  }
  return Status::Ok();
}

// Release drops |handle| (when set) and closes |fd| — unless a library still answers to |path|,
// in which case the fd is kept for the life of the process. Caller holds g_mu.
void ReleaseLocked(void* handle, UniqueFd& fd, const std::string& path) CLAWGUARD_REQUIRES(g_mu) {
  if (handle != nullptr) {
    g_held.erase(handle);
    (void)::dlclose(handle);
  }
  if (!fd.valid()) return;
  void* still = ::dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (still == nullptr) {
    (void)::dlerror();
    fd.Reset();
    return;
  }
  (void)::dlclose(still);  // drop the probe's own reference
  g_retained_fds.push_back(fd.Release());
}

}  // namespace

struct MemfdLibrary::Impl {
  UniqueFd fd;
  std::string path;
  void* handle = nullptr;
  bool initialised = false;

  ~Impl() {
    MutexLock lock(g_mu);
    ReleaseLocked(handle, fd, path);
  }
};

MemfdLibrary::MemfdLibrary(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

int MemfdLibrary::fd() const { return impl_->fd.get(); }

MemfdLibrary::~MemfdLibrary() {
  if (!impl_) return;
  if (impl_->initialised && plugin_ != nullptr && plugin_->shutdown != nullptr) plugin_->shutdown();
  impl_.reset();  // dlclose, probe, close or retain the memfd
}

size_t RetainedLibraryCount() {
  MutexLock lock(g_mu);
  return g_retained_fds.size();
}

Result<UniqueFd> CreateSealedMemfd(std::string_view library, std::string_view name) {
  return MakeSealedMemfd(library, name);
}

Result<std::unique_ptr<MemfdLibrary>> LoadFromMemfd(std::string_view library, std::string_view name,
                                                    int64_t manifest_abi, const cg_host_api* host) {
  CLAWGUARD_ASSIGN_OR_RETURN(UniqueFd fd, MakeSealedMemfd(library, name));
  return LoadFromSealedMemfd(std::move(fd), -1, manifest_abi, host);
}

Result<std::unique_ptr<MemfdLibrary>> LoadFromSealedMemfd(UniqueFd fd, int maps_fd,
                                                          int64_t manifest_abi,
                                                          const cg_host_api* host) {
  constexpr int kSeals = F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL;
  const int seals = ::fcntl(fd.get(), F_GET_SEALS);
  if (seals < 0 || (seals & kSeals) != kSeals) {
    return LoadFailed("the library's memfd is not sealed against writes (F_GET_SEALS " +
                      std::to_string(seals) + "); refusing it");
  }
  auto impl = std::make_unique<MemfdLibrary::Impl>();
  impl->fd = std::move(fd);
  impl->path = "/proc/self/fd/" + std::to_string(impl->fd.get());
  {
    MutexLock lock(g_mu);
    (void)::dlerror();
    void* handle = ::dlopen(impl->path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      std::string msg = "dlopen of the sealed memfd failed: " + DlError();
      if (msg.find("ermission") != std::string::npos ||
          msg.find("map segment") != std::string::npos) {
        msg +=
            " (the kernel may refuse executable memfds: noexec or vm.memfd_noexec; loading fails "
            "closed)";
      }
      return LoadFailed(msg);  // ~Impl probes the path and closes the memfd
    }
    if (!g_held.insert(handle).second) {
      // Not ours to forget: drop only our reference; ~Impl keeps the fd if the path still answers.
      (void)::dlclose(handle);
      return LoadFailed(
          "dlopen returned a handle this loader already holds (glibc matched an already-loaded "
          "library); refusing it");
    }
    impl->handle = handle;
    CLAWGUARD_RETURN_IF_ERROR(Confirm(handle, impl->fd.get(), impl->path, maps_fd));
  }
  (void)::dlerror();
  void* entry_sym = ::dlsym(impl->handle, "clawguard_plugin_v1");
  if (entry_sym == nullptr)
    return LoadFailed("clawguard_plugin_v1 not found by dlsym: " + DlError());
  Dl_info where{};
  link_map* owner = nullptr;
  link_map* self = nullptr;
  if (::dladdr1(entry_sym, &where, reinterpret_cast<void**>(&owner), RTLD_DL_LINKMAP) == 0 ||
      ::dlinfo(impl->handle, RTLD_DI_LINKMAP, &self) != 0 || owner != self) {
    return LoadFailed(
        "dlsym's clawguard_plugin_v1 does not belong to the loaded plugin; refusing it");
  }
  std::unique_ptr<MemfdLibrary> out(new MemfdLibrary(std::move(impl)));
  using EntryFn = const cg_plugin* (*)();
  auto entry = reinterpret_cast<EntryFn>(entry_sym);
  const cg_plugin* plugin = entry();
  if (plugin == nullptr) return LoadFailed("clawguard_plugin_v1() returned NULL");
  if (plugin->abi != CLAWGUARD_PLUGIN_ABI || static_cast<int64_t>(plugin->abi) != manifest_abi) {
    return Status(Reason::kAbiMismatch, "the plugin reports abi " + std::to_string(plugin->abi) +
                                            "; the manifest says " + std::to_string(manifest_abi) +
                                            " and this host speaks " +
                                            std::to_string(CLAWGUARD_PLUGIN_ABI));
  }
  if ((plugin->flags & ~CG_PLUGIN_SERIAL) != 0) {
    return LoadFailed("the plugin sets unknown flag bits " + std::to_string(plugin->flags));
  }
  if (plugin->init == nullptr || plugin->handle_webhook == nullptr) {
    return LoadFailed("the plugin's init or handle_webhook is NULL");
  }
  const int rc = plugin->init(host);
  if (rc != 0) return LoadFailed("the plugin's init returned " + std::to_string(rc));
  out->plugin_ = plugin;
  out->impl_->initialised = true;
  return out;
}

}  // namespace clawguard
