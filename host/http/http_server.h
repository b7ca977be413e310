// http_server.h — HttpServer: the host's HTTP/1.1 listener (the first stages of the request path:
// listener → session). It owns sockets, TLS, keep-alive, size limits and timeouts, and hands each
// complete request to a Handler (HttpRequest → HttpResponse) that never sees a socket.
//
// Threads: `workers` I/O threads, each running its own io_context (accept on the first; each
// accepted connection is given to the next context, round robin, and lives on that one thread:
// TLS, read, write), and a separate pool of `handler_threads` threads runs the Handler, so a
// Handler may block (store round trips, plugin dispatch) without stalling other connections' I/O.
// The response is written back on the connection's I/O thread. Each blocked Handler holds one
// handler thread, so handler_threads bounds the requests in flight (and what a group commit can
// merge). An optional FrontHandler runs first, inline on the I/O thread that read the request: what
// it can answer without blocking (refusals, replays from memory) never crosses threads, which is
// most of the cost of a small answer; the rest it defers to the handler pool, or starts on
// threads of its own and answers later through a Responder (Deferred::start: the host's webhook
// deliveries, so the thread that runs a delivery's plugin is the one that answers it).
//
// Connections (ServerOptions::max_connections, max_connections_per_peer): a listener holds at
// most max_connections connections, and at most max_connections_per_peer from one peer address.
// A new connection over either bound takes the place of an idle one — first one that has not
// proven itself (no request handed on by the FrontHandler, which for webhooks means
// authenticated and admitted, nor, with a plain Handler, answered below 400: a connection still in
// its TLS handshake, waiting for or reading a request, or answered without proving itself): those
// answered, most recently answered first, then the others, oldest first; then a proven one idle
// between requests, least recently used first — of the same peer when the per-peer bound is the
// one reached. An unproven connection counts as idle whatever it does, also while its answer is
// written: a peer that pipelines requests and never reads cannot pin a slot with answers piling
// up in the socket buffers (a connection shed mid-answer is reset, so the kernel drops what is
// left unsent). A refusal (status ≥ 400) ends an unproven connection (`Connection: close`, the
// pipelined rest drained unanswered). A proven connection whose request is being handled or
// answered is never shed. With no idle connection to take, the new connection is closed at once
// (refused). So idle, slow (slow loris) and non-reading clients that have proven nothing cannot
// hold every descriptor and stop accept: a signed webhook always gets in. connection_stats()
// counts what was shed and refused.
//
// Limits (checked by the HTTP parser, before the Handler runs): a header block over max_headers
// or a body over max_body is answered 413 application/problem+json (`request_too_large`) and the
// connection is closed; a malformed request gets 400 and the connection is closed. Timeouts:
// read_timeout bounds reading one whole request (a slow client is disconnected, no answer),
// write_timeout bounds writing one response, idle_timeout bounds the wait for the next request on
// a keep-alive connection.
#ifndef CLAWGUARD_HOST_HTTP_HTTP_SERVER_H_
#define CLAWGUARD_HOST_HTTP_HTTP_SERVER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "clawguard/error.h"
#include "clawguard/limits.h"
#include "host/http/http_types.h"
#include "host/http/responder.h"

namespace clawguard::host {

// Handler answers one request. It runs on a handler thread and may block. It must be
// thread-safe (several requests run at once). An exception escaping it becomes a 500.
using Handler = std::function<HttpResponse(const HttpRequest&)>;

// Deferred is a FrontHandler's "not now", in one of two forms (set exactly one):
//   - |run| answers the request on a handler thread of the server's pool (it may block);
//   - |start| is called at once, on the I/O thread (it must not block), with the request and a
//     Responder; the request is answered when a copy of the Responder is answered, from any
//     thread, at any later time (host/http/responder.h: the first answer wins; all copies destroyed
//     unanswered → 500). The caller owns where the work runs — e.g. the webhook pipeline's
//     DeliveryRunner, whose watchdog can answer for a delivery whose thread a plugin keeps.
// Whatever Front learnt (e.g. the authenticated id) travels in the function's captures.
struct Deferred {
  std::function<HttpResponse(const HttpRequest&)> run;
  std::function<void(HttpRequest, Responder)> start;
};
// FrontHandler answers a request on the I/O thread, or defers it. It must never block (no store,
// disk, network or plugin wait) and must be thread-safe. An exception escaping it becomes a 500.
using FrontHandler = std::function<std::variant<HttpResponse, Deferred>(const HttpRequest&)>;

// kAbortConnection: a Handler that returns this status makes the server close the connection
// without answering (for tests that simulate a lost answer, and for dropping abusive peers).
inline constexpr int kAbortConnection = 0;

// ServerTls names the PEM files of the listener's certificate chain and private key.
struct ServerTls {
  std::string cert_pem_path;  // leaf first, then intermediates
  std::string key_pem_path;
};

// ServerOptions configure one listener (host.yaml `listen:` / `admin:`).
struct ServerOptions {
  std::string address = "127.0.0.1:0";  // host:port or [v6]:port; port 0 picks a free port
  uint64_t max_body = limits::kDefaultMaxRequestBody;
  uint64_t max_headers = limits::kDefaultMaxRequestHeaders;
  int workers = 4;          // I/O threads
  int handler_threads = 0;  // threads that run the Handler; 0: kDefaultHandlerThreads
  std::chrono::milliseconds read_timeout{10'000};
  std::chrono::milliseconds write_timeout{10'000};
  std::chrono::milliseconds idle_timeout{60'000};
  std::optional<ServerTls> tls;  // TLS 1.2+ without compression when set
  uint64_t max_connections = limits::kDefaultMaxConnections;                  // ≥ 1
  uint64_t max_connections_per_peer = limits::kDefaultMaxConnectionsPerPeer;  // 1..max_connections
};

// ConnectionStats is a listener's connection bookkeeping now.
struct ConnectionStats {
  uint64_t open = 0;  // connections held (not counting those being shed)
  uint64_t max_connections = 0;
  uint64_t max_connections_per_peer = 0;
  uint64_t peers = 0;          // distinct peer addresses among the open connections
  uint64_t shed_total = 0;     // idle connections closed to make room
  uint64_t refused_total = 0;  // new connections closed at once (nothing idle to shed)
  // shedding: a connection was shed or refused within the last kSheddingWindow.
  bool shedding = false;
};
inline constexpr std::chrono::seconds kSheddingWindow{10};

// HttpServer is one listening socket plus its threads. Create binds (so port() is known at once),
// Start begins accepting, Stop is graceful. Public methods never throw. Start and Stop are to be
// called from one owning thread; port() is thread-safe.
class HttpServer {
 public:
  // Create validates |options|, loads the TLS files and binds the address. Reasons:
  // kConfigInvalid (bad address, limits, workers, timeouts, unreadable or mismatched TLS files),
  // kInternal (the address cannot be bound).
  static Result<std::unique_ptr<HttpServer>> Create(ServerOptions options, Handler handler);
  // Create with a FrontHandler: every request goes to |front| first (see FrontHandler).
  static Result<std::unique_ptr<HttpServer>> CreateWithFront(ServerOptions options,
                                                             FrontHandler front);

  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Start begins accepting connections on the I/O threads. kInternal if already started or
  // stopped, or if the threads cannot be started.
  Status Start();

  // port returns the bound port (the real one when the address asked for port 0).
  uint16_t port() const;

  // connection_stats returns the connection counters (see ConnectionStats). Thread-safe.
  ConnectionStats connection_stats() const;

  // Stop stops accepting, closes idle connections, lets requests already read finish and their
  // answers be written (with `Connection: close`), then joins every thread. Idempotent.
  // WARNING: it waits for running Handlers and for every Deferred::start's Responder to be
  // answered (or dropped); a Handler that never returns blocks Stop.
  void Stop();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  static Result<std::unique_ptr<HttpServer>> CreateServer(ServerOptions options, Handler handler,
                                                          FrontHandler front);
  std::unique_ptr<Impl> impl_;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_HTTP_HTTP_SERVER_H_
