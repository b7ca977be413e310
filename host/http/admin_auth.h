// admin_auth.h — the admin listener's gate: every request must carry
// `Authorization: Bearer <token>` (RFC 6750 §2.1) with the configured admin token
// (host.yaml `admin.token`), or it is answered 401 with `WWW-Authenticate: Bearer` and never
// reaches the wrapped Handler.
#ifndef CLAWGUARD_HOST_HTTP_ADMIN_AUTH_H_
#define CLAWGUARD_HOST_HTTP_ADMIN_AUTH_H_

#include "clawguard/error.h"
#include "clawguard/secret_bytes.h"
#include "host/http/http_server.h"
#include "host/http/http_types.h"

namespace clawguard::host {

// RequireBearerToken returns a Handler that answers 401 unless the request has exactly one
// Authorization header whose scheme is "Bearer" (any case) and whose token equals |token|
// (constant-time compare, ConstantTimeEquals; only the length is public), and otherwise calls
// |inner|. The token is held in SecretBytes shared by the copies of the returned Handler; it
// never appears in an answer or a message. Thread-safe like |inner|.
// 401 answers: missing header → `WWW-Authenticate: Bearer realm="clawguard-admin"`; wrong or
// malformed → the same plus `error="invalid_token"` (RFC 6750 §3). Body: application/problem+json,
// type about:blank.
// Reasons: kConfigInvalid when |token| is shorter than limits::kMinAdminTokenLength (the host
// refuses to start, ARCHITECTURE.md host.yaml `admin:`) or |inner| is empty.
Result<Handler> RequireBearerToken(SecretBytes token, Handler inner);

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_HTTP_ADMIN_AUTH_H_
