// host_observe_test.cpp — HostObserver: the /ops snapshot (breakers, DLQ by class and age) and the
// gauges it publishes, from a real SQLite DLQ, real breakers and a fixed clock; ReadSigningLeaves
// refusals.
#include "host/app/host_observe.h"

#include <gtest/gtest.h>

#include "sqlite/sqlite_dlq.h"
#include "support/reason_matchers.h"
#include "support/temp_dir.h"

using ::clawguard::testing::HasReason;

namespace clawguard::host {
namespace {

constexpr int64_t kObserveT0 = 1'800'000'000'000;

DlqNewEntry Entry(DlqClass klass, char key_char) {
  DlqNewEntry e;
  e.klass = klass;
  e.event_key = std::string(64, key_char);
  e.plugin = "acme-orders";
  e.route = "order.created";
  e.detail = "test";
  return e;
}

BreakerSpec Spec(int failures) {
  BreakerSpec s;
  s.failures = failures;
  s.window = std::chrono::seconds(30);
  s.cooldown = std::chrono::seconds(60);
  s.half_open_probes = 1;
  return s;
}

class HostObserverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dlq = sqlite::SqliteDlq::Open(dir_.Sub("state.db"), clock_);
    ASSERT_TRUE(dlq.ok()) << dlq.error().ToString();
    dlq_ = std::move(dlq).value();
    MetricsNames names;
    names.plugins = {"acme-orders"};
    names.endpoints = {"POST /a", "POST /b"};
    auto metrics = HostMetrics::Create(names);
    ASSERT_TRUE(metrics.ok());
    metrics_ = std::move(metrics).value();
    auto eb = EndpointBreaker::Create(Spec(2), clock_);
    ASSERT_TRUE(eb.ok());
    endpoints_ = std::move(eb).value();
    auto kb = KeyBreaker::Create(Spec(1), clock_);
    ASSERT_TRUE(kb.ok());
    keys_ = std::move(kb).value();
    HostObserver::Fixed fixed;
    fixed.trust_mode = "enforce";
    fixed.plugins = {OpsPlugin{"acme-orders", "1.4.2", "acme", std::string(64, 'a'), true, "", "",
                               "none", "", 0}};
    fixed.leaves = {OpsLeaf{"acme-orders", "/O=acme/CN=acme release", kObserveT0 / 1000 + 86400}};
    fixed.endpoints = names.endpoints;
    auto observer = HostObserver::Create(
        {metrics_.get(), endpoints_.get(), keys_.get(), dlq_.get(), &clock_}, fixed);
    ASSERT_TRUE(observer.ok()) << observer.error().ToString();
    observer_ = std::move(observer).value();
  }

  double Gauge(std::string_view name, std::initializer_list<std::string_view> labels) const {
    auto g = metrics_->registry().FindGauge(name, labels);
    return g ? g->Value() : -1;
  }

  clawguard::testing::TempDir dir_;
  FixedClock clock_{kObserveT0};
  std::unique_ptr<sqlite::SqliteDlq> dlq_;
  std::unique_ptr<HostMetrics> metrics_;
  std::unique_ptr<EndpointBreaker> endpoints_;
  std::unique_ptr<KeyBreaker> keys_;
  std::unique_ptr<HostObserver> observer_;
};

TEST_F(HostObserverTest, SnapshotShowsBreakersAndDlqByClassAndAge) {
  ASSERT_TRUE(dlq_->Add(Entry(DlqClass::kAuth, 'a')).ok());
  clock_.Advance(2 * kDlqHourMs);
  ASSERT_TRUE(dlq_->Add(Entry(DlqClass::kAuth, 'b')).ok());
  ASSERT_TRUE(dlq_->Add(Entry(DlqClass::kBreaker, 'c')).ok());
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(endpoints_->Acquire("POST /a").allowed);
    (void)endpoints_->RecordFailure("POST /a", /*probe=*/false);
  }
  (void)keys_->RecordFailure(std::string(64, 'k'));

  const OpsSnapshot s = observer_->Snapshot();
  EXPECT_EQ(s.now_ms, kObserveT0 + 2 * kDlqHourMs);
  EXPECT_EQ(s.trust_mode, "enforce");
  ASSERT_EQ(s.breakers.size(), 2u);  // every known endpoint, the untouched one closed
  EXPECT_EQ(s.breakers[0].endpoint, "POST /a");
  EXPECT_EQ(s.breakers[0].state, "open");
  EXPECT_EQ(s.breakers[1].endpoint, "POST /b");
  EXPECT_EQ(s.breakers[1].state, "closed");
  EXPECT_EQ(s.open_key_breakers, 1);
  ASSERT_EQ(s.dlq.size(), 2u);  // classes with entries, in kAllDlqClasses order
  EXPECT_EQ(s.dlq[0].dlq_class, "breaker");
  EXPECT_EQ(s.dlq[0].under_1h, 1);
  EXPECT_EQ(s.dlq[1].dlq_class, "auth");
  EXPECT_EQ(s.dlq[1].under_1h, 1);
  EXPECT_EQ(s.dlq[1].under_24h, 1);
  EXPECT_EQ(s.dlq[1].older, 0);
  ASSERT_EQ(s.leaves.size(), 1u);
  EXPECT_EQ(s.plugins.size(), 1u);

  ASSERT_TRUE(observer_->PublishGauges().ok());
  EXPECT_EQ(Gauge("clawguard_dead_letter_queue_size", {"auth"}), 2);
  EXPECT_EQ(Gauge("clawguard_dead_letter_queue_size", {"breaker"}), 1);
  EXPECT_EQ(Gauge("clawguard_dead_letter_queue_size", {"cooldown"}), 0);
  EXPECT_EQ(Gauge("clawguard_circuit_breaker_open", {"erp", "POST /a"}), 1);
  EXPECT_EQ(Gauge("clawguard_circuit_breaker_open", {"erp", "POST /b"}), 0);
  EXPECT_EQ(Gauge("clawguard_circuit_breaker_open", {"key", "_keys"}), 1);

  // A resolved entry leaves the gauge at once (0, not a stale value).
  ASSERT_TRUE(dlq_->Resolve(std::string(64, 'c'), DlqClass::kBreaker, "done").ok());
  ASSERT_TRUE(observer_->PublishGauges().ok());
  EXPECT_EQ(Gauge("clawguard_dead_letter_queue_size", {"breaker"}), 0);
}

TEST_F(HostObserverTest, CreateRefusesMissingSources) {
  auto none = HostObserver::Create({}, {});
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none, HasReason(Reason::kInternal));
}

TEST(ReadSigningLeavesTest, RefusesMissingOrMalformedBundles) {
  clawguard::testing::TempDir dir;
  Verdict v;
  v.signers = {std::string(64, 'f')};
  auto missing = ReadSigningLeaves(dir.Sub("nope.claw"), v);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing, HasReason(Reason::kFileUnreadable));
  clawguard::testing::WriteFile(dir.Sub("bad.claw.sig"), "{}");
  auto bad = ReadSigningLeaves(dir.Sub("bad.claw"), v);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad, HasReason(Reason::kBundleInvalid));
}

}  // namespace
}  // namespace clawguard::host
