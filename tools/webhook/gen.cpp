// gen.cpp — `clawguard-webhook gen`: pre-signed deliveries for wrk's Lua script (see modes.h).
#include <cstdio>
#include <fstream>

#include "host/intake/webhook_auth.h"
#include "webhook/modes.h"

namespace clawguard::tools {

Status RunGen(const SecretBytes& key, const GenOptions& options, const std::string& out_path,
              const Clock& clock) {
  constexpr std::string_view kSeq = "{{seq}}";
  if (options.count <= 0 || options.count > kMaxGenRequests) {
    return Status(Reason::kUsage, "gen: expected a count of 1.." + std::to_string(kMaxGenRequests));
  }
  const std::string& tpl = options.body_template;
  if (tpl.find(kSeq) == std::string::npos) {
    return Status(Reason::kUsage,
                  "gen: the body template must contain {{seq}} (each request is a distinct event)");
  }
  if (tpl.find_first_of("\t\r\n") != std::string::npos) {
    return Status(
        Reason::kUsage,
        "gen: the body template must be one line without TAB (write the JSON on one line)");
  }
  if (options.id_prefix.empty() ||
      options.id_prefix.find_first_of("\t\r\n ") != std::string::npos) {
    return Status(Reason::kUsage, "gen: the id prefix must be non-empty visible ASCII");
  }
  const std::string tmp = out_path + ".tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) return Status(Reason::kInternal, "gen: cannot write " + tmp);
  const int64_t ts = clock.NowSeconds();
  const std::string ts_text = std::to_string(ts);
  for (int64_t i = 0; i < options.count; ++i) {
    const std::string seq = std::to_string(i);
    std::string body;
    body.reserve(tpl.size() + 16);
    for (size_t pos = 0;;) {
      const size_t at = tpl.find(kSeq, pos);
      body.append(tpl, pos, at == std::string::npos ? std::string::npos : at - pos);
      if (at == std::string::npos) break;
      body += seq;
      pos = at + kSeq.size();
    }
    const std::string id = options.id_prefix + seq;
    out << id << '\t' << ts_text << '\t' << host::WebhookSignature(key, id, ts, body) << '\t'
        << body << '\n';
  }
  out.close();
  if (!out) return Status(Reason::kInternal, "gen: writing " + tmp + " failed");
  if (std::rename(tmp.c_str(), out_path.c_str()) != 0) {
    return Status(Reason::kInternal, "gen: cannot rename " + tmp + " to " + out_path);
  }
  return Status();
}

}  // namespace clawguard::tools
