// worker_protocol.cpp — see worker_protocol.h.
#include "host/sandbox/worker_protocol.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace clawguard::sandbox {
namespace {

// Field limits: what either side may put in one field. A worker's strings are cut by the worker
// before they are sent (plugin.h's limits); the decoder refuses longer ones.
constexpr uint64_t kMaxName = 4096;       // route, method, content type, header names/values, key
constexpr uint64_t kMaxPath = 64 * 1024;  // a request target or an ERP path
constexpr uint64_t kMaxLog = 4096;

void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

}  // namespace

std::string EncodeFrame(FrameType type, uint64_t id, std::string_view payload) {
  std::string out;
  out.reserve(kFrameHeaderBytes + payload.size());
  PutU32(out, static_cast<uint32_t>(payload.size()));
  PutU32(out, static_cast<uint32_t>(type));  // type (low 16 bits) and the zero field
  PutU32(out, static_cast<uint32_t>(id & 0xffffffffu));
  PutU32(out, static_cast<uint32_t>(id >> 32));
  out.append(payload);
  return out;
}

std::optional<Frame> FrameDecoder::Next() {
  if (!error_.empty()) return std::nullopt;
  if (buf_.size() - off_ < kFrameHeaderBytes) return std::nullopt;
  const char* h = buf_.data() + off_;
  const uint64_t len = GetU32(h);
  const uint32_t type_word = GetU32(h + 4);
  const uint64_t id = GetU32(h + 8) | (static_cast<uint64_t>(GetU32(h + 12)) << 32);
  if (len > max_payload_) {
    error_ = "a frame of " + std::to_string(len) + " bytes (at most " +
             std::to_string(max_payload_) + " expected)";
    return std::nullopt;
  }
  if ((type_word >> 16) != 0) {
    error_ = "a frame header with a non-zero reserved field";
    return std::nullopt;
  }
  const auto type = static_cast<FrameType>(type_word & 0xffff);
  if (std::find(allowed_.begin(), allowed_.end(), type) == allowed_.end()) {
    error_ = "a frame of type " + std::to_string(type_word) + ", which this side never expects";
    return std::nullopt;
  }
  if (max_of_type_ != nullptr && len > max_of_type_(type)) {
    error_ = "a frame of type " + std::to_string(type_word) + " of " + std::to_string(len) +
             " bytes (at most " + std::to_string(max_of_type_(type)) + " expected)";
    return std::nullopt;
  }
  if (buf_.size() - off_ - kFrameHeaderBytes < len) return std::nullopt;
  Frame f;
  f.type = type;
  f.id = id;
  f.payload.assign(h + kFrameHeaderBytes, len);
  off_ += kFrameHeaderBytes + len;
  if (off_ == buf_.size()) {
    buf_.clear();
    off_ = 0;
  } else if (off_ > (1u << 20) && off_ * 2 > buf_.size()) {
    buf_.erase(0, off_);
    off_ = 0;
  }
  return f;
}

PayloadWriter& PayloadWriter::U32(uint32_t v) {
  PutU32(out_, v);
  return *this;
}

PayloadWriter& PayloadWriter::Bytes(std::string_view s) {
  PutU32(out_, static_cast<uint32_t>(s.size()));
  out_.append(s);
  return *this;
}

uint32_t PayloadReader::U32() {
  if (!ok_ || in_.size() - off_ < 4) {
    ok_ = false;
    return 0;
  }
  const uint32_t v = GetU32(in_.data() + off_);
  off_ += 4;
  return v;
}

std::string_view PayloadReader::Bytes(uint64_t max) {
  const uint64_t len = U32();
  if (!ok_ || len > max || in_.size() - off_ < len) {
    ok_ = false;
    return {};
  }
  std::string_view s = in_.substr(off_, len);
  off_ += len;
  return s;
}

std::string DeliverMsg::Encode() const {
  PayloadWriter w;
  w.Bytes(route).Bytes(method).Bytes(path).Bytes(body).Bytes(key);
  w.U32(static_cast<uint32_t>(names.size()));
  for (size_t i = 0; i < names.size(); ++i) w.Bytes(names[i]).Bytes(values[i]);
  return w.Take();
}

std::optional<DeliverMsg> DeliverMsg::Decode(std::string_view payload) {
  PayloadReader r(payload);
  DeliverMsg m;
  m.route = r.Bytes(kMaxName);
  m.method = r.Bytes(kMaxName);
  m.path = r.Bytes(kMaxPath);
  m.body = r.Bytes(limits::kMaxWebhookBody);
  m.key = r.Bytes(kMaxName);
  const uint32_t n = r.U32();
  if (!r.ok() || n > kMaxDeliveryHeaders) return std::nullopt;
  for (uint32_t i = 0; i < n; ++i) {
    m.names.emplace_back(r.Bytes(kMaxName));
    m.values.emplace_back(r.Bytes(kMaxName));
  }
  if (!r.Done()) return std::nullopt;
  return m;
}

std::string ErpReplyMsg::Encode() const { return PayloadWriter().I32(result).Bytes(reply).Take(); }

std::optional<ErpReplyMsg> ErpReplyMsg::Decode(std::string_view payload) {
  PayloadReader r(payload);
  ErpReplyMsg m;
  m.result = r.I32();
  m.reply = r.Bytes(limits::kMaxErpResponseBody);
  if (!r.Done()) return std::nullopt;
  return m;
}

std::string ReadyMsg::Encode() const { return PayloadWriter().U32(abi).U32(flags).Take(); }

std::optional<ReadyMsg> ReadyMsg::Decode(std::string_view payload) {
  PayloadReader r(payload);
  ReadyMsg m;
  m.abi = r.U32();
  m.flags = r.U32();
  if (!r.Done()) return std::nullopt;
  return m;
}

std::string InitFailedMsg::Encode() const {
  return PayloadWriter().Bytes(reason).Bytes(detail).Take();
}

std::optional<InitFailedMsg> InitFailedMsg::Decode(std::string_view payload) {
  PayloadReader r(payload);
  InitFailedMsg m;
  m.reason = r.Bytes(64);
  m.detail = r.Bytes(kMaxLog);
  if (!r.Done()) return std::nullopt;
  return m;
}

std::string ErpCallMsg::Encode() const {
  return PayloadWriter().Bytes(method).Bytes(path).Bytes(body).Take();
}

std::optional<ErpCallMsg> ErpCallMsg::Decode(std::string_view payload) {
  PayloadReader r(payload);
  ErpCallMsg m;
  m.method = r.Bytes(kMaxName);
  m.path = r.Bytes(kMaxPath);
  m.body = r.Bytes(limits::kMaxErpRequestBody);
  if (!r.Done()) return std::nullopt;
  return m;
}

std::string RespondMsg::Encode() const {
  return PayloadWriter().I32(status).Bytes(content_type).Bytes(body).Take();
}

std::optional<RespondMsg> RespondMsg::Decode(std::string_view payload) {
  PayloadReader r(payload);
  RespondMsg m;
  m.status = r.I32();
  m.content_type = r.Bytes(kMaxName);
  m.body = r.Bytes(kMaxWorkerAnswer);
  if (!r.Done()) return std::nullopt;
  return m;
}

uint64_t MaxWorkerPayload(FrameType type) {
  switch (type) {
    case FrameType::kReady: return 4 + 4;
    case FrameType::kInitFailed: return 4 + 64 + 4 + kMaxLog;
    case FrameType::kErpCall: return 4 + kMaxName + 4 + kMaxPath + 4 + limits::kMaxErpRequestBody;
    case FrameType::kRespond: return 4 + 4 + kMaxName + 4 + kMaxWorkerAnswer;
    case FrameType::kLog: return 4 + 4 + kMaxLog;
    case FrameType::kDone: return 4;
    default: return 0;
  }
}

uint64_t MaxLaterRespondPayload() { return 4 + 4 + kMaxName + 4; }

std::string LogMsg::Encode() const { return PayloadWriter().I32(level).Bytes(message).Take(); }

std::optional<LogMsg> LogMsg::Decode(std::string_view payload) {
  PayloadReader r(payload);
  LogMsg m;
  m.level = r.I32();
  m.message = r.Bytes(kMaxLog);
  if (!r.Done()) return std::nullopt;
  return m;
}

std::string DoneMsg::Encode() const { return PayloadWriter().I32(rc).Take(); }

std::optional<DoneMsg> DoneMsg::Decode(std::string_view payload) {
  PayloadReader r(payload);
  DoneMsg m;
  m.rc = r.I32();
  if (!r.Done()) return std::nullopt;
  return m;
}

bool WriteAll(int fd, std::string_view bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t w = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    off += static_cast<size_t>(w);
  }
  return true;
}

}  // namespace clawguard::sandbox
