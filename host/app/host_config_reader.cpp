// host_config_reader.cpp — ConfigReader and the name checks of host.yaml.
#include "host/app/host_config_reader.h"

#include <arpa/inet.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "clawguard/clock.h"
#include "clawguard/file_io.h"
#include "clawguard/limits.h"
#include "host/intake/webhook_auth.h"

namespace clawguard::host::config_internal {

bool IsEnvName(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

bool IsValidPluginName(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && i > 0);
    if (!ok) return false;
  }
  return true;
}

bool IsValidRouteName(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
      return false;
  }
  return true;
}

bool IsHostPort(std::string_view s) {
  const size_t colon = s.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == s.size() ||
      colon + 6 < s.size())
    return false;
  unsigned port = 0;
  auto [p, ec] = std::from_chars(s.data() + colon + 1, s.data() + s.size(), port);
  return ec == std::errc() && p == s.data() + s.size() && port <= 65535;
}

std::string UrlHost(std::string_view url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return {};
  std::string_view rest = url.substr(scheme + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (const size_t at = rest.rfind('@'); at != std::string_view::npos) rest.remove_prefix(at + 1);
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find(']');
    return close == std::string_view::npos ? std::string() : std::string(rest.substr(1, close - 1));
  }
  return std::string(rest.substr(0, rest.find(':')));
}

bool IsLoopbackHost(std::string_view host) {
  std::string h(host);
  for (char& c : h) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (h == "localhost") return true;
  unsigned char buf[16];
  if (inet_pton(AF_INET, h.c_str(), buf) == 1) return buf[0] == 127;
  if (inet_pton(AF_INET6, h.c_str(), buf) == 1) {
    static const unsigned char kLoop[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    return std::equal(buf, buf + 16, kLoop);
  }
  return false;
}

bool IsPlaintextOffHost(std::string_view url) {
  std::string scheme(url.substr(0, std::min<size_t>(url.size(), 7)));
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return scheme == "http://" && !IsLoopbackHost(UrlHost(url));
}

size_t CredentialBytes(std::string_view authorization) {
  const size_t space = authorization.find(' ');
  if (space == std::string_view::npos) return authorization.size();
  std::string_view credential = authorization.substr(space + 1);
  while (!credential.empty() && credential.front() == ' ') credential.remove_prefix(1);
  while (!credential.empty() && credential.back() == ' ') credential.remove_suffix(1);
  return credential.size();
}

Result<YamlMap> ConfigReader::Map(const YAML::Node& node, const std::string& path) {
  return YamlMap::Create(node, source_, path);
}

Result<YamlMap> ConfigReader::Sub(YamlMap& parent, const std::string& key) {
  CLAWGUARD_ASSIGN_OR_RETURN(YAML::Node n, parent.Node(key));
  return Map(n, parent.path().empty() ? key : parent.path() + "." + key);
}

std::string ConfigReader::Resolve(const std::string& p) const {
  const std::filesystem::path path(p);
  if (path.is_absolute()) return path.lexically_normal().string();
  std::error_code ec;
  std::filesystem::path base =
      std::filesystem::absolute(dir_.empty() ? std::filesystem::path(".") : dir_, ec);
  if (ec) base = dir_;
  return (base / path).lexically_normal().string();
}

Result<std::string> ConfigReader::PathOf(YamlMap& m, const std::string& key) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::string p, m.String(key));
  if (p.empty()) return m.Error(m.node()[key], key, "expected a file path, found an empty string");
  return Resolve(p);
}

Result<std::string> ConfigReader::Secret(YamlMap& m, const std::string& key, std::string* label) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::string ref, m.String(key));
  const YAML::Node n = m.node()[key];
  if (label != nullptr) *label = ref;
  if (ref.rfind("file:", 0) == 0 && ref.size() > 5) {
    const std::string path = Resolve(ref.substr(5));
    if (label != nullptr) *label = "file:" + path;
    Result<UniqueFd> fd = OpenRegularFile(path);
    if (!fd.ok()) return m.Error(n, key, "secret file " + path + ": " + fd.error().message());
    struct stat st {};
    if (::fstat(fd->get(), &st) != 0) {
      return m.Error(n, key, "secret file " + path + ": " + std::strerror(errno));
    }
    if ((st.st_mode & (S_IWGRP | S_IRWXO)) != 0) {
      char mode[8];
      std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
      return m.Error(n, key,
                     "secret file " + path + " has mode " + mode +
                         ": others may read it or others or its group may write it (chmod 0600, "
                         "or 0640 for a group that only reads)");
    }
    std::string value(static_cast<size_t>(limits::kMaxSecretFile) + 1, '\0');
    size_t used = 0;
    while (used < value.size()) {
      const ssize_t got = ::read(fd->get(), value.data() + used, value.size() - used);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return m.Error(n, key, "secret file " + path + ": " + std::strerror(errno));
      if (got == 0) break;
      used += static_cast<size_t>(got);
    }
    if (used > limits::kMaxSecretFile) {
      std::fill(value.begin(), value.end(), '\0');
      return m.Error(n, key,
                     "secret file " + path + " holds more than " +
                         std::to_string(limits::kMaxSecretFile) +
                         " bytes; it must hold the secret only");
    }
    value.resize(used);
    if (!value.empty() && value.back() == '\n') value.pop_back();
    if (!value.empty() && value.back() == '\r') value.pop_back();
    if (value.empty()) return m.Error(n, key, "secret file " + path + " is empty");
    return value;
  }
  if (ref.rfind("env:", 0) != 0 || !IsEnvName(std::string_view(ref).substr(4))) {
    return m.Error(n, key,
                   "secrets are given as env:VAR or file:PATH (a literal secret in the file is "
                   "refused)");
  }
  const std::string var = ref.substr(4);
  std::optional<std::string> v = env_(var);
  if (!v || v->empty())
    return m.Error(n, key, "environment variable " + var + " is not set or empty");
  return std::move(*v);
}

Result<SecretBytes> ConfigReader::WebhookSecret(YamlMap& m, const std::string& key) {
  std::string label;
  CLAWGUARD_ASSIGN_OR_RETURN(std::string raw, Secret(m, key, &label));
  auto k = DecodeWebhookSecret(raw);
  std::fill(raw.begin(), raw.end(), '\0');
  if (!k.ok()) return m.Error(m.node()[key], key, label + ": " + k.error().message());
  if (k->size() < limits::kMinSecretBytes) {
    return m.Error(
        m.node()[key], key,
        label + ": the webhook secret decodes to " + std::to_string(k->size()) +
            " bytes; at least " + std::to_string(limits::kMinSecretBytes) +
            " are required (the host refuses to start; Standard Webhooks issues 24 to 64)");
  }
  return std::move(k).value();
}

Result<std::optional<TlsFiles>> ConfigReader::Tls(YamlMap& m) {
  auto n = m.OptionalNode("tls");
  if (!n) return std::optional<TlsFiles>();
  CLAWGUARD_ASSIGN_OR_RETURN(YamlMap t, Map(*n, m.path() + ".tls"));
  TlsFiles f;
  CLAWGUARD_ASSIGN_OR_RETURN(f.cert, PathOf(t, "cert"));
  CLAWGUARD_ASSIGN_OR_RETURN(f.key, PathOf(t, "key"));
  CLAWGUARD_RETURN_IF_ERROR(t.Finish());
  return std::optional<TlsFiles>(std::move(f));
}

Result<std::optional<int64_t>> ConfigReader::Time(YamlMap& m, const std::string& key) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::optional<std::string> s, m.OptionalString(key));
  if (!s) return std::optional<int64_t>();
  auto t = ParseRfc3339Utc(*s);
  if (!t)
    return m.Error(m.node()[key], key,
                   "expected a UTC time such as 2026-12-09T00:00:00Z, found '" + *s + "'");
  return std::optional<int64_t>(*t);
}

Result<std::vector<Millis>> ConfigReader::Durations(YamlMap& m, const std::string& key) {
  CLAWGUARD_ASSIGN_OR_RETURN(YAML::Node n, m.Node(key));
  if (!n.IsSequence() || n.size() == 0 || n.size() > limits::kMaxRetrySchedule) {
    return m.Error(n, key,
                   "expected a list of 1 to " + std::to_string(limits::kMaxRetrySchedule) +
                       " durations such as [1m, 2m, 4m]");
  }
  std::vector<Millis> out;
  for (const YAML::Node& e : n) {
    auto d = e.IsScalar() ? ParseDurationText(e.Scalar()) : std::nullopt;
    if (!d) return m.Error(e, key, "expected a duration such as 30s, 5m or 2h");
    out.push_back(*d);
  }
  return out;
}

}  // namespace clawguard::host::config_internal
