// hsm_sign_bench.cpp — signatures per second through HsmSigner (one login, one session, N
// single C_Sign calls over distinct DSSE PAE messages). Prints one JSON object.
//
//   hsm_sign_bench --module M --key URI --pin-source env:VAR [--n 200]
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "clawguard/bundle.h"
#include "signer/hsm_signer.h"
#include "signer/pin_source.h"

namespace {

int Fail(const clawguard::Status& s) {
  std::cerr << "hsm_sign_bench: " << s.ToString() << "\n";
  return clawguard::ExitCodeFor(s.reason());
}

}  // namespace

int main(int argc, char** argv) {
  using namespace clawguard;
  std::string module, key, pin_source;
  long n = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--module")
      module = value;
    else if (flag == "--key")
      key = value;
    else if (flag == "--pin-source")
      pin_source = value;
    else if (flag == "--n")
      n = std::strtol(value.c_str(), nullptr, 10);
    else
      return Fail(Status(Reason::kUsage, "unknown flag " + flag));
  }
  if (key.empty() || pin_source.empty() || n <= 0) {
    return Fail(Status(Reason::kUsage,
                       "usage: hsm_sign_bench --module M --key URI --pin-source SRC [--n N]"));
  }
  auto module_path = signer::ResolveModulePath(module);
  if (!module_path.ok()) return Fail(module_path.error());
  auto pin = signer::ReadPin(pin_source);
  if (!pin.ok()) return Fail(pin.error());
  auto s = signer::HsmSigner::Create(*module_path, key, std::move(pin).value(),
                                     /*allow_imported_key=*/false);
  if (!s.ok()) return Fail(s.error());

  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) {
    const std::string message = Pae(kInTotoPayloadType, "{\"bench\":" + std::to_string(i) + "}");
    auto sig = (*s)->Sign(message);
    if (!sig.ok()) return Fail(sig.error());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json out = {
      {"signatures", n},
      {"seconds", seconds},
      {"signatures_per_second", static_cast<double>(n) / seconds},
      {"algorithm", (*s)->algorithm() == SigAlgorithm::kEd25519 ? "ed25519" : "ecdsa-p256"}};
  std::cout << out.dump() << "\n";
  return 0;
}
