// erp_client.cpp — ErpClient (see erp_client.h): the pool of keep-alive connections, request
// building and the one repeat of a call on a stale pooled connection. A connection and its
// exchanges are ErpConnection (erp_connection.h); Beast stays in these two files (pimpl).
#include "host/erp/erp_client.h"

#include <openssl/ssl.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "clawguard/limits.h"
#include "clawguard/ossl.h"
#include "core/mutex.h"
#include "host/erp/erp_connection.h"
#include "host/erp/erp_target.h"
#include "runtime/fiber.h"

namespace clawguard::host {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = boost::asio::ssl;

}  // namespace

struct ErpClient::Impl {
  ErpTarget target;
  std::chrono::milliseconds timeout{0};
  SecretBytes auth;
  bool keep_alive = true;
  std::optional<ssl::context> tls;  // declared before the pool: connections point into it
  Mutex mu;
  std::vector<std::unique_ptr<ErpConnection>> idle CLAWGUARD_GUARDED_BY(mu);

  // Acquire takes an idle connection (unless |fresh|) that nothing arrived on since its last
  // answer (CheckIdle), or makes a new, unconnected one. A pooled connection with stray bytes is
  // closed and suspends keep-alive (Suspend).
  std::unique_ptr<ErpConnection> Acquire(bool fresh, bool* reused) {
    *reused = false;
    while (!fresh) {
      std::unique_ptr<ErpConnection> c;
      {
        MutexLock lock(mu);
        if (idle.empty()) break;
        c = std::move(idle.back());
        idle.pop_back();
      }
      switch (c->CheckIdle()) {
        case ErpConnection::IdleState::kClean: *reused = true; return c;
        case ErpConnection::IdleState::kStray: Suspend(); break;
        case ErpConnection::IdleState::kClosed: break;
      }
    }
    return std::make_unique<ErpConnection>(target, tls ? &*tls : nullptr);
  }

  // Release pools |c| after a complete answer, unless keep-alive is suspended or the pool is full;
  // a connection with stray bytes after its answer is closed and suspends keep-alive.
  void Release(std::unique_ptr<ErpConnection> c) {
    if (c->stray()) {
      Suspend();
      return;
    }
    if (!keep_alive || !c->reusable() || Suspended()) return;
    MutexLock lock(mu);
    if (idle.size() < limits::kMaxErpIdleConnections) idle.push_back(std::move(c));
  }

  // Suspend stops pooling for kErpKeepAliveSuspendMs and closes every idle connection: an ERP that
  // sent bytes nobody asked for may send more, and a late extra answer on a reused connection
  // would be read as the next call's own (HTTP/1.1 answers carry no request id).
  void Suspend() {
    const int64_t until = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now().time_since_epoch())
                              .count() +
                          kErpKeepAliveSuspendMs;
    keepalive_suspended_until_ms.store(until);
    std::vector<std::unique_ptr<ErpConnection>> dropped;
    MutexLock lock(mu);
    dropped.swap(idle);
  }
  bool Suspended() const {
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
    return now < keepalive_suspended_until_ms.load();
  }
  std::atomic<int64_t> keepalive_suspended_until_ms{0};  // steady clock, ms
};

ErpClient::ErpClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ErpClient::~ErpClient() = default;

Result<std::unique_ptr<ErpClient>> ErpClient::Create(ErpClientOptions options) {
  try {
    CLAWGUARD_ASSIGN_OR_RETURN(ErpTarget target, ParseErpBaseUrl(options.base_url));
    if (options.timeout <= std::chrono::milliseconds::zero()) {
      return Status(Reason::kConfigInvalid, "erp.timeout must be positive");
    }
    if (HasControlChar(InsecureSecretAccess::View(options.auth))) {
      return Status(Reason::kConfigInvalid,
                    "erp.auth holds a control character");  // value not echoed
    }
    auto impl = std::make_unique<Impl>();
    if (target.tls) {
      if (options.ca_file.empty())
        return Status(Reason::kConfigInvalid, "erp.ca is required for https");
      ssl::context ctx(ssl::context::tls_client);
      beast::error_code ec;
      ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                          ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                          ssl::context::no_tlsv1_1 | ssl::context::no_compression,
                      ec);
      if (ec || SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION) != 1) {
        return Status(Reason::kInternal, "TLS client setup failed: " + ossl::GetSslErrors());
      }
      // Only the configured CA: the system store is never consulted.
      ctx.load_verify_file(options.ca_file, ec);
      if (ec) {
        std::string why = ossl::GetSslErrors();
        return Status(Reason::kConfigInvalid, "erp.ca " + options.ca_file + " unusable: " +
                                                  (why.empty() ? ec.message() : why));
      }
      ctx.set_verify_mode(ssl::verify_peer);
      impl->tls.emplace(std::move(ctx));
    }
    impl->target = std::move(target);
    impl->timeout = options.timeout;
    impl->auth = std::move(options.auth);
    impl->keep_alive = options.keep_alive;
    return std::unique_ptr<ErpClient>(new ErpClient(std::move(impl)));
  } catch (const std::exception& e) {
    return Status(Reason::kInternal, std::string("ERP client setup failed: ") + e.what());
  }
}

Result<ErpReply> ErpClient::Send(std::string_view method, std::string_view path,
                                 const HttpHeaders& headers, std::string_view body) {
  try {
    if (method.empty() || HasControlChar(method) || method.find(' ') != std::string_view::npos) {
      return ErpFailureStatus(ErpFailure::kProtocol, "?", path, "bad method");
    }
    if (!path.starts_with("/") || HasControlChar(path) ||
        path.find_first_of(" #") != std::string_view::npos) {
      return ErpFailureStatus(ErpFailure::kProtocol, method, "?",
                              "path must start with / and hold no space, # or control");
    }
    const auto deadline = std::chrono::steady_clock::now() + impl_->timeout;
    http::request<http::string_body> req;
    req.method_string(beast::string_view(method.data(), method.size()));
    req.target(impl_->target.prefix + std::string(path));
    req.version(11);
    req.set(http::field::host, impl_->target.host_header);
    for (const auto& [name, value] : headers) {
      if (AsciiCaseEqual(name, "host") || AsciiCaseEqual(name, "content-length") ||
          AsciiCaseEqual(name, "transfer-encoding") || AsciiCaseEqual(name, "connection") ||
          AsciiCaseEqual(name, "authorization")) {
        continue;
      }
      if (name.empty() || HasControlChar(name) || HasControlChar(value) ||
          name.find_first_of(" :") != std::string::npos) {
        return ErpFailureStatus(ErpFailure::kProtocol, method, path,
                                "a header name or value is malformed");
      }
      req.insert(name, value);
    }
    if (!impl_->auth.empty()) {
      const std::string_view auth = InsecureSecretAccess::View(impl_->auth);
      req.set(http::field::authorization, beast::string_view(auth.data(), auth.size()));
    }
    req.body() = std::string(body);
    req.keep_alive(impl_->keep_alive);
    req.prepare_payload();

    const bool repeatable = headers.Has("Idempotency-Key") || method == "GET" || method == "HEAD" ||
                            method == "PUT" || method == "DELETE" || method == "OPTIONS";
    for (int attempt = 0;; ++attempt) {
      bool reused = false;
      auto conn = impl_->Acquire(/*fresh=*/attempt > 0, &reused);
      // On a fiber (fiber.h), what waits inside Asio's own io_context — name resolution, connect,
      // the TLS handshake and every https exchange — runs on a helper thread while the fiber is
      // parked; a plain-HTTP exchange waits through the carrier's epoll (ErpPollingStream::Wait).
      if (!conn->connected()) {
        Status connected = Status::Ok();
        fiber::RunBlocking([&] { connected = conn->Connect(deadline, method, path); });
        CLAWGUARD_RETURN_IF_ERROR(connected);
      }
      bool got_some = false;
      Result<ErpReply> reply = Status(Reason::kInternal, "not sent");
      if (conn->tls()) {
        fiber::RunBlocking([&] { reply = conn->Exchange(req, deadline, method, path, &got_some); });
      } else {
        reply = conn->Exchange(req, deadline, method, path, &got_some);
      }
      if (reply.ok()) {
        impl_->Release(std::move(conn));
        return reply;
      }
      // A kept-alive connection the ERP had closed: send once more on a fresh connection, but
      // only a call that may be repeated (idempotent method or an Idempotency-Key).
      const bool stale =
          reused && !got_some && ErpFailureOf(reply.error()) == ErpFailure::kProtocol;
      if (!stale || !repeatable || attempt > 0) return reply;
    }
  } catch (const std::exception& e) {
    return ErpFailureStatus(ErpFailure::kProtocol, method, path,
                            std::string("unexpected failure: ") + e.what());
  }
}

}  // namespace clawguard::host
