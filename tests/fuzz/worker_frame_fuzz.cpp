// fuzz-requires: clawguard_host_sandbox
// worker_frame_fuzz.cpp — what a plugin worker writes to its channel is the plugin's: the host's
// frame decoder and every message decoder must take any bytes without crashing, and what decodes
// must encode back to the same payload.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "host/sandbox/worker_protocol.h"

using namespace clawguard::sandbox;  // NOLINT(google-build-using-namespace): a fuzz target

namespace {

template <typename Msg>
void RoundTrip(const std::string& payload) {
  std::optional<Msg> m = Msg::Decode(payload);
  if (m && m->Encode() != payload) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  FrameDecoder dec(1 << 20, {FrameType::kReady, FrameType::kInitFailed, FrameType::kErpCall,
                             FrameType::kRespond, FrameType::kLog, FrameType::kDone});
  // Fed in two pieces at a split the input chooses, to cover partial headers and payloads.
  const size_t split = size == 0 ? 0 : data[0] % (size + 1);
  dec.Feed(std::string_view(bytes).substr(0, split));
  while (auto f = dec.Next()) RoundTrip<DoneMsg>(f->payload);
  dec.Feed(std::string_view(bytes).substr(split));
  while (auto f = dec.Next()) {
    switch (f->type) {
      case FrameType::kReady: RoundTrip<ReadyMsg>(f->payload); break;
      case FrameType::kInitFailed: RoundTrip<InitFailedMsg>(f->payload); break;
      case FrameType::kErpCall: RoundTrip<ErpCallMsg>(f->payload); break;
      case FrameType::kRespond: RoundTrip<RespondMsg>(f->payload); break;
      case FrameType::kLog: RoundTrip<LogMsg>(f->payload); break;
      case FrameType::kDone: RoundTrip<DoneMsg>(f->payload); break;
      default: std::abort();
    }
  }
  RoundTrip<DeliverMsg>(bytes);
  RoundTrip<ErpReplyMsg>(bytes);
  return 0;
}
