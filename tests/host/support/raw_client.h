// raw_client.h — RawConnection: a blocking POSIX TCP client for host tests that need to send
// exact bytes (half requests, oversized headers) and watch how the server reacts. No Beast here,
// so the test translation units stay light.
#ifndef CLAWGUARD_TESTS_HOST_SUPPORT_RAW_CLIENT_H_
#define CLAWGUARD_TESTS_HOST_SUPPORT_RAW_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "host/http/http_types.h"

namespace clawguard::host::testing {

// RawResponse is one parsed answer (Content-Length framing only). ok is false when the
// connection ended or the answer was malformed.
struct RawResponse {
  bool ok = false;
  int status = 0;
  HttpHeaders headers;
  std::string body;
};

// kHangGuard bounds every blocking read so a broken server fails a test instead of hanging it.
// It is a guard, never a measured duration.
inline constexpr std::chrono::milliseconds kHangGuard{10'000};

class RawConnection {
 public:
  // Connect opens a TCP connection to 127.0.0.1:|port|; nullptr on failure.
  static std::unique_ptr<RawConnection> Connect(uint16_t port);
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  // Send writes all of |bytes|; false if the connection failed.
  bool Send(std::string_view bytes);
  // ReadResponse reads one answer.
  RawResponse ReadResponse();
  // WaitForClose reads and drops bytes until the server closes the connection (EOF or reset):
  // true then, false if kHangGuard passed first.
  bool WaitForClose();

 private:
  explicit RawConnection(int fd) : fd_(fd) {}
  // Fill reads more bytes into buffer_; false on EOF, error or guard.
  bool Fill();
  int fd_;
  std::string buffer_;
};

// SimpleRequest renders "METHOD target HTTP/1.1" with Host, Content-Length and |extra| header
// lines (each "Name: value\r\n").
std::string SimpleRequest(std::string_view method, std::string_view target, std::string_view body,
                          std::string_view extra = "");

}  // namespace clawguard::host::testing

#endif  // CLAWGUARD_TESTS_HOST_SUPPORT_RAW_CLIENT_H_
