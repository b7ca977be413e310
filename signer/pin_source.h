// pin_source.h — ReadPin: the PIN from an env variable, a file or a file descriptor, never argv.
//
//   env:VAR   the variable's value; the value is overwritten in place and the variable unset, so
//             child processes and /proc/self/environ do not keep it
//   file:PATH a regular file of at most limits::kMaxPinFile bytes; one trailing "\n" (or "\r\n")
//             is stripped. A FIFO, device or folder is refused at once (kFileUnreadable, opened
//             without blocking): a PIN through a pipe is what fd:N is for
//   fd:N      read to EOF (at most limits::kMaxPinFile bytes), then closed; one trailing newline
//             is stripped
// The PIN is returned in SecretBytes and never echoed in any message. Reasons: kUsage for a
// malformed source; kFileUnreadable for a file that cannot be read; kHsmLoginFailed for an unset
// variable, a bad descriptor, an empty PIN or one over limits::kMaxPinLength. Not thread-safe
// for env: (it calls unsetenv).
#ifndef CLAWGUARD_SIGNER_PIN_SOURCE_H_
#define CLAWGUARD_SIGNER_PIN_SOURCE_H_

#include <string_view>

#include "clawguard/error.h"
#include "clawguard/secret_bytes.h"

namespace clawguard::signer {

Result<SecretBytes> ReadPin(std::string_view src);

}  // namespace clawguard::signer

#endif  // CLAWGUARD_SIGNER_PIN_SOURCE_H_
