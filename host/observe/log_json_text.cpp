// log_json_text.cpp — see log_json_text.h.
#include "host/observe/log_json_text.h"

#include <cstdio>

#include "host/observe/json_log.h"

namespace clawguard::host {

void AppendJsonString(std::string& out, std::string_view s) {
  out.push_back('"');
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '"')
        out += "\\\"";
      else if (c == '\\')
        out += "\\\\";
      else if (c == '\n')
        out += "\\n";
      else if (c == '\r')
        out += "\\r";
      else if (c == '\t')
        out += "\\t";
      else if (c < 0x20 || c == 0x7f) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      } else {
        out.push_back(static_cast<char>(c));
      }
      ++i;
      continue;
    }
    std::size_t len = (c >= 0xc2 && c <= 0xdf)   ? 2
                      : (c >= 0xe0 && c <= 0xef) ? 3
                      : (c >= 0xf0 && c <= 0xf4) ? 4
                                                 : 0;
    bool ok = len != 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k)
      ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (ok && len == 3) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);  // overlong, surrogates
    }
    if (ok && len == 4) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\\ufffd";
      ++i;
    }
  }
  out.push_back('"');
}

void AppendClipped(std::string& out, std::string clean) {
  if (clean.size() > kMaxLogValueBytes) {
    clean.resize(kMaxLogValueBytes);
    clean += "...[truncated]";
  }
  AppendJsonString(out, clean);
}

}  // namespace clawguard::host
