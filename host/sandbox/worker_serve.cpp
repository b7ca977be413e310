// worker_serve.cpp — see worker_serve.h.
#include "host/sandbox/worker_serve.h"

#include <fcntl.h>
#include <malloc.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "clawguard/error.h"
#include "clawguard/limits.h"
#include "clawguard/plugin.h"
#include "clawguard/unique_fd.h"
#include "core/mutex.h"
#include "host/sandbox/lockdown.h"
#include "host/sandbox/worker_protocol.h"
#include "host/sandbox/worker_spawn.h"
#include "loader/memfd_loader.h"

namespace clawguard::sandbox {
namespace {

constexpr size_t kMaxContentType = 256;  // the host refuses longer ones
constexpr size_t kMaxLogMessage = 2048;  // the host cuts longer ones

// Sending: any thread, one frame at a time.
Mutex g_send_mu;

bool Send(FrameType type, uint64_t id, std::string_view payload) {
  const std::string frame = EncodeFrame(type, id, payload);
  MutexLock lock(g_send_mu);
  return WriteAll(kWorkerChannelFd, frame);
}

[[noreturn]] void Fail(std::string_view reason, std::string_view detail) {
  InitFailedMsg m{std::string(reason), std::string(detail.substr(0, 4000))};
  (void)Send(FrameType::kInitFailed, 0, m.Encode());
  ::_exit(1);
}

// WorkerCall is one delivery in the worker.
struct WorkerCall {
  uint64_t id = 0;
  cg_call* handle = nullptr;
  DeliverMsg msg;
  std::vector<cg_bytes> name_bytes, value_bytes;
  cg_request request{};

  Mutex erp_mu;  // serialises erp_call per delivery
  Mutex mu;
  std::condition_variable reply_cv;
  bool closed CLAWGUARD_GUARDED_BY(mu) = false;
  bool responded CLAWGUARD_GUARDED_BY(mu) = false;  // respond() was called: later ones send no body
  bool reply_ready CLAWGUARD_GUARDED_BY(mu) = false;
  ErpReplyMsg reply CLAWGUARD_GUARDED_BY(mu);
  // Every reply's bytes stay valid until handle_webhook returns (plugin.h).
  std::vector<std::unique_ptr<std::string>> replies CLAWGUARD_GUARDED_BY(erp_mu);
};

// The live deliveries, by the handle the plugin holds and by the host's delivery id.
Mutex g_calls_mu;
std::map<uintptr_t, std::shared_ptr<WorkerCall>> g_by_handle CLAWGUARD_GUARDED_BY(g_calls_mu);
std::map<uint64_t, std::shared_ptr<WorkerCall>> g_by_id CLAWGUARD_GUARDED_BY(g_calls_mu);

std::shared_ptr<WorkerCall> FindCall(const cg_call* handle) {
  MutexLock lock(g_calls_mu);
  auto it = g_by_handle.find(reinterpret_cast<uintptr_t>(handle));
  return it == g_by_handle.end() ? nullptr : it->second;
}

// NewHandle draws a handle as the in-process host does (host/dispatch/call_handles.h): random
// bits under a tag that makes it a non-canonical address.
cg_call* NewHandle() {
  for (;;) {
    uint64_t v = 0;
    if (::getrandom(&v, sizeof(v), 0) != static_cast<ssize_t>(sizeof(v))) continue;
    v = (v & ~0xC000'0000'0000'0000ull) | 0x8000'0000'0000'0000ull;
    MutexLock lock(g_calls_mu);
    // NOLINTNEXTLINE(performance-no-int-to-ptr): a handle is a number, never dereferenced
    if (g_by_handle.count(v) == 0) return reinterpret_cast<cg_call*>(v);
  }
}

std::string PluginString(const char* s, size_t max) { return std::string(s, strnlen(s, max + 1)); }

int ErpCallFn(cg_call* handle, const char* method, const char* path, cg_bytes body,
              cg_bytes* reply) {
  if (reply != nullptr) *reply = cg_bytes{nullptr, 0};
  if (method == nullptr || path == nullptr || (body.data == nullptr && body.len != 0))
    return CG_DENIED;
  const std::shared_ptr<WorkerCall> call = FindCall(handle);
  if (call == nullptr) return CG_FENCED;
  MutexLock erp(call->erp_mu);
  {
    MutexLock lock(call->mu);
    if (call->closed) return CG_FENCED;
    call->reply_ready = false;
  }
  // The host's gateway refuses an over-long body by its length; it is not sent over.
  if (body.len > limits::kMaxErpRequestBody) return CG_DENIED;
  ErpCallMsg m{PluginString(method, limits::kMaxErpMethodLength),
               PluginString(path, limits::kMaxErpPathLength),
               body.len == 0 ? std::string() : std::string(body.data, body.len)};
  if (!Send(FrameType::kErpCall, call->id, m.Encode())) return CG_UNAVAILABLE;
  MutexLock lock(call->mu);
  // The host answers every kErpCall (CG_FENCED once it gave up on the delivery); if it is gone,
  // the main thread exits the process.
  call->mu.Wait(call->reply_cv, [&]() CLAWGUARD_REQUIRES(call->mu) { return call->reply_ready; });
  call->replies.push_back(std::make_unique<std::string>(std::move(call->reply.reply)));
  if (reply != nullptr)
    *reply = cg_bytes{call->replies.back()->data(), call->replies.back()->size()};
  return call->reply.result;
}

void RespondFn(cg_call* handle, int status, const char* content_type, cg_bytes body) {
  const std::shared_ptr<WorkerCall> call = FindCall(handle);
  if (call == nullptr) return;
  bool again = false;
  {
    MutexLock lock(call->mu);
    if (call->closed) return;
    again = call->responded;
    call->responded = true;
  }
  RespondMsg m;
  m.status = status;
  m.content_type =
      content_type == nullptr ? std::string() : PluginString(content_type, kMaxContentType);
  // A later answer is only counted by the host (respond twice is the plugin's error): its body
  // is not sent. What the host cannot take is sent as an invalid status: it refuses the answer
  // and says so.
  if (again) {
    m.content_type.clear();
  } else if ((body.data == nullptr && body.len != 0) || body.len > kMaxWorkerAnswer) {
    m.status = -1;
  } else if (body.len != 0) {
    m.body.assign(body.data, body.len);
  }
  (void)Send(FrameType::kRespond, call->id, m.Encode());
}

void LogFn(cg_call* handle, int level, const char* message) {
  if (message == nullptr) return;
  const std::shared_ptr<WorkerCall> call = FindCall(handle);
  if (call == nullptr) return;
  LogMsg m{level, std::string(message, strnlen(message, kMaxLogMessage))};
  (void)Send(FrameType::kLog, call->id, m.Encode());
}

const cg_host_api kWorkerApi = {CLAWGUARD_PLUGIN_ABI, &ErpCallFn, &RespondFn, &LogFn};

const cg_plugin* g_plugin = nullptr;
std::mutex g_serial;  // CG_PLUGIN_SERIAL: one handle_webhook at a time

// RunDelivery runs one delivery's handle_webhook and forgets the delivery; it returns the
// kDone frame's payload, which the caller sends.
std::string RunDelivery(const std::shared_ptr<WorkerCall>& call) {
  int rc = -1;
  {
    std::unique_lock<std::mutex> serial;
    if ((g_plugin->flags & CG_PLUGIN_SERIAL) != 0) serial = std::unique_lock<std::mutex>(g_serial);
    try {
      rc = g_plugin->handle_webhook(call->handle, call->msg.route.c_str(), &call->request);
    } catch (...) {
      rc = -1;  // a C++ plugin must not throw across the C ABI
    }
  }
  {
    MutexLock lock(call->mu);
    call->closed = true;
  }
  {
    MutexLock erp(call->erp_mu);  // an erp_call from a kept thread finishes first
  }
  {
    MutexLock lock(g_calls_mu);
    g_by_handle.erase(reinterpret_cast<uintptr_t>(call->handle));
    g_by_id.erase(call->id);
  }
  return DoneMsg{rc}.Encode();
}

// Delivery threads are kept once started and reused: a thread per delivery costs a clone, an
// 8 MiB stack mapping and its unmapping each time. There are at most as many as deliveries ran at
// once (the host bounds those, listen.handlers): a thread counts itself idle BEFORE it tells the
// host its delivery is done, so the host's next delivery never finds it busy and starts another.
// The worker's thread bound (RLIMIT_NPROC) leaves room for them all; where a plugin has spent
// that room on threads of its own, a delivery that finds no idle thread and cannot start one waits
// in the queue for the next thread to come free (or the host's handler_timeout).
class DeliveryThreads {
 public:
  void Run(std::shared_ptr<WorkerCall> call) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(call));
      // Enough idle threads for every queued delivery: one of them takes it.
      if (static_cast<size_t>(idle_) >= queue_.size()) {
        cv_.notify_one();
        return;
      }
    }
    try {
      std::thread([this] { Loop(); }).detach();
    } catch (const std::system_error&) {
      // EAGAIN at the thread bound: the delivery stays queued (see above).
    }
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    ++idle_;
    for (;;) {
      cv_.wait(lock, [this] { return !queue_.empty(); });
      --idle_;
      std::shared_ptr<WorkerCall> call = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      const uint64_t id = call->id;
      const std::string done = RunDelivery(call);
      call.reset();
      lock.lock();
      ++idle_;
      lock.unlock();
      (void)Send(FrameType::kDone, id, done);
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<WorkerCall>> queue_;
  int idle_ = 0;  // threads not running a delivery (waiting, or about to wait)
};

DeliveryThreads* g_delivery_threads = new DeliveryThreads;  // never freed: its threads never end

void StartDelivery(uint64_t id, DeliverMsg msg) {
  auto call = std::make_shared<WorkerCall>();
  call->id = id;
  call->msg = std::move(msg);
  DeliverMsg& m = call->msg;
  for (size_t i = 0; i < m.names.size(); ++i) {
    call->name_bytes.push_back(cg_bytes{m.names[i].data(), m.names[i].size()});
    call->value_bytes.push_back(cg_bytes{m.values[i].data(), m.values[i].size()});
  }
  call->request.method = cg_bytes{m.method.data(), m.method.size()};
  call->request.path = cg_bytes{m.path.data(), m.path.size()};
  call->request.body = cg_bytes{m.body.data(), m.body.size()};
  call->request.idempotency_key = cg_bytes{m.key.data(), m.key.size()};
  call->request.header_names = call->name_bytes.data();
  call->request.header_values = call->value_bytes.data();
  call->request.header_count = call->name_bytes.size();
  call->handle = NewHandle();
  {
    MutexLock lock(g_calls_mu);
    if (!g_by_id.emplace(id, call).second) ::_exit(1);  // the host reused a live id
    g_by_handle.emplace(reinterpret_cast<uintptr_t>(call->handle), call);
  }
  g_delivery_threads->Run(std::move(call));
}

void DeliverReply(uint64_t id, ErpReplyMsg reply) {
  std::shared_ptr<WorkerCall> call;
  {
    MutexLock lock(g_calls_mu);
    auto it = g_by_id.find(id);
    if (it == g_by_id.end()) return;  // the delivery ended meanwhile
    call = it->second;
  }
  {
    MutexLock lock(call->mu);
    call->reply = std::move(reply);
    call->reply_ready = true;
  }
  call->reply_cv.notify_all();
}

[[noreturn]] void ChannelLost() {
  // The host is gone or gave up on this worker: leave without running the plugin's destructors.
  ::_exit(0);
}

bool ParseInt(std::string_view s, int64_t& out) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

int WorkerMain(int argc, char** argv) {
  std::string plugin;
  int64_t abi = -1;
  int64_t memory_limit = 0;
  int64_t max_threads = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const std::string_view value = argv[i + 1];
    if (flag == "--plugin") {
      plugin = std::string(value);
    } else if (flag == "--abi") {
      if (!ParseInt(value, abi)) Fail("load_failed", "worker: --abi is not a number");
    } else if (flag == "--memory-limit") {
      if (!ParseInt(value, memory_limit) || memory_limit < 0)
        Fail("load_failed", "worker: --memory-limit is not a byte count");
    } else if (flag == "--max-threads") {
      if (!ParseInt(value, max_threads) || max_threads < 0)
        Fail("load_failed", "worker: --max-threads is not a count");
    } else {
      Fail("load_failed", "worker: unknown argument " + std::string(flag));
    }
  }
  if (plugin.empty() || abi < 0 || argc % 2 == 0)
    Fail("load_failed",
         "worker: usage: clawguard-worker --plugin NAME --abi N "
         "[--memory-limit BYTES] [--max-threads N]");

  // Few malloc arenas: each reserves 128 MiB of address space, which RLIMIT_AS counts.
  (void)::mallopt(M_ARENA_MAX, 4);
  const int maps_fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (maps_fd < 0) Fail("load_failed", "worker: cannot open /proc/self/maps");
  LockdownOptions lockdown;
  lockdown.address_space_bytes = static_cast<uint64_t>(memory_limit);
  // The thread bound counts only this worker where its uid is the one SpawnWorker gives it (in
  // its own user namespace, or a root host's worker); a worker that kept the host's uid would
  // share the count with the host's own threads.
  if (::getuid() == kWorkerInnerId) lockdown.max_threads = static_cast<uint64_t>(max_threads);
  lockdown.keep_fds = {kWorkerChannelFd, kWorkerLibraryFd, maps_fd};
  lockdown.supervisor_fd = kWorkerSupervisorFd;
  auto confined = EnterLoadPhase(lockdown);
  if (!confined.ok()) Fail("load_failed", "worker: sandbox: " + confined.error().message());

  auto lib = LoadFromSealedMemfd(UniqueFd(kWorkerLibraryFd), maps_fd, abi, &kWorkerApi);
  if (!lib.ok()) Fail(ReasonName(lib.error().reason()), lib.error().message());
  ::close(maps_fd);
  g_plugin = (*lib)->plugin();
  // Local time is read while files still open: after this phase glibc's tzset would find no
  // /etc/localtime and use UTC.
  ::tzset();
  if (Status s = EnterServePhase(); !s.ok()) Fail("load_failed", "worker: sandbox: " + s.message());
  if (!Send(FrameType::kReady, 0, ReadyMsg{g_plugin->abi, g_plugin->flags}.Encode())) ::_exit(1);

  FrameDecoder decoder(kMaxHostFrame,
                       {FrameType::kDeliver, FrameType::kErpReply, FrameType::kShutdown});
  std::vector<char> buf(256 * 1024);
  for (;;) {
    const ssize_t n = ::recv(kWorkerChannelFd, buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ChannelLost();
    decoder.Feed(std::string_view(buf.data(), static_cast<size_t>(n)));
    while (std::optional<Frame> f = decoder.Next()) {
      switch (f->type) {
        case FrameType::kDeliver: {
          std::optional<DeliverMsg> m = DeliverMsg::Decode(f->payload);
          if (!m) ::_exit(1);
          StartDelivery(f->id, std::move(*m));
          break;
        }
        case FrameType::kErpReply: {
          std::optional<ErpReplyMsg> m = ErpReplyMsg::Decode(f->payload);
          if (!m) ::_exit(1);
          DeliverReply(f->id, std::move(*m));
          break;
        }
        case FrameType::kShutdown:
          if (g_plugin->shutdown != nullptr) g_plugin->shutdown();
          ::_exit(0);
        default: ::_exit(1);
      }
    }
    if (!decoder.error().empty()) ::_exit(1);
  }
}

}  // namespace clawguard::sandbox
