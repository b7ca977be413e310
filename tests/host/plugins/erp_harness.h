// erp_harness.h — shared set-up of the ERP gateway and plugin dispatch tests: a SQLite store and
// outbox on a temp file with a FixedClock, the real test ERP, and a sender that forwards to a
// real ErpClient — either the live test ERP or a closed loopback port ("the ERP is down").
#ifndef CLAWGUARD_TESTS_HOST_PLUGINS_ERP_HARNESS_H_
#define CLAWGUARD_TESTS_HOST_PLUGINS_ERP_HARNESS_H_

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "clawguard/clock.h"
#include "clawguard/sha256.h"
#include "host/erp/erp_client.h"
#include "host/erp/erp_gateway.h"
#include "sqlite/sqlite_idempotency_store.h"
#include "sqlite/sqlite_outbox.h"
#include "support/temp_dir.h"
#include "support/test_erp_server.h"

namespace clawguard::host::testing {

inline constexpr int64_t kT0 = 1'790'000'000'000;  // 2026-09-21, fixed
inline constexpr const char* kErpAuth = "Bearer erp-secret-token-for-tests";
inline constexpr const char* kPlugin = "acme-orders";  // the plugin the dispatch tests deliver to
inline constexpr const char* kRoute = "order.created";

// SwitchSender forwards to the live ERP's client, or to a client of a closed port when down.
class SwitchSender final : public ErpSender {
 public:
  SwitchSender(std::unique_ptr<ErpClient> live, std::unique_ptr<ErpClient> dead)
      : live_(std::move(live)), dead_(std::move(dead)) {}
  Result<ErpReply> Send(std::string_view method, std::string_view path, const HttpHeaders& headers,
                        std::string_view body) override {
    return (down.load() ? dead_ : live_)->Send(method, path, headers, body);
  }
  std::atomic<bool> down{false};

 private:
  std::unique_ptr<ErpClient> live_, dead_;
};

inline std::unique_ptr<ErpClient> MakeClient(const std::string& base_url) {
  ErpClientOptions o;
  o.base_url = base_url;
  o.timeout = std::chrono::milliseconds(3000);
  o.auth = SecretBytes(kErpAuth);
  auto c = ErpClient::Create(std::move(o));
  CLAWGUARD_CHECK(c.ok());
  return std::move(c).value();
}

class ErpHarness {
 public:
  // Init opens everything; call from SetUp under ASSERT_NO_FATAL_FAILURE.
  void Init(int attempts = 8) {
    auto idem = sqlite::SqliteIdempotencyStore::Open(dir.Sub("state.db"), clock);
    ASSERT_TRUE(idem.ok()) << idem.error().ToString();
    idem_ = std::move(idem).value();
    auto outbox = sqlite::SqliteOutbox::Open(dir.Sub("state.db"), clock);
    ASSERT_TRUE(outbox.ok()) << outbox.error().ToString();
    outbox_ = std::move(outbox).value();
    auto erp = TestErpServer::Create();
    ASSERT_TRUE(erp.ok()) << erp.error().ToString();
    erp_ = std::move(erp).value();
    auto gone = TestErpServer::Create();  // bind a port, then close it: nothing listens there
    ASSERT_TRUE(gone.ok());
    const std::string dead_url = (*gone)->base_url();
    (*gone)->Stop();
    gone->reset();
    sender_ = std::make_unique<SwitchSender>(MakeClient(erp_->base_url()), MakeClient(dead_url));
    env.outbox = outbox_.get();
    env.sender = sender_.get();
    env.clock = &clock;
    env.retry = ErpRetryPolicy{std::chrono::milliseconds(1000), std::chrono::milliseconds(60'000),
                               attempts};
    env.audit = [this](const std::string& line) {
      std::lock_guard lock(audit_mu_);
      audit_.push_back(line);
    };
    // The retry worker matches each resend against the loaded plugins: acme-orders with every
    // capability these tests call.
    auto caps = CapabilitySet::Create(
        {"POST /orders/{id}/fulfil", "GET /orders/{id}", "POST /inventory/adjust"});
    ASSERT_TRUE(caps.ok()) << caps.error().ToString();
    env.plugins = std::make_shared<const std::vector<ErpPluginCaps>>(
        std::vector<ErpPluginCaps>{ErpPluginCaps{"acme-orders", std::move(caps).value(), "1.4.2"}});
  }

  // Claim claims |key| and returns the fencing token (0 on failure).
  int64_t Claim(const std::string& key, int level = 2) {
    auto c = idem_->Claim(key, "fp", ClaimMeta{"acme-orders", "order.created", level, "msg_1", ""},
                          30'000);
    if (!c.ok() || c->kind != ClaimOutcome::Kind::kClaimed) return 0;
    return c->fencing_token;
  }
  // Retry simulates a platform retry after a failed run: release, then claim again.
  int64_t Retry(const std::string& key, int64_t token) {
    (void)idem_->Release(key, token);
    return Claim(key);
  }

  std::vector<std::string> audit_lines() {
    std::lock_guard lock(audit_mu_);
    return audit_;
  }
  size_t AuditCount(const std::string& needle) {
    size_t n = 0;
    for (const auto& l : audit_lines()) n += l.find(needle) != std::string::npos ? 1 : 0;
    return n;
  }

  clawguard::testing::TempDir dir;
  FixedClock clock{kT0};
  ErpEnv env;
  TestErpServer& erp() { return *erp_; }
  SwitchSender& sender() { return *sender_; }
  Outbox& outbox() { return *outbox_; }
  IdempotencyStore& idem() { return *idem_; }

 private:
  std::unique_ptr<sqlite::SqliteIdempotencyStore> idem_;
  std::unique_ptr<sqlite::SqliteOutbox> outbox_;
  std::unique_ptr<TestErpServer> erp_;
  std::unique_ptr<SwitchSender> sender_;
  std::mutex audit_mu_;
  std::vector<std::string> audit_;
};

}  // namespace clawguard::host::testing

#endif  // CLAWGUARD_TESTS_HOST_PLUGINS_ERP_HARNESS_H_
