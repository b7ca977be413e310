// erp_client.h — ErpClient: the synchronous HTTP/1.1 client the ERP gateway sends calls with
// (host.yaml `erp:`). It adds the ERP credentials as the Authorization header, verifies TLS
// against the configured CA only (with hostname verification and SNI), bounds every call by one
// deadline, bounds the answer's size, and keeps a small pool of keep-alive connections.
//
// It does not retry on an answer or a timeout: retries, backoff and breakers are the gateway's
// (ARCHITECTURE.md "Host request pipeline" step 5). The one exception is a reused keep-alive
// connection that the ERP had already closed: the call is sent once more on a fresh connection
// when not a byte of the answer arrived and the call may be repeated — an idempotent method or
// an Idempotency-Key header (RFC 9112 §9.3.1) — so the ERP counts such a repeat once.
//
// TLS: only the CA file of the options is trusted; the peer must match the host of base_url
// through subjectAltName (DNS name, or IP address for an IP literal; the subject CN is never
// used; no partial wildcards); SNI is sent for names. TLS 1.2 or later, no compression.
#ifndef CLAWGUARD_HOST_ERP_ERP_CLIENT_H_
#define CLAWGUARD_HOST_ERP_ERP_CLIENT_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "clawguard/error.h"
#include "clawguard/secret_bytes.h"
#include "host/http/http_types.h"

namespace clawguard::host {

// kMaxErpInterimAnswers bounds the interim (1xx) answers read before a final one.
inline constexpr int kMaxErpInterimAnswers = 16;
// kErpKeepAliveSuspendMs: after stray bytes on a connection, no connection is pooled this long.
inline constexpr int64_t kErpKeepAliveSuspendMs = 60'000;

// ErpClientOptions configure the client once; Create validates them.
struct ErpClientOptions {
  std::string base_url;  // http(s)://host:port[/prefix]; calls go to prefix + path
  std::chrono::milliseconds timeout{5000};  // one deadline per call: connect, TLS, write, read
  std::string ca_file;  // PEM roots the ERP's certificate must chain to (https only; required)
  SecretBytes auth;     // sent as the Authorization header value; never logged, never in errors
  // keep_alive: reuse connections (host.yaml erp.keep_alive, default true). WARNING: HTTP/1.1
  // answers carry no request id, so an ERP that sends a second answer to one request *after* the
  // connection was reused makes that answer indistinguishable from the next call's; the client
  // detects it only afterwards (stray bytes) and then stops reusing connections for
  // kErpKeepAliveSuspendMs. With false every call opens its own connection and asks the ERP to
  // close it (Connection: close), so no answer can ever be taken for another call's.
  bool keep_alive = true;
};

// ErpReply is the ERP's answer, whatever its status (4xx and 5xx are answers, not errors).
struct ErpReply {
  int status = 0;
  HttpHeaders headers;  // Retry-After, Content-Type, ...
  std::string body;     // at most limits::kMaxErpResponseBody bytes
};

// ErpFailure says why a call got no answer. It travels in the Status of a failed Send as
// Reason::kInternal with the message prefix "erp_<kind>: "; read it back with ErpFailureOf.
enum class ErpFailure {
  kTimeout,  // the deadline passed (the ERP may or may not have acted: retry with the same key)
  kConnect,  // name resolution or TCP connect failed (nothing was sent); a resolution that does not
             // finish before the deadline is kTimeout
  kTls,      // TLS handshake failed: untrusted certificate, wrong hostname, protocol
  kProtocol,  // the answer was malformed, too large or cut short, a 101 or too many 1xx, or the
              // call was malformed
};

// ErpFailureName returns "timeout", "connect", "tls" or "protocol".
std::string_view ErpFailureName(ErpFailure failure);

// ErpFailureOf returns the failure kind of a Status returned by ErpClient::Send, nullopt for any
// other Status (including Ok).
std::optional<ErpFailure> ErpFailureOf(const Status& status);

// ErpClient sends calls to one ERP. Thread-safe: concurrent Send calls use separate connections.
class ErpClient {
 public:
  // Create checks the options and loads the CA file. kConfigInvalid: bad base_url, non-positive
  // timeout, https without a readable CA file, an auth value with CR/LF.
  static Result<std::unique_ptr<ErpClient>> Create(ErpClientOptions options);

  ~ErpClient();
  ErpClient(const ErpClient&) = delete;
  ErpClient& operator=(const ErpClient&) = delete;

  // Send makes one call: |method| |prefix+path| with |headers| (Idempotency-Key, Content-Type,
  // ...) and |body|. The client sets Host, Content-Length and Authorization itself (a caller's
  // Authorization is dropped). Any answer is a value; no answer is a Status as described at
  // ErpFailure. The message names the method, path and failure, never a header value.
  Result<ErpReply> Send(std::string_view method, std::string_view path, const HttpHeaders& headers,
                        std::string_view body);

 private:
  struct Impl;
  explicit ErpClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_ERP_ERP_CLIENT_H_
