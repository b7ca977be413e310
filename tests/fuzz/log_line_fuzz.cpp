// fuzz-requires: clawguard_host
// log_line_fuzz.cpp — the audit sink's line filter (JsonLogger::RedactJsonLine) on arbitrary
// bytes, differentially: its DOM-free path for flat lines must render every line exactly as the
// DOM path (RedactJsonLineByDom) does, and the result is always one JSON object.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "clawguard/clock.h"
#include "host/observe/json_log.h"

namespace {
const clawguard::host::JsonLogger& Redactor() {
  static const std::unique_ptr<clawguard::host::JsonLogger> log = [] {
    clawguard::host::JsonLogger::Options options;
    options.redact = {"card"};
    options.known_secrets.emplace_back(std::string_view("known-secret-value-123456"));
    return std::move(
               clawguard::host::JsonLogger::Create(
                   std::move(options), [](std::string_view) {}, clawguard::SystemClock::Instance()))
        .value();
  }();
  return *log;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  const std::string out = Redactor().RedactJsonLine(line);
  if (out != Redactor().RedactJsonLineByDom(line)) std::abort();
  if (!nlohmann::json::accept(out)) std::abort();
  return 0;
}
