// worker_cgroup.cpp — see worker_cgroup.h. Kernel references:
// Documentation/admin-guide/cgroup-v2.rst
// ("No Internal Process Constraint", "Delegation"), Documentation/admin-guide/cgroup-v1/memory.rst,
// proc(5) for /proc/self/mountinfo.
#include "host/sandbox/worker_cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "clawguard/unique_fd.h"

namespace clawguard::sandbox {
namespace {

constexpr size_t kMaxControlFile = 64 * 1024;  // /proc/self/mountinfo of a busy machine fits

std::vector<std::string_view> SplitOn(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    const size_t at = s.find(sep, start);
    out.push_back(
        s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

bool HasToken(std::string_view list, char sep, std::string_view token) {
  for (std::string_view t : SplitOn(list, sep)) {
    if (t == token) return true;
  }
  return false;
}

// Unescape decodes mountinfo's octal escapes (\040 for a space, \011, \012, \134).
std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
        s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
      out.push_back(
          static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// Joined is |mount| followed by |path| relative to the mount's |root|; nullopt if |path| is not
// under |root|.
std::optional<std::string> Joined(const std::string& mount, const std::string& root,
                                  const std::string& path) {
  std::string rest;
  if (root == "/") {
    rest = path;
  } else if (path == root) {
    rest = "/";
  } else if (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
             path[root.size()] == '/') {
    rest = path.substr(root.size());
  } else {
    return std::nullopt;
  }
  if (rest == "/") return mount;
  return (mount == "/" ? std::string() : mount) + rest;
}

Status Invalid(std::string m) { return Status(Reason::kConfigInvalid, std::move(m)); }

Result<std::string> ReadControl(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Invalid("cannot open " + path + ": " + std::strerror(errno));
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Invalid("cannot read " + path + ": " + std::strerror(errno));
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > kMaxControlFile) return Invalid(path + " is larger than 64 KiB");
  }
}

// WriteControl writes |text| to an existing control file with one write (no O_CREAT: a path that
// is not a cgroup file fails instead of becoming a regular file). Returns 0 or the errno.
int WriteControl(const std::string& path, std::string_view text) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return errno;
  const ssize_t w = ::write(fd.get(), text.data(), text.size());
  if (w < 0) return errno;
  return static_cast<size_t>(w) == text.size() ? 0 : EIO;
}

Status WriteOrFail(const std::string& path, std::string_view text) {
  const int e = WriteControl(path, text);
  if (e == 0) return Status::Ok();
  return Status(Reason::kInternal, "worker cgroup: cannot write '" + std::string(text) + "' to " +
                                       path + ": " + std::strerror(e));
}

// RemoveDir removes a cgroup directory; a cgroup whose last process has only just been reaped may
// be busy for a moment.
void RemoveDir(const std::string& dir) {
  for (int i = 0; i < 50; ++i) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return;
    if (errno != EBUSY) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// RemoveStale removes the worker cgroups a host that is gone left behind (one killed before it
// could remove them). Only those of a pid with no process: another host's in this cgroup may be
// between creating a directory and placing its worker there. One that still holds a process is
// busy and stays.
void RemoveStale(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  constexpr std::string_view kPrefix = "clawguard-worker-";
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name(e->d_name);
    if (name.substr(0, kPrefix.size()) != kPrefix) continue;
    const std::string_view rest = name.substr(kPrefix.size());
    const size_t dash = rest.find('-');
    if (dash == std::string_view::npos || dash == 0 || dash > 9) continue;
    pid_t pid = 0;
    bool digits = true;
    for (char c : rest.substr(0, dash)) {
      digits = digits && c >= '0' && c <= '9';
      pid = pid * 10 + (c - '0');
    }
    if (!digits || pid <= 0 || pid == ::getpid()) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
    (void)::rmdir((dir + "/" + std::string(name)).c_str());
  }
  ::closedir(d);
}

}  // namespace

Result<CgroupLocation> FindMemoryCgroup(std::string_view proc_self_cgroup,
                                        std::string_view mountinfo) {
  std::optional<std::string> v1_path, v2_path;
  for (std::string_view line : SplitOn(proc_self_cgroup, '\n')) {
    if (line.empty()) continue;
    const size_t a = line.find(':');
    const size_t b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    const std::string_view id = line.substr(0, a), controllers = line.substr(a + 1, b - a - 1);
    const std::string path(line.substr(b + 1));
    if (id == "0" && controllers.empty()) {
      v2_path = path;
    } else if (HasToken(controllers, ',', "memory")) {
      v1_path = path;
    }
  }
  if (!v1_path && !v2_path)
    return Invalid("/proc/self/cgroup names no hierarchy with the memory controller");
  const CgroupVersion version = v1_path ? CgroupVersion::kV1 : CgroupVersion::kV2;
  const std::string& path = v1_path ? *v1_path : *v2_path;
  for (std::string_view line : SplitOn(mountinfo, '\n')) {
    // id parent major:minor root mount-point options [optional fields...] - type source super
    const size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    const std::vector<std::string_view> head = SplitOn(line.substr(0, dash), ' ');
    const std::vector<std::string_view> tail = SplitOn(line.substr(dash + 3), ' ');
    if (head.size() < 6 || tail.size() < 3) continue;
    const std::string_view type = tail[0], super = tail[2];
    if (version == CgroupVersion::kV1 ? (type != "cgroup" || !HasToken(super, ',', "memory"))
                                      : type != "cgroup2") {
      continue;
    }
    if (std::optional<std::string> dir = Joined(Unescape(head[4]), Unescape(head[3]), path))
      return CgroupLocation{version, *dir};
  }
  return Invalid(std::string("no mount of the cgroup ") +
                 (version == CgroupVersion::kV1 ? "v1 memory hierarchy" : "v2 hierarchy") +
                 " holds this process's cgroup " + path);
}

Result<std::shared_ptr<WorkerCgroups>> WorkerCgroups::Open() {
  CLAWGUARD_ASSIGN_OR_RETURN(std::string cgroup, ReadControl("/proc/self/cgroup"));
  CLAWGUARD_ASSIGN_OR_RETURN(std::string mountinfo, ReadControl("/proc/self/mountinfo"));
  CLAWGUARD_ASSIGN_OR_RETURN(CgroupLocation where, FindMemoryCgroup(cgroup, mountinfo));
  return OpenAt(where);
}

Result<std::shared_ptr<WorkerCgroups>> WorkerCgroups::OpenAt(const CgroupLocation& where) {
  if (where.version == CgroupVersion::kV2) {
    CLAWGUARD_ASSIGN_OR_RETURN(std::string controllers,
                               ReadControl(where.dir + "/cgroup.controllers"));
    if (!controllers.empty() && controllers.back() == '\n') controllers.pop_back();
    if (!HasToken(controllers, ' ', "memory")) {
      return Invalid("the memory controller is not delegated to " + where.dir +
                     " (its cgroup.controllers: '" + controllers +
                     "'; under systemd: Delegate=memory)");
    }
    CLAWGUARD_ASSIGN_OR_RETURN(std::string enabled,
                               ReadControl(where.dir + "/cgroup.subtree_control"));
    if (!enabled.empty() && enabled.back() == '\n') enabled.pop_back();
    if (!HasToken(enabled, ' ', "memory")) {
      // No internal processes: the host leaves its cgroup for a child of it first.
      const std::string host = where.dir + "/clawguard-host";
      if (::mkdir(host.c_str(), 0755) != 0 && errno != EEXIST)
        return Invalid("cannot create " + host + ": " + std::strerror(errno));
      if (int e = WriteControl(host + "/cgroup.procs", "0"); e != 0) {
        return Invalid("cannot move the host into " + host + ": " + std::strerror(e));
      }
      if (int e = WriteControl(where.dir + "/cgroup.subtree_control", "+memory"); e != 0) {
        return Invalid("cannot enable the memory controller in " + where.dir +
                       "/cgroup.subtree_control: " + std::strerror(e) +
                       (e == EBUSY ? " (another process is in that cgroup)" : ""));
      }
    }
  }
  RemoveStale(where.dir);
  std::shared_ptr<WorkerCgroups> cgroups(new WorkerCgroups(where));
  // One worker cgroup made and removed: a host that cannot use them learns it now.
  auto probe = cgroups->Create(64ull << 20);
  if (!probe.ok()) return Invalid(probe.error().message());
  return cgroups;
}

std::string WorkerCgroups::Describe() const {
  return std::string(where_.version == CgroupVersion::kV1 ? "cgroup v1 " : "cgroup v2 ") +
         where_.dir;
}

Result<std::unique_ptr<WorkerCgroup>> WorkerCgroups::Create(uint64_t limit_bytes) {
  static std::atomic<uint64_t> next{0};
  const std::string dir = where_.dir + "/clawguard-worker-" + std::to_string(::getpid()) + "-" +
                          std::to_string(next.fetch_add(1));
  if (::mkdir(dir.c_str(), 0755) != 0) {
    // A directory of an earlier host that had this pid (it died before removing it).
    if (errno != EEXIST || ::rmdir(dir.c_str()) != 0 || ::mkdir(dir.c_str(), 0755) != 0) {
      return Status(Reason::kInternal,
                    "worker cgroup: cannot create " + dir + ": " + std::strerror(errno));
    }
  }
  std::unique_ptr<WorkerCgroup> cg(new WorkerCgroup(where_.version, dir, limit_bytes));
  const std::string limit = std::to_string(limit_bytes);
  if (where_.version == CgroupVersion::kV1) {
    CLAWGUARD_RETURN_IF_ERROR(WriteOrFail(dir + "/memory.limit_in_bytes", limit));
    // Swap counts too where the kernel accounts it (memsw ≥ memory, so written second).
    if (int e = WriteControl(dir + "/memory.memsw.limit_in_bytes", limit); e != 0 && e != ENOENT) {
      return Status(Reason::kInternal, "worker cgroup: cannot write " + dir +
                                           "/memory.memsw.limit_in_bytes: " + std::strerror(e));
    }
  } else {
    CLAWGUARD_RETURN_IF_ERROR(WriteOrFail(dir + "/memory.max", limit));
    if (int e = WriteControl(dir + "/memory.swap.max", "0"); e != 0 && e != ENOENT) {
      return Status(Reason::kInternal,
                    "worker cgroup: cannot write " + dir + "/memory.swap.max: " + std::strerror(e));
    }
    (void)WriteControl(dir + "/memory.oom.group", "1");
  }
  return cg;
}

WorkerCgroup::~WorkerCgroup() { RemoveDir(dir_); }

uint64_t WorkerCgroup::OomKills() const {
  auto text = ReadControl(
      dir_ + (version_ == CgroupVersion::kV1 ? "/memory.oom_control" : "/memory.events"));
  if (!text.ok()) return 0;
  for (std::string_view line : SplitOn(*text, '\n')) {
    constexpr std::string_view kKey = "oom_kill ";
    if (line.substr(0, kKey.size()) != kKey) continue;
    uint64_t n = 0;
    for (char c : line.substr(kKey.size())) {
      if (c < '0' || c > '9') break;
      n = n * 10 + static_cast<uint64_t>(c - '0');
    }
    return n;
  }
  return 0;
}

}  // namespace clawguard::sandbox
