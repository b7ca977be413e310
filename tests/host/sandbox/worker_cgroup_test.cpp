// worker_cgroup_test.cpp — host/sandbox/worker_cgroup.h: finding the host's memory cgroup in the
// texts of /proc/self/cgroup and /proc/self/mountinfo (both hierarchies, cgroup namespaces,
// escaped mount points, what is missing), and, on this machine's kernel, a worker spawned into a
// cgroup of its own: placed there before it runs, ended by the kernel at the limit, the directory
// removed after.
#include "host/sandbox/worker_cgroup.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "host/sandbox/worker_spawn.h"
#include "support/temp_dir.h"

namespace clawguard::sandbox {
namespace {

constexpr char kV1Cgroup[] = "9:name=systemd:/\n4:memory:/process_api/e49e\n1:cpu:/\n0::/\n";
constexpr char kV1Mounts[] =
    "30 25 0:26 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 25 0:29 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "38 25 0:34 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
constexpr char kV2Cgroup[] = "0::/system.slice/clawguard-host.service\n";
constexpr char kV2Mounts[] =
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";

TEST(FindMemoryCgroup, TakesTheV1MemoryHierarchyWhenThereIsOne) {
  auto at = FindMemoryCgroup(kV1Cgroup, kV1Mounts);
  ASSERT_TRUE(at.ok()) << at.error().ToString();
  EXPECT_EQ(at->version, CgroupVersion::kV1);
  EXPECT_EQ(at->dir, "/sys/fs/cgroup/memory/process_api/e49e");
}

TEST(FindMemoryCgroup, TakesTheV2HierarchyOtherwise) {
  auto at = FindMemoryCgroup(kV2Cgroup, kV2Mounts);
  ASSERT_TRUE(at.ok()) << at.error().ToString();
  EXPECT_EQ(at->version, CgroupVersion::kV2);
  EXPECT_EQ(at->dir, "/sys/fs/cgroup/system.slice/clawguard-host.service");
}

TEST(FindMemoryCgroup, JoinsAMountOfASubtreeAndUnescapesItsPath) {
  // A container's cgroup namespace root, mounted at a path with a space (\040).
  auto at = FindMemoryCgroup("0::/a/b\n", "40 1 0:30 /a /mnt/cg\\040x rw - cgroup2 cgroup2 rw\n");
  ASSERT_TRUE(at.ok()) << at.error().ToString();
  EXPECT_EQ(at->dir, "/mnt/cg x/b");
  auto root = FindMemoryCgroup("0::/a\n", "40 1 0:30 /a /mnt/cg rw - cgroup2 cgroup2 rw\n");
  ASSERT_TRUE(root.ok()) << root.error().ToString();
  EXPECT_EQ(root->dir, "/mnt/cg");
  // "/ab" is not under "/a".
  auto outside = FindMemoryCgroup("0::/ab\n", "40 1 0:30 /a /mnt/cg rw - cgroup2 cgroup2 rw\n");
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.error().message().find("no mount of the cgroup v2 hierarchy"),
            std::string::npos);
}

TEST(FindMemoryCgroup, SaysWhatIsMissing) {
  auto none = FindMemoryCgroup("1:cpu:/\n", kV1Mounts);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().reason(), Reason::kConfigInvalid);
  EXPECT_NE(none.error().message().find("no hierarchy with the memory controller"),
            std::string::npos);
  auto unmounted = FindMemoryCgroup(kV1Cgroup, "30 25 0:26 / /c rw - cgroup cgroup rw,cpu\n");
  ASSERT_FALSE(unmounted.ok());
  EXPECT_NE(unmounted.error().message().find("v1 memory hierarchy"), std::string::npos);
  // Lines that are not mountinfo lines are skipped, not misread.
  EXPECT_FALSE(FindMemoryCgroup(kV2Cgroup, "garbage\n - \n1 2 3\n").ok());
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void Reap(int pidfd) {
  siginfo_t info{};
  while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd), &info, WEXITED) != 0 &&
         errno == EINTR) {
  }
}

TEST(SpawnWorker, AWorkerIsTheKernelsFirstChoiceWhenMemoryRunsOut) {
  for (const bool namespaces : {true, false}) {
    SpawnRequest req;
    req.executable = "/bin/sleep";
    req.argv = {"/bin/sleep", "30"};
    req.namespaces = namespaces;
    auto proc = SpawnWorker(req);
    ASSERT_TRUE(proc.ok()) << proc.error().ToString();
    EXPECT_EQ(ReadAll("/proc/" + std::to_string(proc->pid) + "/oom_score_adj"), "1000\n");
    (void)::syscall(SYS_pidfd_send_signal, proc->pidfd.get(), SIGKILL, nullptr, 0);
    Reap(proc->pidfd.get());
  }
}

TEST(WorkerCgroups, ASpawnedWorkerIsInItsCgroupFromItsFirstInstruction) {
  auto cgroups = WorkerCgroups::Open();
  if (!cgroups.ok()) GTEST_SKIP() << cgroups.error().message();
  auto cg = (*cgroups)->Create(64ull << 20);
  ASSERT_TRUE(cg.ok()) << cg.error().ToString();
  const std::string dir = (*cg)->dir();
  SpawnRequest req;
  req.executable = "/bin/sleep";
  req.argv = {"/bin/sleep", "30"};
  req.cgroup_procs = (*cg)->procs();
  auto proc = SpawnWorker(req);
  ASSERT_TRUE(proc.ok()) << proc.error().ToString();
  const std::string leaf = dir.substr(dir.rfind('/'));
  EXPECT_NE(ReadAll("/proc/" + std::to_string(proc->pid) + "/cgroup").find(leaf),
            std::string::npos);
  EXPECT_EQ(ReadAll(dir + "/cgroup.procs"), std::to_string(proc->pid) + "\n");
  (void)::syscall(SYS_pidfd_send_signal, proc->pidfd.get(), SIGKILL, nullptr, 0);
  Reap(proc->pidfd.get());
  EXPECT_EQ((*cg)->OomKills(), 0u);  // the host's kill is not the kernel's
  cg->reset();
  struct stat st {};
  EXPECT_NE(::stat(dir.c_str(), &st), 0) << dir << " is left behind";
}

TEST(WorkerCgroups, TheKernelEndsAWorkerAtTheLimitAndSaysSo) {
  auto cgroups = WorkerCgroups::Open();
  if (!cgroups.ok()) GTEST_SKIP() << cgroups.error().message();
  auto cg = (*cgroups)->Create(64ull << 20);
  ASSERT_TRUE(cg.ok()) << cg.error().ToString();
  SpawnRequest req;
  // perl-base is Essential on Debian: 256 MiB of string, written.
  req.executable = "/usr/bin/perl";
  req.argv = {"/usr/bin/perl", "-e", "my $x = 'a' x (256 << 20);"};
  req.cgroup_procs = (*cg)->procs();
  auto proc = SpawnWorker(req);
  ASSERT_TRUE(proc.ok()) << proc.error().ToString();
  siginfo_t info{};
  while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(proc->pidfd.get()), &info,
                  WEXITED) != 0 &&
         errno == EINTR) {
  }
  EXPECT_EQ(info.si_code, CLD_KILLED);
  EXPECT_EQ(info.si_status, SIGKILL);
  EXPECT_GE((*cg)->OomKills(), 1u);
}

TEST(WorkerCgroups, ALocationWithoutAMemoryControllerIsRefusedWithWhy) {
  // A directory that is no cgroup: v2 has no cgroup.controllers there, v1 no limit file.
  clawguard::testing::TempDir tmp;
  const std::string dir = tmp.path().string();
  auto v2 = WorkerCgroups::OpenAt({CgroupVersion::kV2, dir});
  ASSERT_FALSE(v2.ok());
  EXPECT_EQ(v2.error().reason(), Reason::kConfigInvalid);
  EXPECT_EQ(v2.error().message(),
            "cannot open " + dir + "/cgroup.controllers: No such file or directory");
  auto v1 = WorkerCgroups::OpenAt({CgroupVersion::kV1, dir});
  ASSERT_FALSE(v1.ok());
  EXPECT_EQ(v1.error().reason(), Reason::kConfigInvalid);
  EXPECT_NE(v1.error().message().find("/memory.limit_in_bytes: No such file or directory"),
            std::string::npos)
      << v1.error().message();
  EXPECT_TRUE(std::filesystem::is_empty(dir));  // the probe's directory is gone again
}

TEST(WorkerCgroups, ACgroupThatCannotTakeTheWorkerFailsTheSpawn) {
  SpawnRequest req;
  req.executable = "/bin/true";
  req.argv = {"/bin/true"};
  req.cgroup_procs = "/proc/self/no-such-cgroup/cgroup.procs";
  auto proc = SpawnWorker(req);
  ASSERT_FALSE(proc.ok());
  EXPECT_EQ(proc.error().reason(), Reason::kInternal);
  EXPECT_NE(proc.error().message().find("no-such-cgroup"), std::string::npos)
      << proc.error().message();
}

}  // namespace
}  // namespace clawguard::sandbox
