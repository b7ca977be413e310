// host_app_plugins.cpp — HostApp::LoadPlugins: which packages of plugins.dir the host loads
// (see host_app.h), and the signing leaves of the loaded ones.
#include "host/app/host_app.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

#include "clawguard/json_dump.h"
#include "clawguard/semver.h"

namespace clawguard::host {
namespace {

// Candidate is a verified package that may be loaded (the highest version of its name wins).
struct Candidate {
  std::string path;
  Verdict verdict;
  SemVer version;
};

}  // namespace

Status HostApp::LoadPlugins(const HostConfig& c) {
  std::vector<std::string> packages;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(c.plugins.dir, ec)) {
    if (e.path().extension() == ".claw" && e.is_regular_file(ec))
      packages.push_back(e.path().string());
  }
  if (ec)
    return Status(Reason::kConfigInvalid, c.source + ": plugins.dir: cannot read " + c.plugins.dir);
  std::sort(packages.begin(), packages.end());

  const auto refuse = [this](std::string package, std::string reason, std::string detail,
                             const Verdict* v) {
    Audit(DumpJson({{"event", "plugin_refused"},
                    {"package", package},
                    {"reason", reason},
                    {"detail", detail}}));
    RefusedPackage r{std::move(package), std::move(reason), std::move(detail), "", "", "", ""};
    if (v != nullptr) {
      r.name = v->name;
      r.version = v->version;
      r.publisher = v->publisher;
      r.sha256 = v->sha256;
    }
    refused_.push_back(std::move(r));
  };
  std::map<std::string, Candidate> best;  // by signed name: the highest version
  for (const std::string& path : packages) {
    Result<Verdict> v = loader_->Verify(path);
    if (!v.ok()) {
      refuse(path, std::string(ReasonName(v.error().reason())), v.error().message(), nullptr);
      continue;
    }
    if (v->verdict == VerdictKind::kRefused) {
      refuse(path, std::string(ReasonName(v->reason)), v->detail, &*v);
      continue;
    }
    std::optional<SemVer> version = ParseSemVer(v->version);
    if (!version) {
      refuse(path, "manifest_invalid", "version '" + v->version + "' is not SemVer", &*v);
      continue;
    }
    Candidate cand{path, *v, *version};
    auto [it, inserted] = best.try_emplace(v->name, cand);
    if (inserted) continue;
    const bool higher = CompareSemVer(cand.version, it->second.version) > 0;
    const Candidate& loser = higher ? it->second : cand;
    const std::string winner = higher ? cand.verdict.version : it->second.verdict.version;
    refuse(loser.path, "superseded", "version " + winner + " of " + v->name + " is loaded instead",
           &loser.verdict);
    if (higher) it->second = cand;
  }
  for (auto& [name, cand] : best) {
    Result<LoadedPlugin> loaded = loader_->Load(cand.path);
    if (!loaded.ok()) {
      refuse(cand.path, std::string(ReasonName(loaded.error().reason())), loaded.error().message(),
             &cand.verdict);
      continue;
    }
    // The signing leaves, for the certificate-expiry metric and /ops (not a trust decision).
    Result<std::vector<SigningLeaf>> leaves = ReadSigningLeaves(cand.path, loaded->verdict());
    if (leaves.ok()) {
      for (const SigningLeaf& l : *leaves) leaves_.push_back(OpsLeaf{name, l.subject, l.not_after});
    } else {
      Audit(DumpJson({{"event", "signing_leaves_unreadable"},
                      {"package", cand.path},
                      {"detail", leaves.error().message()}}));
    }
    plugins_.push_back(std::move(loaded).value());
  }
  return Status();
}

}  // namespace clawguard::host
