// host_app_plugins.cpp — HostApp::LoadPlugins: which packages of plugins.dir the host loads
// (see host_app.h), and the signing leaves of the loaded ones.
#include "host/app/host_app.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

#include <unistd.h>

#include "clawguard/json_dump.h"
#include "clawguard/semver.h"
#include "host/app/audit_sink.h"
#include "host/sandbox/isolation_probe.h"
#include "loader/memfd_loader.h"

namespace clawguard::host {
namespace {

// Candidate is a verified package that may be loaded (the highest version of its name wins).
struct Candidate {
  std::string path;
  Verdict verdict;
  SemVer version;
};

// WorkerRuntime is a plugin loaded in a worker process (plugins.isolation: sandbox).
class WorkerRuntime final : public PluginRuntime {
 public:
  explicit WorkerRuntime(std::shared_ptr<PluginWorker> worker) : worker_(std::move(worker)) {}
  const cg_plugin* plugin() const override { return nullptr; }
  const std::shared_ptr<PluginWorker>& worker() const { return worker_; }

 private:
  std::shared_ptr<PluginWorker> worker_;
};

// WorkerExecutable finds clawguard-worker: plugins.worker, else beside this executable, else
// where the package installs it.
Result<std::string> WorkerExecutable(const HostConfig& c) {
  if (!c.plugins.worker.empty()) {
    if (::access(c.plugins.worker.c_str(), X_OK) != 0) {
      return Status(Reason::kConfigInvalid,
                    c.source + ": plugins.worker: " + c.plugins.worker + " is not executable");
    }
    return c.plugins.worker;
  }
  std::vector<std::string> tried;
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) tried.push_back((self.parent_path() / "clawguard-worker").string());
  tried.emplace_back(CLAWGUARD_WORKER_INSTALL_PATH);
  for (const std::string& t : tried) {
    if (::access(t.c_str(), X_OK) == 0) return t;
  }
  std::string list;
  for (const std::string& t : tried) list += (list.empty() ? "" : ", ") + t;
  return Status(Reason::kConfigInvalid,
                c.source +
                    ": plugins.isolation is sandbox but no clawguard-worker was found (looked at " +
                    list + "); set plugins.worker");
}

}  // namespace

std::shared_ptr<PluginWorker> WorkerOf(const LoadedPlugin& p) {
  const auto* w = dynamic_cast<const WorkerRuntime*>(p.runtime());
  return w != nullptr ? w->worker() : nullptr;
}

Result<sandbox::IsolationSupport> HostApp::SandboxSupport(const HostConfig& c) {
  // Fail closed: a kernel without what the worker's confinement needs refuses to start (the
  // operator may choose plugins.isolation: none, which `clawguard audit` grades high).
  CLAWGUARD_ASSIGN_OR_RETURN(sandbox::IsolationSupport support, sandbox::ProbeIsolation());
  if (Status s = support.CheckSufficient(/*require_namespaces=*/false); !s.ok()) {
    return Status(Reason::kConfigInvalid,
                  c.source + ": plugins.isolation is sandbox, but " + s.message() +
                      " (set plugins.isolation: none to run plugins inside the host, unconfined)");
  }
  return support;
}

Result<std::shared_ptr<sandbox::WorkerCgroups>> HostApp::WorkerMemoryCgroups(
    const HostConfig& c, std::string* unavailable) {
  using Mode = PluginsConfig::MemoryCgroup;
  if (c.plugins.memory_cgroup == Mode::kNone) {
    *unavailable = "plugins.memory_cgroup is none";
    return std::shared_ptr<sandbox::WorkerCgroups>();
  }
  auto cgroups = sandbox::WorkerCgroups::Open();
  if (cgroups.ok()) return std::move(cgroups).value();
  if (c.plugins.memory_cgroup == Mode::kRequired) {
    return Status(Reason::kConfigInvalid,
                  c.source + ": plugins.memory_cgroup is required, but " +
                      cgroups.error().message() +
                      " (docs/OPERATIONS.md: Delegate=memory; or memory_cgroup: auto)");
  }
  *unavailable = cgroups.error().message();
  return std::shared_ptr<sandbox::WorkerCgroups>();
}

Status HostApp::CheckStartable(const HostConfig& c) {
  if (c.plugins.sandbox) {
    CLAWGUARD_RETURN_IF_ERROR(SandboxSupport(c).status());
    CLAWGUARD_RETURN_IF_ERROR(WorkerExecutable(c).status());
    std::string unavailable;
    CLAWGUARD_RETURN_IF_ERROR(WorkerMemoryCgroups(c, &unavailable).status());
  }
  return ErpClient::Create(ErpOptions(c)).status();
}

Status HostApp::PrepareSandbox(const HostConfig& c) {
  CLAWGUARD_ASSIGN_OR_RETURN(sandbox::IsolationSupport support, SandboxSupport(c));
  std::string unavailable;
  CLAWGUARD_ASSIGN_OR_RETURN(worker_options_.cgroups, WorkerMemoryCgroups(c, &unavailable));
  Audit(DumpJson(
      {{"event", "plugin_sandbox"},
       {"landlock_abi", support.landlock_abi},
       {"namespaces", support.all_namespaces},
       // The workers' kernel memory (page tables) is bounded only with a cgroup each.
       {"memory_cgroup", worker_options_.cgroups != nullptr ? worker_options_.cgroups->Describe()
                                                            : "none: " + unavailable},
       {"detail", support.Describe()}}));
  CLAWGUARD_ASSIGN_OR_RETURN(worker_options_.executable, WorkerExecutable(c));
  worker_options_.memory_limit = c.plugins.memory_limit;
  worker_options_.max_threads =
      1 + static_cast<uint64_t>(c.listen.handlers) + static_cast<uint64_t>(c.plugins.max_threads);
  worker_options_.max_faults = c.plugins.max_faults;
  worker_options_.fault_window = c.plugins.fault_window;
  worker_options_.audit = [audit = audit_](const std::string& line) { audit->Write(line); };
  // Not |this|: a worker restarting for a delivery abandoned at shutdown may report a fault after
  // the HostApp is gone (the metrics it reports to are then kept with that delivery).
  worker_options_.on_fault = [slot = fault_metrics_](const WorkerFault& f) {
    if (HostMetrics* m = slot->load()) m->RecordPluginFault(f.plugin, f.cause);
  };
  return Status::Ok();
}

Result<std::unique_ptr<PluginRuntime>> HostApp::OpenInWorker(const CheckedLibrary& library) {
  CLAWGUARD_ASSIGN_OR_RETURN(UniqueFd memfd, CreateSealedMemfd(library.bytes, library.memfd_name));
  CLAWGUARD_ASSIGN_OR_RETURN(
      std::shared_ptr<PluginWorker> worker,
      PluginWorker::Start(worker_options_, library.manifest->name, library.manifest->version,
                          library.manifest->abi, std::move(memfd)));
  return std::unique_ptr<PluginRuntime>(new WorkerRuntime(std::move(worker)));
}

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
