// erp_env.cpp — retry policy arithmetic (backoff, jitter, 429 cool-down), the default random
// source, and the ErpClient-backed sender.
#include "host/erp/erp_env.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <random>

#include "core/mutex.h"

namespace clawguard::host {
namespace {

class ClientSender final : public ErpSender {
 public:
  explicit ClientSender(std::unique_ptr<ErpClient> client) : client_(std::move(client)) {}
  Result<ErpReply> Send(std::string_view method, std::string_view path, const HttpHeaders& headers,
                        std::string_view body) override {
    return client_->Send(method, path, headers, body);
  }

 private:
  const std::unique_ptr<ErpClient> client_;
};

// DefaultUniform01 is one process-wide PRNG behind a mutex: jitter needs spread, not secrecy.
double DefaultUniform01() {
  static Mutex mu;
  static std::mt19937_64 engine CLAWGUARD_GUARDED_BY(mu){[] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }()};
  MutexLock lock(mu);
  return std::uniform_real_distribution<double>(0.0, 1.0)(engine);
}

// kMaxDelayMs bounds any computed delay (a year) so that now + delay never overflows.
constexpr int64_t kMaxDelayMs = 365LL * 24 * 3'600'000;

int64_t Clamp(double ms) {
  if (!(ms >= 1.0)) return 1;  // also NaN
  if (ms >= static_cast<double>(kMaxDelayMs)) return kMaxDelayMs;
  return static_cast<int64_t>(std::llround(ms));
}

}  // namespace

int64_t ErpRetryPolicy::BackoffMs(int64_t attempt) const {
  const int64_t cap = std::max<int64_t>(1, max.count());
  int64_t d = std::max<int64_t>(1, base.count());
  for (int64_t n = 1; n < attempt && d < cap; ++n) d *= 2;
  return std::min(d, cap);
}

int64_t ErpRetryPolicy::JitteredMs(int64_t delay_ms, double u01) const {
  const double u = 2.0 * std::clamp(u01, 0.0, 1.0) - 1.0;  // [−1, 1]
  const double j = std::clamp(jitter_percent, 0, 100) / 100.0;
  return Clamp(static_cast<double>(delay_ms) * (1.0 + u * j));
}

int64_t ErpRetryPolicy::CooldownMs(int64_t retry_after_ms, double u01) const {
  const int64_t d = std::max<int64_t>({retry_after_ms, floor_429.count(), 1});
  const double j = std::clamp(jitter_percent, 0, 100) / 100.0;
  return Clamp(static_cast<double>(d) * (1.0 + std::clamp(u01, 0.0, 1.0) * j));
}

Status ErpRetryPolicy::Check() const {
  if (attempts < 1) {
    return Status(Reason::kConfigInvalid,
                  "erp.retry.attempts must be ≥ 1, found " + std::to_string(attempts));
  }
  if (jitter_percent < 0 || jitter_percent > 100) {
    return Status(Reason::kConfigInvalid, "erp.retry.jitter must be 0..100%, found " +
                                              std::to_string(jitter_percent) + "%");
  }
  if (floor_429.count() < 0)
    return Status(Reason::kConfigInvalid, "erp.retry.floor_429 must be ≥ 0");
  return Status::Ok();
}

std::string NewSendOwner() {
  static const std::string prefix = [] {
    std::array<char, 256> name{};
    if (gethostname(name.data(), name.size() - 1) != 0 || name[0] == '\0')
      std::snprintf(name.data(), 8, "unknown");
    std::random_device rd;
    const uint64_t boot = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    std::array<char, 17> hex{};
    std::snprintf(hex.data(), hex.size(), "%016llx", static_cast<unsigned long long>(boot));
    return "send:" + std::string(name.data()) + ":" + std::to_string(getpid()) + ":" + hex.data() +
           ":";
  }();
  static std::atomic<uint64_t> next{0};
  return prefix + std::to_string(++next);
}

int64_t SendClaimMs(const ErpEnv& env) {
  return std::max<int64_t>(1, env.send_timeout.count()) + kSendClaimMarginMs;
}

double DrawUniform01(const ErpEnv& env) {
  if (!env.uniform01) return DefaultUniform01();
  const double u = env.uniform01();
  return std::isnan(u) ? 0.5 : std::clamp(u, 0.0, 1.0);
}

std::unique_ptr<ErpSender> MakeErpSender(std::unique_ptr<ErpClient> client) {
  CLAWGUARD_CHECK(client != nullptr);
  return std::make_unique<ClientSender>(std::move(client));
}

}  // namespace clawguard::host
