// fuzz-requires: clawguard_loader
// trust_policy_fuzz.cpp — TrustPolicy::Load (trust.yaml, schema clawguard/trust/v1) on arbitrary
// bytes, written beside a pinned root (root.pem) and a current CRL (crl.pem) so that valid
// policies reach every section (pins, CRLs, publishers, limits, elf). Invariants: every refusal is
// config_invalid; an accepted policy has at least one root, a threshold ≥ 1 and non-zero limits.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "clawguard/clock.h"
#include "fuzz/fuzz_policy_files.h"
#include "loader/trust_policy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const clawguard::FixedClock clock(clawguard::fuzz::kFuzzNowMs);
  const std::string path = clawguard::fuzz::WritePolicyFile(
      "trust.yaml", std::string_view(reinterpret_cast<const char*>(data), size));
  auto policy = clawguard::TrustPolicy::Load(path, clock);
  if (!policy.ok()) {
    if (policy.error().reason() != clawguard::Reason::kConfigInvalid) std::abort();
    return 0;
  }
  const auto& p = **policy;
  if (p.roots().empty() || p.threshold() < 1) std::abort();
  if (p.limits().max_package == 0 || p.limits().max_unpacked == 0 || p.limits().max_ratio == 0 ||
      p.limits().max_entries == 0) {
    std::abort();
  }
  (void)p.PublisherMaySign("fuzz", "fz-plugin");
  return 0;
}
