// main.cpp — clawguard-hostile-erp: an ERP that misbehaves as real ERPs do (hostile_erp.h).
//
//   clawguard-hostile-erp --mode MODE [--address 127.0.0.1] [--port 0] [--delay-ms N]
//                         [--hostile-requests N] [--bare-409] [--close-after-answers N]
//                         [--tls-cert PEM --tls-key PEM]
//
// Listens (https with --tls-cert and --tls-key), prints one JSON line on stdout
//   {"event":"listening","port":PORT,"base_url":"http(s)://127.0.0.1:PORT","mode":"MODE"}
// and serves until SIGTERM or SIGINT; then prints its counters (StatsJson) as one JSON line on
// stderr and exits 0. `GET /_stats` answers the same counters while it runs. Exit 2 on a usage
// or listen error.
#include <csignal>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "hostile_erp/hostile_erp.h"

int main(int argc, char** argv) {
  using clawguard::tools::HostileErp;
  using clawguard::tools::HostileModeFromName;
  using clawguard::tools::HostileModeName;
  CLI::App app{
      "clawguard-hostile-erp — an ERP that misbehaves as real ERPs do, counting effects per "
      "Idempotency-Key"};
  std::string mode = "normal";
  clawguard::tools::HostileErpOptions options;
  int delay_ms = 0;
  bool bare_409 = false;
  std::string modes;
  for (auto m : clawguard::tools::kAllHostileModes)
    modes += (modes.empty() ? "" : ", ") + std::string(HostileModeName(m));
  app.add_option("--mode", mode, "one of: " + modes);
  app.add_option("--address", options.address, "IPv4 address to listen on");
  app.add_option("--port", options.port, "port (0: a free port)");
  app.add_option("--delay-ms", delay_ms,
                 "processing time (slow, conflict-in-flight, dedup-after-completion; "
                 "interim: spread over the interim answers)")
      ->check(CLI::Range(0, 600'000));
  app.add_option("--hostile-requests", options.hostile_requests,
                 "close-mid-body, garbage, never-answer, double-answer, double-answer-two-writes, "
                 "late-second-answer: the first N requests of each key (0: all)")
      ->check(CLI::Range(0, 1'000'000));
  app.add_flag("--bare-409", bare_409,
               "conflict-in-flight: a bare 409 without idempotency_error or Retry-After");
  app.add_option("--close-after-answers", options.close_after_answers,
                 "close every connection right after its N-th answer, unannounced (0: never)")
      ->check(CLI::Range(0, 1'000'000));
  app.add_option("--tls-cert", options.tls_cert, "PEM server certificate (chain): serve https")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", options.tls_key, "PEM key of --tls-cert")->check(CLI::ExistingFile);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  const auto parsed = HostileModeFromName(mode);
  if (!parsed) {
    std::cerr << "clawguard-hostile-erp: unknown --mode \"" << mode
              << "\"; expected one of: " << modes << "\n";
    return 2;
  }
  options.mode = *parsed;
  options.delay = std::chrono::milliseconds(delay_ms);
  options.conflict_marker = !bare_409;

  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto erp = HostileErp::Start(options);
  if (!erp.ok()) {
    std::cerr << "clawguard-hostile-erp: " << erp.error().ToString() << "\n";
    return 2;
  }
  std::cout << nlohmann::json{{"event", "listening"},
                              {"port", (*erp)->port()},
                              {"base_url", (*erp)->base_url()},
                              {"mode", HostileModeName(options.mode)}}
                   .dump()
            << std::endl;
  int sig = 0;
  sigwait(&stop_signals, &sig);
  (*erp)->Stop();
  std::cerr << (*erp)->StatsJson() << std::endl;
  return 0;
}
