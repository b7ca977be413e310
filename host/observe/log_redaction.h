// log_redaction.h — the redaction rules of JsonLogger (json_log.h states them): which field names
// are secret, which value shapes are credentials, and a parsed JSON value rendered through both.
#ifndef CLAWGUARD_HOST_OBSERVE_LOG_REDACTION_H_
#define CLAWGUARD_HOST_OBSERVE_LOG_REDACTION_H_

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace clawguard::host {

class JsonLogger;

// AsciiLower returns |s| with A–Z lowered (other bytes kept).
std::string AsciiLower(std::string_view s);

// IsSecretFieldName says whether a field or header named |name| is always redacted: a secret word
// or substring of the name, or one of |redact_lower| (host.yaml log.redact, lowercased) as a
// substring; a few public names that contain a secret word (fencing_token) are not.
bool IsSecretFieldName(std::string_view name, const std::vector<std::string>& redact_lower);

// RedactCredentialShapes replaces the token after each credential-shaped prefix (whsec_, Bearer,
// Basic, v1,, password= …), a URL's user-info password and JWT-shaped tokens.
std::string RedactCredentialShapes(std::string_view s);

// AppendRedactedJson renders |v| (the value of member |name|; "" at the top) through |log|'s rules
// (see JsonLogger::RedactJsonLine).
void AppendRedactedJson(const JsonLogger& log, std::string& out, std::string_view name,
                        const nlohmann::ordered_json& v, int depth);

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_OBSERVE_LOG_REDACTION_H_
