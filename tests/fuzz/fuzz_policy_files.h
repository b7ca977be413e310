// fuzz_policy_files.h — the fixed files beside the policies fed to the trust/allowlist fuzz
// targets: a private temp dir (removed at exit) holding a pinned root certificate (Ed25519,
// O=fuzz, valid to 2126), a current CRL it issued, and the file the target writes each input to.
// Regenerate with tests/fuzz/make_seeds.sh (the pins in the seeds are kRootSha256). Not
// thread-safe (libFuzzer runs one input at a time).
#ifndef CLAWGUARD_TESTS_FUZZ_FUZZ_POLICY_FILES_H_
#define CLAWGUARD_TESTS_FUZZ_FUZZ_POLICY_FILES_H_

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace clawguard::fuzz {

inline constexpr std::string_view kRootPem =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBSTCB/KADAgECAgEBMAUGAytlcDAjMQ0wCwYDVQQKDARmdXp6MRIwEAYDVQQD\n"
    "DAlmdXp6IHJvb3QwIBcNMjYxMjAyMTc0MzI3WhgPMjEyNjExMDgxNzQzMjdaMCMx\n"
    "DTALBgNVBAoMBGZ1enoxEjAQBgNVBAMMCWZ1enogcm9vdDAqMAUGAytlcAMhAMG8\n"
    "q0cJMV+IRVosyhbe+l9i296F69a5WuWsbVAwbwjmo1MwUTAdBgNVHQ4EFgQUM3i9\n"
    "HrU+9N83YGxKFO/aJ8k8nQ8wHwYDVR0jBBgwFoAUM3i9HrU+9N83YGxKFO/aJ8k8\n"
    "nQ8wDwYDVR0TAQH/BAUwAwEB/zAFBgMrZXADQQA6AbzKj2n0vJ10JRBIIY4gxh/p\n"
    "zopngW/tHJTFroPisIvPdElXtIMJFOnoYTyeMYYIPg8qtvwmNTI4xsEucpYM\n"
    "-----END CERTIFICATE-----\n";
inline constexpr std::string_view kRootSha256 =
    "31f9fa2c0f5ec3ddb7177fa84c86c09f35f7b160ea1c1d055fdbadbbcfcbb99b";
inline constexpr std::string_view kCrlPem =
    "-----BEGIN X509 CRL-----\n"
    "MIGrMF8CAQEwBQYDK2VwMCMxDTALBgNVBAoMBGZ1enoxEjAQBgNVBAMMCWZ1enog\n"
    "cm9vdBcNMjYxMjAyMTc0MzMwWhgPMjEyNjExMDgxNzQzMzBaoA4wDDAKBgNVHRQE\n"
    "AwIBATAFBgMrZXADQQA5kDJD0Gutio9Z+rP1bLkLnrygMo97K8DxBPd4WNDTtkE6\n"
    "P5Nyx+rw7c71eSDlmpQ8Q/qkpsRmBxxsiRsO9osN\n"
    "-----END X509 CRL-----\n";
// kFuzzNowMs is the fixed time of every policy fuzz run (2026-11-30, inside the files' validity).
inline constexpr int64_t kFuzzNowMs = 1'796'000'000'000;

// PolicyDir returns the temp dir, creating it with root.pem and crl.pem on first use.
inline const std::filesystem::path& PolicyDir() {
  static const std::filesystem::path dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "clawguard-fuzz-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    const std::filesystem::path d(tmpl);
    std::ofstream(d / "root.pem", std::ios::binary) << kRootPem;
    std::ofstream(d / "crl.pem", std::ios::binary) << kCrlPem;
    return d;
  }();
  static const bool cleanup = [] {
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(PolicyDir(), ec);
    });
    return true;
  }();
  (void)cleanup;
  return dir;
}

// WritePolicyFile writes |bytes| to PolicyDir()/|name| (replacing it) and returns its path.
inline std::string WritePolicyFile(const std::string& name, std::string_view bytes) {
  const auto p = PolicyDir() / name;
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) std::abort();
  return p.string();
}

}  // namespace clawguard::fuzz

#endif  // CLAWGUARD_TESTS_FUZZ_FUZZ_POLICY_FILES_H_
