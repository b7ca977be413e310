// host_api.cpp — the static host API table every plugin's init receives (plugin.h): erp_call,
// respond and log, each looking up the plugin's handle (CallHandles) before touching a cg_call.
#include <nlohmann/json.hpp>

#include <cstring>
#include <string>

#include "clawguard/json_dump.h"
#include "clawguard/limits.h"
#include "host/dispatch/call_handles.h"
#include "host/dispatch/plugin_call.h"
#include "host/dispatch/plugin_dispatch.h"
#include "host/http/responder.h"

namespace clawguard::host {
namespace {

// PluginString copies a NUL-terminated string out of plugin memory, reading at most |max| + 1
// bytes: a longer one comes back |max| + 1 bytes long, which no capability matches.
std::string PluginString(const char* s, size_t max) { return std::string(s, strnlen(s, max + 1)); }

int ErpCallFn(cg_call* handle, const char* method, const char* path, cg_bytes body,
              cg_bytes* reply) {
  if (reply != nullptr) *reply = cg_bytes{nullptr, 0};
  // The arguments are checked before the handle is looked up: a malformed call answers the same
  // for every handle, live or not.
  if (method == nullptr || path == nullptr || (body.data == nullptr && body.len != 0))
    return CG_DENIED;
  // A finished (or unknown) delivery: nothing of it is touched, nothing is written or sent.
  const std::shared_ptr<cg_call> call = CallHandles::Global().Find(handle);
  if (call == nullptr || call->abandoned.load() || call->closed.load()) return CG_FENCED;
  MutexLock lock(call->erp_mu);
  if (call->abandoned.load() || call->closed.load()) return CG_FENCED;
  // Copied once, before anything looks at them: another plugin thread may rewrite these buffers
  // while the call runs, and the capability must be matched on exactly the bytes that are sent.
  // An over-long body is not copied; the gateway refuses it by its length alone.
  const std::string method_copy = PluginString(method, limits::kMaxErpMethodLength);
  const std::string path_copy = PluginString(path, limits::kMaxErpPathLength);
  if (body.len > limits::kMaxErpRequestBody) {
    return call->gateway->Call(method_copy, path_copy, std::string_view(body.data, body.len),
                               reply);
  }
  const std::string body_copy = body.len == 0 ? std::string() : std::string(body.data, body.len);
  return call->gateway->Call(method_copy, path_copy, body_copy, reply);
}

void RespondFn(cg_call* handle, int status, const char* content_type, cg_bytes body) {
  const std::shared_ptr<cg_call> call = CallHandles::Global().Find(handle);
  if (call == nullptr) return;
  MutexLock lock(call->mu);
  if (call->abandoned.load() || call->closed.load() || call->finished) return;  // ignored: too late
  if (++call->responds > 1) return;
  const std::string_view ct =
      content_type == nullptr ? std::string_view() : std::string_view(content_type);
  if (std::optional<std::string> problem =
          RespondProblem(status, ct, body.data == nullptr, body.len)) {
    call->respond_problem = std::move(*problem);
    return;
  }
  call->status = status;
  call->content_type = std::string(ct);
  call->answer = body.data == nullptr ? std::string() : std::string(body.data, body.len);
}

// AppendAsciiJson appends |s| as nlohmann's dump (ensure_ascii off) renders an ASCII string;
// false (and |out| partly written) when |s| has a byte past ASCII.
bool AppendAsciiJson(std::string& out, std::string_view s) {
  out.push_back('"');
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x80) return false;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xf]);
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
  return true;
}

void LogFn(cg_call* handle, int level, const char* message) {
  if (message == nullptr) return;
  const std::shared_ptr<cg_call> call =
      CallHandles::Global().Find(handle);  // dropped once the plugin returned
  if (call == nullptr || !call->audit) return;
  call->audit(PluginLogLine(call->plugin, level,
                            std::string_view(message, strnlen(message, kMaxLogMessage))));
}

const cg_host_api kHostApi = {CLAWGUARD_PLUGIN_ABI, &ErpCallFn, &RespondFn, &LogFn};

}  // namespace

std::optional<std::string> RespondProblem(int status, std::string_view content_type,
                                          bool body_is_null, size_t body_len) {
  if (body_is_null && body_len != 0)
    return "respond() got a body of " + std::to_string(body_len) + " bytes at a null pointer";
  // A header value with CR/LF would split the stored answer's headers.
  if (content_type.size() > kMaxContentType ||
      content_type.find_first_of("\r\n") != std::string_view::npos) {
    return "respond() got a content type over " + std::to_string(kMaxContentType) +
           " bytes or with CR/LF";
  }
  // The one answer rule (host/http/responder.h): what is stored must be what every replay can
  // serve.
  if (std::optional<std::string> problem = AnswerProblem(status, body_len))
    return "respond() refused: " + *problem;
  return std::nullopt;
}

std::string PluginLogLine(std::string_view plugin, int level, std::string_view message) {
  std::string line =
      "{\"event\":\"plugin_log\",\"level\":" + std::to_string(level) + ",\"message\":";
  if (AppendAsciiJson(line, message)) {
    line += ",\"plugin\":";
    if (AppendAsciiJson(line, plugin)) {
      line.push_back('}');
      return line;
    }
  }
  const nlohmann::json j = {
      {"event", "plugin_log"}, {"plugin", plugin}, {"level", level}, {"message", message}};
  return DumpJson(j);
}

const cg_host_api* HostApi() { return &kHostApi; }

}  // namespace clawguard::host
