// worker_cgroup.h — a memory cgroup per plugin worker: the bound on what a worker costs the kernel.
//
// RLIMIT_AS (lockdown.h) counts the worker's mappings, not the kernel memory behind them: a plugin
// that maps tens of thousands of single pages far apart holds page tables worth twice what it is
// counted for. A memory cgroup counts page tables, kernel stacks and the worker's pages together,
// and its limit ends the worker with the kernel's OOM killer.
//
// WorkerCgroups::Open finds the memory controller of the host's own cgroup (/proc/self/cgroup and
// /proc/self/mountinfo):
//   - cgroup v1 (the memory controller on a hierarchy of its own): each worker's cgroup is a child
//     of the host's; memory.limit_in_bytes (and memory.memsw.limit_in_bytes, when swap is
//     accounted) hold the limit.
//   - cgroup v2: a cgroup that holds processes cannot enable controllers for its children (the
//     "no internal processes" rule), so Open first moves the host process into a child
//     "clawguard-host" of its own cgroup, then enables +memory there; each worker's cgroup is
//     another child; memory.max holds the limit, memory.swap.max 0 and memory.oom.group 1. Under
//     systemd the unit needs Delegate=memory (docs/OPERATIONS.md).
// Open removes the empty worker cgroups of hosts that are gone (a host killed before it could
// remove them), then makes and removes one, so that a host that cannot use them learns it at
// start. Its error says which file or step failed and why.
//
// WorkerCgroup::Create makes one worker's cgroup before it is spawned (SpawnRequest::cgroup_procs:
// the child waits until the host has placed it there, before it runs the worker's code). After the
// worker is reaped, OomKills says whether the kernel ended it at the limit; the destructor removes
// the directory.
//
// Thread-safe: WorkerCgroups is immutable after Open; worker cgroups are named by the host's pid
// and a counter of the process, so several WorkerCgroups of one process never collide.
#ifndef CLAWGUARD_HOST_SANDBOX_WORKER_CGROUP_H_
#define CLAWGUARD_HOST_SANDBOX_WORKER_CGROUP_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "clawguard/error.h"

namespace clawguard::sandbox {

enum class CgroupVersion { kV1, kV2 };

// CgroupLocation is the host's own cgroup directory on the hierarchy with the memory controller.
struct CgroupLocation {
  CgroupVersion version = CgroupVersion::kV2;
  std::string dir;  // e.g. /sys/fs/cgroup/system.slice/clawguard-host.service
};

// FindMemoryCgroup reads the texts of /proc/self/cgroup and /proc/self/mountinfo. A v1 hierarchy
// that has the memory controller wins (the controller is then not on v2); otherwise the v2 line.
// kConfigInvalid says what is missing (no memory hierarchy, no mount of it, a cgroup outside the
// mount's root).
Result<CgroupLocation> FindMemoryCgroup(std::string_view proc_self_cgroup,
                                        std::string_view mountinfo);

class WorkerCgroup;

class WorkerCgroups {
 public:
  // Open: see the file comment. kConfigInvalid says why this host cannot have worker cgroups.
  static Result<std::shared_ptr<WorkerCgroups>> Open();
  static Result<std::shared_ptr<WorkerCgroups>> OpenAt(const CgroupLocation& where);

  // Create makes one worker's cgroup holding at most |limit_bytes| of memory (page tables and the
  // rest of the kernel memory charged to it included; no swap). kInternal names the failing file.
  Result<std::unique_ptr<WorkerCgroup>> Create(uint64_t limit_bytes);

  const CgroupLocation& location() const { return where_; }
  // Describe: "cgroup v1 /sys/fs/cgroup/memory/…" for the start-up log.
  std::string Describe() const;

 private:
  explicit WorkerCgroups(CgroupLocation where) : where_(std::move(where)) {}
  CgroupLocation where_;
};

class WorkerCgroup {
 public:
  ~WorkerCgroup();  // removes the directory (its worker must have been reaped)
  WorkerCgroup(const WorkerCgroup&) = delete;
  WorkerCgroup& operator=(const WorkerCgroup&) = delete;

  const std::string& dir() const { return dir_; }
  // The file the worker's pid is written to (SpawnRequest::cgroup_procs).
  std::string procs() const { return dir_ + "/cgroup.procs"; }
  uint64_t limit() const { return limit_; }
  // OomKills: processes the kernel's OOM killer ended in this cgroup (0 if it cannot be read).
  uint64_t OomKills() const;

 private:
  friend class WorkerCgroups;
  WorkerCgroup(CgroupVersion version, std::string dir, uint64_t limit)
      : version_(version), dir_(std::move(dir)), limit_(limit) {}
  CgroupVersion version_;
  std::string dir_;
  uint64_t limit_;
};

}  // namespace clawguard::sandbox

#endif  // CLAWGUARD_HOST_SANDBOX_WORKER_CGROUP_H_
