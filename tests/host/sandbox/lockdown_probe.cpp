// lockdown_probe.cpp — a stand-in plugin worker for lockdown_test.cpp. Spawned by SpawnWorker with
// fd 3 = a sealed memfd holding sandbox_test_lib, fd 4 = where it writes result lines, fd 5 = the
// supervisor socket (EnterLoadPhase sends its seccomp listener there). It reports facts about its
// start (environment, descriptors, ids, capabilities), calls EnterLoadPhase, optionally loads fd 3
// as a library and enters the serve phase, then performs ONE action named by argv[1] and reports
// its outcome.
//
//   lockdown_probe ACTION [--load] [--serve] [--as=BYTES] [--read=PATH]...
//
// Result lines (fd 4): "env N", "fds 0 1 2 …", "ids UID GID", "groups N", "session own|shared",
// "host NAME", "outer-uid UID" (what the uid map maps the first inner id to), "capeff HEX",
// "lockdown abi=N …" or "lockdown-error …", "load N" or "load-error …", "serve ok" or "serve-error
// …", and last "result …" ("ok", "errno=N", "null", …). An action the filter refuses never writes
// its result: the call is held and reported on the listener, and the test (the supervisor) kills
// the probe.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "host/sandbox/lockdown.h"

extern char** environ;

namespace {

constexpr int kLibFd = 3;
constexpr int kResultFd = 4;
constexpr int kSupervisorFd = 5;
constexpr const char* kLibc = "/usr/lib/x86_64-linux-gnu/libc.so.6";

void Report(const std::string& line) {
  const std::string l = line + "\n";
  (void)!::write(kResultFd, l.data(), l.size());
}

std::string ErrnoResult(long rc) { return rc < 0 ? "errno=" + std::to_string(errno) : "ok"; }

void ReportStartFacts() {
  int env = 0;
  for (char** e = environ; *e != nullptr; ++e) ++env;
  Report("env " + std::to_string(env));
  std::string fds = "fds";
  if (DIR* d = ::opendir("/proc/self/fd")) {
    std::vector<int> list;
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      const int fd = static_cast<int>(std::strtol(e->d_name, nullptr, 10));
      if (fd != ::dirfd(d)) list.push_back(fd);
    }
    ::closedir(d);
    std::sort(list.begin(), list.end());
    for (int fd : list) fds += " " + std::to_string(fd);
  }
  Report(fds);
  Report("ids " + std::to_string(::getuid()) + " " + std::to_string(::getgid()));
  Report("groups " + std::to_string(::getgroups(0, nullptr)));
  Report(std::string("session ") +
         (::getsid(0) == ::getpid() && ::getpgrp() == ::getpid() ? "own" : "shared"));
  char host[256] = {};
  (void)::gethostname(host, sizeof(host) - 1);
  Report(std::string("host ") + host);
  std::ifstream uid_map("/proc/self/uid_map");
  std::string inner, outer;
  uid_map >> inner >> outer;
  Report("outer-uid " + outer);
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("CapEff:", 0) == 0)
      Report("capeff " + line.substr(line.find_first_not_of(" \t", 7)));
  }
}

volatile sig_atomic_t g_usr1 = 0;
void OnUsr1(int /*sig*/) { g_usr1 = 1; }

void* MapPage(int prot) { return ::mmap(nullptr, 4096, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); }

// The actions. Each returns the text after "result ".
std::map<std::string, std::function<std::string(const char* self)>> Actions() {
  return {
      {"none", [](const char*) { return std::string("ok"); }},
      {"getrlimit",
       [](const char*) {
         rlimit r{};
         if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return "errno=" + std::to_string(errno);
         const long open_max = ::sysconf(_SC_OPEN_MAX);
         return std::to_string(r.rlim_cur) + " " + std::to_string(open_max);
       }},
      {"setrlimit",
       [](const char*) {
         rlimit r{64, 64};
         return ErrnoResult(::setrlimit(RLIMIT_NOFILE, &r));
       }},
      {"sleep",
       [](const char*) {
         ::usleep(500 * 1000);
         return std::string("ok");
       }},
      {"thread",
       [](const char*) {
         int value = 0;
         std::thread t([&value] {
           (void)::pthread_setname_np(::pthread_self(), "probe-worker");
           std::vector<char> heap(1 << 20, 1);  // a thread arena allocation
           value = heap[12345] + 41;
         });
         t.join();
         return value == 42 ? std::string("ok") : "value=" + std::to_string(value);
       }},
      {"read-libc",
       [](const char*) {
         const int fd = ::open(kLibc, O_RDONLY | O_CLOEXEC);
         if (fd < 0) return "errno=" + std::to_string(errno);
         char magic[4] = {};
         const ssize_t n = ::read(fd, magic, 4);
         ::close(fd);
         return n == 4 && std::memcmp(magic,
                                      "\x7f"
                                      "ELF",
                                      4) == 0
                    ? std::string("ok")
                    : std::string("bad read");
       }},
      {"open-passwd",
       [](const char*) { return ErrnoResult(::open("/etc/passwd", O_RDONLY | O_CLOEXEC)); }},
      {"open-self",
       [](const char* self) { return ErrnoResult(::open(self, O_RDONLY | O_CLOEXEC)); }},
      {"open-lib", [](const char*) { return ErrnoResult(::open(kLibc, O_RDONLY | O_CLOEXEC)); }},
      {"socket", [](const char*) { return ErrnoResult(::socket(AF_INET, SOCK_STREAM, 0)); }},
      {"socketpair",
       [](const char*) {
         int sv[2];
         return ErrnoResult(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
       }},
      {"execve",
       [](const char*) {
         char* argv[] = {const_cast<char*>("/bin/sh"), nullptr};
         char* envp[] = {nullptr};
         return ErrnoResult(::execve("/bin/sh", argv, envp));
       }},
      {"fork",
       [](const char*) {
         const pid_t pid = ::fork();
         if (pid == 0) ::_exit(0);
         return ErrnoResult(pid);
       }},
      {"ptrace", [](const char*) { return ErrnoResult(::ptrace(PTRACE_TRACEME, 0, 0, 0)); }},
      {"process_vm_readv",
       [](const char*) {
         char buf[8];
         static char src[8] = "secret";
         iovec local{buf, sizeof(buf)};
         iovec remote{src, sizeof(src)};
         return ErrnoResult(::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0));
       }},
      {"kill", [](const char*) { return ErrnoResult(::kill(1, SIGKILL)); }},
      {"memfd_create", [](const char*) { return ErrnoResult(::memfd_create("x", MFD_CLOEXEC)); }},
      {"unshare", [](const char*) { return ErrnoResult(::unshare(CLONE_NEWUSER)); }},
      {"getuid", [](const char*) { return std::to_string(::getuid()); }},
      {"sigaction-sigsys",
       [](const char*) {
         return ::signal(SIGSYS, SIG_IGN) == SIG_ERR ? "errno=" + std::to_string(errno)
                                                     : std::string("ok");
       }},
      // The kernel reads the signal number from the low 32 bits; the filter must not be fooled by
      // garbage above them.
      {"sigaction-sigsys-high",
       [](const char*) {
         struct {
           void (*handler)(int);
           unsigned long flags;
           void (*restorer)();
           uint64_t mask;
         } act{SIG_IGN, 0, nullptr, 0};
         return ErrnoResult(
             ::syscall(SYS_rt_sigaction, (1UL << 32) | SIGSYS, &act, nullptr, sizeof(uint64_t)));
       }},
      // A signal other than SIGABRT, sent to itself: refused.
      {"raise",
       [](const char*) {
         if (::raise(SIGUSR1) != 0) return "raise errno=" + std::to_string(errno);
         return std::string("sent");
       }},
      // Signal 0 to its own thread: is it there.
      {"signal-zero", [](const char*) { return ErrnoResult(::pthread_kill(::pthread_self(), 0)); }},
      {"sigaction-abrt",
       [](const char*) {
         struct sigaction sa {};
         sa.sa_handler = OnUsr1;
         return ErrnoResult(::sigaction(SIGABRT, &sa, nullptr));
       }},
      {"sigaction-abrt-read",
       [](const char*) {
         struct sigaction old {};
         if (::sigaction(SIGABRT, nullptr, &old) != 0) return "errno=" + std::to_string(errno);
         return old.sa_handler == SIG_DFL ? std::string("ok") : std::string("not default");
       }},
      {"fcntl-async",
       [](const char*) {
         const int fl = ::fcntl(kResultFd, F_GETFL);
         return ErrnoResult(::fcntl(kResultFd, F_SETFL, fl | O_ASYNC));
       }},
      {"fcntl-nonblock",
       [](const char*) {
         const int fl = ::fcntl(kResultFd, F_GETFL);
         return ErrnoResult(::fcntl(kResultFd, F_SETFL, fl | O_NONBLOCK));
       }},
      {"setitimer",
       [](const char*) {
         itimerval t{};
         t.it_value.tv_usec = 1000;
         return ErrnoResult(::setitimer(ITIMER_REAL, &t, nullptr));
       }},
      // RLIMIT_CPU: soft equals hard, so the kernel's answer to a spent budget is SIGKILL.
      {"cpu-limit",
       [](const char*) {
         rlimit r{};
         if (::getrlimit(RLIMIT_CPU, &r) != 0) return "errno=" + std::to_string(errno);
         return r.rlim_cur == r.rlim_max ? std::string("equal") : std::string("differ");
       }},
      // A shared anonymous mapping outlives its unmapping while one page of it stays mapped: the
      // memory it holds is not counted by RLIMIT_AS.
      {"mmap-shared",
       [](const char*) {
         void* p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
         return p == MAP_FAILED ? "errno=" + std::to_string(errno) : std::string("ok");
       }},
      {"mmap-hugetlb",
       [](const char*) {
         void* p = ::mmap(nullptr, 2 << 20, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
         return p == MAP_FAILED ? "errno=" + std::to_string(errno) : std::string("ok");
       }},
      {"mmap-private",
       [](const char*) {
         void* p = MapPage(PROT_READ | PROT_WRITE);
         return p == MAP_FAILED ? "errno=" + std::to_string(errno) : std::string("ok");
       }},
      // A thread with a descriptor table of its own (no CLONE_FILES) could open RLIMIT_NOFILE
      // more files. Refused, so the child never runs on the bogus stack.
      {"clone-own-files",
       [](const char*) {
         static char stack[64 * 1024];
         const long flags = CLONE_THREAD | CLONE_VM | CLONE_SIGHAND | CLONE_FS;
         return ErrnoResult(
             ::syscall(SYS_clone, flags, stack + sizeof(stack), nullptr, nullptr, 0));
       }},
      // sendmsg with a descriptor in flight, on a descriptor that is not the supervisor socket.
      {"sendmsg-rights",
       [](const char*) {
         const clawguard::Status sent = clawguard::sandbox::SendListener(kResultFd, 0);
         return sent.ok() ? std::string("ok") : sent.message();
       }},
      // The supervisor socket's number, taken again by a file: sendmsg there reaches no socket.
      {"sendmsg-reused-fd",
       [](const char*) {
         const int fd = ::open(kLibc, O_RDONLY | O_CLOEXEC);
         if (fd != kSupervisorFd) return "fd=" + std::to_string(fd);
         char byte = 'x';
         iovec iov{&byte, 1};
         msghdr msg{};
         msg.msg_iov = &iov;
         msg.msg_iovlen = 1;
         return ErrnoResult(::sendmsg(fd, &msg, 0));
       }},
      // A forbidden call on a second thread while the first goes on: held, and still reported.
      {"socket-in-thread",
       [](const char*) {
         std::thread([] { (void)::socket(AF_INET, SOCK_STREAM, 0); }).detach();
         ::sleep(10);  // the supervisor kills the probe long before
         return std::string("main thread ran on");
       }},
      {"clone3",
       [](const char*) {
         uint64_t args[8] = {};
         return ErrnoResult(::syscall(SYS_clone3, args, sizeof(args)));
       }},
      {"isatty",
       [](const char*) {
         const int r = ::isatty(1);
         return r == 0 ? "errno=" + std::to_string(errno) : std::string("tty");
       }},
      {"ioctl-other",
       [](const char*) {
         int n = 0;
         return ErrnoResult(::ioctl(kResultFd, FIONREAD, &n));
       }},
      {"printf",
       [](const char*) {
         std::printf("to /dev/null\n");
         return std::fflush(stdout) == 0 ? std::string("ok") : "errno=" + std::to_string(errno);
       }},
      {"write-memfd",
       [](const char*) { return ErrnoResult(::write(kLibFd, "x", 1) < 0 ? -1 : 0); }},
      {"mmap-exec",
       [](const char*) {
         void* p = MapPage(PROT_READ | PROT_WRITE | PROT_EXEC);
         return p == MAP_FAILED ? "errno=" + std::to_string(errno) : std::string("ok");
       }},
      {"seccomp-filter",
       [](const char*) {
         // A filter that allows everything: even that is refused.
         sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
         sock_fprog prog{1, &allow};
         return ErrnoResult(::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog));
       }},
      {"sigaction-segv",
       [](const char*) {
         struct sigaction sa {};
         sa.sa_handler = OnUsr1;
         return ErrnoResult(::sigaction(SIGSEGV, &sa, nullptr));
       }},
      {"sigaction-usr1",
       [](const char*) {
         struct sigaction sa {};
         sa.sa_handler = OnUsr1;
         return ErrnoResult(::sigaction(SIGUSR1, &sa, nullptr));
       }},
      {"mprotect-exec",
       [](const char*) {
         void* p = MapPage(PROT_READ | PROT_WRITE);
         if (p == MAP_FAILED) return "mmap errno=" + std::to_string(errno);
         return ErrnoResult(::mprotect(p, 4096, PROT_READ | PROT_EXEC));
       }},
      // A 32-bit system call (getpid is 20 on i386) from a 64-bit process: another architecture.
      {"int80",
       [](const char*) {
         long ret = 20;
         asm volatile("int $0x80" : "+a"(ret) : : "memory");
         return "ret=" + std::to_string(ret);
       }},
      {"nofile",
       [](const char*) {
         int opened = 0;
         while (opened < 1000 && ::open(kLibc, O_RDONLY | O_CLOEXEC) >= 0) ++opened;
         return "errno=" + std::to_string(errno) + " opened=" + std::to_string(opened);
       }},
      {"alloc-big",
       [](const char*) {
         // 2 GiB, touched page by page if it is ever returned.
         const size_t size = size_t{2} << 30;
         auto* p = static_cast<char*>(std::malloc(size));
         if (p == nullptr) return "null errno=" + std::to_string(errno);
         for (size_t i = 0; i < size; i += 4096) p[i] = 1;
         std::free(p);
         return std::string("ok");
       }},
      {"alloc-small",
       [](const char*) {
         const size_t size = size_t{64} << 20;
         auto* p = static_cast<char*>(std::malloc(size));
         if (p == nullptr) return "null errno=" + std::to_string(errno);
         std::memset(p, 1, size);
         std::free(p);
         return std::string("ok");
       }},
  };
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string action = argv[1];
  bool load = false;
  bool serve = false;
  clawguard::sandbox::LockdownOptions opts;
  opts.keep_fds = {kLibFd, kResultFd};
  opts.supervisor_fd = kSupervisorFd;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--load") load = true;
    if (a == "--serve") serve = true;
    if (a.rfind("--as=", 0) == 0) opts.address_space_bytes = std::stoull(a.substr(5));
    if (a.rfind("--read=", 0) == 0) opts.read_paths.push_back(a.substr(7));
  }
  const auto actions = Actions();
  const auto it = actions.find(action);
  if (it == actions.end()) {
    Report("unknown action " + action);
    return 2;
  }

  ReportStartFacts();
  auto lockdown = clawguard::sandbox::EnterLoadPhase(opts);
  if (!lockdown.ok()) {
    Report("lockdown-error " + lockdown.error().ToString());
    return 3;
  }
  Report("lockdown abi=" + std::to_string(lockdown->landlock_abi) +
         " net=" + std::to_string(lockdown->landlock_net) +
         " scoped=" + std::to_string(lockdown->landlock_scoped));
  if (load) {
    const std::string path = "/proc/self/fd/" + std::to_string(kLibFd);
    void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      Report(std::string("load-error ") + ::dlerror());
      return 4;
    }
    auto* fn = reinterpret_cast<int (*)()>(::dlsym(h, "cg_sandbox_test_answer"));
    Report(fn == nullptr ? "load-error no symbol" : "load " + std::to_string(fn()));
  }
  if (serve) {
    const auto st = clawguard::sandbox::EnterServePhase();
    Report(st.ok() ? "serve ok" : "serve-error " + st.ToString());
    if (!st.ok()) return 5;
  }
  Report("result " + it->second(argv[0]));
  return 0;
}
