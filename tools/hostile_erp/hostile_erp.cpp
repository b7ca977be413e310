// hostile_erp.cpp — see hostile_erp.h. Over 500 lines on purpose: a test peer whose every
// misbehaviour (hostile_erp.h, HostileMode) is a branch of one raw-socket session loop.
#include "hostile_erp/hostile_erp.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "clawguard/json_dump.h"
#include "clawguard/ossl.h"

namespace clawguard::tools {
namespace {

// The owners of this file's libssl handles (ossl.h holds libcrypto's only).
struct SslCtxFree {
  void operator()(SSL_CTX* p) const { SSL_CTX_free(p); }
};
struct SslFree {
  void operator()(SSL* p) const { SSL_free(p); }
};

constexpr std::pair<HostileMode, std::string_view> kNames[] = {
    {HostileMode::kNormal, "normal"},
    {HostileMode::kSlow, "slow"},
    {HostileMode::kInterim, "interim"},
    {HostileMode::kDoubleAnswer, "double-answer"},
    {HostileMode::kDoubleAnswerTwoWrites, "double-answer-two-writes"},
    {HostileMode::kLateSecondAnswer, "late-second-answer"},
    {HostileMode::kCloseMidBody, "close-mid-body"},
    {HostileMode::kGarbage, "garbage"},
    {HostileMode::kConflictInFlight, "conflict-in-flight"},
    {HostileMode::kDedupAfterCompletion, "dedup-after-completion"},
    {HostileMode::kNeverAnswer, "never-answer"},
};

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string Answer(int status, std::string_view reason, std::string_view body,
                   std::string_view extra, bool close) {
  std::string out =
      "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n";
  out += extra;
  if (close) out += "Connection: close\r\n";
  out += "\r\n";
  out += body;
  return out;
}

}  // namespace

std::string_view HostileModeName(HostileMode mode) {
  for (const auto& [m, name] : kNames) {
    if (m == mode) return name;
  }
  return "normal";
}

std::optional<HostileMode> HostileModeFromName(std::string_view name) {
  for (const auto& [m, n] : kNames) {
    if (n == name) return m;
  }
  return std::nullopt;
}

struct HostileErp::TlsContext {
  std::unique_ptr<SSL_CTX, SslCtxFree> ctx;
};

// Link is one connection's byte stream: the socket itself, or a TLS session over it. Used by the
// connection's own thread only.
class HostileErp::Link {
 public:
  Link(int fd, std::unique_ptr<SSL, SslFree> ssl) : fd_(fd), ssl_(std::move(ssl)) {}

  int fd() const { return fd_; }

  // Recv reads some bytes into |out|: their count, 0 at the end of the stream (over TLS: a
  // close_notify or the socket's end), -1 on an error.
  ssize_t Recv(char* out, size_t size) {
    if (!ssl_) {
      for (;;) {
        const ssize_t n = ::recv(fd_, out, size, 0);
        if (n < 0 && errno == EINTR) continue;
        return n;
      }
    }
    const int n = SSL_read(ssl_.get(), out, static_cast<int>(std::min<size_t>(size, INT32_MAX)));
    if (n > 0) return n;
    const int why = SSL_get_error(ssl_.get(), n);
    ERR_clear_error();
    return why == SSL_ERROR_ZERO_RETURN ? 0 : -1;
  }

  // Send writes |bytes| whole (false when the peer is gone). Over TLS one write of up to 16 KiB
  // is one record.
  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = 0;
      if (ssl_) {
        const int w = SSL_write(ssl_.get(), bytes.data(),
                                static_cast<int>(std::min<size_t>(bytes.size(), INT32_MAX)));
        if (w <= 0) {
          ERR_clear_error();
          return false;
        }
        n = w;
      } else {
        n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
      }
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Cork holds what is written from now on (true) until it is released (false): several writes
  // then leave in one segment and reach the client together.
  void Cork(bool on) {
    const int value = on ? 1 : 0;
    (void)::setsockopt(fd_, IPPROTO_TCP, TCP_CORK, &value, sizeof value);
  }

  // Close ends the TLS session with a close_notify (over https) and closes the socket.
  void Close() {
    if (ssl_) {
      (void)SSL_shutdown(ssl_.get());
      ERR_clear_error();
    }
    ::close(fd_);
  }

 private:
  const int fd_;
  const std::unique_ptr<SSL, SslFree> ssl_;  // null for plain HTTP
};

struct HostileErp::Request {
  std::string method;
  std::string target;
  std::string key;  // Idempotency-Key ("" when none)
  std::string body;
  bool close = false;  // Connection: close, or HTTP/1.0
};

HostileErp::HostileErp(HostileErpOptions options) : options_(std::move(options)) {}

Result<std::unique_ptr<HostileErp>> HostileErp::Start(HostileErpOptions options) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(options.port);
  if (::inet_pton(AF_INET, options.address.c_str(), &addr.sin_addr) != 1) {
    return Status(Reason::kConfigInvalid,
                  "hostile erp: \"" + options.address + "\" is not an IPv4 address");
  }
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return Status(Reason::kConfigInvalid,
                  "hostile erp: https needs both a certificate and its key");
  }
  std::unique_ptr<TlsContext> tls;
  if (!options.tls_cert.empty()) {
    tls = std::make_unique<TlsContext>();
    tls->ctx.reset(SSL_CTX_new(TLS_server_method()));
    if (!tls->ctx || SSL_CTX_set_min_proto_version(tls->ctx.get(), TLS1_2_VERSION) != 1) {
      return Status(Reason::kInternal, "hostile erp: TLS setup failed: " + ossl::GetSslErrors());
    }
    if (SSL_CTX_use_certificate_chain_file(tls->ctx.get(), options.tls_cert.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(tls->ctx.get(), options.tls_key.c_str(), SSL_FILETYPE_PEM) !=
            1 ||
        SSL_CTX_check_private_key(tls->ctx.get()) != 1) {
      return Status(Reason::kConfigInvalid, "hostile erp: expected a PEM certificate " +
                                                options.tls_cert + " and its key " +
                                                options.tls_key + ": " + ossl::GetSslErrors());
    }
  }
  std::unique_ptr<HostileErp> erp(new HostileErp(std::move(options)));
  erp->tls_ = std::move(tls);
  erp->listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  socklen_t len = sizeof addr;
  if (erp->listen_fd_ < 0 ||
      ::setsockopt(erp->listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      ::bind(erp->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(erp->listen_fd_, 128) != 0 ||
      ::getsockname(erp->listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return Status(Reason::kInternal, "hostile erp: cannot listen on " + erp->options_.address +
                                         ":" + std::to_string(erp->options_.port) + ": " +
                                         std::strerror(errno));
  }
  erp->port_ = ntohs(addr.sin_port);
  erp->acceptor_ = std::thread([raw = erp.get()] { raw->AcceptLoop(); });
  return erp;
}

HostileErp::~HostileErp() { Stop(); }

std::string HostileErp::base_url() const {
  return (tls_ ? "https://" : "http://") + options_.address + ":" + std::to_string(port_);
}

void HostileErp::Stop() {
  {
    MutexLock lock(mu_);
    if (stopping_ && listen_fd_ < 0) return;
    stopping_ = true;
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);  // wakes reads and polls
  }
  changed_.notify_all();
  if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);  // ends the accept
  if (acceptor_.joinable()) acceptor_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
  MutexLock lock(mu_);
  mu_.Wait(changed_, [this]() CLAWGUARD_REQUIRES(mu_) { return open_fds_.empty(); });
}

void HostileErp::AcceptLoop() {
  for (;;) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // shut down
    }
    MutexLock lock(mu_);
    if (stopping_ || open_fds_.size() >= kMaxConnections) {
      ::close(fd);
      continue;
    }
    const int one = 1;
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    open_fds_.insert(fd);
    std::thread([this, fd] { Serve(fd); }).detach();
  }
}

void HostileErp::Serve(int fd) {
  // OpenSSL writes to the socket without MSG_NOSIGNAL: a client that is gone must be EPIPE for
  // this thread, not SIGPIPE for the process.
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  std::unique_ptr<SSL, SslFree> ssl;
  if (tls_) {
    ssl.reset(SSL_new(tls_->ctx.get()));
    if (!ssl || SSL_set_fd(ssl.get(), fd) != 1 || SSL_accept(ssl.get()) != 1) {
      ERR_clear_error();
      ssl.reset();
      ::close(fd);
      MutexLock lock(mu_);
      open_fds_.erase(fd);
      changed_.notify_all();
      return;
    }
  }
  {
    MutexLock lock(mu_);
    ++stats_.connections;
  }
  Link link(fd, std::move(ssl));
  std::string buffer;
  char chunk[16 * 1024];
  // Read one request at a time; bytes after it (pipelining) stay in |buffer|.
  const auto fill = [&](size_t want) {
    while (buffer.size() < want) {
      const ssize_t n = link.Recv(chunk, sizeof chunk);
      if (n <= 0) return false;
      buffer.append(chunk, static_cast<size_t>(n));
    }
    return true;
  };
  int answers = 0;
  for (;;) {
    size_t end = buffer.find("\r\n\r\n");
    while (end == std::string::npos && buffer.size() <= kMaxHeaderBytes) {
      if (!fill(buffer.size() + 1)) break;
      end = buffer.find("\r\n\r\n");
    }
    if (end == std::string::npos) break;  // closed, or a header over the bound
    Request r;
    std::string_view head(buffer.data(), end);
    const size_t line_end = head.find("\r\n");
    std::string_view line = head.substr(0, line_end);
    const size_t sp1 = line.find(' ');
    const size_t sp2 = line.rfind(' ');
    if (sp1 == std::string_view::npos || sp2 == sp1) break;
    r.method = std::string(line.substr(0, sp1));
    r.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
    r.close = line.substr(sp2 + 1) != "HTTP/1.1";
    size_t length = 0;
    bool bad = false;
    for (size_t at = line_end; at != std::string_view::npos && at < head.size();) {
      const size_t next = head.find("\r\n", at + 2);
      std::string_view field = head.substr(
          at + 2, next == std::string_view::npos ? std::string_view::npos : next - at - 2);
      at = next;
      const size_t colon = field.find(':');
      if (colon == std::string_view::npos) continue;
      const std::string_view name = Trim(field.substr(0, colon));
      const std::string_view value = Trim(field.substr(colon + 1));
      if (IEquals(name, "content-length")) {
        const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), length);
        bad =
            bad || ec != std::errc() || p != value.data() + value.size() || length > kMaxBodyBytes;
      } else if (IEquals(name, "transfer-encoding")) {
        bad = true;  // the host's client always sends Content-Length
      } else if (IEquals(name, "idempotency-key")) {
        r.key = std::string(value);
      } else if (IEquals(name, "connection") && IEquals(value, "close")) {
        r.close = true;
      }
    }
    if (bad) {
      (void)link.Send(Answer(400, "Bad Request", R"({"error":"bad framing"})", "", /*close=*/true));
      break;
    }
    if (!fill(end + 4 + length)) break;
    r.body = buffer.substr(end + 4, length);
    buffer.erase(0, end + 4 + length);
    if (!Handle(link, r) || r.close) break;
    if (options_.close_after_answers > 0 && ++answers >= options_.close_after_answers) break;
  }
  link.Close();
  // Notified under the lock: once Stop sees the last descriptor gone, this thread touches
  // nothing of the server any more.
  MutexLock lock(mu_);
  open_fds_.erase(fd);
  changed_.notify_all();
}

void HostileErp::Admit(const std::string& key) {
  ++stats_.requests;
  if (key.empty()) {
    ++stats_.keyless;
    return;
  }
  HostileKeyStats* ks = nullptr;
  if (stats_.keys.count(key) != 0 || stats_.keys.size() < kMaxKeys) ks = &stats_.keys[key];
  if (ks != nullptr) ++ks->requests;
  if (in_flight_[key] > 0) {
    ++stats_.overlapping;
    if (ks != nullptr) ++ks->overlapping;
  }
  ++in_flight_[key];
}

void HostileErp::Finish(const std::string& key) {
  if (key.empty()) return;
  {
    MutexLock lock(mu_);
    if (--in_flight_[key] <= 0) in_flight_.erase(key);
  }
  changed_.notify_all();
}

std::string HostileErp::Effect(const std::string& key, const std::string& path) {
  ++stats_.effects;
  size_t for_key = 1;
  auto it = stats_.keys.find(key);
  if (it != stats_.keys.end()) for_key = ++it->second.effects;
  stats_.max_effects_per_key = std::max(stats_.max_effects_per_key, for_key);
  return nlohmann::json{{"ok", true}, {"key", key}, {"path", path}, {"effect", stats_.effects}}
      .dump();
}

bool HostileErp::SleepFor(std::chrono::milliseconds d) {
  MutexLock lock(mu_);
  return !mu_.WaitFor(changed_, d, [this]() CLAWGUARD_REQUIRES(mu_) { return stopping_; });
}

std::string HostileErp::WaitStored(const std::string& key) {
  MutexLock lock(mu_);
  mu_.Wait(changed_,
           [&]() CLAWGUARD_REQUIRES(mu_) { return stopping_ || stored_.count(key) != 0; });
  auto it = stored_.find(key);
  return it == stored_.end() ? std::string() : it->second;
}

bool HostileErp::TakeHostile(const std::string& key) {
  MutexLock lock(mu_);
  if (options_.hostile_requests <= 0) return true;
  int& taken = hostile_taken_[key];
  if (taken >= options_.hostile_requests) return false;
  ++taken;
  return true;
}

bool HostileErp::CountExtraAnswer() {
  MutexLock lock(mu_);
  ++stats_.extra_answers;
  return true;
}

bool HostileErp::Handle(Link& link, const Request& r) {
  if (r.method == "GET" && r.target == "/_stats") {
    return link.Send(Answer(200, "OK", StatsJson(), "", r.close));
  }
  const std::string& key = r.key;
  std::string body;
  bool replay = false;    // the stored answer of an earlier request
  bool conflict = false;  // conflict-in-flight: another request of the key is in flight
  {
    MutexLock lock(mu_);
    Admit(key);
    auto stored = key.empty() ? stored_.end() : stored_.find(key);
    if (stored != stored_.end()) {
      body = stored->second;
      replay = true;
    } else if (key.empty()) {
      body = Effect(key, r.target);
    } else if (options_.mode == HostileMode::kConflictInFlight && in_flight_[key] > 1) {
      conflict = true;
      auto ks = stats_.keys.find(key);
      if (ks != stats_.keys.end()) ++ks->second.conflicts;
      ++stats_.conflicts;
    } else if (options_.mode != HostileMode::kConflictInFlight &&
               options_.mode != HostileMode::kDedupAfterCompletion) {
      // Deduplication on arrival: the effect and its stored answer at once.
      body = Effect(key, r.target);
      stored_[key] = body;
    }
  }
  // The key's in-flight mark ends when this request is done with, however it ends.
  struct Done {
    HostileErp* erp;
    const std::string& key;
    ~Done() { erp->Finish(key); }
  } done{this, key};

  if (conflict) {
    const std::string conflict_body =
        options_.conflict_marker
            ? R"({"error":{"message":"There is currently another in-progress request using this Idempotency-Key","type":"idempotency_error"}})"
            : R"({"error":"conflict"})";
    return link.Send(Answer(409, "Conflict", conflict_body,
                            options_.conflict_marker ? "Retry-After: 1\r\n" : "", r.close));
  }
  if (!replay && !key.empty() &&
      (options_.mode == HostileMode::kConflictInFlight ||
       options_.mode == HostileMode::kDedupAfterCompletion)) {
    // Processing takes |delay|; a real ERP finishes it whether or not the client still waits.
    (void)SleepFor(options_.delay);
    MutexLock lock(mu_);
    body = Effect(key, r.target);
    stored_.emplace(key, body);  // the first to finish is what later requests get
  }
  const std::string answer = Answer(200, "OK", body, "", r.close);
  switch (options_.mode) {
    case HostileMode::kSlow:
      if (!SleepFor(options_.delay)) return false;
      return link.Send(answer);
    case HostileMode::kInterim: {
      const auto step = options_.delay / 3;
      for (std::string_view interim :
           {std::string_view("HTTP/1.1 100 Continue\r\n\r\n"),
            std::string_view("HTTP/1.1 102 Processing\r\n\r\n"),
            std::string_view("HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n")}) {
        if (!link.Send(interim) || !SleepFor(step)) return false;
      }
      return link.Send(answer);
    }
    // Two answers in one write: a client that reads past its answer, or checks an idle connection
    // before reuse, sees the second one.
    case HostileMode::kDoubleAnswer:
      if (!TakeHostile(key)) return link.Send(answer);
      return link.Send(answer + answer) && CountExtraAnswer();
    // Two writes (over https two TLS records) that reach the client together: the second one is
    // already there, in the socket or inside the client's TLS layer, when the first is read.
    case HostileMode::kDoubleAnswerTwoWrites: {
      if (!TakeHostile(key)) return link.Send(answer);
      link.Cork(true);
      const bool sent = link.Send(answer) && link.Send(answer);
      link.Cork(false);
      return sent && CountExtraAnswer();
    }
    // The second answer |delay| later (default 20 ms): with keep-alive it can reach a connection
    // already reused for the next call, where no HTTP/1.1 client can tell it from that call's.
    case HostileMode::kLateSecondAnswer:
      if (!TakeHostile(key)) return link.Send(answer);
      if (!link.Send(answer)) return false;
      if (!SleepFor(options_.delay.count() > 0 ? options_.delay : std::chrono::milliseconds(20)))
        return false;
      return link.Send(answer) && CountExtraAnswer();
    case HostileMode::kCloseMidBody:
      if (!TakeHostile(key)) return link.Send(answer);
      (void)link.Send(answer.substr(0, answer.size() - body.size() / 2));
      return false;
    case HostileMode::kGarbage: {
      if (!TakeHostile(key)) return link.Send(answer);
      static constexpr char kGarbage[] =
          "HTTP/1.1 2OO OKAY\r\n\x01\x02\xff garbage\r\n\r\n{\"ok\":";
      (void)link.Send(std::string_view(kGarbage, sizeof kGarbage - 1));
      return false;
    }
    case HostileMode::kNeverAnswer: {
      if (!TakeHostile(key)) return link.Send(answer);
      // Hold the connection until the client gives up on it (or the server stops).
      char sink[4096];
      for (;;) {
        pollfd p{link.fd(), POLLIN, 0};
        const int n = ::poll(&p, 1, 200);
        {
          MutexLock lock(mu_);
          if (stopping_) return false;
        }
        if (n < 0 && errno != EINTR) return false;
        if (n > 0 && link.Recv(sink, sizeof sink) <= 0) return false;
      }
    }
    case HostileMode::kNormal:
    case HostileMode::kConflictInFlight:
    case HostileMode::kDedupAfterCompletion: return link.Send(answer);
  }
  return false;
}

HostileErpStats HostileErp::Stats() const {
  MutexLock lock(mu_);
  return stats_;
}

std::string HostileErp::StatsJson() const {
  const HostileErpStats s = Stats();
  nlohmann::json keys = nlohmann::json::object();
  for (const auto& [key, k] : s.keys) {
    keys[key] = {{"requests", k.requests},
                 {"effects", k.effects},
                 {"overlapping", k.overlapping},
                 {"conflicts", k.conflicts}};
  }
  return DumpJson(nlohmann::json{{"mode", HostileModeName(options_.mode)},
                                 {"connections", s.connections},
                                 {"requests", s.requests},
                                 {"extra_answers", s.extra_answers},
                                 {"effects", s.effects},
                                 {"keyless", s.keyless},
                                 {"overlapping", s.overlapping},
                                 {"conflicts", s.conflicts},
                                 {"max_effects_per_key", s.max_effects_per_key},
                                 {"keys", keys}});
}

}  // namespace clawguard::tools
