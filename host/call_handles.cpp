// call_handles.cpp — see call_handles.h.
#include "host/call_handles.h"

namespace clawguard::host {

CallHandles& CallHandles::Global() {
  static auto* handles = new CallHandles;
  return *handles;
}

cg_call* CallHandles::Add(std::shared_ptr<cg_call> call) {
  const uint64_t n = next_.fetch_add(1, std::memory_order_relaxed) & kCounterMask;
  Shard& shard = shards_[n % kShards];
  auto* handle = reinterpret_cast<cg_call*>(static_cast<uintptr_t>(kTag | n));  // NOLINT(performance-no-int-to-ptr)
  std::lock_guard lock(shard.mu);
  shard.live.emplace(n, std::move(call));
  return handle;
}

std::shared_ptr<cg_call> CallHandles::Find(const cg_call* handle) {
  const auto value = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
  if ((value & ~kCounterMask) != kTag) return nullptr;
  const uint64_t n = value & kCounterMask;
  Shard& shard = shards_[n % kShards];
  std::lock_guard lock(shard.mu);
  const auto it = shard.live.find(n);
  return it == shard.live.end() ? nullptr : it->second;
}

void CallHandles::Retire(const cg_call* handle) {
  const auto value = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
  if ((value & ~kCounterMask) != kTag) return;
  const uint64_t n = value & kCounterMask;
  std::shared_ptr<cg_call> last;  // freed after the lock is released (declared first: destroyed last)
  Shard& shard = shards_[n % kShards];
  std::lock_guard lock(shard.mu);
  if (const auto it = shard.live.find(n); it != shard.live.end()) {
    last = std::move(it->second);
    shard.live.erase(it);
  }
}

}  // namespace clawguard::host
