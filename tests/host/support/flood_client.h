// flood_client.h — FloodClient: opens many connections to a listener on loopback and holds them,
// as an unauthenticated client exhausting a server's descriptors would: idle (connect, send
// nothing) or slow loris (send a request's first line and then one header byte at a time,
// never finishing). Used by the connection-limit tests
// (tests/host/http/http_server_limits_test.cpp, tests/e2e/host_flood_e2e_test.cpp).
//
// Connections are spread over |sources| (local addresses in 127.0.0.0/8, bound before connect),
// so one flood can be one peer or several. Only loopback is ever a target. Open returns when
// every connect finished (a loopback connect completes in the kernel's backlog, before the server
// accepts); Count polls every socket without blocking and tells which the server closed.
// Thread-safe for Count/Trickle from one test thread; the destructor closes everything.
#ifndef CLAWGUARD_TESTS_HOST_SUPPORT_FLOOD_CLIENT_H_
#define CLAWGUARD_TESTS_HOST_SUPPORT_FLOOD_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace clawguard::host::testing {

struct FloodOptions {
  uint16_t port = 0;  // on 127.0.0.1
  int connections = 0;
  std::vector<std::string> sources = {"127.0.0.2"};  // round robin
  bool slow_loris = false;  // send a partial request (first line) on each connection at once
};

// FloodCount is what the held sockets show now.
struct FloodCount {
  int open = 0;    // still connected (nothing from the server)
  int closed = 0;  // the server closed it (EOF or reset)
};

class FloodClient {
 public:
  // Open connects |options.connections| sockets; nullptr if a socket cannot be made or bound
  // (a refused connect counts as closed, not as a failure: the server may refuse under pressure).
  static std::unique_ptr<FloodClient> Open(const FloodOptions& options);
  ~FloodClient();
  FloodClient(const FloodClient&) = delete;
  FloodClient& operator=(const FloodClient&) = delete;

  int connected() const { return connected_; }  // connects that completed
  FloodCount Count();
  // closed says whether connection |i| (in connect order) was seen closed by the last Count.
  bool closed(size_t i) const { return fds_.at(i) < 0; }
  // Trickle sends one more header byte on every open slow-loris connection (a slow client that
  // keeps its request alive).
  void Trickle();

 private:
  FloodClient() = default;
  std::vector<int> fds_;  // -1 once seen closed
  int connected_ = 0;
  bool slow_loris_ = false;
};

}  // namespace clawguard::host::testing

#endif  // CLAWGUARD_TESTS_HOST_SUPPORT_FLOOD_CLIENT_H_
