// main.cpp — creates a Loader with paths that do not exist and prints the refusal's reason.
#include <iostream>

#include "clawguard/loader.h"

int main() {
  clawguard::LoaderOptions options;
  options.trust_policy_path = "/nonexistent/trust.yaml";
  options.allowlist_path = "/nonexistent/allowlist.yaml";
  auto loader = clawguard::Loader::Create(std::move(options));
  if (loader.ok()) {
    std::cerr << "unexpected: a loader without a trust policy\n";
    return 1;
  }
  std::cout << clawguard::ReasonName(loader.error().reason()) << ": " << loader.error().message()
            << "\n";
  return 0;
}
