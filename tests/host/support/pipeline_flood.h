// pipeline_flood.h — PipelineFlood: connections to a listener on loopback that each send a
// payload of pipelined requests and never read an answer, as a peer that lets the server's
// answers pile up in the socket buffers would: a small receive window and, as on a real network,
// a small segment size (loopback's 64 KiB segments let the kernel buffer megabytes), so the
// server's write blocks after a few answers. Used by tests/host/http/http_server_flood_test.cpp and
// tests/e2e/host_flood_e2e_test.cpp.
//
// Connections are spread over |sources| (local addresses in 127.0.0.0/8, bound before connect).
// Pump sends more of each payload as the server reads it and notes the connections the server
// closed — a reset, or an end of stream seen without reading (POLLRDHUP) — and Refill opens new
// ones in their place, so the flood keeps holding its connections. Nothing is ever read.
// Not thread-safe: one thread drives it; the counters may be read from any thread.
#ifndef CLAWGUARD_TESTS_HOST_SUPPORT_PIPELINE_FLOOD_H_
#define CLAWGUARD_TESTS_HOST_SUPPORT_PIPELINE_FLOOD_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace clawguard::host::testing {

struct PipelineFloodOptions {
  uint16_t port = 0;                                 // on 127.0.0.1
  int connections = 0;                               // held at once
  std::vector<std::string> sources = {"127.0.0.2"};  // round robin
  std::string payload;  // sent on every connection, e.g. requests back to back
  int rcvbuf = 4096;    // SO_RCVBUF before connect (the kernel doubles it)
  int mss = 536;        // TCP_MAXSEG before connect
};

class PipelineFlood {
 public:
  // Open connects |options.connections| sockets and sends what fits of the payload on each;
  // nullptr if a socket cannot be made, configured or bound (a refused connect counts as closed).
  static std::unique_ptr<PipelineFlood> Open(const PipelineFloodOptions& options);
  ~PipelineFlood();
  PipelineFlood(const PipelineFlood&) = delete;
  PipelineFlood& operator=(const PipelineFlood&) = delete;

  // Pump waits at most |wait_ms| for a socket to take more bytes or to be closed, sends more of
  // each payload, and closes the connections the server closed. Returns how many are open.
  int Pump(int wait_ms);
  // Refill opens connections in place of the closed ones (at most |limit|); returns how many.
  int Refill(int limit);

  // delivered: the open connections whose whole payload was sent (driving thread only).
  int delivered() const;
  int open() const { return open_.load(); }
  uint64_t opened_total() const { return opened_total_.load(); }  // connects that completed
  uint64_t closed_total() const { return closed_total_.load(); }  // closed by the server

 private:
  struct Conn {
    int fd = -1;
    size_t sent = 0;
  };
  explicit PipelineFlood(PipelineFloodOptions options) : options_(std::move(options)) {}
  // Connect fills |slot| with a new connection from the slot's source; false if a socket cannot
  // be made (a refused connect leaves the slot closed and counts it).
  bool Connect(size_t slot);
  void Send(Conn& c);
  void Close(Conn& c, bool by_server);

  const PipelineFloodOptions options_;
  std::vector<Conn> conns_;
  std::atomic<int> open_{0};
  std::atomic<uint64_t> opened_total_{0};
  std::atomic<uint64_t> closed_total_{0};
};

}  // namespace clawguard::host::testing

#endif  // CLAWGUARD_TESTS_HOST_SUPPORT_PIPELINE_FLOOD_H_
