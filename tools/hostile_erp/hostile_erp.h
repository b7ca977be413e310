// hostile_erp.h — HostileErp: a real HTTP/1.1 ERP on a raw TCP socket that misbehaves as real
// ERPs do, for the host's end-to-end tests and for people (`clawguard-hostile-erp`). Unlike
// tools/test_erp (an HttpServer handler), it writes its answers byte by byte, so it can send what
// no well-behaved server library sends: interim answers, two answers, a body cut short, garbage,
// nothing at all.
//
// It counts what matters for effectively-once ERP calls, per Idempotency-Key: requests, effects
// (a new order line, a payment — what a retry must not repeat), and requests that arrived while
// an earlier request with the same key was still in flight at the ERP ("overlapping": a host that
// sends one call at a time per key has none, unless its own deadline gave up on a request the
// ERP was still processing). Every effect's answer is 200 with a body naming its own key,
// `{"ok":true,"key":"<Idempotency-Key>","effect":<n>}`, so a caller can check that each stored
// answer belongs to its own call.
//
// With a certificate and key (HostileErpOptions::tls_cert, tls_key) it speaks https (OpenSSL,
// TLS 1.2 or 1.3) with the same modes: each write of an answer is one TLS record, so two writes
// are two records.
//
// Modes (one per server; HostileErpOptions):
//   normal                 an ERP that deduplicates keys on arrival: a request whose key was acted
//                          on gets the stored answer; one whose key is in flight waits for it
//   slow                   normal, answering |delay| after the request (the effect is at arrival)
//   interim                100, 102 and 103 interim answers (|delay| / 3 apart) before every answer
//   double-answer          every answer is written twice on the connection, in one write
//   double-answer-two-writes
//                          every answer is written twice, in two writes (over https two TLS
//                          records) that leave together (TCP_CORK), so both reach the client at
//                          once
//   late-second-answer     every answer is written again |delay| later (default 20 ms)
//   close-mid-body         the effect happens; the answer is cut after half its body, then closed
//   garbage                the effect happens; the answer is bytes that are not HTTP, then closed
//   conflict-in-flight     a request whose key is in flight gets 409 (Stripe's idempotency_error
//                          body and Retry-After: 1, or a bare 409 without |conflict_marker|); the
//                          first answers after |delay|; finished keys are replayed
//   dedup-after-completion a key is recorded only when its request finished (after |delay|): a
//                          request that arrives meanwhile is a second effect
//   never-answer           the effect happens; no answer ever (held until the client closes)
// close-mid-body, garbage, never-answer, double-answer, double-answer-two-writes and
// late-second-answer treat the first |hostile_requests| requests of each key so (0: every
// request); later requests for the key get the stored answer, properly framed and once.
// With |close_after_answers| N > 0 the ERP closes every connection right after its N-th answer
// without announcing it (no Connection: close; over https a close_notify, then FIN), as an ERP
// whose idle timeout fires at once.
// `GET /_stats` answers StatsJson() and is not counted.
//
// Thread-safe. One thread per connection (at most kMaxConnections at once; more are closed).
#ifndef CLAWGUARD_TOOLS_HOSTILE_ERP_HOSTILE_ERP_H_
#define CLAWGUARD_TOOLS_HOSTILE_ERP_HOSTILE_ERP_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "clawguard/error.h"
#include "core/mutex.h"

namespace clawguard::tools {

enum class HostileMode {
  kNormal,
  kSlow,
  kInterim,
  kDoubleAnswer,
  kDoubleAnswerTwoWrites,
  kLateSecondAnswer,
  kCloseMidBody,
  kGarbage,
  kConflictInFlight,
  kDedupAfterCompletion,
  kNeverAnswer,
};
inline constexpr HostileMode kAllHostileModes[] = {HostileMode::kNormal,
                                                   HostileMode::kSlow,
                                                   HostileMode::kInterim,
                                                   HostileMode::kDoubleAnswer,
                                                   HostileMode::kDoubleAnswerTwoWrites,
                                                   HostileMode::kLateSecondAnswer,
                                                   HostileMode::kCloseMidBody,
                                                   HostileMode::kGarbage,
                                                   HostileMode::kConflictInFlight,
                                                   HostileMode::kDedupAfterCompletion,
                                                   HostileMode::kNeverAnswer};

// HostileModeName returns the mode's name as listed above ("close-mid-body", …).
std::string_view HostileModeName(HostileMode mode);
// HostileModeFromName is its inverse; nullopt for any other text.
std::optional<HostileMode> HostileModeFromName(std::string_view name);

struct HostileErpOptions {
  std::string address = "127.0.0.1";  // an IPv4 address to listen on
  uint16_t port = 0;                  // 0: a free port
  HostileMode mode = HostileMode::kNormal;
  std::chrono::milliseconds delay{0};  // see the modes
  int hostile_requests = 0;            // see the modes (0: every request)
  bool conflict_marker = true;  // conflict-in-flight: say "idempotency_error" and Retry-After
  int close_after_answers = 0;  // see the modes (0: never)
  // tls_cert, tls_key: PEM files of the server certificate (chain) and its key; both set: https.
  std::string tls_cert;
  std::string tls_key;
};

// HostileKeyStats counts one Idempotency-Key's requests.
struct HostileKeyStats {
  size_t requests = 0;
  size_t effects = 0;
  size_t overlapping = 0;  // arrived while an earlier request with this key was in flight
  size_t conflicts = 0;    // answered 409 (conflict-in-flight)
};

struct HostileErpStats {
  size_t connections = 0;    // accepted (over https: with a completed handshake)
  size_t requests = 0;       // every request but GET /_stats
  size_t extra_answers = 0;  // second answers written whole (the double-answer modes)
  size_t effects = 0;
  size_t keyless = 0;  // requests without an Idempotency-Key (each one an effect)
  size_t overlapping = 0;
  size_t conflicts = 0;
  size_t max_effects_per_key = 0;
  std::map<std::string, HostileKeyStats> keys;  // by Idempotency-Key (at most kMaxKeys)
};

class HostileErp {
 public:
  static constexpr size_t kMaxConnections = 256;
  static constexpr size_t kMaxKeys = 100'000;
  static constexpr size_t kMaxHeaderBytes = 64 * 1024;
  static constexpr size_t kMaxBodyBytes = 1024 * 1024;

  // Start listens and serves until Stop. kConfigInvalid for a bad address, or a TLS certificate or
  // key that cannot be loaded (or only one of them); kInternal when it cannot listen.
  static Result<std::unique_ptr<HostileErp>> Start(HostileErpOptions options);
  ~HostileErp();
  HostileErp(const HostileErp&) = delete;
  HostileErp& operator=(const HostileErp&) = delete;

  uint16_t port() const { return port_; }
  // base_url is http://ADDRESS:PORT, or https://ADDRESS:PORT with TLS.
  std::string base_url() const;
  HostileMode mode() const { return options_.mode; }

  HostileErpStats Stats() const;
  // StatsJson is Stats() as one JSON object ({"mode", "connections", "requests", "extra_answers",
  // "effects", "keyless", "overlapping", "conflicts", "max_effects_per_key", "keys": {key: {…}}}).
  std::string StatsJson() const;

  // Stop closes the listener and every connection, ends delays, and joins the threads.
  void Stop();

 private:
  struct Request;
  struct TlsContext;  // the server's SSL_CTX (https only)
  class Link;         // one connection: the socket, and its TLS session over https
  explicit HostileErp(HostileErpOptions options);
  void AcceptLoop();
  void Serve(int fd);
  // Handle answers one request on |link|; false when the connection must close.
  bool Handle(Link& link, const Request& request) CLAWGUARD_EXCLUDES(mu_);
  // Admit counts a request for |key| arriving; true when another one of the key is in flight.
  void Admit(const std::string& key) CLAWGUARD_REQUIRES(mu_);
  void Finish(const std::string& key) CLAWGUARD_EXCLUDES(mu_);
  // Effect records a new effect for |key| and returns its answer body.
  std::string Effect(const std::string& key, const std::string& path) CLAWGUARD_REQUIRES(mu_);
  // SleepFor waits |d| unless the server stops first (false then).
  bool SleepFor(std::chrono::milliseconds d) CLAWGUARD_EXCLUDES(mu_);
  // WaitStored waits until |key| has a stored answer (or the server stops): the answer or "".
  std::string WaitStored(const std::string& key) CLAWGUARD_EXCLUDES(mu_);
  // TakeHostile counts a hostile treatment of |key|: true while it gets one (hostile_requests).
  bool TakeHostile(const std::string& key) CLAWGUARD_EXCLUDES(mu_);
  // CountExtraAnswer counts a second answer written whole; returns true.
  bool CountExtraAnswer() CLAWGUARD_EXCLUDES(mu_);

  const HostileErpOptions options_;
  std::unique_ptr<TlsContext> tls_;  // set for https
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread acceptor_;

  mutable Mutex mu_;
  std::condition_variable changed_;
  bool stopping_ CLAWGUARD_GUARDED_BY(mu_) = false;
  std::set<int> open_fds_ CLAWGUARD_GUARDED_BY(mu_);
  std::vector<std::thread> connections_ CLAWGUARD_GUARDED_BY(mu_);
  HostileErpStats stats_ CLAWGUARD_GUARDED_BY(mu_);
  // Requests of a key being processed.
  std::map<std::string, int> in_flight_ CLAWGUARD_GUARDED_BY(mu_);
  // Answer body by key, once acted on (and recorded).
  std::map<std::string, std::string> stored_ CLAWGUARD_GUARDED_BY(mu_);
  // Hostile treatments given, by key.
  std::map<std::string, int> hostile_taken_ CLAWGUARD_GUARDED_BY(mu_);
};

}  // namespace clawguard::tools

#endif  // CLAWGUARD_TOOLS_HOSTILE_ERP_HOSTILE_ERP_H_
