// verdict.cpp — Verdict rendering and LoadedPlugin ownership (see clawguard/loader.h).
#include "clawguard/loader.h"
#include "memfd_loader.h"

namespace clawguard {

std::string_view VerdictKindName(VerdictKind v) {
  switch (v) {
    case VerdictKind::kVerified: return "verified";
    case VerdictKind::kAudit: return "audit";
    case VerdictKind::kRefused: break;
  }
  return "refused";
}

nlohmann::json VerdictToJson(const Verdict& v) {
  nlohmann::json j = nlohmann::json::object();
  j["verdict"] = std::string(VerdictKindName(v.verdict));
  j["reason"] = v.reason == Reason::kOk ? nlohmann::json(nullptr)
                                        : nlohmann::json(std::string(ReasonName(v.reason)));
  j["detail"] = v.detail;
  j["package"] = v.package;
  j["sha256"] = v.sha256;
  j["name"] = v.name;
  j["version"] = v.version;
  j["publisher"] = v.publisher;
  j["signers"] = v.signers;
  j["mode"] = v.mode;
  j["ledger"] = v.ledger;
  return j;
}

LoadedPlugin::LoadedPlugin(std::unique_ptr<PluginRuntime> runtime, Manifest manifest,
                           Verdict verdict)
    : runtime_(std::move(runtime)), manifest_(std::move(manifest)), verdict_(std::move(verdict)) {}
LoadedPlugin::LoadedPlugin(LoadedPlugin&&) noexcept = default;
LoadedPlugin& LoadedPlugin::operator=(LoadedPlugin&&) noexcept = default;
LoadedPlugin::~LoadedPlugin() = default;

const cg_plugin* LoadedPlugin::plugin() const { return runtime_ ? runtime_->plugin() : nullptr; }

}  // namespace clawguard
