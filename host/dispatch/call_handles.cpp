// call_handles.cpp — see call_handles.h.
#include "host/dispatch/call_handles.h"

#include <openssl/rand.h>

namespace clawguard::host {
namespace {

constexpr int kMaxDraws =
    8;  // a collision among live handles is a 2^-50 event; 8 in a row: a broken RNG

}  // namespace

CallHandles& CallHandles::Global() {
  static auto* handles = new CallHandles;
  return *handles;
}

cg_call* CallHandles::Add(const std::shared_ptr<cg_call>& call) {
  for (int draw = 0; draw < kMaxDraws; ++draw) {
    uint64_t bits = 0;
    if (RAND_bytes(reinterpret_cast<unsigned char*>(&bits), sizeof bits) != 1) return nullptr;
    const uint64_t value = kTag | (bits & ~kTagMask);
    Shard& shard = shards_[value % kShards];
    MutexLock lock(shard.mu);
    if (shard.live.emplace(value, call).second) {
      // The handle is an opaque tagged number the plugin hands back; it is never dereferenced.
      // NOLINTNEXTLINE(performance-no-int-to-ptr): an opaque handle, never dereferenced
      return reinterpret_cast<cg_call*>(static_cast<uintptr_t>(value));
    }
  }
  return nullptr;
}

std::shared_ptr<cg_call> CallHandles::Find(const cg_call* handle) {
  const auto value = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
  if ((value & kTagMask) != kTag) return nullptr;
  Shard& shard = shards_[value % kShards];
  MutexLock lock(shard.mu);
  const auto it = shard.live.find(value);
  return it == shard.live.end() ? nullptr : it->second;
}

void CallHandles::Retire(const cg_call* handle) {
  const auto value = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
  if ((value & kTagMask) != kTag) return;
  std::shared_ptr<cg_call>
      last;  // freed after the lock is released (declared first: destroyed last)
  Shard& shard = shards_[value % kShards];
  MutexLock lock(shard.mu);
  if (const auto it = shard.live.find(value); it != shard.live.end()) {
    last = std::move(it->second);
    shard.live.erase(it);
  }
}

}  // namespace clawguard::host
