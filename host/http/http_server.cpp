// http_server.cpp — Boost.Beast sessions behind HttpServer (see http_server.h). Beast and Asio
// stay in this file (pimpl) to keep other translation units light. Over 400 lines on purpose:
// the listener, the session template and their small helpers share one Beast-heavy translation
// unit, which is compiled once instead of once per split file. The checks that need no Beast
// (listen address, options, response framing) are in http_server_checks.cpp.
#include "host/http/http_server.h"

#include <openssl/ssl.h>

#include <array>
#include <atomic>
// GCC 12 reports -Wnull-dereference inside Asio's scheduler after inlining (a false positive in
// a system header); it is silenced for the Boost headers only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#pragma GCC diagnostic pop
#include <condition_variable>
#include <exception>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "clawguard/ossl.h"
#include "core/mutex.h"
#include "host/http/connection_table.h"
#include "host/http/http_server_checks.h"
#include "host/http/problem.h"
#include "runtime/thread_name.h"

namespace clawguard::host {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using http_internal::Endpoint;
using http_internal::ParseHostPort;
using http_internal::ValidResponse;

// After an answer that closes the connection, unread request bytes are drained for at most this
// long (and kMaxLingerDrainBytes) so the peer reads the answer instead of a reset (nginx
// lingering_close).
constexpr std::chrono::milliseconds kLingerTimeout{1000};
// Pause before accepting again after an accept error (e.g. EMFILE), so the loop does not spin.
constexpr std::chrono::milliseconds kAcceptRetryDelay{50};
constexpr size_t kIdleReadChunk = 4096;

std::string SslErrorsOr(const std::string& fallback) {
  std::string errors = ossl::GetSslErrors();
  return errors.empty() ? fallback : errors;
}

// A connection's socket and stream are bound to their io_context's executor type, not to the
// type-erased any_io_executor of tcp::socket / beast::tcp_stream: each I/O operation and timer
// then copies a pointer instead of constructing and destroying an erased executor (measured at
// about 4 % of the HTTP layer's CPU).
using Executor = asio::io_context::executor_type;
using Socket = asio::basic_stream_socket<tcp, Executor>;
using TcpStream = beast::basic_stream<tcp, Executor>;

class SessionBase : public std::enable_shared_from_this<SessionBase> {
 public:
  virtual ~SessionBase() = default;
  // RequestStop closes the connection if it is between requests; an answer in progress is
  // finished first (with Connection: close). Any thread.
  virtual void RequestStop() = 0;
  // Shed closes the connection: the ConnectionTable doomed it while it was idle — between
  // requests, or unproven and writing an answer — and Busy refuses a doomed one, so no request of
  // it is being handled. A write in progress ends with an error (the answer is dropped). Any
  // thread.
  virtual void Shed() = 0;
};

// ServerState is what every session of one server shares. It outlives the io_context.
struct ServerState {
  ServerOptions options;
  Handler handler;     // set when there is no front
  FrontHandler front;  // set when there is one
  std::optional<ssl::context> tls;
  asio::thread_pool* handler_pool = nullptr;
  std::atomic<bool> stopping{false};
  Mutex mu;
  std::condition_variable cv;
  std::unordered_map<uint64_t, std::weak_ptr<SessionBase>> sessions CLAWGUARD_GUARDED_BY(mu);
  uint64_t next_id CLAWGUARD_GUARDED_BY(mu) = 0;
  std::optional<ConnectionTable> table CLAWGUARD_GUARDED_BY(mu);
};

HttpResponse RunHandler(const Handler& handler, const HttpRequest& request) {
  try {
    return handler(request);
  } catch (...) {
    // The exception text may carry request data; it is not echoed to the peer.
    return ProblemResponse(Reason::kInternal, "the request handler failed");
  }
}

std::variant<HttpResponse, Deferred> RunFront(const FrontHandler& front,
                                              const HttpRequest& request) {
  try {
    return front(request);
  } catch (...) {
    return ProblemResponse(Reason::kInternal, "the request handler failed");
  }
}

template <class Stream>
class Session final : public SessionBase {
  static constexpr bool kTls = !std::is_same_v<Stream, TcpStream>;

 public:
  Session(ServerState& state, Socket&& socket) requires(!kTls)
      : state_(state), stream_(std::move(socket)) {}
  Session(ServerState& state, Socket&& socket) requires(kTls)
      : state_(state), stream_(std::move(socket), *state.tls) {}

  ~Session() override {
    MutexLock lock(state_.mu);
    state_.table->Remove(&entry_);
    if (registered_) state_.sessions.erase(id_);
    state_.cv.notify_all();
  }

  // Run admits the connection from |peer| (shedding idle ones if a bound is reached, or closing
  // this one when nothing idle can go), registers the session and starts it on its connection's
  // I/O thread.
  void Run(std::string peer) {
    std::vector<std::shared_ptr<SessionBase>> victims;
    bool admitted = false;
    {
      MutexLock lock(state_.mu);
      entry_.owner = static_cast<SessionBase*>(this);
      entry_.peer = std::move(peer);
      std::vector<void*> shed;
      admitted =
          !state_.stopping && state_.table->Admit(&entry_, &shed, std::chrono::steady_clock::now());
      for (void* owner : shed) {
        // A session whose destructor waits for this lock is gone already (lock() is empty).
        if (auto victim = static_cast<SessionBase*>(owner)->weak_from_this().lock())
          victims.push_back(std::move(victim));
      }
      if (admitted) {
        id_ = state_.next_id++;
        state_.sessions.emplace(id_, weak_from_this());
        registered_ = true;
      }
    }
    for (auto& victim : victims) victim->Shed();
    if (!admitted) {
      beast::error_code ec;
      Lowest().socket().close(ec);  // refused: no operation was started on it
      return;
    }
    asio::dispatch(stream_.get_executor(), [self = Self()] { self->OnRun(); });
  }

  void RequestStop() override {
    asio::post(stream_.get_executor(), [self = Self()] {
      if (!self->busy_) self->Abort();
    });
  }

  void Shed() override {
    asio::post(stream_.get_executor(), [self = Self()] {
      if (self->writing_) return self->Reset();
      self->Abort();
    });
  }

 private:
  std::shared_ptr<Session> Self() { return std::static_pointer_cast<Session>(shared_from_this()); }
  TcpStream& Lowest() { return beast::get_lowest_layer(stream_); }

  void OnRun() {
    if (state_.stopping) return Abort();
    if constexpr (kTls) {
      Lowest().expires_after(state_.options.read_timeout);
      stream_.async_handshake(ssl::stream_base::server, [self = Self()](beast::error_code ec) {
        if (ec) return self->Abort();
        self->DoRead(/*first=*/true);
      });
    } else {
      DoRead(/*first=*/true);
    }
  }

  // Claim marks the connection busy before its request is handled; false if it was chosen to be
  // shed meanwhile (then nothing of the request is handled).
  bool Claim() {
    MutexLock lock(state_.mu);
    return state_.table->Busy(&entry_);
  }
  // Release lists the connection as idle again (sheddable). It goes first when |closing| (an
  // answer with Connection: close, draining: it is ending anyway) or when it was answered without
  // proving itself: a stranger that keeps asking must not stay younger than a new connection that
  // has yet to send its first request (a platform's next delivery), as it would if it were put
  // last each time it is answered.
  void Release(bool closing) {
    MutexLock lock(state_.mu);
    state_.table->Idle(&entry_, proven_ && !closing, /*first=*/closing || !proven_);
  }

  void DoRead(bool first) {
    if (state_.stopping) return DoClose();
    if (!first) Release(/*closing=*/false);
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(state_.options.max_headers));
    parser_->body_limit(state_.options.max_body);
    if (!first && buffer_.size() == 0) {
      // Keep-alive: wait for the next request's first bytes under the idle timeout.
      Lowest().expires_after(state_.options.idle_timeout);
      stream_.async_read_some(buffer_.prepare(kIdleReadChunk),
                              [self = Self()](beast::error_code ec, size_t n) {
                                self->buffer_.commit(n);
                                if (ec) return self->Abort();
                                self->ReadRequest();
                              });
      return;
    }
    ReadRequest();
  }

  void ReadRequest() {
    // One deadline for the whole request (start line, headers, body): a slow client is cut off.
    Lowest().expires_after(state_.options.read_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = Self()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec == http::error::end_of_stream) return DoClose();
    if (ec == http::error::body_limit || ec == http::error::header_limit) {
      if (!Claim()) return Abort();
      force_close_ = true;
      busy_ = true;
      return Write(
          ProblemResponse(Reason::kRequestTooLarge, "request headers or body over the limit"));
    }
    if (ec &&
        ec.category() == beast::http::make_error_code(http::error::end_of_stream).category()) {
      if (!Claim()) return Abort();
      force_close_ = true;
      busy_ = true;
      return Write(BlankProblemResponse(400, "malformed HTTP request"));
    }
    if (ec) return Abort();  // timeout, reset, aborted by Stop: no answer
    // Defence in depth: Beast 1.74's eager parse can miss body_limit when body bytes share a
    // read with the header (seen for responses; requests checked here as well).
    if (parser_->get().body().size() > state_.options.max_body) {
      if (!Claim()) return Abort();
      force_close_ = true;
      busy_ = true;
      return Write(
          ProblemResponse(Reason::kRequestTooLarge, "request headers or body over the limit"));
    }

    if (!Claim()) return Abort();
    busy_ = true;
    auto& msg = parser_->get();
    keep_alive_ = msg.keep_alive();
    version_ = msg.version();
    HttpRequest request;
    request.method = std::string(msg.method_string());
    request.target = std::string(msg.target());
    for (const auto& field : msg) {
      request.headers.Add(std::string(field.name_string()), std::string(field.value()));
    }
    request.body = std::move(msg.body());
    Handler run;
    if (state_.front) {
      // Inline on this connection's I/O thread: an answer needs no thread hop.
      std::variant<HttpResponse, Deferred> front = RunFront(state_.front, request);
      if (HttpResponse* answer = std::get_if<HttpResponse>(&front))
        return Write(std::move(*answer));
      Deferred& later = std::get<Deferred>(front);
      if (!later.start && !later.run)
        return Write(ProblemResponse(Reason::kInternal, "the request handler failed"));
      proven_ = true;  // handed on: for webhooks, authenticated and admitted
      if (later.start) return Start(later.start, std::move(request));
      run = std::move(later.run);
    }
    asio::post(*state_.handler_pool, [self = Self(), request = std::move(request),
                                      run = std::move(run)] {
      thread_local const bool named = (NameThisThread("cg-http-handler"), true);
      (void)named;
      HttpResponse response =
          run ? RunHandler(run, request) : RunHandler(self->state_.handler, request);
      asio::post(self->stream_.get_executor(), [self, response = std::move(response)]() mutable {
        self->Write(std::move(response));
      });
    });
  }

  // Start hands the request to |start| with a Responder that writes the answer on this
  // connection's I/O thread. The Responder holds the session until it is answered.
  void Start(const std::function<void(HttpRequest, Responder)>& start, HttpRequest request) {
    Responder respond([self = Self()](HttpResponse response) {
      asio::post(self->stream_.get_executor(), [self, response = std::move(response)]() mutable {
        self->Write(std::move(response));
      });
    });
    try {
      start(std::move(request), respond);
    } catch (...) {
      respond.Answer(ProblemResponse(Reason::kInternal, "the request handler failed"));
    }
  }

  void Write(HttpResponse response) {
    if (response.status == kAbortConnection) return Abort();
    // With a plain Handler, an answer below 400 proves the connection (the admin listener answers
    // 401 without its token); a FrontHandler proves it by deferring (see OnRead).
    if (!state_.front && response.status >= 100 && response.status < 400) proven_ = true;
    bool close = force_close_ || !keep_alive_ || state_.stopping;
    // A refusal ends an unproven connection: a peer that has shown nothing gets one answer per
    // connection, not one per pipelined request (nginx likewise closes after a 400 or 413).
    if (!proven_ && response.status >= 400) close = true;
    if (!ValidResponse(response)) {
      response =
          ProblemResponse(Reason::kInternal, "the request handler produced an invalid answer");
    }
    try {
      Render(std::move(response), &close);
    } catch (const std::exception&) {  // e.g. a header field over Beast's size limit
      close = true;
      Render(ProblemResponse(Reason::kInternal, "the request handler produced an invalid answer"),
             &close);
    }
    close_after_write_ = close;
    // An unproven connection stays sheddable while its answer is written: nothing of its request
    // is being handled any more (the front answered inline, or the plain Handler returned), and a
    // peer that never reads must not pin the slot for write_timeout by letting answers pile up.
    if (!proven_) Release(/*closing=*/close);
    Lowest().expires_after(state_.options.write_timeout);
    writing_ = true;
    http::async_write(stream_, res_, [self = Self()](beast::error_code ec, size_t) {
      self->busy_ = false;
      self->writing_ = false;
      if (ec) return self->Reset();
      if (self->close_after_write_) return self->DoClose();
      self->DoRead(/*first=*/false);
    });
  }

  // Render turns |response| into res_; a handler's `Connection: close` sets |*close|.
  void Render(HttpResponse response, bool* close) {
    res_ = {};
    res_.version(version_);
    res_.result(static_cast<unsigned>(response.status));
    for (const auto& [name, value] : response.headers) {
      if (AsciiCaseEqual(name, "connection")) {
        if (AsciiCaseEqual(value, "close")) *close = true;
        continue;
      }
      // Framing is the server's: it sets Content-Length itself.
      if (AsciiCaseEqual(name, "content-length") || AsciiCaseEqual(name, "transfer-encoding"))
        continue;
      res_.insert(name, value);
    }
    res_.body() = std::move(response.body);
    res_.keep_alive(!*close);
    res_.prepare_payload();
  }

  // DoClose ends the connection politely: TLS close_notify, or a TCP half-close followed by a
  // bounded drain of what the peer is still sending.
  void DoClose() {
    Release(/*closing=*/true);  // the first to go if room is needed
    Lowest().expires_after(kLingerTimeout);
    if constexpr (kTls) {
      stream_.async_shutdown([self = Self()](beast::error_code) { self->Abort(); });
    } else {
      beast::error_code ec;
      Lowest().socket().shutdown(Socket::shutdown_send, ec);
      if (ec) return Abort();
      Drain();
    }
  }

  void Drain() {
    stream_.async_read_some(asio::buffer(drain_), [self = Self()](beast::error_code ec, size_t n) {
      self->drained_ += n;
      if (ec || self->drained_ > limits::kMaxLingerDrainBytes) return self->Abort();
      self->Drain();
    });
  }

  void Abort() { Lowest().close(); }
  // Reset closes with a TCP reset, dropping what is left of an answer that can no longer be
  // written whole (timed out, or shed while the peer was not reading): a plain close would leave
  // the kernel holding the unsent bytes, and the peer a half-open connection, for minutes
  // (nginx reset_timedout_connection).
  void Reset() {
    beast::error_code ec;
    Lowest().socket().set_option(asio::socket_base::linger(true, 0), ec);
    Abort();
  }

  ServerState& state_;
  Stream stream_;
  uint64_t id_ CLAWGUARD_GUARDED_BY(state_.mu) = 0;
  bool registered_ CLAWGUARD_GUARDED_BY(state_.mu) = false;  // in state_.sessions
  ConnectionTable::Entry entry_ CLAWGUARD_GUARDED_BY(state_.mu);
  bool proven_ = false;  // a request was handed on (or, plain Handler, answered < 400)
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
  std::array<char, 4096> drain_{};
  uint64_t drained_ = 0;
  unsigned version_ = 11;
  bool keep_alive_ = false;
  bool force_close_ = false;
  bool close_after_write_ = false;
  bool busy_ = false;     // a request was read and its answer is not yet written
  bool writing_ = false;  // an answer's write is in progress
};

Result<ssl::context> MakeServerTls(const ServerTls& files) {
  ssl::context ctx(ssl::context::tls_server);
  beast::error_code ec;
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                      ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                      ssl::context::no_compression | ssl::context::single_dh_use,
                  ec);
  if (ec) return Status(Reason::kInternal, "TLS options: " + ec.message());
  SSL_CTX* raw = ctx.native_handle();
  if (SSL_CTX_set_min_proto_version(raw, TLS1_2_VERSION) != 1) {
    return Status(Reason::kInternal, "TLS minimum version: " + SslErrorsOr("refused"));
  }
  SSL_CTX_set_options(raw, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  ctx.use_certificate_chain_file(files.cert_pem_path, ec);
  if (ec) {
    return Status(Reason::kConfigInvalid, "TLS certificate chain " + files.cert_pem_path +
                                              " unusable: " + SslErrorsOr(ec.message()));
  }
  ctx.use_private_key_file(files.key_pem_path, ssl::context::pem, ec);
  if (ec) {
    return Status(Reason::kConfigInvalid, "TLS private key " + files.key_pem_path +
                                              " unusable: " + SslErrorsOr(ec.message()));
  }
  if (SSL_CTX_check_private_key(raw) != 1) {
    return Status(Reason::kConfigInvalid, "TLS private key " + files.key_pem_path +
                                              " does not match the certificate " +
                                              files.cert_pem_path);
  }
  return ctx;
}

}  // namespace

struct HttpServer::Impl {
  // One io_context per I/O thread (concurrency hint 1): a connection lives on one context, so its
  // handlers never run concurrently and need no strand, and no context's queue or reactor is
  // shared between threads (a single io_context run by every thread serialised them on its
  // scheduler's lock). The acceptor and its retry timer live on the first context.
  Impl(int workers, int handler_threads) : handler_pool(static_cast<size_t>(handler_threads)) {
    for (int i = 0; i < workers; ++i) iocs.push_back(std::make_unique<asio::io_context>(1));
    retry_timer.emplace(*iocs.front());
  }

  // NextContext picks the context of the next accepted connection (round robin).
  asio::io_context& NextContext() {
    asio::io_context& ioc = *iocs[next_ioc % iocs.size()];
    ++next_ioc;
    return ioc;
  }

  void DoAccept() {
    // The socket is made on the context that will serve it; only this accept chain touches it.
    auto socket = std::make_shared<Socket>(NextContext());
    acceptor->async_accept(*socket, [this, socket](beast::error_code ec) {
      if (ec == asio::error::operation_aborted || !acceptor->is_open() || state.stopping) return;
      if (ec) {
        retry_timer->expires_after(kAcceptRetryDelay);
        retry_timer->async_wait([this](beast::error_code wait_ec) {
          if (!wait_ec && !state.stopping) DoAccept();
        });
        return;
      }
      beast::error_code opt_ec;
      socket->set_option(tcp::no_delay(true), opt_ec);  // best effort: small answers go out at once
      const tcp::endpoint remote = socket->remote_endpoint(opt_ec);
      if (opt_ec) {  // already reset by the peer
        socket->close(opt_ec);
        return DoAccept();
      }
      std::string peer = remote.address().to_string();
      if (state.tls) {
        std::make_shared<Session<beast::ssl_stream<TcpStream>>>(state, std::move(*socket))
            ->Run(std::move(peer));
      } else {
        std::make_shared<Session<TcpStream>>(state, std::move(*socket))->Run(std::move(peer));
      }
      DoAccept();
    });
  }

  // Members are destroyed bottom-up: the pools and threads first, then the io_contexts (whose
  // pending handlers may hold sessions), then the state the sessions point to.
  ServerState state;
  std::vector<std::unique_ptr<asio::io_context>> iocs;
  size_t next_ioc = 0;  // used by the accept handler only (on the first context's thread)
  std::optional<tcp::acceptor> acceptor;
  std::optional<asio::steady_timer> retry_timer;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> work;
  asio::thread_pool handler_pool;
  std::vector<std::thread> io_threads;
  uint16_t port = 0;
  bool started = false;
  bool stopped = false;
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

// Stop throws only if the thread library fails (join, lock: a broken invariant); the implicit
// noexcept of a destructor then terminates, which is the intended failure.
// NOLINTNEXTLINE(bugprone-exception-escape): a throw here is a broken invariant, see above
HttpServer::~HttpServer() { Stop(); }

Result<std::unique_ptr<HttpServer>> HttpServer::Create(ServerOptions options, Handler handler) {
  if (!handler) return Status(Reason::kConfigInvalid, "no request handler");
  return CreateServer(std::move(options), std::move(handler), nullptr);
}

Result<std::unique_ptr<HttpServer>> HttpServer::CreateWithFront(ServerOptions options,
                                                                FrontHandler front) {
  if (!front) return Status(Reason::kConfigInvalid, "no request handler");
  return CreateServer(std::move(options), nullptr, std::move(front));
}

Result<std::unique_ptr<HttpServer>> HttpServer::CreateServer(ServerOptions options, Handler handler,
                                                             FrontHandler front) {
  try {
    if (options.handler_threads == 0)
      options.handler_threads = static_cast<int>(limits::kDefaultHandlerThreads);
    CLAWGUARD_RETURN_IF_ERROR(http_internal::ValidateServerOptions(options));
    CLAWGUARD_ASSIGN_OR_RETURN(Endpoint where, ParseHostPort(options.address));
    beast::error_code ec;
    auto address = asio::ip::make_address(where.host, ec);
    if (ec) {
      return Status(Reason::kConfigInvalid,
                    "listen address " + options.address + ": host must be an IP address");
    }
    auto impl = std::make_unique<Impl>(options.workers, options.handler_threads);
    if (options.tls) {
      CLAWGUARD_ASSIGN_OR_RETURN(ssl::context ctx, MakeServerTls(*options.tls));
      impl->state.tls.emplace(std::move(ctx));
    }
    {
      MutexLock lock(impl->state.mu);  // uncontended: no session exists yet
      impl->state.table.emplace(options.max_connections, options.max_connections_per_peer);
    }
    impl->state.options = std::move(options);
    impl->state.handler = std::move(handler);
    impl->state.front = std::move(front);
    impl->state.handler_pool = &impl->handler_pool;

    tcp::endpoint endpoint(address, where.port);
    auto& acceptor = impl->acceptor.emplace(*impl->iocs.front());
    const std::string what = "listen " + impl->state.options.address + ": ";
    if (acceptor.open(endpoint.protocol(), ec); ec)
      return Status(Reason::kInternal, what + ec.message());
    if (acceptor.set_option(asio::socket_base::reuse_address(true), ec); ec) {
      return Status(Reason::kInternal, what + ec.message());
    }
    if (acceptor.bind(endpoint, ec); ec) return Status(Reason::kInternal, what + ec.message());
    if (acceptor.listen(asio::socket_base::max_listen_connections, ec); ec) {
      return Status(Reason::kInternal, what + ec.message());
    }
    impl->port = acceptor.local_endpoint(ec).port();
    if (ec) return Status(Reason::kInternal, what + ec.message());
    return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
  } catch (const std::exception& e) {
    return Status(Reason::kInternal, std::string("HTTP server setup failed: ") + e.what());
  }
}

Status HttpServer::Start() {
  if (impl_->started || impl_->stopped)
    return Status(Reason::kInternal, "HTTP server already started or stopped");
  impl_->started = true;
  try {
    for (auto& ioc : impl_->iocs) impl_->work.push_back(asio::make_work_guard(*ioc));
    asio::dispatch(impl_->acceptor->get_executor(), [impl = impl_.get()] { impl->DoAccept(); });
    for (auto& ioc : impl_->iocs) {
      impl_->io_threads.emplace_back([ioc = ioc.get()] {
        NameThisThread("cg-http-io");
        // Session code catches what it can; anything else ends only the handler that threw,
        // and this thread goes on serving (the Asio pattern for exceptions from run()).
        for (;;) {
          try {
            ioc->run();
            return;
          } catch (const std::exception&) {
          }
        }
      });
    }
  } catch (const std::exception& e) {
    Stop();
    return Status(Reason::kInternal, std::string("HTTP server threads: ") + e.what());
  }
  return Status::Ok();
}

uint16_t HttpServer::port() const { return impl_->port; }

ConnectionStats HttpServer::connection_stats() const {
  MutexLock lock(impl_->state.mu);
  return impl_->state.table->Stats(std::chrono::steady_clock::now());
}

void HttpServer::Stop() {
  if (!impl_ || impl_->stopped) return;
  impl_->stopped = true;
  std::vector<std::shared_ptr<SessionBase>> live;
  {
    MutexLock lock(impl_->state.mu);
    impl_->state.stopping = true;
    for (auto& [id, weak] : impl_->state.sessions) {
      if (auto s = weak.lock()) live.push_back(std::move(s));
    }
  }
  auto close_acceptor = [impl = impl_.get()] {
    beast::error_code ec;
    impl->acceptor->close(ec);
    impl->retry_timer->cancel();
  };
  if (impl_->started && !impl_->io_threads.empty()) {
    asio::post(impl_->acceptor->get_executor(), close_acceptor);
  } else {
    close_acceptor();
  }
  for (auto& s : live) s->RequestStop();
  live.clear();
  if (!impl_->io_threads.empty()) {
    MutexLock lock(impl_->state.mu);
    impl_->state.mu.Wait(impl_->state.cv, [&]() CLAWGUARD_REQUIRES(impl_->state.mu) {
      return impl_->state.sessions.empty();
    });
  }
  impl_->work.clear();
  for (auto& ioc : impl_->iocs) ioc->stop();
  for (auto& t : impl_->io_threads) t.join();
  impl_->io_threads.clear();
  impl_->handler_pool.join();
}

}  // namespace clawguard::host
