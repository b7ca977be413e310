// worker_bench.cpp — the plugin worker's own costs, each beside the kernel's floor for the same
// work, measured in the same run and interleaved round by round:
//   - erp_call round trip over the worker channel only (no ERP, no gateway, no store): a plugin
//     (bench/plugins/erp_loop.c) makes N erp_calls per delivery and the benchmark answers each
//     kErpCall with a kErpReply at once through PluginWorker's Session — the time from the host
//     starting to send one reply to the plugin's next kErpCall arriving is one round trip through
//     both processes' threads. Floor: the same frames ping-ponged between two processes on a
//     blocking socketpair, no threads.
//   - worker start: PluginWorker::Start (clone with namespaces, execve, lockdown, the library from
//     its memfd, init, kReady) to a worker ready to serve. Floor: posix_spawn of /bin/true and
//     waitpid.
// Prints one JSON object (microseconds for round trips, milliseconds for starts).
//
//   worker_bench --worker clawguard-worker --plugin erp_loop.so [--calls 2000] [--rounds 10]
//                [--starts 40]
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "clawguard/sha256.h"
#include "host/dispatch/plugin_worker.h"
#include "loader/memfd_loader.h"

extern char** environ;

namespace {

using clawguard::host::PluginWorker;
using clawguard::host::WorkerOptions;
using clawguard::sandbox::FrameType;
using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& what) {
  std::cerr << "worker_bench: " << what << "\n";
  std::exit(1);
}

double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

nlohmann::json Summary(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) {
    return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
  };
  return {{"n", v.size()},
          {"p50", at(0.50)},
          {"p99", at(0.99)},
          {"p999", at(0.999)},
          {"max", v.back()}};
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Die("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::shared_ptr<PluginWorker> StartWorker(const WorkerOptions& o, const std::string& library) {
  auto memfd = clawguard::CreateSealedMemfd(library, "clawguard:bench");
  if (!memfd.ok()) Die(memfd.error().ToString());
  auto w = PluginWorker::Start(o, "erp-loop", "1.0.0", 1, std::move(memfd).value());
  if (!w.ok()) Die(w.error().ToString());
  return std::move(w).value();
}

// WorkerRound runs one delivery of |calls| erp_calls and adds each round trip to |out|.
void WorkerRound(PluginWorker& worker, int calls, uint64_t round, std::vector<double>* out) {
  clawguard::sandbox::DeliverMsg d;
  d.route = "order.created";
  d.method = "POST";
  d.path = "/webhooks/erp-loop/order.created";
  d.body = std::to_string(calls);
  d.key = clawguard::Sha256Hex("bench-" + std::to_string(round));
  d.names = {"webhook-id"};
  d.values = {"msg_" + std::to_string(round)};
  auto session = worker.Begin(d);
  if (!session.ok()) Die(session.error().ToString());
  const std::string reply = clawguard::sandbox::ErpReplyMsg{200, "{}"}.Encode();
  bool sent = false;
  Clock::time_point sent_at;
  for (;;) {
    auto f = (*session)->Next(std::chrono::milliseconds(10'000));
    if (!f) Die("the worker went silent or died: " + (*session)->gone_cause());
    if (f->type == FrameType::kDone) break;
    if (f->type != FrameType::kErpCall) continue;
    const auto now = Clock::now();
    if (sent) out->push_back(Micros(now - sent_at));
    sent_at = Clock::now();
    sent = true;
    if (!(*session)->Send(FrameType::kErpReply, reply)) Die("the worker is gone");
  }
}

bool ReadExact(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t r = ::read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// PeerRound ping-pongs |calls| frames of the same sizes as WorkerRound's with a child process on
// a blocking socketpair: the child reads a reply frame and writes a call frame back.
void PeerRound(int calls, std::vector<double>* out) {
  const std::string reply = clawguard::sandbox::EncodeFrame(
      FrameType::kErpReply, 1, clawguard::sandbox::ErpReplyMsg{200, "{}"}.Encode());
  const std::string call = clawguard::sandbox::EncodeFrame(
      FrameType::kErpCall, 1,
      clawguard::sandbox::ErpCallMsg{"POST", "/inventory/adjust", "{}"}.Encode());
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) Die("socketpair");
  const pid_t child = ::fork();
  if (child < 0) Die("fork");
  if (child == 0) {
    ::close(sv[0]);
    std::string buf(reply.size(), '\0');
    while (ReadExact(sv[1], buf.data(), buf.size())) {
      if (!clawguard::sandbox::WriteAll(sv[1], call)) break;
    }
    ::_exit(0);
  }
  ::close(sv[1]);
  std::string buf(call.size(), '\0');
  for (int i = 0; i < calls; ++i) {
    const auto start = Clock::now();
    if (!clawguard::sandbox::WriteAll(sv[0], reply)) Die("peer write");
    if (!ReadExact(sv[0], buf.data(), buf.size())) Die("peer read");
    out->push_back(Micros(Clock::now() - start));
  }
  ::close(sv[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
}

double SpawnTrue() {
  const auto start = Clock::now();
  pid_t pid = 0;
  char arg0[] = "true";
  char* argv[] = {arg0, nullptr};
  if (::posix_spawn(&pid, "/bin/true", nullptr, nullptr, argv, environ) != 0) Die("posix_spawn");
  int status = 0;
  ::waitpid(pid, &status, 0);
  return Micros(Clock::now() - start) / 1000.0;
}

// Count parses a positive decimal flag value.
int Count(const std::string& flag, const std::string& value) {
  int n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size() || n <= 0) {
    Die(flag + " takes a positive number, got '" + value + "'");
  }
  return n;
}

int Run(int argc, char** argv) {
  std::string worker_path, plugin_path;
  int calls = 2000, rounds = 10, starts = 40;
  bool memory_cgroup = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--worker")
      worker_path = value;
    else if (flag == "--plugin")
      plugin_path = value;
    else if (flag == "--calls")
      calls = Count(flag, value);
    else if (flag == "--rounds")
      rounds = Count(flag, value);
    else if (flag == "--starts")
      starts = Count(flag, value);
    else if (flag == "--memory-cgroup" && (value == "auto" || value == "none"))
      memory_cgroup = value == "auto";
    else
      Die("unknown flag " + flag);
  }
  if (worker_path.empty() || plugin_path.empty() || calls < 2 || calls > 1000) {
    Die("usage: worker_bench --worker W --plugin SO [--calls 2..1000] [--rounds N] [--starts N] "
        "[--memory-cgroup auto|none]");
  }
  const std::string library = ReadFile(plugin_path);
  WorkerOptions o;
  o.executable = worker_path;
  o.memory_limit = 1ull << 30;
  // As a host with plugins.memory_cgroup: auto starts them: each in a memory cgroup of its own
  // where this machine lets it make one.
  std::string cgroup = "none";
  if (auto cgroups = clawguard::sandbox::WorkerCgroups::Open(); memory_cgroup && cgroups.ok()) {
    o.cgroups = std::move(cgroups).value();
    cgroup = o.cgroups->Describe();
  }

  auto worker = StartWorker(o, library);
  std::vector<double> trips, peer_trips;
  {
    std::vector<double> warm;
    WorkerRound(*worker, calls, 0, &warm);
    PeerRound(calls, &warm);
  }
  for (int r = 1; r <= rounds; ++r) {
    WorkerRound(*worker, calls, static_cast<uint64_t>(r), &trips);
    PeerRound(calls, &peer_trips);
  }
  worker->Stop();

  std::vector<double> start_ms, spawn_ms;
  for (int i = 0; i < starts; ++i) {
    const auto t0 = Clock::now();
    auto w = StartWorker(o, library);
    start_ms.push_back(Micros(Clock::now() - t0) / 1000.0);
    w->Stop();
    spawn_ms.push_back(SpawnTrue());
  }

  const nlohmann::json rt = Summary(trips), prt = Summary(peer_trips);
  const nlohmann::json st = Summary(start_ms), pst = Summary(spawn_ms);
  nlohmann::json out = {
      {"erp_round_trip_us", rt},
      {"socketpair_round_trip_us", prt},
      {"round_trip_ratio_p50", rt["p50"].get<double>() / prt["p50"].get<double>()},
      {"round_trip_ratio_p99", rt["p99"].get<double>() / prt["p99"].get<double>()},
      {"worker_start_ms", st},
      {"spawn_true_ms", pst},
      {"start_ratio_p50", st["p50"].get<double>() / pst["p50"].get<double>()},
      {"memory_cgroup", cgroup},
  };
  std::cout << out.dump(2) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "worker_bench: " << e.what() << "\n";
    return 1;
  }
}
