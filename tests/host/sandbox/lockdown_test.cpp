// lockdown_test.cpp — host/sandbox end to end: SpawnWorker starts lockdown_probe (a stand-in
// worker) in its namespaces with a sealed memfd of sandbox_test_lib, the probe confines itself with
// EnterLoadPhase (and EnterServePhase) and performs one allowed or forbidden action. The test is
// the probe's supervisor, as the host is a worker's: it takes the seccomp listener the probe sends,
// reads the kernel's report of a forbidden call and kills the probe for it; it reads the probe's
// result lines and how it ended.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <future>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "host/sandbox/isolation_probe.h"
#include "host/sandbox/lockdown.h"
#include "host/sandbox/worker_spawn.h"
#include "support/temp_dir.h"

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

namespace clawguard::sandbox {
namespace {

using ::clawguard::testing::ReadFile;

// ProbeRun is what one probe run left behind.
struct ProbeRun {
  std::vector<std::string> lines;      // result lines (fd 4)
  bool listener = false;               // the probe sent its seccomp listener
  std::string listener_error;          // what ReceiveListener said otherwise
  std::optional<RefusedCall> refused;  // the kernel's report; the test then killed the probe
  int exit_code = -1;                  // when it exited
  int signal = 0;                      // when a signal ended it
  std::vector<std::string> namespaces;

  // Line returns the rest of the first line starting with "|key| ", or nullopt.
  std::optional<std::string> Line(const std::string& key) const {
    for (const auto& l : lines) {
      if (l.rfind(key + " ", 0) == 0) return l.substr(key.size() + 1);
    }
    return std::nullopt;
  }
  std::string Dump() const {
    std::string s = "exit=" + std::to_string(exit_code) + " signal=" + std::to_string(signal) +
                    " listener=" + std::to_string(listener) + " " + listener_error;
    if (refused) s += " refused=" + refused->Describe();
    for (const auto& l : lines) s += "\n  " + l;
    return s;
  }
};

UniqueFd SealedLibraryMemfd() {
  const std::string bytes = ReadFile(CLAWGUARD_SANDBOX_TEST_LIB);
  EXPECT_FALSE(bytes.empty());
  int raw = ::memfd_create("sandbox_test_lib", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
  if (raw < 0 && errno == EINVAL)
    raw = ::memfd_create("sandbox_test_lib", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  UniqueFd fd(raw);
  EXPECT_TRUE(fd.valid()) << std::strerror(errno);
  EXPECT_EQ(::write(fd.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  EXPECT_EQ(
      ::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL), 0);
  return fd;
}

// Crosswise places |fds| (three of them) on the descriptors 5, 3 and 4 of this process for its
// scope, so that each source sits on another one's target in the child; what was on 3..5 is put
// back afterwards.
class Crosswise {
 public:
  explicit Crosswise(const std::vector<int>& fds) {
    for (int target = 3; target <= 5; ++target) {
      const int flags = ::fcntl(target, F_GETFD);
      saved_[target - 3] = {flags < 0 ? -1 : ::fcntl(target, F_DUPFD_CLOEXEC, 100), flags};
    }
    const int place[3] = {5, 3, 4};
    int high[3];
    for (size_t i = 0; i < 3; ++i) high[i] = ::fcntl(fds.at(i), F_DUPFD_CLOEXEC, 100);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(::dup3(high[i], place[i], O_CLOEXEC), place[i]);
      ::close(high[i]);
    }
  }
  ~Crosswise() {
    for (int target = 3; target <= 5; ++target) {
      const auto [saved, flags] = saved_[target - 3];
      if (saved < 0) {
        ::close(target);
        continue;
      }
      ::dup3(saved, target, (flags & FD_CLOEXEC) != 0 ? O_CLOEXEC : 0);
      ::close(saved);
    }
  }
  Crosswise(const Crosswise&) = delete;
  Crosswise& operator=(const Crosswise&) = delete;
  std::vector<int> fds() const { return {5, 3, 4}; }

 private:
  std::pair<int, int> saved_[3];
};

ProbeRun RunProbe(const std::string& action, const std::vector<std::string>& flags = {},
                  bool namespaces = true, bool crosswise = false, bool from_short_thread = false) {
  ProbeRun run;
  UniqueFd lib = SealedLibraryMemfd();
  int p[2];
  EXPECT_EQ(::pipe2(p, O_CLOEXEC), 0);
  UniqueFd res_r(p[0]), res_w(p[1]);
  // The supervisor socket, as the host's: non-blocking on this end.
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p), 0);
  UniqueFd fault_r(p[0]), fault_w(p[1]);
  EXPECT_EQ(::fcntl(fault_r.get(), F_SETFL, O_NONBLOCK), 0);

  SpawnRequest req;
  req.executable = CLAWGUARD_SANDBOX_PROBE;
  req.argv = {CLAWGUARD_SANDBOX_PROBE, action};
  req.argv.insert(req.argv.end(), flags.begin(), flags.end());
  req.fds = {lib.get(), res_w.get(), fault_w.get()};
  req.namespaces = namespaces;
  Result<SpawnedProcess> spawned = Status(Reason::kInternal, "not spawned");
  if (crosswise) {
    // None of this run's descriptors may sit on 3..5, which Crosswise takes over.
    for (UniqueFd* fd : {&lib, &res_r, &res_w, &fault_r, &fault_w}) {
      fd->Reset(::fcntl(fd->get(), F_DUPFD_CLOEXEC, 100));
    }
    Crosswise placed({lib.get(), res_w.get(), fault_w.get()});
    req.fds = placed.fds();
    lib.Reset();
    res_w.Reset();
    fault_w.Reset();
    spawned = SpawnWorker(req);
  } else if (from_short_thread) {
    std::thread([&] { spawned = SpawnWorker(req); }).join();  // the asking thread is gone
  } else {
    spawned = SpawnWorker(req);
  }
  if (!spawned.ok()) {
    ADD_FAILURE() << spawned.error().ToString();
    return run;
  }
  run.namespaces = spawned->namespaces;
  res_w.Reset();
  fault_w.Reset();

  // Supervise until the result pipe closes (the probe ended), 30 s at most.
  UniqueFd listener;
  std::string out;
  bool listener_open = true;
  for (;;) {
    pollfd fds[3] = {{listener_open && listener.valid() ? listener.get() : -1, POLLIN, 0},
                     {fault_r.valid() ? fault_r.get() : -1, POLLIN, 0},
                     {res_r.get(), POLLIN, 0}};
    const int r = ::poll(fds, 3, 30000);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      ADD_FAILURE() << "the probe did not end within 30 s";
      (void)::syscall(SYS_pidfd_send_signal, spawned->pidfd.get(), SIGKILL, nullptr, 0);
      break;
    }
    if ((fds[0].revents & POLLIN) != 0) {
      Result<RefusedCall> call = ReadRefusedCall(listener.get());
      EXPECT_TRUE(call.ok()) << call.error().ToString();
      if (call.ok() && !run.refused) run.refused = *call;
      (void)::syscall(SYS_pidfd_send_signal, spawned->pidfd.get(), SIGKILL, nullptr, 0);
      continue;
    }
    if ((fds[0].revents & (POLLHUP | POLLERR)) != 0) listener_open = false;
    if (fds[1].revents != 0) {
      Result<UniqueFd> l = ReceiveListener(fault_r.get());
      if (!l.ok()) {
        run.listener_error = l.error().message();
        fault_r.Reset();
      } else if (l->valid()) {
        listener = std::move(l).value();
        run.listener = true;
        fault_r.Reset();
      }
      continue;
    }
    if (fds[2].revents != 0) {
      char buf[4096];
      const ssize_t n = ::read(res_r.get(), buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
  }
  std::istringstream lines(out);
  for (std::string l; std::getline(lines, l);) run.lines.push_back(l);
  siginfo_t info{};
  int rc = 0;
  while ((rc = ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(spawned->pidfd.get()),
                        &info, WEXITED)) != 0 &&
         errno == EINTR) {
  }
  EXPECT_EQ(rc, 0) << std::strerror(errno);
  if (info.si_code == CLD_EXITED) {
    run.exit_code = info.si_status;
  } else {
    run.signal = info.si_status;
  }
  return run;
}

// ExpectResult checks a clean run whose action reported |result|.
void ExpectResult(const ProbeRun& run, const std::string& result) {
  EXPECT_EQ(run.exit_code, 0) << run.Dump();
  EXPECT_EQ(run.Line("result"), result) << run.Dump();
  EXPECT_TRUE(run.listener) << run.Dump();
  EXPECT_FALSE(run.refused) << run.Dump();
}

// ExpectFault checks a run whose system call |nr| the filter held and the kernel reported; the
// supervisor (the test) killed it then, so the call never returned.
void ExpectFault(const ProbeRun& run, long nr) {
  EXPECT_EQ(run.signal, SIGKILL) << run.Dump();
  ASSERT_TRUE(run.refused.has_value()) << run.Dump();
  EXPECT_EQ(run.refused->nr, nr) << run.Dump();
  EXPECT_EQ(run.refused->arch, 0xC000003EU);  // AUDIT_ARCH_X86_64
  EXPECT_FALSE(run.Line("result")) << run.Dump();
}

// ---- the isolation probe and the spawn ----

TEST(IsolationProbe, ReportsSeccompAndLandlock) {
  auto s = ProbeIsolation();
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  EXPECT_TRUE(s->seccomp_filter);
  EXPECT_TRUE(s->seccomp_notify);
  EXPECT_GE(s->landlock_abi, 1);
  EXPECT_TRUE(s->CheckSufficient(/*require_namespaces=*/false).ok()) << s->Describe();
  EXPECT_NE(s->Describe().find("Landlock: ABI"), std::string::npos) << s->Describe();
}

TEST(SpawnWorker, NonexistentExecutableIsNamedWithItsError) {
  SpawnRequest req;
  req.executable = "/nonexistent/clawguard-worker";
  req.argv = {req.executable};
  auto r = SpawnWorker(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().reason(), Reason::kInternal);
  EXPECT_NE(r.error().message().find(req.executable), std::string::npos) << r.error().ToString();
  EXPECT_NE(r.error().message().find(std::strerror(ENOENT)), std::string::npos)
      << r.error().ToString();
}

TEST(SpawnWorker, RefusesARelativePathOrEmptyArgv) {
  SpawnRequest req;
  req.executable = "worker";
  req.argv = {"worker"};
  auto r = SpawnWorker(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().reason(), Reason::kConfigInvalid);
  req.executable = "/bin/true";
  req.argv.clear();
  r = SpawnWorker(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().reason(), Reason::kConfigInvalid);
}

TEST(SpawnWorker, ChildHasEmptyEnvironmentAndOnlyThePassedFds) {
  const ProbeRun run = RunProbe("none");
  ExpectResult(run, "ok");
  EXPECT_EQ(run.Line("env"), "0") << run.Dump();
  EXPECT_EQ(run.Line("fds"), "0 1 2 3 4 5") << run.Dump();
  // A session and process group of its own: the host's terminal and process-group signals stay
  // outside.
  EXPECT_EQ(run.Line("session"), "own") << run.Dump();
}

TEST(SpawnWorker, FdsLandInOrderEvenWhenTheyOverlapTheTargets) {
  // The sources sit crosswise on each other's targets (lib on 5, result pipe on 3, supervisor
  // socket on 4).
  ProbeRun run = RunProbe("write-memfd", {}, true, /*crosswise=*/true);
  ExpectResult(run, "errno=" + std::to_string(EPERM));  // fd 3 is the sealed memfd
  ExpectFault(RunProbe("socket", {}, true, /*crosswise=*/true), SYS_socket);  // 5: supervisor
}

TEST(SpawnWorker, NamespacesIncludeUserAndNetAndTheWorkerHasNoCapabilities) {
  auto support = ProbeIsolation();
  ASSERT_TRUE(support.ok());
  if (!support->all_namespaces) GTEST_SKIP() << support->Describe();
  const ProbeRun run = RunProbe("none");
  ExpectResult(run, "ok");
  EXPECT_EQ(run.namespaces, (std::vector<std::string>{"user", "pid", "net", "ipc", "mnt", "uts"}));
  EXPECT_EQ(run.Line("ids"), std::to_string(kWorkerInnerId) + " " + std::to_string(kWorkerInnerId))
      << run.Dump();
  EXPECT_EQ(run.Line("capeff"), "0000000000000000") << run.Dump();
  // The machine's name stays outside.
  EXPECT_EQ(run.Line("host"), kWorkerHostName) << run.Dump();
  // A root host's worker is uid 65534 outside too, with no supplementary group; any other host's
  // is the host's own uid.
  const unsigned outer = ::geteuid() == 0 ? kWorkerInnerId : ::geteuid();
  EXPECT_EQ(run.Line("outer-uid"), std::to_string(outer)) << run.Dump();
  if (::geteuid() == 0) {
    EXPECT_EQ(run.Line("groups"), "0") << run.Dump();
  }
}

// Without namespaces a root host's worker still leaves uid 0 and every capability behind.
TEST(SpawnWorker, WithoutNamespacesARootHostsWorkerIsNotRoot) {
  if (::geteuid() != 0) GTEST_SKIP() << "the host is not root";
  const ProbeRun run = RunProbe("none", {}, /*namespaces=*/false);
  ExpectResult(run, "ok");
  EXPECT_EQ(run.Line("ids"), std::to_string(kWorkerInnerId) + " " + std::to_string(kWorkerInnerId))
      << run.Dump();
  EXPECT_EQ(run.Line("groups"), "0") << run.Dump();
  EXPECT_EQ(run.Line("capeff"), "0000000000000000") << run.Dump();
}

// The parent-death signal follows the thread that cloned: a worker asked for by a thread that then
// ends (a delivery thread retired while idle) must live on.
TEST(SpawnWorker, TheWorkerOutlivesTheThreadThatAskedForIt) {
  const ProbeRun run = RunProbe("sleep", {}, true, false, /*from_short_thread=*/true);
  ExpectResult(run, "ok");
  EXPECT_EQ(run.signal, 0) << run.Dump();
}

TEST(SpawnWorker, WithoutNamespacesReportsNone) {
  const ProbeRun run = RunProbe("none", {}, /*namespaces=*/false);
  ExpectResult(run, "ok");
  EXPECT_TRUE(run.namespaces.empty());
}

// ---- load phase: refusals before anything is confined ----

// These run EnterLoadPhase in the test process itself: each refusal comes before the first step
// that changes the process (the descriptors are closed only after the checks).
TEST(Lockdown, RefusesToKeepStandardDescriptors) {
  LockdownOptions opts;
  opts.keep_fds = {2};
  auto r = EnterLoadPhase(opts);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().reason(), Reason::kConfigInvalid);
}

TEST(Lockdown, RequiresASupervisorSocket) {
  auto r = EnterLoadPhase(LockdownOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().reason(), Reason::kConfigInvalid);
  EXPECT_NE(r.error().message().find("supervisor"), std::string::npos) << r.error().ToString();
}

// The host takes only a seccomp listener from the supervisor socket: nothing yet is no error;
// a closed socket, a message without a descriptor or with another kind of descriptor is.
TEST(ReceiveListener, TakesASeccompListenerAndRefusesAnythingElse) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  UniqueFd host(sv[0]), worker(sv[1]);
  Result<UniqueFd> none = ReceiveListener(host.get());
  ASSERT_TRUE(none.ok()) << none.error().ToString();
  EXPECT_FALSE(none->valid());

  // A byte without a descriptor.
  ASSERT_EQ(::send(worker.get(), "L", 1, 0), 1);
  Result<UniqueFd> bare = ReceiveListener(host.get());
  ASSERT_FALSE(bare.ok());
  EXPECT_EQ(bare.error().reason(), Reason::kInternal);
  EXPECT_EQ(bare.error().message(), "the worker sent something other than its seccomp listener");

  // A descriptor that is not a listener (a pipe's end).
  int pp[2];
  ASSERT_EQ(::pipe2(pp, O_CLOEXEC), 0);
  UniqueFd pr(pp[0]), pw(pp[1]);
  ASSERT_TRUE(SendListener(worker.get(), pr.get()).ok());
  Result<UniqueFd> pipe_end = ReceiveListener(host.get());
  ASSERT_FALSE(pipe_end.ok());
  EXPECT_EQ(pipe_end.error().reason(), Reason::kInternal);
  EXPECT_EQ(pipe_end.error().message(), "the descriptor the worker sent is not a seccomp listener");

  // The worker's end closed without one.
  worker.Reset();
  Result<UniqueFd> closed = ReceiveListener(host.get());
  ASSERT_FALSE(closed.ok());
  EXPECT_EQ(closed.error().reason(), Reason::kInternal);
  EXPECT_EQ(closed.error().message(),
            "the worker closed its supervisor socket without a seccomp listener");
}

TEST(Lockdown, RefusesAMultiThreadedProcess) {
  std::promise<void> stop;
  std::thread t([f = stop.get_future()]() mutable { f.wait(); });
  LockdownOptions opts;
  opts.supervisor_fd = 100;  // checked for being above 2 only: the thread check comes first
  auto r = EnterLoadPhase(opts);
  stop.set_value();
  t.join();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("threads"), std::string::npos) << r.error().ToString();
}

TEST(Lockdown, MissingReadPathIsAConfigurationError) {
  const ProbeRun run = RunProbe("none", {"--read=/nonexistent/clawguard"});
  EXPECT_EQ(run.exit_code, 3) << run.Dump();
  const auto err = run.Line("lockdown-error");
  ASSERT_TRUE(err) << run.Dump();
  EXPECT_EQ(err->rfind("config_invalid:", 0), 0u) << *err;
}

// ---- load phase: allowed ----

TEST(Lockdown, ReportsLandlockAbi) {
  const ProbeRun run = RunProbe("none");
  ExpectResult(run, "ok");
  const auto l = run.Line("lockdown");
  ASSERT_TRUE(l) << run.Dump();
  EXPECT_EQ(l->rfind("abi=", 0), 0u) << *l;
}

TEST(Lockdown, LoadsTheSealedMemfdThroughProcSelfFdAndCallsIt) {
  const ProbeRun run = RunProbe("none", {"--load"});
  ExpectResult(run, "ok");
  EXPECT_EQ(run.Line("load"), "42") << run.Dump();
}

TEST(Lockdown, CreatesAThread) { ExpectResult(RunProbe("thread", {"--load"}), "ok"); }

TEST(Lockdown, ReadsLibc) { ExpectResult(RunProbe("read-libc"), "ok"); }

// Signals: the plugin may send SIGABRT (abort) and 0 to its own threads and set no handler at all.
// A handler run on a thread whose forbidden call is held would withdraw the kernel's report before
// the supervisor reads it; signals come from the plugin and from any process with the worker's
// outside uid, so none may have a handler. Reading an action is allowed.
TEST(Lockdown, NoSignalHandlerCanBeSetAndOnlySigabrtCanBeSent) {
  const std::string eperm = "errno=" + std::to_string(EPERM);
  ExpectResult(RunProbe("signal-zero"), "ok");
  ExpectResult(RunProbe("sigaction-usr1", {"--load"}), eperm);
  ExpectResult(RunProbe("sigaction-segv", {"--load"}), eperm);
  ExpectResult(RunProbe("sigaction-sigsys"), eperm);
  ExpectResult(RunProbe("sigaction-abrt"), eperm);
  // Garbage above the low 32 bits the kernel reads changes nothing: setting is refused.
  ExpectResult(RunProbe("sigaction-sigsys-high"), eperm);
  ExpectResult(RunProbe("sigaction-abrt-read"), "ok");
  ExpectResult(RunProbe("fcntl-nonblock"), "ok");
  ExpectResult(RunProbe("cpu-limit"), "equal");
  ExpectFault(RunProbe("raise"), SYS_tgkill);
  ExpectFault(RunProbe("fcntl-async"), SYS_fcntl);
  ExpectFault(RunProbe("setitimer"), SYS_setitimer);
}

// sendmsg, the one call that can put a descriptor in flight, works on the supervisor socket only
// (closed before any plugin code): in-flight descriptors count against a limit all workers share.
TEST(Lockdown, NoDescriptorGoesInFlight) {
  ExpectFault(RunProbe("sendmsg-rights"), SYS_sendmsg);
  ExpectResult(RunProbe("sendmsg-reused-fd"), "errno=" + std::to_string(ENOTSOCK));
}

// Memory and descriptors stay within the worker's limits: no shared anonymous mapping (one page
// left mapped would hold the rest outside RLIMIT_AS), no thread with a descriptor table of its
// own (RLIMIT_NOFILE more files each).
TEST(Lockdown, NoSharedMappingAndNoThreadWithItsOwnDescriptors) {
  ExpectFault(RunProbe("mmap-shared", {"--load", "--serve"}), SYS_mmap);
  // Huge pages come from the hugetlb pool, which a v1 memory cgroup does not count.
  ExpectFault(RunProbe("mmap-hugetlb", {"--load", "--serve"}), SYS_mmap);
  ExpectResult(RunProbe("mmap-private", {"--load", "--serve"}), "ok");
  ExpectFault(RunProbe("clone-own-files"), SYS_clone);
}

// A held call does not stop the worker's other threads; the report still arrives and ends it.
TEST(Lockdown, AForbiddenCallOnAnotherThreadIsReported) {
  ExpectFault(RunProbe("socket-in-thread"), SYS_socket);
}

TEST(Lockdown, Clone3AnswersEnosys) {
  ExpectResult(RunProbe("clone3"), "errno=" + std::to_string(ENOSYS));
}

TEST(Lockdown, StdioWorksOnDevNull) {
  ExpectResult(RunProbe("isatty"), "errno=" + std::to_string(ENOTTY));
  ExpectResult(RunProbe("printf"), "ok");
}

TEST(Lockdown, SealedMemfdStaysReadOnly) {
  ExpectResult(RunProbe("write-memfd", {"--load"}), "errno=" + std::to_string(EPERM));
}

TEST(Lockdown, AddressSpaceLimitFailsABigAllocationWithoutAFault) {
  const std::string as = "--as=" + std::to_string(size_t{1} << 30);
  ExpectResult(RunProbe("alloc-small", {as, "--load"}), "ok");
  ExpectResult(RunProbe("alloc-big", {as}), "null errno=" + std::to_string(ENOMEM));
}

TEST(Lockdown, OpenFilesAreCapped) {
  // max_open_files is 16 and 0..4 are open (5, the supervisor socket, is closed once the listener
  // is sent): eleven more, then EMFILE.
  ExpectResult(RunProbe("nofile"), "errno=" + std::to_string(EMFILE) + " opened=11");
}

// ---- load phase: Landlock refusals (errors, not faults) ----

TEST(Lockdown, LandlockRefusesEtcPasswd) {
  ExpectResult(RunProbe("open-passwd"), "errno=" + std::to_string(EACCES));
}

TEST(Lockdown, LandlockRefusesTheProbesOwnExecutable) {
  ExpectResult(RunProbe("open-self"), "errno=" + std::to_string(EACCES));
}

TEST(Lockdown, ReadPathsWidenLandlock) {
  ExpectResult(RunProbe("open-passwd", {"--read=/etc/passwd"}), "ok");
}

// ---- load phase: seccomp faults ----

TEST(Lockdown, SocketFaults) { ExpectFault(RunProbe("socket"), SYS_socket); }
TEST(Lockdown, SocketpairFaults) { ExpectFault(RunProbe("socketpair"), SYS_socketpair); }
TEST(Lockdown, ExecveFaults) { ExpectFault(RunProbe("execve"), SYS_execve); }
TEST(Lockdown, ForkFaults) { ExpectFault(RunProbe("fork"), SYS_clone); }
TEST(Lockdown, PtraceFaults) { ExpectFault(RunProbe("ptrace"), SYS_ptrace); }
TEST(Lockdown, ProcessVmReadvFaults) {
  ExpectFault(RunProbe("process_vm_readv"), SYS_process_vm_readv);
}
TEST(Lockdown, KillFaults) { ExpectFault(RunProbe("kill"), SYS_kill); }
TEST(Lockdown, MemfdCreateFaults) { ExpectFault(RunProbe("memfd_create"), SYS_memfd_create); }
TEST(Lockdown, UnshareFaults) { ExpectFault(RunProbe("unshare"), SYS_unshare); }
TEST(Lockdown, UnlistedCallFaults) { ExpectFault(RunProbe("getuid"), SYS_getuid); }
TEST(Lockdown, OtherIoctlFaults) { ExpectFault(RunProbe("ioctl-other"), SYS_ioctl); }

TEST(Lockdown, AnotherArchitectureFaultsWithItsArch) {
  const ProbeRun run = RunProbe("int80");
  if (run.signal == SIGSEGV) GTEST_SKIP() << "this kernel runs no 32-bit system calls (int 0x80)";
  EXPECT_EQ(run.signal, SIGKILL) << run.Dump();
  ASSERT_TRUE(run.refused.has_value()) << run.Dump();
  EXPECT_EQ(run.refused->nr, 20) << run.Dump();  // getpid on i386
  EXPECT_EQ(run.refused->arch, 0x40000003U);     // AUDIT_ARCH_I386
  EXPECT_EQ(run.refused->Describe(), "getpid (20, i386)");
}

// ---- serve phase ----

// Honest code reads its limits (getrlimit, sysconf(_SC_OPEN_MAX)); setting one is refused.
TEST(ServePhase, ReadingALimitWorksAndSettingOneFaults) {
  ExpectResult(RunProbe("getrlimit", {"--load", "--serve"}), "16 16");
  ExpectFault(RunProbe("setrlimit", {"--load", "--serve"}), SYS_prlimit64);
}

TEST(ServePhase, StillServesAfterLoading) {
  const ProbeRun run = RunProbe("thread", {"--load", "--serve"});
  ExpectResult(run, "ok");
  EXPECT_EQ(run.Line("serve"), "ok") << run.Dump();
}

// After loading no file opens, not even one Landlock allows: the open fails (glibc's lazy opens of
// /etc/localtime and /proc/sys/vm/overcommit_memory in honest code must not kill the worker).
TEST(ServePhase, OpeningAnAllowedLibraryFails) {
  ExpectResult(RunProbe("open-lib", {"--load", "--serve"}), "errno=" + std::to_string(EACCES));
}

// No filter of the plugin's own (it could answer a forbidden call before the sandbox does), in
// either phase.
TEST(LoadPhase, AFilterOfItsOwnFaults) {
  ExpectFault(RunProbe("seccomp-filter", {"--load"}), SYS_seccomp);
  ExpectFault(RunProbe("seccomp-filter", {"--load", "--serve"}), SYS_seccomp);
}

TEST(ServePhase, ExecutableMmapFaults) {
  ExpectFault(RunProbe("mmap-exec", {"--load", "--serve"}), SYS_mmap);
}

TEST(ServePhase, MprotectToExecFaults) {
  ExpectFault(RunProbe("mprotect-exec", {"--load", "--serve"}), SYS_mprotect);
}

// W^X already holds while the library loads: a constructor runs before the serve phase and could
// otherwise make code (or patch the worker so that the serve phase never comes). ld.so's own
// mappings of the memfd and system libraries (file-backed, never writable) still work: the dlopen
// tests.
TEST(LoadPhase, NewExecutableMemoryFaultsBeforeTheServePhase) {
  ExpectFault(RunProbe("mmap-exec", {"--load"}), SYS_mmap);
  ExpectFault(RunProbe("mprotect-exec", {"--load"}), SYS_mprotect);
}

}  // namespace
}  // namespace clawguard::sandbox
