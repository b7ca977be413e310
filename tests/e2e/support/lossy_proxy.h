// lossy_proxy.h — LossyProxy: a real TCP proxy on 127.0.0.1 (port 0) in front of a test server
// (the test ERP), losing a chosen share of what passes through it, for resilience tests.
//
// For every exchange — a new connection, and every later request on a kept-alive connection
// (client bytes that arrive after the proxy relayed answer bytes) — the proxy draws from a
// seeded PRNG (the sequence of decisions is fixed by the seed; which connection gets which draw
// depends on arrival order) and, with probability loss_percent, loses it in one of three ways,
// chosen evenly:
//   - kDrop:       the connection is closed at once (nothing reaches the upstream);
//   - kStall:      the request is read and discarded, no answer ever comes: the client times out;
//   - kLoseAnswer: the request IS forwarded (the upstream acts on it) but its answer is
//                  discarded and none is sent: the client times out not knowing it was done.
// Otherwise it is kForward: bytes are relayed both ways. A lost connection stays lost until the
// client closes it (or Stop). SetLossPercent changes the share at run time (e.g. 80 %, then 0 %
// to let the system recover).
//
// Resources are bounded: at most max_connections connections at once (one thread each); a
// connection over the cap is closed at once and counted as refused; a relayed write that a peer
// does not take within 5 s ends its connection. Stop closes every connection
// and joins every thread; it is idempotent and done by the destructor. Thread-safe.
#ifndef CLAWGUARD_TESTS_RESILIENCE_SUPPORT_LOSSY_PROXY_H_
#define CLAWGUARD_TESTS_RESILIENCE_SUPPORT_LOSSY_PROXY_H_

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "clawguard/error.h"

namespace clawguard::host::testing {

struct LossyProxyOptions {
  uint16_t upstream_port = 0;  // on 127.0.0.1; required
  uint64_t seed = 20261202;
  int loss_percent = 0;  // 0..100
  size_t max_connections = 64;
};

// LossyProxyCounts counts decisions (one per exchange) and refused connections.
struct LossyProxyCounts {
  uint64_t forwarded = 0;
  uint64_t dropped = 0;
  uint64_t stalled = 0;
  uint64_t answers_lost = 0;
  uint64_t refused = 0;  // over max_connections
  uint64_t lost() const { return dropped + stalled + answers_lost; }
};

class LossyProxy {
 public:
  // Create binds 127.0.0.1:0 and starts accepting. kConfigInvalid for a bad option, kInternal if
  // the socket or the thread cannot be made.
  static Result<std::unique_ptr<LossyProxy>> Create(LossyProxyOptions options);
  ~LossyProxy();
  LossyProxy(const LossyProxy&) = delete;
  LossyProxy& operator=(const LossyProxy&) = delete;

  uint16_t port() const { return port_; }
  // base_url is http://127.0.0.1:PORT.
  std::string base_url() const;
  // SetLossPercent applies to the exchanges that start after it (clamped to 0..100).
  void SetLossPercent(int percent);
  LossyProxyCounts counts() const;
  // Stop: see the file comment.
  void Stop();

 private:
  enum class Action { kForward, kDrop, kStall, kLoseAnswer };
  struct Conn {
    std::thread thread;
    std::atomic<bool> done{false};
  };

  explicit LossyProxy(LossyProxyOptions options) : options_(options) {}
  void AcceptLoop();
  void Serve(int client_fd, Conn* self);
  Action Draw();
  void ReapFinished();  // joins finished connection threads; caller holds mu_

  const LossyProxyOptions options_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: readable once Stop began (level-triggered, wakes every poller)
  uint16_t port_ = 0;
  std::atomic<int> loss_percent_{0};
  std::thread accept_thread_;
  mutable std::mutex mu_;
  std::mt19937_64 rng_;      // guarded by mu_
  LossyProxyCounts counts_;  // guarded by mu_
  std::list<Conn> conns_;    // guarded by mu_
  bool stopped_ = false;     // guarded by mu_
};

}  // namespace clawguard::host::testing

#endif  // CLAWGUARD_TESTS_RESILIENCE_SUPPORT_LOSSY_PROXY_H_
