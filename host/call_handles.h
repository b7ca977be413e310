// call_handles.h — CallHandles: the cg_call* a plugin is given is a handle, not an address
// (ARCHITECTURE.md "Plugin ABI": a cg_call ends with its delivery).
//
// A handle is a counter tagged into a non-canonical x86-64 address — a plugin that dereferences it
// faults instead of reading host memory — never reused (2^48 deliveries), and looked up by every
// host API call (erp_call, respond, log). The dispatcher retires it when the plugin returns from
// handle_webhook: a call made with it afterwards, from a thread the plugin kept, finds nothing and
// touches nothing — no cg_call that may already be freed. The table holds each live cg_call
// (shared), so a call that found it keeps it alive while it runs. Sharded by the counter;
// thread-safe.
#ifndef CLAWGUARD_HOST_CALL_HANDLES_H_
#define CLAWGUARD_HOST_CALL_HANDLES_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "clawguard/plugin.h"

namespace clawguard::host {

class CallHandles {
 public:
  // Global is the process's table; never destroyed (a thread a plugin keeps may call the host API
  // while the process exits).
  static CallHandles& Global();

  // Add registers |call| and returns its handle.
  cg_call* Add(std::shared_ptr<cg_call> call);
  // Find returns the live cg_call |handle| names, or nullptr (retired, never issued, or not a
  // handle at all — any pointer value is safe to pass).
  std::shared_ptr<cg_call> Find(const cg_call* handle);
  // Retire forgets |handle| (idempotent).
  void Retire(const cg_call* handle);

 private:
  // Bits 63..48 neither all zero nor all one: not a canonical x86-64 (or AArch64 user) address.
  static constexpr uint64_t kTag = 0xC6A1'0000'0000'0000ull;
  static constexpr uint64_t kCounterMask = 0x0000'FFFF'FFFF'FFFFull;
  static constexpr size_t kShards = 16;
  struct Shard {
    std::mutex mu;
    std::unordered_map<uint64_t, std::shared_ptr<cg_call>> live;  // guarded by mu
  };
  std::array<Shard, kShards> shards_;
  std::atomic<uint64_t> next_{1};
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_CALL_HANDLES_H_
