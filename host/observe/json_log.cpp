// json_log.cpp — JsonLogger (see json_log.h): renders fields into one line and writes it. The
// pieces it renders with: log_json_text.h (JSON strings), log_redaction.h (the rules),
// log_flat_scanner.h (audit lines without a DOM).
#include "host/observe/json_log.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>

#include <nlohmann/json.hpp>

#include "clawguard/encoding.h"
#include "host/observe/log_flat_scanner.h"
#include "host/observe/log_json_text.h"
#include "host/observe/log_redaction.h"

namespace clawguard::host {
namespace {

std::string TimeStamp(int64_t ms) {
  std::string t = FormatRfc3339Utc(ms / 1000 - (ms % 1000 < 0 ? 1 : 0));
  const int64_t frac = ((ms % 1000) + 1000) % 1000;
  char buf[8];
  std::snprintf(buf, sizeof(buf), ".%03d", static_cast<int>(frac));
  t.insert(t.size() - 1, buf);  // before the 'Z'
  return t;
}

}  // namespace

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "error";
}

LogSink StderrLogSink() {
  return [](std::string_view line) {
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
  };
}

JsonLogger::JsonLogger(Options options, LogSink sink, const Clock& clock)
    : min_level_(options.min_level), sink_(std::move(sink)), clock_(clock) {
  for (const auto& r : options.redact) redact_.push_back(AsciiLower(r));
  for (auto& s : options.known_secrets) {
    if (s.empty()) continue;  // nothing to find (and it would match everywhere)
    secrets_.emplace_back(Base64Encode(InsecureSecretAccess::View(s)));
    secrets_.push_back(std::move(s));
  }
  // Longest first, so a secret that contains another is scrubbed whole.
  std::sort(secrets_.begin(), secrets_.end(),
            [](const SecretBytes& a, const SecretBytes& b) { return a.size() > b.size(); });
}

Result<std::unique_ptr<JsonLogger>> JsonLogger::Create(Options options, LogSink sink,
                                                       const Clock& clock) {
  if (!sink) return Status(Reason::kConfigInvalid, "log: a sink is required");
  if (options.redact.size() > kMaxRedactEntries) {
    return Status(Reason::kConfigInvalid, "log.redact: " + std::to_string(options.redact.size()) +
                                              " entries, at most " +
                                              std::to_string(kMaxRedactEntries));
  }
  for (const auto& r : options.redact) {
    if (r.empty())
      return Status(Reason::kConfigInvalid,
                    "log.redact: an entry is empty (it would match every field)");
  }
  return std::unique_ptr<JsonLogger>(new JsonLogger(std::move(options), std::move(sink), clock));
}

bool JsonLogger::IsSecretName(std::string_view name) const {
  return IsSecretFieldName(name, redact_);
}

std::string JsonLogger::RedactText(std::string_view text) const {
  std::string s(text);
  for (const auto& secret : secrets_) {
    const std::string_view raw = InsecureSecretAccess::View(secret);
    for (std::size_t at = s.find(raw); at != std::string::npos;
         at = s.find(raw, at + kRedacted.size())) {
      s.replace(at, raw.size(), kRedacted);
    }
  }
  return RedactCredentialShapes(s);
}

void JsonLogger::AppendText(std::string& out, std::string_view text) const {
  AppendClipped(out, RedactText(text));
}

std::string JsonLogger::RedactJsonLine(std::string_view line) const {
  if (std::optional<std::string> flat = RedactFlatLine(*this, line)) return *std::move(flat);
  return RedactJsonLineByDom(line);
}

std::string JsonLogger::RedactJsonLineByDom(std::string_view line) const {
  std::string out;
  try {
    const auto parsed = nlohmann::ordered_json::parse(line.begin(), line.end(), nullptr,
                                                      /*allow_exceptions=*/false);
    if (parsed.is_object()) {
      AppendRedactedJson(*this, out, "", parsed, 0);
      return out;
    }
  } catch (const std::exception&) {  // allocation failure or a nlohmann invariant: fall back below
  }
  out = "{\"event\":\"unparseable_log_line\",\"redacted\":";
  AppendText(out, line);
  out.push_back('}');
  return out;
}

void JsonLogger::AppendValue(std::string& out, std::string_view name, const LogValue& v) const {
  if (v.kind_ == LogValue::Kind::kSecret ||
      (IsSecretName(name) && v.kind_ != LogValue::Kind::kNull)) {
    AppendJsonString(out, kRedacted);
    return;
  }
  switch (v.kind_) {
    case LogValue::Kind::kText: AppendText(out, v.text_); return;
    case LogValue::Kind::kInt: out += std::to_string(v.int_); return;
    case LogValue::Kind::kUint: out += std::to_string(v.uint_); return;
    case LogValue::Kind::kBool: out += v.int_ != 0 ? "true" : "false"; return;
    case LogValue::Kind::kNull: out += "null"; return;
    case LogValue::Kind::kDouble: {
      if (!std::isfinite(v.double_)) {
        out += "null";
        return;
      }
      char buf[64];
      auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v.double_);
      out += ec == std::errc() ? std::string(buf, end) : "null";
      return;
    }
    case LogValue::Kind::kHeaders: {
      out.push_back('{');
      std::size_t n = 0;
      for (const auto& [hname, hvalue] : *v.headers_) {
        if (n++ == kMaxLogFields) break;
        if (n > 1) out.push_back(',');
        AppendText(out, hname);
        out.push_back(':');
        AppendValue(out, hname, LogValue(hvalue));
      }
      out.push_back('}');
      return;
    }
    case LogValue::Kind::kStatus:
      out += "{\"reason\":";
      AppendJsonString(out, ReasonName(v.status_->reason()));
      out += ",\"message\":";
      AppendText(out, v.status_->message());
      out.push_back('}');
      return;
    case LogValue::Kind::kSecret: break;  // handled above
  }
  AppendJsonString(out, kRedacted);
}

std::string JsonLogger::RenderFields(LogLevel level, std::string_view event, const LogField* begin,
                                     const LogField* end) const {
  std::string out = "{\"time\":";
  AppendJsonString(out, TimeStamp(clock_.NowMillis()));
  out += ",\"level\":";
  AppendJsonString(out, LogLevelName(level));
  out += ",\"event\":";
  AppendText(out, event);
  out += ",\"fields\":{";
  std::size_t n = 0;
  for (const LogField* f = begin; f != end; ++f) {
    if (n++ == kMaxLogFields) break;
    if (n > 1) out.push_back(',');
    AppendText(out, f->name);
    out.push_back(':');
    AppendValue(out, f->name, f->value);
  }
  out += "}}\n";
  return out;
}

std::string JsonLogger::Render(LogLevel level, std::string_view event,
                               std::initializer_list<LogField> fields) const {
  return RenderFields(level, event, fields.begin(), fields.end());
}

void JsonLogger::Write(const std::string& line) const {
  MutexLock lock(mu_);
  sink_(line);
}

void JsonLogger::Log(LogLevel level, std::string_view event,
                     std::initializer_list<LogField> fields) const {
  if (level < min_level_) return;
  Write(Render(level, event, fields));
}

void JsonLogger::LogStatus(LogLevel level, std::string_view event, const Status& status,
                           std::initializer_list<LogField> fields) const {
  if (level < min_level_) return;
  std::vector<LogField> all(fields);
  all.push_back({"error", LogValue(status)});
  Write(RenderFields(level, event, all.data(), all.data() + all.size()));
}

}  // namespace clawguard::host
