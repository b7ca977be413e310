// test_erp_server.h — TestErpServer: a real HTTP server on 127.0.0.1 (port 0) that host tests use
// as the ERP. It records every request, behaves like an idempotent ERP (a request whose
// Idempotency-Key was already acted on gets the stored answer and is counted as a duplicate, not
// as a new effect), and answers per path as programmed: status, body, Retry-After, a delay (to
// provoke client timeouts) or a dropped connection.
#ifndef CLAWGUARD_TESTS_HOST_SUPPORT_TEST_ERP_SERVER_H_
#define CLAWGUARD_TESTS_HOST_SUPPORT_TEST_ERP_SERVER_H_

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "clawguard/error.h"
#include "host/http/http_server.h"
#include "host/http/http_types.h"

namespace clawguard::host::testing {

// ErpAnswer is what the test ERP answers on one path.
struct ErpAnswer {
  int status = 200;
  std::string body = "{\"ok\":true}";
  std::string content_type = "application/json";
  std::optional<std::string> retry_after;  // sent as Retry-After
  std::chrono::milliseconds delay{0};      // wait before answering (the effect happens first)
  bool close_connection = false;           // drop the connection without answering, no effect
};

// RecordedRequest is one request as the ERP saw it.
struct RecordedRequest {
  std::string method;
  std::string path;
  HttpHeaders headers;
  std::string body;
  bool duplicate = false;  // its Idempotency-Key had already been acted on
};

struct TestErpOptions {
  std::optional<ServerTls> tls;  // https when set (base_url then names "localhost")
  int workers = 4;
};

// TestErpServer is thread-safe. A 2xx answer is an effect; with an Idempotency-Key it is stored
// and replayed for later requests with that key. Other answers leave the key unused.
class TestErpServer {
 public:
  static Result<std::unique_ptr<TestErpServer>> Create(TestErpOptions options = {});
  ~TestErpServer();

  uint16_t port() const { return server_->port(); }
  // base_url is http://127.0.0.1:PORT, or https://localhost:PORT with TLS.
  std::string base_url() const;

  // SetAnswer programs the answer for |path| (the request target); others get ErpAnswer{}.
  void SetAnswer(const std::string& path, ErpAnswer answer);

  std::vector<RecordedRequest> requests() const;
  size_t requests_total() const;
  size_t duplicates() const;
  size_t effects(const std::string& path) const;
  size_t effects_total() const;
  size_t effects_for_key(const std::string& key) const;
  // AtMostOneEffectPerKey is the ERP-side invariant the host relies on.
  bool AtMostOneEffectPerKey() const;

  // Stop ends delays early and stops the server (also done by the destructor).
  void Stop();

 private:
  TestErpServer() = default;
  HttpResponse Handle(const HttpRequest& request);

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool tls_ = false;
  std::map<std::string, ErpAnswer> answers_;
  std::vector<RecordedRequest> requests_;
  std::map<std::string, HttpResponse> stored_;  // by Idempotency-Key
  std::map<std::string, size_t> effects_by_path_;
  std::map<std::string, size_t> effects_by_key_;
  size_t duplicates_ = 0;
  std::unique_ptr<HttpServer> server_;
};

}  // namespace clawguard::host::testing

#endif  // CLAWGUARD_TESTS_HOST_SUPPORT_TEST_ERP_SERVER_H_
