// fuzz-requires: clawguard_host
// erp_answer_fuzz.cpp — what an ERP sends back, byte for byte, read by the real ErpClient over a
// loopback connection and then classified (TriageAnswer). Input: the bytes the ERP writes after
// reading the request (the connection is then closed). Invariants besides memory safety:
//   - an answer the client returns is final: status 200..999, never an interim 1xx, and its body
//     is within limits::kMaxErpResponseBody;
//   - the next call on the same client gets its own answer ("own"), never bytes of this one
//     (a connection is reused only after a complete answer with nothing after it);
//   - the triage of any 409 body and Retry-After: "in progress" is never final nor a breaker
//     failure, a Retry-After is −1 or within kMaxRetryAfterSeconds.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>

#include "clawguard/limits.h"
#include "host/erp/erp_client.h"
#include "host/erp/erp_triage.h"

namespace {

using clawguard::host::ErpClient;
using clawguard::host::ErpClientOptions;
using clawguard::host::ErpReply;

void Require(bool ok) {
  if (!ok) std::abort();
}

// ReadHeader reads one request's header (the calls below have no body).
bool ReadHeader(int fd) {
  std::string got;
  char buf[4096];
  while (got.find("\r\n\r\n") == std::string::npos) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    got.append(buf, static_cast<size_t>(n));
  }
  return true;
}

void SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view answer(reinterpret_cast<const char*>(data), size);
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  Require(listener >= 0 && ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
          ::listen(listener, 4) == 0 &&
          ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  // The ERP: the first connection gets the input and is closed; later ones answer "own".
  std::thread erp([&] {
    for (int n = 0; n < 3; ++n) {
      const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      while (ReadHeader(fd)) {
        SendAll(fd, n == 0 ? answer
                           : std::string_view("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nown"));
        if (n == 0) break;
      }
      ::close(fd);
    }
  });
  ErpClientOptions o;
  o.base_url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  o.timeout = std::chrono::milliseconds(500);
  auto client = ErpClient::Create(std::move(o));
  Require(client.ok());
  auto reply = (*client)->Send("GET", "/fuzz", {{"Idempotency-Key", "k"}}, "");
  if (reply.ok()) {
    Require(reply->status >= 200 && reply->status <= 999);
    Require(reply->body.size() <= clawguard::limits::kMaxErpResponseBody);
  }
  auto own = (*client)->Send("GET", "/own", {{"Idempotency-Key", "k2"}}, "");
  Require(own.ok() && own->status == 200 && own->body == "own");
  client->reset();
  ::shutdown(listener, SHUT_RDWR);
  erp.join();
  ::close(listener);

  // The triage of the same bytes as a 409 body, with its first line as a Retry-After value.
  ErpReply conflict;
  conflict.status = 409;
  const size_t nl = answer.find('\n');
  if (nl != std::string_view::npos)
    conflict.headers.Set("Retry-After", std::string(answer.substr(0, nl)));
  conflict.body = std::string(answer.substr(nl == std::string_view::npos ? 0 : nl + 1));
  for (int64_t attempt : {1, 2}) {
    const auto t = clawguard::host::TriageAnswer(clawguard::Result<ErpReply>(conflict), attempt);
    if (t.verdict == clawguard::host::ErpVerdict::kInProgress)
      Require(!t.final && !t.breaker_failure);
    Require(t.retry_after_ms == -1 ||
            (t.retry_after_ms >= 0 &&
             t.retry_after_ms <= clawguard::host::kMaxRetryAfterSeconds * 1000));
    if (attempt == 2) Require(t.verdict == clawguard::host::ErpVerdict::kInProgress);
  }
  return 0;
}
