// capability_pauses_test.cpp — CapabilityPauses mirrors the store's pauses (real SQLite DLQ).
#include "host/guard/capability_pauses.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "clawguard/clock.h"
#include "sqlite/sqlite_dlq.h"
#include "support/temp_dir.h"

namespace clawguard::host {
namespace {

constexpr const char* kPausedFulfil = "POST /orders/{id}/fulfil";

class CapabilityPausesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sqlite::SqliteDlq::Open(dir_.Sub("state.db"), clock_);
    ASSERT_TRUE(d.ok()) << d.error().ToString();
    dlq_ = std::move(d).value();
  }
  clawguard::testing::TempDir dir_;
  FixedClock clock_{1'796'000'000'000};
  std::unique_ptr<sqlite::SqliteDlq> dlq_;
  CapabilityPauses pauses_;
};

TEST_F(CapabilityPausesTest, RefreshMirrorsTheStorePausesExactly) {
  EXPECT_FALSE(pauses_.IsPaused("acme-orders", kPausedFulfil));
  ASSERT_TRUE(*dlq_->Pause("acme-orders", kPausedFulfil, "ERP answered 401", "host"));
  ASSERT_TRUE(*dlq_->Pause("billing", "GET /invoices/{id}", "maintenance", "cli:alice"));
  EXPECT_FALSE(pauses_.IsPaused("acme-orders", kPausedFulfil));  // not until refreshed
  ASSERT_TRUE(pauses_.Refresh(*dlq_).ok());
  EXPECT_TRUE(pauses_.IsPaused("acme-orders", kPausedFulfil));
  EXPECT_TRUE(pauses_.IsPaused("billing", "GET /invoices/{id}"));
  EXPECT_FALSE(pauses_.IsPaused("acme-orders", "GET /invoices/{id}"));  // per plugin
  EXPECT_FALSE(pauses_.IsPaused("billing", kPausedFulfil));
  EXPECT_FALSE(
      pauses_.IsPaused("acme-orders", "POST /orders/1/fulfil"));  // the capability, not a path
  EXPECT_EQ(pauses_.size(), 2u);

  ASSERT_TRUE(*dlq_->Resume("acme-orders", kPausedFulfil, "cli:alice"));
  ASSERT_TRUE(pauses_.Refresh(*dlq_).ok());
  EXPECT_FALSE(pauses_.IsPaused("acme-orders", kPausedFulfil));
  const auto snap = pauses_.Snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].first, "billing");
}

TEST_F(CapabilityPausesTest, MarkPausedActsAtOnceAndRefreshAgreesOnceStored) {
  pauses_.MarkPaused("acme-orders", kPausedFulfil);
  EXPECT_TRUE(pauses_.IsPaused("acme-orders", kPausedFulfil));
  ASSERT_TRUE(*dlq_->Pause("acme-orders", kPausedFulfil, "ERP answered 403", "host"));
  ASSERT_TRUE(pauses_.Refresh(*dlq_).ok());
  EXPECT_TRUE(pauses_.IsPaused("acme-orders", kPausedFulfil));
  EXPECT_EQ(pauses_.size(), 1u);
}

TEST_F(CapabilityPausesTest, ConcurrentReadersAndRefreshesAreSafe) {
  ASSERT_TRUE(*dlq_->Pause("acme-orders", kPausedFulfil, "r", "host"));
  std::vector<std::thread> threads;
  threads.reserve(4);
  std::atomic<int> seen{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        if (t == 0 && i % 20 == 0) (void)pauses_.Refresh(*dlq_);
        if (pauses_.IsPaused("acme-orders", kPausedFulfil)) ++seen;
        pauses_.MarkPaused("p" + std::to_string(t), kPausedFulfil);
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(pauses_.Refresh(*dlq_).ok());
  EXPECT_EQ(pauses_.size(), 1u);  // local marks that the store does not hold are dropped
  EXPECT_GT(seen.load(), 0);
}

}  // namespace
}  // namespace clawguard::host
