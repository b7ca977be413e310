// log_json_text.h — JSON text for log lines: a string escaped to valid JSON whatever bytes it
// holds, optionally cut at kMaxLogValueBytes. No redaction here (log_redaction.h).
#ifndef CLAWGUARD_HOST_OBSERVE_LOG_JSON_TEXT_H_
#define CLAWGUARD_HOST_OBSERVE_LOG_JSON_TEXT_H_

#include <string>
#include <string_view>

namespace clawguard::host {

// AppendJsonString appends |s| as a JSON string: valid UTF-8 is kept, control characters are
// \u-escaped, and each invalid byte becomes U+FFFD.
void AppendJsonString(std::string& out, std::string_view s);

// AppendClipped appends already-redacted text as a JSON string, cut at kMaxLogValueBytes.
void AppendClipped(std::string& out, std::string clean);

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_OBSERVE_LOG_JSON_TEXT_H_
