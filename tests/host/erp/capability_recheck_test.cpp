// capability_recheck_test.cpp — every resend re-matches its outbox row against the capabilities
// of the plugin version loaded NOW and the pauses in force (host/erp/erp_send.h): a row left unsent
// by an ERP outage is never sent once the loaded version no longer declares its call, or its
// plugin is no longer loaded — it is dead-lettered `capability_revoked` — whether the resend is
// the worker's, a confirmed level-3 intent or a DLQ replay; a paused call waits and is sent once
// after the resume. Real SQLite stores, the real test ERP, a FixedClock (ErpTriageFixture); a new
// plugin version is a RetryWorker over another plugin list, as a restarted host builds it.
#include <gtest/gtest.h>

#include "erp_triage_fixture.h"
#include "host/erp/idempotency_key.h"

namespace clawguard::host {
namespace {

using testing::ErpAnswer;
using testing::ErpTriageFixture;
using testing::kFulfil;
using testing::kTriagePlugin;

class CapabilityRecheckTest : public ErpTriageFixture {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(Init()); }

  // WorkerFor is the retry worker of a host that loads |plugins| (the same store, ERP and DLQ).
  std::unique_ptr<RetryWorker> WorkerFor(std::vector<ErpPluginCaps> plugins) {
    ErpEnv env = env_;
    env.plugins = std::make_shared<const std::vector<ErpPluginCaps>>(std::move(plugins));
    env.records = idem_.get();
    auto w = RetryWorker::Create(env);
    CLAWGUARD_CHECK(w.ok());
    return std::move(w).value();
  }
  // Version150 is acme-orders 1.5.0: it dropped the fulfil capability, kept the order read.
  static ErpPluginCaps Version150(std::vector<std::string> caps = {"GET /orders/{id}"}) {
    auto set = CapabilitySet::Create(caps);
    CLAWGUARD_CHECK(set.ok());
    return ErpPluginCaps{kTriagePlugin, std::move(set).value(), "1.5.0"};
  }
  // LeaveUnsent makes call 0 of |key| (POST /orders/|order|/fulfil) meet an ERP outage (503, no
  // effect): the row waits for its retry, then the ERP is repaired.
  void LeaveUnsent(const std::string& key, const std::string& order) {
    ErpAnswer down;
    down.status = 503;
    erp_->SetAnswer("/orders/" + order + "/fulfil", down);
    ASSERT_EQ(Call(key, "POST", ("/orders/" + order + "/fulfil").c_str()), CG_UNAVAILABLE);
    ASSERT_EQ(Row(key).state, OutboxState::kSent);
    ASSERT_EQ(Row(key).claimed_by, "");  // released: waits for its backoff
    erp_->SetAnswer("/orders/" + order + "/fulfil", ErpAnswer{});
  }

  const std::string key_ = Sha256Hex("event-recheck");
};

TEST_F(CapabilityRecheckTest, AResendOfACallTheLoadedVersionNoLongerDeclaresIsRevokedNeverSent) {
  ASSERT_NO_FATAL_FAILURE(LeaveUnsent(key_, "21"));
  auto v150 = WorkerFor({Version150()});
  clock_.Advance(60'000);
  auto drained = v150->DrainPending(clock_.NowMillis());
  ASSERT_TRUE(drained.ok()) << drained.error().ToString();
  EXPECT_EQ(drained->revoked, 1);
  EXPECT_EQ(drained->answered + drained->retry_later + drained->not_sent, 0);
  EXPECT_EQ(erp_->requests_total(), 1u) << "only the first send, during the outage";
  EXPECT_EQ(erp_->effects_total(), 0u);
  const OutboxRow row = Row(key_);
  EXPECT_EQ(row.state, OutboxState::kDead);

  const auto revoked = Entries(DlqClass::kCapabilityRevoked);
  ASSERT_EQ(revoked.size(), 1u);
  EXPECT_EQ(revoked[0].plugin, kTriagePlugin);
  EXPECT_EQ(revoked[0].call_index, 0);
  EXPECT_EQ(revoked[0].endpoint, "");
  EXPECT_NE(revoked[0].detail.find("1.5.0"), std::string::npos) << revoked[0].detail;
  EXPECT_NE(revoked[0].detail.find("POST /orders/21/fulfil"), std::string::npos)
      << revoked[0].detail;
  EXPECT_NE(revoked[0].detail.find("never sent"), std::string::npos) << revoked[0].detail;
  EXPECT_EQ(AuditCount("\"erp_call_revoked\""), 1u);
  EXPECT_EQ(MetricCount("_unknown", "denied"), 1);

  // Dead: no later pass looks at it again.
  clock_.Advance(3'600'000);
  EXPECT_EQ(v150->DrainPending(clock_.NowMillis())->revoked, 0);
  EXPECT_EQ(erp_->requests_total(), 1u);
}

TEST_F(CapabilityRecheckTest,
       AResendOfACallWhosePluginIsNoLongerLoadedIsRevokedAndNamedFromItsRecord) {
  ASSERT_NO_FATAL_FAILURE(LeaveUnsent(key_, "22"));
  auto none = WorkerFor({});  // the plugin was removed
  clock_.Advance(60'000);
  EXPECT_EQ(none->DrainPending(clock_.NowMillis())->revoked, 1);
  EXPECT_EQ(erp_->requests_total(), 1u);
  EXPECT_EQ(Row(key_).state, OutboxState::kDead);
  const auto revoked = Entries(DlqClass::kCapabilityRevoked);
  ASSERT_EQ(revoked.size(), 1u);
  EXPECT_EQ(revoked[0].plugin, kTriagePlugin) << "named from the event's idempotency record";
  EXPECT_NE(revoked[0].detail.find("is not loaded"), std::string::npos) << revoked[0].detail;
}

TEST_F(CapabilityRecheckTest, AVersionThatStillDeclaresTheCallResendsItAsBefore) {
  ASSERT_NO_FATAL_FAILURE(LeaveUnsent(key_, "23"));
  auto v150 = WorkerFor({Version150({kFulfil})});
  clock_.Advance(60'000);
  EXPECT_EQ(v150->DrainPending(clock_.NowMillis())->answered, 1);
  EXPECT_EQ(erp_->effects_for_key(ErpCallKey(key_, kTriagePlugin, 0)), 1u);
  EXPECT_TRUE(Entries(DlqClass::kCapabilityRevoked).empty());
}

TEST_F(CapabilityRecheckTest, AConfirmedIntentOfARevokedCapabilityIsNeverSent) {
  auto g = ErpGateway::Create(env_, *caps_, ErpDelivery{kTriagePlugin, key_, Claim(key_), 3});
  ASSERT_TRUE(g.ok());
  cg_bytes out{nullptr, 0};
  ASSERT_EQ((*g)->Call("POST", "/orders/24/fulfil", "{}", &out), CG_HELD);
  auto v150 = WorkerFor({Version150()});
  ASSERT_EQ(*outbox_->ConfirmHeld(key_, clock_.NowMillis()), 1);  // `idem confirm`
  EXPECT_EQ(v150->DrainPending(clock_.NowMillis())->revoked, 1);
  EXPECT_EQ(erp_->requests_total(), 0u);
  EXPECT_EQ(Row(key_).state, OutboxState::kDead);
  EXPECT_EQ(Entries(DlqClass::kCapabilityRevoked).size(), 1u);
}

TEST_F(CapabilityRecheckTest, ADlqReplayOfARevokedCallRevivesNothing) {
  ErpAnswer down;
  down.status = 500;
  erp_->SetAnswer("/orders/25/fulfil", down);
  EXPECT_EQ(Call(key_, "POST", "/orders/25/fulfil"), CG_UNAVAILABLE);
  for (int i = 0; i < 3; ++i) {  // attempts 4: spent
    clock_.Advance(60'000);
    (void)Drain();
  }
  ASSERT_EQ(Row(key_).state, OutboxState::kDead);
  const auto exhausted = Entries(DlqClass::kTransientExhausted);
  ASSERT_EQ(exhausted.size(), 1u);
  const size_t sent = erp_->requests_total();
  erp_->SetAnswer("/orders/25/fulfil", ErpAnswer{});

  auto v150 = WorkerFor({Version150()});
  auto replayed = v150->ReplayCall(exhausted[0]);
  ASSERT_TRUE(replayed.ok()) << replayed.error().ToString();
  EXPECT_EQ(*replayed, CallReplay::kRevoked);
  EXPECT_EQ(Row(key_).state, OutboxState::kDead) << "not revived";
  clock_.Advance(60'000);
  EXPECT_EQ(v150->DrainPending(clock_.NowMillis())->answered, 0);
  EXPECT_EQ(erp_->requests_total(), sent);
  EXPECT_EQ(erp_->effects_total(), 0u);
  ASSERT_EQ(Entries(DlqClass::kCapabilityRevoked).size(), 1u);
  EXPECT_EQ(AuditCount("\"via\":\"dlq_replay\""), 1u);
}

TEST_F(CapabilityRecheckTest, ARevokedCallIsDeadLetteredEvenWhilePaused) {
  ASSERT_NO_FATAL_FAILURE(LeaveUnsent(key_, "26"));
  ASSERT_TRUE(*dlq_->Pause(kTriagePlugin, kFulfil, "operator", "cli:test"));
  ASSERT_TRUE(pauses_.Refresh(*dlq_).ok());
  auto none = WorkerFor({});
  clock_.Advance(60'000);
  // A pause holds a call that may go out later; a revoked one never may: it does not wait.
  EXPECT_EQ(none->DrainPending(clock_.NowMillis())->revoked, 1);
  EXPECT_EQ(Row(key_).state, OutboxState::kDead);
}

TEST_F(CapabilityRecheckTest, ARowAnotherSendOwnsIsLeftToThatSend) {
  ASSERT_NO_FATAL_FAILURE(LeaveUnsent(key_, "27"));
  const int64_t now = clock_.NowMillis() + 60'000;
  clock_.Advance(60'000);
  const OutboxRow due = Row(key_);
  // Another host, still loading the version that declares the call, is sending it now.
  auto theirs = outbox_->Claim(key_, 0, now, "send:other-host:1:0:1", now + 10'000);
  ASSERT_TRUE(theirs.ok() && theirs->has_value());
  EXPECT_EQ(SendOutboxRow(env_, due, ErpCallTarget{}, now, nullptr), SendResult::kBusy);
  EXPECT_EQ(Row(key_).state, OutboxState::kSent);
  EXPECT_EQ(Row(key_).claimed_by, "send:other-host:1:0:1");
  EXPECT_TRUE(Entries(DlqClass::kCapabilityRevoked).empty());
}

TEST_F(CapabilityRecheckTest, APauseSetWhileARowWaitsHoldsItUntilResumedThenItIsSentOnce) {
  ASSERT_NO_FATAL_FAILURE(LeaveUnsent(key_, "28"));
  ASSERT_TRUE(*dlq_->Pause(kTriagePlugin, kFulfil, "operator", "cli:test"));
  ASSERT_TRUE(pauses_.Refresh(*dlq_).ok());  // the host's loop re-reads the pauses
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(60'000);
    EXPECT_EQ(Drain().not_sent, 1) << "pass " << i;
  }
  EXPECT_EQ(erp_->requests_total(), 1u);
  EXPECT_EQ(Row(key_).state, OutboxState::kSent) << "a paused call waits; it is not dead-lettered";
  EXPECT_TRUE(Entries(DlqClass::kCapabilityRevoked).empty());

  ASSERT_TRUE(*dlq_->Resume(kTriagePlugin, kFulfil, "cli:test"));
  ASSERT_TRUE(pauses_.Refresh(*dlq_).ok());
  clock_.Advance(kPausedRecheckMs);
  EXPECT_EQ(Drain().answered, 1);
  clock_.Advance(3'600'000);
  EXPECT_EQ(Drain().answered, 0);
  EXPECT_EQ(erp_->effects_for_key(ErpCallKey(key_, kTriagePlugin, 0)), 1u);
  EXPECT_EQ(erp_->requests_total(), 2u);
}

}  // namespace
}  // namespace clawguard::host
