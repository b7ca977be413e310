// bounded_child.h — RunBounded: run a check in a forked child so that a hang (an open of a FIFO
// that blocks forever) or an abort (an exception escaping a no-throw API, an allocation past an
// address-space limit) fails the test instead of stalling CTest or killing the test binary.
//
//   auto r = RunBounded([&] { return Describe(loader->Load(fifo_pkg)); }, /*bound_seconds=*/60);
//   ASSERT_TRUE(r.kind == ChildResult::Kind::kFinished) << r.detail;
//
// The bound is generous and only there to stop a hang; no test asserts how long anything took.
// GoogleTest assertions inside |fn| are lost (they run in the child): |fn| returns text that the
// parent checks. The child ends with _exit (no destructors, no atexit handlers).
#ifndef CLAWGUARD_TESTS_LOADER_BOUNDED_CHILD_H_
#define CLAWGUARD_TESTS_LOADER_BOUNDED_CHILD_H_

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <exception>
#include <fstream>
#include <functional>
#include <string>

namespace clawguard::testing {

struct ChildResult {
  enum class Kind { kFinished, kTimedOut, kCrashed };
  Kind kind = Kind::kCrashed;
  std::string output;  // what |fn| returned (kFinished)
  std::string detail;  // why it did not finish otherwise
};

// AddressSpaceLimitWorks is false under AddressSanitizer, which reserves terabytes of shadow
// memory up front and cannot run under RLIMIT_AS.
inline constexpr bool AddressSpaceLimitWorks() {
#if defined(__SANITIZE_ADDRESS__)
  return false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return false;
#else
  return true;
#endif
#else
  return true;
#endif
}

// RunBounded forks; the child runs |fn| (with RLIMIT_AS = its current size +
// |address_space_headroom| when that is non-zero and AddressSpaceLimitWorks()) and writes the
// returned text to a pipe. The parent reads it; past |bound_seconds| it kills the child (SIGKILL)
// and reports kTimedOut. A child killed by a signal or exiting non-zero is kCrashed.
inline ChildResult RunBounded(const std::function<std::string()>& fn, int bound_seconds,
                              uint64_t address_space_headroom = 0) {
  ChildResult r;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    r.detail = "pipe2 failed";
    return r;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    r.detail = "fork failed";
    return r;
  }
  if (pid == 0) {
    ::close(fds[0]);
    if (address_space_headroom > 0 && AddressSpaceLimitWorks()) {
      uint64_t pages = 0;
      std::ifstream("/proc/self/statm") >> pages;  // first field: total program size in pages
      const uint64_t limit =
          pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)) + address_space_headroom;
      const rlimit rl{limit, limit};
      if (::setrlimit(RLIMIT_AS, &rl) != 0) ::_exit(3);
    }
    std::string out;
    try {
      out = fn();
    } catch (const std::exception& e) {
      out = std::string("exception escaped: ") + e.what();
    } catch (...) {
      out = "a non-standard exception escaped";
    }
    size_t off = 0;
    while (off < out.size()) {
      const ssize_t n = ::write(fds[1], out.data() + off, out.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) ::_exit(4);
      off += static_cast<size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  timespec start{};
  ::clock_gettime(CLOCK_MONOTONIC, &start);
  bool timed_out = false;
  while (true) {
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    const int64_t waited_ms =
        (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
    const int64_t left_ms = static_cast<int64_t>(bound_seconds) * 1000 - waited_ms;
    if (left_ms <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left_ms));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // re-check the bound
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the child is done writing
    r.output.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    r.kind = ChildResult::Kind::kTimedOut;
    r.detail = "did not finish within " + std::to_string(bound_seconds) + " s (a hang); killed";
  } else if (WIFSIGNALED(status)) {
    r.kind = ChildResult::Kind::kCrashed;
    r.detail = "killed by signal " + std::to_string(WTERMSIG(status)) +
               " (an abort or an escaped exception)";
  } else if (WEXITSTATUS(status) != 0) {
    r.kind = ChildResult::Kind::kCrashed;
    r.detail = "exited with status " + std::to_string(WEXITSTATUS(status));
  } else {
    r.kind = ChildResult::Kind::kFinished;
  }
  return r;
}

}  // namespace clawguard::testing

#endif  // CLAWGUARD_TESTS_LOADER_BOUNDED_CHILD_H_
