// http_server_checks.h — the parts of HttpServer that need no Beast: the listen address parser,
// the option checks and the response framing check. Internal to http_server.cpp (and its tests).
// Pure functions; thread-safe.
#ifndef CLAWGUARD_HOST_HTTP_HTTP_SERVER_CHECKS_H_
#define CLAWGUARD_HOST_HTTP_HTTP_SERVER_CHECKS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "clawguard/error.h"
#include "host/http/http_server.h"
#include "host/http/http_types.h"

namespace clawguard::host::http_internal {

struct Endpoint {
  std::string host;
  uint16_t port = 0;
};

// ParseHostPort splits "host:port" or "[v6]:port"; kConfigInvalid otherwise.
Result<Endpoint> ParseHostPort(std::string_view text);

// ValidResponse refuses what would break the framing: a status outside 100..599, a header name
// that is not an RFC 9110 token, a value with CR, LF or NUL (response splitting).
bool ValidResponse(const HttpResponse& r);

// ValidateServerOptions checks workers, max_headers, the connection bounds and the timeouts
// (kConfigInvalid).
Status ValidateServerOptions(const ServerOptions& o);

}  // namespace clawguard::host::http_internal

#endif  // CLAWGUARD_HOST_HTTP_HTTP_SERVER_CHECKS_H_
