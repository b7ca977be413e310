// erp_triage_fixture.h — the ERP dead-letter triage tests' set-up: a real SQLite idempotency
// store, outbox and DLQ on one temp file with a FixedClock, the real test ERP over loopback, a
// real ErpClient (short deadline, so timeouts are quick), an EndpointBreaker, CapabilityPauses,
// HostMetrics and an injectable jitter source, all wired into one ErpEnv.
#ifndef CLAWGUARD_TESTS_RESILIENCE_ERP_TRIAGE_FIXTURE_H_
#define CLAWGUARD_TESTS_RESILIENCE_ERP_TRIAGE_FIXTURE_H_

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "clawguard/clock.h"
#include "clawguard/sha256.h"
#include "clawguard/store/dlq.h"
#include "host/erp/erp_gateway.h"
#include "host/guard/breaker.h"
#include "host/guard/capability_pauses.h"
#include "host/observe/host_metrics.h"
#include "sqlite/sqlite_dlq.h"
#include "sqlite/sqlite_idempotency_store.h"
#include "sqlite/sqlite_outbox.h"
#include "support/erp_metric_line.h"
#include "support/temp_dir.h"
#include "support/test_erp_server.h"

namespace clawguard::host::testing {

inline constexpr int64_t kTriageT0 = 1'796'000'000'000;  // 2026-12-01, fixed
inline constexpr const char* kTriagePlugin = "acme-orders";
inline constexpr const char* kFulfil = "POST /orders/{id}/fulfil";

struct TriageOptions {
  int attempts = 4;
  int jitter_percent = 20;
  std::chrono::milliseconds floor_429{60'000};
  BreakerSpec breaker{10, std::chrono::milliseconds(30'000), std::chrono::milliseconds(60'000), 1};
};

class ErpTriageFixture : public ::testing::Test {
 protected:
  void Init(const TriageOptions& o = {}) {
    const std::string db = dir_.Sub("state.db");
    auto idem = sqlite::SqliteIdempotencyStore::Open(db, clock_);
    ASSERT_TRUE(idem.ok()) << idem.error().ToString();
    idem_ = std::move(idem).value();
    auto outbox = sqlite::SqliteOutbox::Open(db, clock_);
    ASSERT_TRUE(outbox.ok()) << outbox.error().ToString();
    outbox_ = std::move(outbox).value();
    auto dlq = sqlite::SqliteDlq::Open(db, clock_);
    ASSERT_TRUE(dlq.ok()) << dlq.error().ToString();
    dlq_ = std::move(dlq).value();
    auto erp = TestErpServer::Create();
    ASSERT_TRUE(erp.ok()) << erp.error().ToString();
    erp_ = std::move(erp).value();
    ErpClientOptions co;
    co.base_url = erp_->base_url();
    co.timeout = std::chrono::milliseconds(250);  // the "timeout" answers are delayed 2 s
    co.auth = SecretBytes("Bearer erp-secret-token-for-tests");
    auto client = ErpClient::Create(std::move(co));
    ASSERT_TRUE(client.ok()) << client.error().ToString();
    sender_ = MakeErpSender(std::move(client).value());
    auto breaker = EndpointBreaker::Create(o.breaker, clock_);
    ASSERT_TRUE(breaker.ok()) << breaker.error().ToString();
    breaker_ = std::move(breaker).value();
    auto metrics =
        HostMetrics::Create(MetricsNames{{}, {kTriagePlugin}, {kFulfil, "GET /orders/{id}"}});
    ASSERT_TRUE(metrics.ok()) << metrics.error().ToString();
    metrics_ = std::move(metrics).value();
    auto caps = CapabilitySet::Create({kFulfil, "GET /orders/{id}"});
    ASSERT_TRUE(caps.ok());
    caps_ = std::make_unique<CapabilitySet>(*caps);

    env_.outbox = outbox_.get();
    env_.sender = sender_.get();
    env_.clock = &clock_;
    env_.send_timeout =
        std::chrono::milliseconds(250);  // erp.timeout, as the client's deadline above
    env_.retry = ErpRetryPolicy{std::chrono::milliseconds(1000), std::chrono::milliseconds(60'000),
                                o.attempts, o.jitter_percent, o.floor_429};
    env_.audit = [this](const std::string& line) {
      std::lock_guard lock(audit_mu_);
      audit_.push_back(line);
    };
    env_.dlq = dlq_.get();
    env_.endpoint_breaker = breaker_.get();
    env_.metrics = metrics_.get();
    env_.pauses = &pauses_;
    env_.plugins = std::make_shared<const std::vector<ErpPluginCaps>>(
        std::vector<ErpPluginCaps>{ErpPluginCaps{kTriagePlugin, *caps_, "1.4.2"}});
    env_.uniform01 = [this] { return u01_.load(); };
    auto worker = RetryWorker::Create(env_);
    ASSERT_TRUE(worker.ok()) << worker.error().ToString();
    worker_ = std::move(worker).value();
  }
  void TearDown() override {
    if (erp_) erp_->Stop();  // ends delayed answers at once
  }

  // Claim claims |key| at level 2 and returns the fencing token.
  int64_t Claim(const std::string& key) {
    auto c =
        idem_->Claim(key, "fp", ClaimMeta{kTriagePlugin, "order.created", 2, "msg_1", ""}, 30'000);
    EXPECT_TRUE(c.ok()) << c.error().ToString();
    EXPECT_TRUE(c.ok() && c->kind == ClaimOutcome::Kind::kClaimed);
    return c.ok() ? c->fencing_token : 0;
  }
  std::unique_ptr<ErpGateway> Gateway(const std::string& key) {
    auto g = ErpGateway::Create(env_, *caps_, ErpDelivery{kTriagePlugin, key, Claim(key), 2});
    CLAWGUARD_CHECK(g.ok());
    return std::move(g).value();
  }
  // Call makes one erp_call through a fresh delivery of |key|; |reply| gets the reply body.
  int Call(const std::string& key, const char* method, const char* path,
           std::string* reply = nullptr) {
    auto g = Gateway(key);
    cg_bytes out{nullptr, 0};
    const int r = g->Call(method, path, "{\"qty\":1}", &out);
    if (reply != nullptr) reply->assign(out.data == nullptr ? "" : out.data, out.len);
    return r;
  }
  OutboxRow Row(const std::string& key, int64_t i = 0) {
    auto r = outbox_->Get(key, i);
    CLAWGUARD_CHECK(r.ok() && r->has_value());
    return **r;
  }
  std::vector<DlqEntry> Entries(DlqClass klass) {
    DlqFilter f;
    f.klass = klass;
    auto l = dlq_->List(f);
    CLAWGUARD_CHECK(l.ok());
    return *l;
  }
  RetryWorker::DrainStats Drain() {
    auto s = worker_->DrainPending(clock_.NowMillis());
    CLAWGUARD_CHECK(s.ok());
    return *s;
  }
  size_t AuditCount(const std::string& needle) {
    std::lock_guard lock(audit_mu_);
    size_t n = 0;
    for (const auto& l : audit_) n += l.find(needle) != std::string::npos ? 1 : 0;
    return n;
  }
  std::vector<std::string> AuditLines() {
    std::lock_guard lock(audit_mu_);
    return audit_;
  }
  // RecentFailures: the endpoint breaker's failures within its window (0 when not tracked).
  size_t RecentFailures(std::string_view endpoint) {
    for (const auto& s : breaker_->SnapshotAll()) {
      if (s.endpoint == endpoint) return s.recent_failures;
    }
    return 0;
  }
  // MetricLine finds the erp_calls_total{endpoint=|endpoint|,outcome=|outcome|} line of /metrics.
  std::string MetricLine(std::string_view endpoint, std::string_view outcome) {
    return clawguard::testing::ErpCallsLine(metrics_->RenderPrometheus(), endpoint, outcome);
  }
  // MetricCount is the value of that line, −1 when there is none.
  double MetricCount(std::string_view endpoint, std::string_view outcome) {
    const std::string line = MetricLine(endpoint, outcome);
    const size_t space = line.rfind(' ');
    return space == std::string::npos ? -1 : std::stod(line.substr(space + 1));
  }

  clawguard::testing::TempDir dir_;
  FixedClock clock_{kTriageT0};
  std::atomic<double> u01_{0.5};  // 0.5: no jitter
  ErpEnv env_;
  CapabilityPauses pauses_;
  std::unique_ptr<sqlite::SqliteIdempotencyStore> idem_;
  std::unique_ptr<sqlite::SqliteOutbox> outbox_;
  std::unique_ptr<sqlite::SqliteDlq> dlq_;
  std::unique_ptr<TestErpServer> erp_;
  std::unique_ptr<ErpSender> sender_;
  std::unique_ptr<EndpointBreaker> breaker_;
  std::unique_ptr<HostMetrics> metrics_;
  std::unique_ptr<CapabilitySet> caps_;
  std::unique_ptr<RetryWorker> worker_;
  std::mutex audit_mu_;
  std::vector<std::string> audit_;
};

}  // namespace clawguard::host::testing

#endif  // CLAWGUARD_TESTS_RESILIENCE_ERP_TRIAGE_FIXTURE_H_
