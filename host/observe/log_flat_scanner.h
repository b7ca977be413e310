// log_flat_scanner.h — the fast path of JsonLogger::RedactJsonLine: the one shape of line the
// host's audit writers produce, redacted without building a DOM.
#ifndef CLAWGUARD_HOST_OBSERVE_LOG_FLAT_SCANNER_H_
#define CLAWGUARD_HOST_OBSERVE_LOG_FLAT_SCANNER_H_

#include <optional>
#include <string>
#include <string_view>

namespace clawguard::host {

class JsonLogger;

// RedactFlatLine renders a line that is a compact JSON object of ASCII members whose values are
// strings, integers, true, false or null exactly as AppendRedactedJson (log_redaction.h) renders
// its DOM; nullopt for any other line, which then takes the DOM path.
std::optional<std::string> RedactFlatLine(const JsonLogger& log, std::string_view line);

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_OBSERVE_LOG_FLAT_SCANNER_H_
