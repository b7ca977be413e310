// worker_protocol.h — the frames between the host and a plugin's worker process (ARCHITECTURE.md
// "Plugin workers").
//
// One stream socket per worker (a socketpair: fd 3 in the worker). A frame is a 16-byte header —
// payload length (u32, little-endian), type (u16), zero (u16), delivery id (u64) — then the
// payload: the message's fields in order, integers as 4-byte little-endian, strings as a u32
// length and the bytes. Every frame one side did not expect is a protocol violation: the host
// kills a worker that sends one (its frames are the plugin's, written by code the host does not
// trust), the worker exits.
//
//   host → worker                          worker → host
//   kDeliver   id: one delivery             kReady      0: init returned 0 (abi, flags)
//   kErpReply  id: erp_call's result        kInitFailed 0: the load or init failed (reason, detail)
//   kShutdown  0: call shutdown(), exit     kErpCall    id: erp_call (method, path, body)
//                                           kRespond    id: respond (status, content type, body)
//                                           kLog        id: log (level, message)
//                                           kDone       id: handle_webhook returned (rc)
//
// A worker has at most one kErpCall outstanding per delivery (erp_call is serialised per cg_call)
// and the host answers each with one kErpReply. Sizes are bounded on both sides: a frame longer
// than the reader's limit is a violation before any of its payload is read.
#ifndef CLAWGUARD_HOST_SANDBOX_WORKER_PROTOCOL_H_
#define CLAWGUARD_HOST_SANDBOX_WORKER_PROTOCOL_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/limits.h"

namespace clawguard::sandbox {

enum class FrameType : uint16_t {
  kDeliver = 1,
  kErpReply = 2,
  kShutdown = 3,
  kReady = 16,
  kInitFailed = 17,
  kErpCall = 18,
  kRespond = 19,
  kLog = 20,
  kDone = 21,
};

inline constexpr size_t kFrameHeaderBytes = 16;
// What a worker may send in one frame: an answer body (kMaxWorkerAnswer) or an ERP request body
// (limits::kMaxErpRequestBody) with its fields.
inline constexpr uint64_t kMaxWorkerAnswer = 16 * limits::kMiB;
inline constexpr uint64_t kMaxWorkerFrame = kMaxWorkerAnswer + 64 * 1024;
// MaxWorkerPayload is the largest payload an honest worker sends in a frame of |type| (the largest
// fields its decoder accepts, with their length prefixes); the host refuses a larger one as it
// arrives, before it holds it for the delivery. 0 for a type a worker never sends.
uint64_t MaxWorkerPayload(FrameType type);
// A worker sends a delivery's later answers (a plugin calling respond() again) without their
// body: the host only counts them.
uint64_t MaxLaterRespondPayload();
// What the host may send: a delivery's body (limits::kMaxWebhookBody) or an ERP answer, with
// their fields.
inline constexpr uint64_t kMaxHostFrame = limits::kMaxWebhookBody + 64 * 1024;
inline constexpr size_t kMaxDeliveryHeaders = 8;

struct Frame {
  FrameType type = FrameType::kDone;
  uint64_t id = 0;
  std::string payload;
};

// EncodeFrame renders one frame (header + payload).
std::string EncodeFrame(FrameType type, uint64_t id, std::string_view payload);

// FrameDecoder cuts frames out of a byte stream. Feed appends bytes; Next returns the next
// complete frame, std::nullopt when more bytes are needed, and sets error() (and returns
// std::nullopt from then on) on a frame longer than |max_payload|, a non-zero reserved field, or
// a type outside |allowed|.
class FrameDecoder {
 public:
  // |max_of_type|, when given, bounds each type's payload further (MaxWorkerPayload): a header
  // announcing more is an error at once, before its payload is buffered.
  FrameDecoder(uint64_t max_payload, std::vector<FrameType> allowed,
               uint64_t (*max_of_type)(FrameType) = nullptr)
      : max_payload_(max_payload), allowed_(std::move(allowed)), max_of_type_(max_of_type) {}
  void Feed(std::string_view bytes) { buf_.append(bytes); }
  std::optional<Frame> Next();
  const std::string& error() const { return error_; }
  // buffered: bytes fed and not yet returned as frames.
  size_t buffered() const { return buf_.size() - off_; }

 private:
  uint64_t max_payload_;
  std::vector<FrameType> allowed_;
  uint64_t (*max_of_type_)(FrameType);
  std::string buf_;
  size_t off_ = 0;
  std::string error_;
};

// PayloadWriter and PayloadReader build and read a payload's fields. A reader that runs past the
// end, or finds bytes left at Done, fails (ok() false); nothing it returned may then be used.
class PayloadWriter {
 public:
  PayloadWriter& U32(uint32_t v);
  PayloadWriter& I32(int32_t v) { return U32(static_cast<uint32_t>(v)); }
  PayloadWriter& Bytes(std::string_view s);
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class PayloadReader {
 public:
  explicit PayloadReader(std::string_view payload) : in_(payload) {}
  uint32_t U32();
  int32_t I32() { return static_cast<int32_t>(U32()); }
  std::string_view Bytes(uint64_t max);
  // Done is ok() with nothing left over.
  bool Done() const { return ok_ && off_ == in_.size(); }
  bool ok() const { return ok_; }

 private:
  std::string_view in_;
  size_t off_ = 0;
  bool ok_ = true;
};

// The messages. Each Decode returns std::nullopt for a malformed payload.
struct DeliverMsg {
  std::string route, method, path, body, key;
  std::vector<std::string> names, values;  // authenticated headers only (plugin.h, cg_request)
  std::string Encode() const;
  static std::optional<DeliverMsg> Decode(std::string_view payload);
};
struct ErpReplyMsg {
  int32_t result = 0;
  std::string reply;
  std::string Encode() const;
  static std::optional<ErpReplyMsg> Decode(std::string_view payload);
};
struct ReadyMsg {
  uint32_t abi = 0, flags = 0;
  std::string Encode() const;
  static std::optional<ReadyMsg> Decode(std::string_view payload);
};
struct InitFailedMsg {
  std::string reason;  // a reason code name (load_failed, abi_mismatch)
  std::string detail;
  std::string Encode() const;
  static std::optional<InitFailedMsg> Decode(std::string_view payload);
};
struct ErpCallMsg {
  std::string method, path, body;
  std::string Encode() const;
  static std::optional<ErpCallMsg> Decode(std::string_view payload);
};
struct RespondMsg {
  int32_t status = 0;
  std::string content_type, body;
  std::string Encode() const;
  static std::optional<RespondMsg> Decode(std::string_view payload);
};
struct LogMsg {
  int32_t level = 0;
  std::string message;
  std::string Encode() const;
  static std::optional<LogMsg> Decode(std::string_view payload);
};
struct DoneMsg {
  int32_t rc = 0;
  std::string Encode() const;
  static std::optional<DoneMsg> Decode(std::string_view payload);
};

// WriteAll sends |bytes| on the blocking socket |fd| (no SIGPIPE: a dead peer is EPIPE); false
// on an error (errno set).
bool WriteAll(int fd, std::string_view bytes);

}  // namespace clawguard::sandbox

#endif  // CLAWGUARD_HOST_SANDBOX_WORKER_PROTOCOL_H_
