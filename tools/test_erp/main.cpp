// main.cpp — clawguard-test-erp: a small real HTTP ERP for the demo and the benchmarks.
//
//   clawguard-test-erp [--address 127.0.0.1:0] [--workers 2] [--static]
//
// --static answers every request 200 `{}` inline on the I/O thread (a FrontHandler, no counting):
// the host's HTTP layer alone, the ceiling bench/host_bench.sh compares the replay path with.
//
// Listens (port 0 picks a free port), prints one JSON line on stdout
//   {"event":"listening","port":PORT,"base_url":"http://127.0.0.1:PORT"}
// and answers like an idempotent ERP (see counting_erp.h) until SIGTERM or SIGINT; then prints
// the final counters as one JSON line on stderr and exits 0. Exit 2 on a usage or bind error.
#include <csignal>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "host/http/http_server.h"
#include "test_erp/counting_erp.h"

int main(int argc, char** argv) {
  using clawguard::host::HttpServer;
  CLI::App app{
      "clawguard-test-erp — an idempotent test ERP that counts effects per Idempotency-Key"};
  std::string address = "127.0.0.1:0";
  int workers = 2;
  bool constant = false;
  app.add_flag("--static", constant,
               "answer 200 {} to everything on the I/O thread (benchmark reference)");
  app.add_option("--address", address, "host:port to listen on (port 0: a free port)");
  app.add_option("--workers", workers, "I/O threads, and as many handler threads")
      ->check(CLI::Range(1, 64));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  // Block the stop signals before any thread starts; sigwait below is their only receiver.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  clawguard::tools::CountingErp erp;
  clawguard::host::ServerOptions options;
  options.address = address;
  options.workers = workers;
  auto server =
      constant ? HttpServer::CreateWithFront(
                     options,
                     [](const clawguard::host::HttpRequest&)
                         -> std::variant<clawguard::host::HttpResponse, clawguard::host::Deferred> {
                       clawguard::host::HttpResponse r;
                       r.headers.Set("Content-Type", "application/json");
                       r.body = "{}";
                       return r;
                     })
               : HttpServer::Create(options, [&erp](const clawguard::host::HttpRequest& r) {
                   return erp.Handle(r);
                 });
  if (!server.ok()) {
    std::cerr << "clawguard-test-erp: " << server.error().ToString() << "\n";
    return 2;
  }
  if (auto s = (*server)->Start(); !s.ok()) {
    std::cerr << "clawguard-test-erp: " << s.ToString() << "\n";
    return 2;
  }
  const std::string host = address.substr(0, address.rfind(':'));
  const uint16_t port = (*server)->port();
  std::cout << nlohmann::json{{"event", "listening"},
                              {"port", port},
                              {"base_url", "http://" + host + ":" + std::to_string(port)}}
                   .dump()
            << std::endl;

  int sig = 0;
  sigwait(&stop_signals, &sig);
  (*server)->Stop();
  std::cerr << erp.StatsJson() << std::endl;
  return 0;
}
