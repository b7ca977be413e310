// load_bench.cpp — in-process Loader::Load throughput: one Loader (trust policy + allowlist, no
// ledger, no audit log), N Load calls on one package, each LoadedPlugin unloaded (it goes out of
// scope) before the next. Prints one JSON object with MB/s of package bytes (10^6 bytes/s).
//
//   load_bench --trust T --allowlist A --package PKG [--n 5]
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "clawguard/loader.h"

namespace {

int Fail(const clawguard::Status& s) {
  std::cerr << "load_bench: " << s.ToString() << "\n";
  return clawguard::ExitCodeFor(s.reason());
}

}  // namespace

int main(int argc, char** argv) {
  using namespace clawguard;
  std::string trust, allowlist, package;
  long n = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--trust")
      trust = value;
    else if (flag == "--allowlist")
      allowlist = value;
    else if (flag == "--package")
      package = value;
    else if (flag == "--n")
      n = std::strtol(value.c_str(), nullptr, 10);
    else
      return Fail(Status(Reason::kUsage, "unknown flag " + flag));
  }
  if (trust.empty() || allowlist.empty() || package.empty() || n <= 0) {
    return Fail(
        Status(Reason::kUsage, "usage: load_bench --trust T --allowlist A --package PKG [--n N]"));
  }
  struct stat st {};
  if (::stat(package.c_str(), &st) != 0)
    return Fail(Status(Reason::kUsage, "cannot stat " + package));
  const double bytes = static_cast<double>(st.st_size);

  LoaderOptions opts;
  opts.trust_policy_path = trust;
  opts.allowlist_path = allowlist;
  auto loader = Loader::Create(std::move(opts));
  if (!loader.ok()) return Fail(loader.error());

  double best = 0, total = 0;
  for (long i = 0; i < n; ++i) {
    const auto start = std::chrono::steady_clock::now();
    {
      auto plugin = (*loader)->Load(package);
      if (!plugin.ok()) return Fail(plugin.error());
      if (plugin->plugin() == nullptr) return Fail(Status(Reason::kInternal, "no plugin table"));
    }  // unloaded here
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    total += s;
    if (best == 0 || s < best) best = s;
  }
  nlohmann::json out = {{"package_bytes", st.st_size},
                        {"n", n},
                        {"mean_seconds", total / static_cast<double>(n)},
                        {"mb_per_second", bytes * static_cast<double>(n) / total / 1e6},
                        {"best_mb_per_second", bytes / best / 1e6}};
  std::cout << out.dump() << "\n";
  return 0;
}
