// cmd_pack.cpp — `clawguard pack --manifest M [--root DIR] --out DIR [--json]`: writes the
// deterministic package NAME-VERSION.claw (signer/pack.h) and prints its path and sha256.
#include <iostream>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "signer/pack.h"

namespace clawguard::cli {
namespace {

struct PackOptions {
  std::string manifest;
  std::string root;
  std::string out;
  bool json = false;
};

int RunPack(const PackOptions& o) {
  const std::optional<std::string> root =
      o.root.empty() ? std::nullopt : std::optional<std::string>(o.root);
  auto packed = signer::PackPlugin(o.manifest, root, o.out);
  if (!packed) return ReportError("pack", packed.error(), o.json);
  if (o.json) {
    const nlohmann::json j = {{"package", packed->package_path},
                              {"sha256", packed->sha256_hex},
                              {"name", packed->manifest.name},
                              {"version", packed->manifest.version}};
    std::cout << j.dump() << "\n";
  } else {
    std::cout << "packed " << packed->package_path << "\n"
              << "sha256 " << packed->sha256_hex << "\n";
  }
  return 0;
}

}  // namespace

void RegisterPack(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<PackOptions>();
  auto* cmd =
      app.add_subcommand("pack", "write the deterministic plugin package NAME-VERSION.claw");
  cmd->add_option("--manifest", opts->manifest, "manifest.yaml listing the files to pack")
      ->required();
  cmd->add_option("--root", opts->root,
                  "folder the listed paths are read from (default: the manifest's folder)");
  cmd->add_option("--out", opts->out, "folder to write NAME-VERSION.claw into (created if missing)")
      ->required();
  cmd->add_flag("--json", opts->json, "print one JSON object {package, sha256, name, version}");
  cmd->callback([&ctx, opts] { ctx.exit_code = RunPack(*opts); });
}

}  // namespace clawguard::cli
