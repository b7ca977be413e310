// capability_pauses.cpp — the in-memory mirror of Dlq::ListPauses.
#include "host/guard/capability_pauses.h"

namespace clawguard::host {

Status CapabilityPauses::Refresh(Dlq& dlq) {
  Result<std::vector<CapabilityPause>> pauses = dlq.ListPauses();
  if (!pauses.ok()) return pauses.error();
  std::set<std::pair<std::string, std::string>, std::less<>> fresh;
  for (CapabilityPause& p : *pauses) fresh.emplace(std::move(p.plugin), std::move(p.capability));
  MutexLock lock(mu_);
  paused_.swap(fresh);
  return Status::Ok();
}

bool CapabilityPauses::IsPaused(std::string_view plugin, std::string_view capability) const {
  MutexLock lock(mu_);
  if (paused_.empty()) return false;
  return paused_.count(std::pair<std::string, std::string>(plugin, capability)) != 0;
}

void CapabilityPauses::MarkPaused(std::string_view plugin, std::string_view capability) {
  MutexLock lock(mu_);
  paused_.emplace(std::string(plugin), std::string(capability));
}

std::vector<std::pair<std::string, std::string>> CapabilityPauses::Snapshot() const {
  MutexLock lock(mu_);
  return {paused_.begin(), paused_.end()};
}

size_t CapabilityPauses::size() const {
  MutexLock lock(mu_);
  return paused_.size();
}

}  // namespace clawguard::host
