// json_log.h — JsonLogger: structured log lines, one JSON object per line,
//   {"time":"2026-12-02T17:43:17.123Z","level":"warn","event":"erp_call_failed","fields":{…}}
// with redaction applied to every value before it is written.
//
// Redaction (fail closed: when in doubt, a value is replaced by kRedacted):
//  - by field name, case-insensitive, at any depth (header names included): always the secret
//    names — a name whose words (split at '-', '_', '.', ' ') include secret, password, passwd,
//    pwd, pin, token, authorization, auth, cookie, credential(s), signature, apikey, or that is
//    api_key / x-api-key / hmac_key / signing_key / private_key / key_material — plus every entry
//    of host.yaml `log.redact`, matched as a substring of the name (so `card` hides card_number);
//  - by value shape, in every string (free text and Status messages too): `whsec_…` secrets,
//    `Bearer …` / `Basic …` credentials, Standard Webhooks signatures `v1,<base64>`, URL user info
//    passwords (`postgresql://user:pw@` → `postgresql://user:***@`), `password=`/`pin-value=`
//    parameters, JWTs (`eyJ….eyJ….…`);
//  - by value: any occurrence of a secret the host registered (Options::known_secrets: the admin
//    token, erp.auth, route secrets — raw and base64) is replaced, wherever it appears, whatever
//    its length (host.yaml refuses secrets under limits::kMinSecretBytes, so a short one scrubbed
//    here is a deployment mistake that costs some ordinary text, never a leak);
//  - a SecretBytes value is never rendered at all.
// Strings are cut at kMaxLogValueBytes and escaped to valid JSON (invalid UTF-8 becomes U+FFFD).
//
// Thread-safety: Create'd loggers are immutable except for the sink, which is called under a
// mutex so lines never interleave; every method may be called from any thread.
#ifndef CLAWGUARD_HOST_OBSERVE_JSON_LOG_H_
#define CLAWGUARD_HOST_OBSERVE_JSON_LOG_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/clock.h"
#include "clawguard/error.h"
#include "clawguard/secret_bytes.h"
#include "core/mutex.h"
#include "host/http/http_types.h"

namespace clawguard::host {

inline constexpr std::string_view kRedacted = "[REDACTED]";
inline constexpr uint64_t kMaxLogValueBytes = 8 * 1024;  // one string value, after redaction
inline constexpr uint64_t kMaxLogFields = 64;            // fields (or headers) in one object
inline constexpr uint64_t kMaxRedactEntries = 256;       // host.yaml log.redact entries
inline constexpr int kMaxLogLineDepth = 32;              // nesting kept by RedactJsonLine

enum class LogLevel { kDebug, kInfo, kWarn, kError };
std::string_view LogLevelName(LogLevel level);  // "debug", "info", "warn", "error"

// LogValue is one field value: text, integer, number, bool, null, a SecretBytes (always
// rendered as kRedacted), HTTP headers (an object; each header redacted by its name) or a
// Status (an object {"reason": code, "message": redacted text}). It borrows what it refers to:
// build it in the call to Log.
class LogValue {
 public:
  // Implicit on purpose: a call writes its fields as {"name", value}, each value converted here.
  // NOLINTBEGIN(google-explicit-constructor)
  LogValue(std::string_view s) : kind_(Kind::kText), text_(s) {}
  LogValue(const char* s) : kind_(Kind::kText), text_(s) {}
  LogValue(const std::string& s) : kind_(Kind::kText), text_(s) {}
  LogValue(int v) : kind_(Kind::kInt), int_(v) {}
  LogValue(int64_t v) : kind_(Kind::kInt), int_(v) {}
  LogValue(uint64_t v) : kind_(Kind::kUint), uint_(v) {}
  LogValue(double v) : kind_(Kind::kDouble), double_(v) {}
  LogValue(bool v) : kind_(Kind::kBool), int_(v ? 1 : 0) {}
  LogValue(std::nullptr_t) : kind_(Kind::kNull) {}
  LogValue(const SecretBytes&) : kind_(Kind::kSecret) {}
  LogValue(const HttpHeaders& h) : kind_(Kind::kHeaders), headers_(&h) {}
  LogValue(const Status& s) : kind_(Kind::kStatus), status_(&s) {}
  // NOLINTEND(google-explicit-constructor)

 private:
  friend class JsonLogger;
  enum class Kind { kText, kInt, kUint, kDouble, kBool, kNull, kSecret, kHeaders, kStatus };
  Kind kind_;
  std::string_view text_;
  int64_t int_ = 0;
  uint64_t uint_ = 0;
  double double_ = 0;
  const HttpHeaders* headers_ = nullptr;
  const Status* status_ = nullptr;
};

struct LogField {
  std::string_view name;
  LogValue value;
};

// LogSink receives one complete line (ending in '\n'). Called under the logger's mutex.
using LogSink = std::function<void(std::string_view line)>;

// StderrLogSink writes lines to stderr.
LogSink StderrLogSink();

class JsonLogger {
 public:
  struct Options {
    std::vector<std::string> redact;  // host.yaml log.redact (substrings of field names)
    std::vector<SecretBytes>
        known_secrets;  // scrubbed wherever they appear (empty ones are skipped)
    LogLevel min_level = LogLevel::kInfo;
  };

  // Create: kConfigInvalid when a redact entry is empty or there are more than
  // kMaxRedactEntries, or |sink| is empty. Every non-empty known secret is scrubbed.
  // |clock| must outlive the logger.
  static Result<std::unique_ptr<JsonLogger>> Create(Options options, LogSink sink,
                                                    const Clock& clock);

  // Log writes one line if |level| ≥ min_level. Never throws.
  void Log(LogLevel level, std::string_view event,
           std::initializer_list<LogField> fields = {}) const;
  void Info(std::string_view event, std::initializer_list<LogField> fields = {}) const {
    Log(LogLevel::kInfo, event, fields);
  }
  void Warn(std::string_view event, std::initializer_list<LogField> fields = {}) const {
    Log(LogLevel::kWarn, event, fields);
  }
  void Error(std::string_view event, std::initializer_list<LogField> fields = {}) const {
    Log(LogLevel::kError, event, fields);
  }
  // LogStatus logs |status| as field "error" ({"reason","message"}) beside |fields|.
  void LogStatus(LogLevel level, std::string_view event, const Status& status,
                 std::initializer_list<LogField> fields = {}) const;

  // Render returns the line Log would write (for tests and for callers with their own sink).
  std::string Render(LogLevel level, std::string_view event,
                     std::initializer_list<LogField> fields) const;

  // RedactText applies the value-shape and known-secret rules to free text.
  std::string RedactText(std::string_view text) const;
  // IsSecretName says whether a field or header named |name| is always redacted.
  bool IsSecretName(std::string_view name) const;
  // RedactJsonLine re-renders one already-rendered JSON object line (the host's audit lines)
  // through the same rules: every member whose name IsSecretName (at any depth, in arrays too)
  // becomes kRedacted unless null; every string (member names included) goes through RedactText
  // and is cut at kMaxLogValueBytes; numbers, booleans and null are kept; member order is kept.
  // Nesting deeper than kMaxLogLineDepth becomes kRedacted. A line that is not one JSON object
  // (invalid JSON or UTF-8, an array, trailing text) becomes
  //   {"event":"unparseable_log_line","redacted":"<RedactText(line)>"}
  // so no caller-written line is ever lost or written unredacted. Returns one line without '\n'
  // (compact, no spaces). Does not write to the sink; never throws; thread-safe.
  // A compact object of ASCII strings, integers, true, false and null (every audit line the host
  // writes itself) is rendered without building a DOM; any other line goes through
  // RedactJsonLineByDom. Both give the same line (tests/fuzz/log_line_fuzz.cpp).
  std::string RedactJsonLine(std::string_view line) const;
  // RedactJsonLineByDom: RedactJsonLine through nlohmann's parser for every line (the reference
  // the fast path is checked against).
  std::string RedactJsonLineByDom(std::string_view line) const;

 private:
  JsonLogger(Options options, LogSink sink, const Clock& clock);
  void AppendValue(std::string& out, std::string_view name, const LogValue& value) const;
  void AppendText(std::string& out, std::string_view text) const;
  std::string RenderFields(LogLevel level, std::string_view event, const LogField* begin,
                           const LogField* end) const;
  void Write(const std::string& line) const;

  std::vector<std::string> redact_;   // lowercased
  std::vector<SecretBytes> secrets_;  // raw and base64 forms
  const LogLevel min_level_;
  const LogSink sink_;
  const Clock& clock_;
  mutable Mutex mu_;  // serializes calls of sink_ (lines never interleave)
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_OBSERVE_JSON_LOG_H_
