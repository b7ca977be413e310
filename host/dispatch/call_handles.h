// call_handles.h — CallHandles: the cg_call* a plugin is given is a handle, not an address
// (ARCHITECTURE.md "Plugin ABI": a cg_call ends with its delivery).
//
// A handle is 62 bits from the operating system's CSPRNG (OpenSSL RAND_bytes) under a tag that
// makes it a non-canonical address with 4- and 5-level paging alike (bit 63 set, bit 62 clear) —
// a plugin that dereferences it faults instead of reading host memory. One plugin cannot guess
// the handle of another delivery (another plugin's, or its own earlier one) to act through it:
// with a few thousand live handles, a guess hits one with probability about 2^-50. Every host API
// call (erp_call, respond, log) looks its handle up; the dispatcher retires it when the plugin
// returns from handle_webhook, so a call made with it afterwards, from a thread the plugin kept,
// finds nothing and touches nothing — no cg_call that may already be freed. The table holds each
// live cg_call (shared), so a call that found it keeps it alive while it runs. Sharded by the
// handle's low bits; thread-safe.
//
// What this does not stop: code in the host's address space can read the table itself (or any
// host memory). Handles keep a plugin's API calls to its own deliveries; isolating a plugin's
// memory from the host's is the sandbox's job (ARCHITECTURE.md "Plugin ABI", THREAT_MODEL.md).
#ifndef CLAWGUARD_HOST_DISPATCH_CALL_HANDLES_H_
#define CLAWGUARD_HOST_DISPATCH_CALL_HANDLES_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "clawguard/plugin.h"
#include "core/mutex.h"

namespace clawguard::host {

class CallHandles {
 public:
  // Global is the process's table; never destroyed (a thread a plugin keeps may call the host API
  // while the process exits).
  static CallHandles& Global();

  // Add registers |call| and returns its handle; nullptr if the CSPRNG failed (the delivery is
  // then refused: a handle is never drawn from a weaker source).
  cg_call* Add(const std::shared_ptr<cg_call>& call);
  // Find returns the live cg_call |handle| names, or nullptr (retired, never issued, or not a
  // handle at all — any pointer value is safe to pass).
  std::shared_ptr<cg_call> Find(const cg_call* handle);
  // Retire forgets |handle| (idempotent).
  void Retire(const cg_call* handle);

 private:
  // Bit 63 set and bit 62 clear: bits 63..47 (4-level) and 63..56 (5-level paging) are not all
  // equal, so no handle is a canonical x86-64 address; nor an AArch64 user address (top byte 0).
  static constexpr uint64_t kTagMask = 0xC000'0000'0000'0000ull;
  static constexpr uint64_t kTag = 0x8000'0000'0000'0000ull;
  static constexpr size_t kShards = 16;
  struct Shard {
    Mutex mu;
    std::unordered_map<uint64_t, std::shared_ptr<cg_call>> live CLAWGUARD_GUARDED_BY(mu);
  };
  std::array<Shard, kShards> shards_;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_DISPATCH_CALL_HANDLES_H_
