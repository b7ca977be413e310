// fuzz-requires: clawguard_loader
// allowlist_fuzz.cpp — Allowlist::Load (allowlist.yaml, schema clawguard/allowlist/v1) on
// arbitrary bytes. Input: the allowlist text; when it holds a line "#sig", what follows that line
// is written as allowlist.yaml.sig and the trust policy then requires a signed allowlist (pinned
// signer: the fuzz root), so the signature-envelope path runs too. Invariants: every refusal is
// allowlist_invalid; an accepted allowlist has version ≥ 1 and at most kMaxAllowlistEntries
// entries, and a lookup answers ok or not_allowlisted.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "clawguard/clock.h"
#include "clawguard/limits.h"
#include "fuzz/fuzz_policy_files.h"
#include "loader/allowlist.h"

namespace {

using clawguard::TrustPolicy;

std::unique_ptr<TrustPolicy> LoadPolicy(const std::string& name, bool signed_allowlist,
                                        const clawguard::Clock& clock) {
  std::string text =
      "schema: clawguard/trust/v1\nmode: enforce\nroots:\n  - file: root.pem\n    sha256: " +
      std::string(clawguard::fuzz::kRootSha256) +
      "\nrequire_eku: codeSigning\npublishers:\n  fuzz: [\"fz-*\"]\nthreshold: 1\n";
  if (signed_allowlist) {
    text += "allowlist_signer:\n  file: root.pem\n  sha256: " +
            std::string(clawguard::fuzz::kRootSha256) + "\n";
  }
  auto p = TrustPolicy::Load(clawguard::fuzz::WritePolicyFile(name, text), clock);
  if (!p.ok()) std::abort();  // harness bug
  return std::move(p).value();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const clawguard::FixedClock clock(clawguard::fuzz::kFuzzNowMs);
  static const auto plain = LoadPolicy("trust-plain.yaml", false, clock);
  static const auto with_signer = LoadPolicy("trust-signed.yaml", true, clock);

  std::string_view in(reinterpret_cast<const char*>(data), size);
  const TrustPolicy* policy = plain.get();
  const size_t sep = in.find("\n#sig\n");
  std::string_view sig;
  if (sep != std::string_view::npos) {
    sig = in.substr(sep + 6);
    in = in.substr(0, sep + 1);
    policy = with_signer.get();
  }
  const std::string path = clawguard::fuzz::WritePolicyFile("allowlist.yaml", in);
  clawguard::fuzz::WritePolicyFile("allowlist.yaml.sig", sig);
  auto list = clawguard::Allowlist::Load(path, *policy, /*ledger=*/nullptr, clock);
  if (!list.ok()) {
    if (list.error().reason() != clawguard::Reason::kAllowlistInvalid) std::abort();
    return 0;
  }
  if ((*list)->version() < 1 || (*list)->size() > clawguard::limits::kMaxAllowlistEntries)
    std::abort();
  clawguard::Sha256Digest zero{};
  const clawguard::Status found = (*list)->Lookup("fz-plugin", "1.0.0", zero);
  if (!found.ok() && found.reason() != clawguard::Reason::kNotAllowlisted) std::abort();
  return 0;
}
