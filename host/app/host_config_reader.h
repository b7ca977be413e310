// host_config_reader.h — ConfigReader: what every host.yaml section reader needs (the source
// file, its directory for relative paths, the environment for `env:VAR` secrets), and the name
// checks they share. Internal to host_config.cpp and its section readers; not thread-safe (one
// reader per load).
#ifndef CLAWGUARD_HOST_APP_HOST_CONFIG_READER_H_
#define CLAWGUARD_HOST_APP_HOST_CONFIG_READER_H_

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/error.h"
#include "clawguard/secret_bytes.h"
#include "clawguard/strict_yaml.h"
#include "host/app/host_config.h"

namespace clawguard::host::config_internal {

// IsEnvName: [A-Za-z_][A-Za-z0-9_]*.
bool IsEnvName(std::string_view s);
// IsValidPluginName: 1..64 of [a-z0-9-], not starting with '-'.
bool IsValidPluginName(std::string_view s);
// IsValidRouteName: 1..128 of [A-Za-z0-9._-].
bool IsValidRouteName(std::string_view s);
// IsHostPort accepts "HOST:PORT" with a non-empty host and a decimal port 0..65535 ("[::1]:0" too).
bool IsHostPort(std::string_view s);

// UrlHost returns the host of an http(s):// URL ("[::1]" without brackets), "" if there is none.
std::string UrlHost(std::string_view url);
// IsLoopbackHost: 127.0.0.0/8, ::1 or "localhost".
bool IsLoopbackHost(std::string_view host);
// IsPlaintextOffHost: |url| is http:// to a host that is not loopback (credentials in clear on
// the network).
bool IsPlaintextOffHost(std::string_view url);
// CredentialBytes is the length of the credential in an Authorization value: the part after the
// scheme ("Bearer <token>", "Basic <b64>") when there is one, else the whole value.
size_t CredentialBytes(std::string_view authorization);

// ConfigReader: every error names file:line and the key path; secrets are never echoed.
class ConfigReader {
 public:
  ConfigReader(std::string source, const EnvLookup& env)
      : source_(std::move(source)), dir_(std::filesystem::path(source_).parent_path()), env_(env) {}
  Result<YamlMap> Map(const YAML::Node& node, const std::string& path);
  Result<YamlMap> Sub(YamlMap& parent, const std::string& key);
  std::string Resolve(const std::string& p) const;
  Result<std::string> PathOf(YamlMap& m, const std::string& key);
  // Secret reads `env:VAR` or `file:PATH`: a regular file of at most limits::kMaxSecretFile
  // bytes, one trailing newline stripped, neither readable by others nor writable by its group or
  // others (a relative PATH is against the configuration file's directory; systemd's
  // LoadCredential= puts one in $CREDENTIALS_DIRECTORY). |label| gets "env:VAR" or "file:PATH".
  // Messages name the variable or the path, never the value.
  Result<std::string> Secret(YamlMap& m, const std::string& key, std::string* label = nullptr);
  Result<SecretBytes> WebhookSecret(YamlMap& m, const std::string& key);
  Result<std::optional<TlsFiles>> Tls(YamlMap& m);
  Result<std::optional<int64_t>> Time(YamlMap& m, const std::string& key);
  Result<std::vector<Millis>> Durations(YamlMap& m, const std::string& key);

  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::filesystem::path dir_;
  const EnvLookup& env_;
};

}  // namespace clawguard::host::config_internal

#endif  // CLAWGUARD_HOST_APP_HOST_CONFIG_READER_H_
