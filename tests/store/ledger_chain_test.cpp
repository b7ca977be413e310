// ledger_chain_test.cpp — LedgerRowHash's encoding (known answer), every way VerifyLedgerChain
// catches a broken chain, and the recording rules (CheckLedgerRecord), on rows held in memory.
#include <gtest/gtest.h>

#include "clawguard/store/ledger.h"
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard {
namespace {

std::vector<LedgerRow> Chain(int n) {
  std::vector<LedgerRow> rows;
  std::string prev(64, '0');
  for (int i = 1; i <= n; ++i) {
    LedgerRow r;
    r.seq = i;
    r.kind = i % 2 ? LedgerKind::kRelease : LedgerKind::kDeploy;
    r.name = "acme-orders";
    r.version = "1." + std::to_string(i) + ".0";
    r.sha256 = std::string(64, static_cast<char>('a' + i % 6));
    r.time = 1700000000 + i;
    r.prev_hash = prev;
    r.hash = LedgerRowHash(r);
    prev = r.hash;
    rows.push_back(r);
  }
  return rows;
}

void ExpectTampered(const Status& st, const std::string& fragment) {
  EXPECT_THAT(st, HasReason(Reason::kLedgerTampered)) << st.ToString();
  EXPECT_NE(st.message().find(fragment), std::string::npos) << st.message();
}

TEST(LedgerChainTest, RowHashKnownAnswer) {
  LedgerRow r;
  r.seq = 1;
  r.kind = LedgerKind::kRelease;
  r.name = "acme-orders";
  r.version = "1.4.2";
  r.sha256 = std::string(64, 'a');
  r.time = 1700000000;
  r.prev_hash = std::string(64, '0');
  r.hash = "ignored";
  // sha256 over 4-byte big-endian length-prefixed fields (computed independently with Python).
  EXPECT_EQ(LedgerRowHash(r), "1e4f6dc0c1acf9b797baabf9cacb9d164379c8735096a7359083aea1183a6e10");
  EXPECT_EQ(LedgerKindName(LedgerKind::kRelease), "release");
  EXPECT_EQ(LedgerKindName(LedgerKind::kDeploy), "deploy");
}

TEST(LedgerChainTest, KindNamesRoundTripAndUnknownKindsAreTampering) {
  for (LedgerKind k :
       {LedgerKind::kRelease, LedgerKind::kDeploy, LedgerKind::kAttempt, LedgerKind::kAllowlist}) {
    EXPECT_EQ(LedgerKindFromName(LedgerKindName(k)), k);
  }
  EXPECT_EQ(LedgerKindName(LedgerKind::kAttempt), "attempt");
  EXPECT_EQ(LedgerKindName(LedgerKind::kAllowlist), "allowlist");
  EXPECT_FALSE(LedgerKindFromName("Deploy"));
  ExpectTampered(LedgerKindFromText("floor", 7).error(),
                 "seq 7: kind 'floor' is not one this build knows");
}

// Row is a stored row for the rules (hash fields are not looked at).
LedgerRow Row(int64_t seq, LedgerKind kind, const std::string& name, const std::string& version,
              char sha) {
  LedgerRow r;
  r.seq = seq;
  r.kind = kind;
  r.name = name;
  r.version = version;
  r.sha256 = std::string(64, sha);
  return r;
}

TEST(LedgerChainTest, RecordingRulesForPluginRows) {
  const std::vector<LedgerRow> rows = {Row(1, LedgerKind::kRelease, "acme-orders", "2.0.0", 'a'),
                                       Row(2, LedgerKind::kAttempt, "acme-orders", "1.9.0", 'b'),
                                       Row(3, LedgerKind::kDeploy, "acme-orders", "1.5.0", 'c')};
  const std::string b(64, 'b'), c(64, 'c'), d(64, 'd');
  const LedgerRecordRules refuse{}, allow{true, {}};
  // Overwrites, of every kind, against every kind.
  for (LedgerKind k : {LedgerKind::kRelease, LedgerKind::kAttempt, LedgerKind::kDeploy}) {
    EXPECT_THAT(CheckLedgerRecord(rows, k, "acme-orders", "2.0.0", d, allow),
                HasReason(Reason::kVersionOverwritten));
    EXPECT_THAT(CheckLedgerRecord(rows, k, "acme-orders", "1.9.0", d, allow),
                HasReason(Reason::kVersionOverwritten));
  }
  // Rollback: deploy rows only are the floor; attempt and deploy are held to it.
  EXPECT_THAT(CheckLedgerRecord(rows, LedgerKind::kDeploy, "acme-orders", "1.4.0", d, refuse),
              HasReason(Reason::kVersionRollback));
  EXPECT_THAT(CheckLedgerRecord(rows, LedgerKind::kAttempt, "acme-orders", "1.4.0", d, refuse),
              HasReason(Reason::kVersionRollback));
  EXPECT_TRUE(
      CheckLedgerRecord(rows, LedgerKind::kRelease, "acme-orders", "1.4.0", d, refuse).value());
  EXPECT_TRUE(
      CheckLedgerRecord(rows, LedgerKind::kDeploy, "acme-orders", "1.4.0", d, allow).value());
  EXPECT_TRUE(
      CheckLedgerRecord(rows, LedgerKind::kDeploy, "acme-orders", "1.6.0", d, refuse).value());
  // 1.9.0 was only attempted (say, refused after dlopen): 1.6.0 above is not a rollback.
  EXPECT_TRUE(
      CheckLedgerRecord(rows, LedgerKind::kDeploy, "acme-orders", "1.9.0", b, refuse).value());
  // Identical rows are no-ops; the same bytes under another kind are appended.
  EXPECT_FALSE(
      CheckLedgerRecord(rows, LedgerKind::kDeploy, "acme-orders", "1.5.0", c, refuse).value());
  EXPECT_TRUE(
      CheckLedgerRecord(rows, LedgerKind::kAttempt, "acme-orders", "1.5.0", c, refuse).value());
  // Malformed rows are the caller's bug.
  EXPECT_THAT(CheckLedgerRecord(rows, LedgerKind::kDeploy, "acme-orders", "latest", d, refuse),
              HasReason(Reason::kInternal));
  EXPECT_THAT(CheckLedgerRecord(rows, LedgerKind::kDeploy, "acme-orders", "1.0.0", "ABC", refuse),
              HasReason(Reason::kInternal));
}

TEST(LedgerChainTest, RecordingRulesForAllowlistRows) {
  const std::string name(kAllowlistLedgerName);
  const std::vector<LedgerRow> rows = {Row(1, LedgerKind::kAllowlist, name, "3", 'a'),
                                       Row(2, LedgerKind::kAllowlist, name, "12", 'b')};
  const std::string d(64, 'd');
  EXPECT_EQ(HighestAllowlistVersion(rows), 12);  // numeric, not text order
  EXPECT_THAT(CheckLedgerRecord(rows, LedgerKind::kAllowlist, name, "11", d, {}),
              HasReason(Reason::kAllowlistInvalid));
  EXPECT_FALSE(CheckLedgerRecord(rows, LedgerKind::kAllowlist, name, "12", d, {}).value());
  EXPECT_TRUE(CheckLedgerRecord(rows, LedgerKind::kAllowlist, name, "13", d, {}).value());
  for (const std::string bad : {"012", "-1", "0", "1.0", "", "99999999999999999999"}) {
    EXPECT_THAT(CheckLedgerRecord(rows, LedgerKind::kAllowlist, name, bad, d, {}),
                HasReason(Reason::kInternal))
        << bad;
  }
  EXPECT_FALSE(HighestAllowlistVersion({}).has_value());
}

TEST(LedgerChainTest, IntactChainPassesWithAndWithoutAnchor) {
  auto rows = Chain(5);
  EXPECT_TRUE(VerifyLedgerChain(rows, std::nullopt).ok());
  EXPECT_TRUE(VerifyLedgerChain(rows, LedgerCheckpoint{5, rows[4].hash}).ok());
  EXPECT_TRUE(
      VerifyLedgerChain(rows, LedgerCheckpoint{3, rows[2].hash}).ok());  // others appended since
  EXPECT_TRUE(VerifyLedgerChain({}, LedgerCheckpoint{0, std::string(64, '0')}).ok());
  EXPECT_TRUE(VerifyLedgerChain({}, std::nullopt).ok());
}

TEST(LedgerChainTest, DetectsAnEditedRow) {
  auto rows = Chain(5);
  rows[2].sha256 = std::string(64, 'f');
  ExpectTampered(VerifyLedgerChain(rows, std::nullopt), "seq 3");
}

TEST(LedgerChainTest, DetectsReorderedRows) {
  auto rows = Chain(5);
  std::swap(rows[1], rows[2]);
  ExpectTampered(VerifyLedgerChain(rows, std::nullopt), "seq 2");
  // Renumbered after the swap: the prev_hash links break instead.
  rows[1].seq = 2;
  rows[2].seq = 3;
  ExpectTampered(VerifyLedgerChain(rows, std::nullopt), "seq 2");
}

TEST(LedgerChainTest, DetectsARemovedMiddleRow) {
  auto rows = Chain(5);
  rows.erase(rows.begin() + 1);
  ExpectTampered(VerifyLedgerChain(rows, std::nullopt), "seq 2");
}

TEST(LedgerChainTest, CutTailNeedsAnAnchor) {
  auto rows = Chain(5);
  const LedgerCheckpoint anchor{5, rows[4].hash};
  rows.resize(3);
  EXPECT_TRUE(VerifyLedgerChain(rows, std::nullopt).ok());
  ExpectTampered(VerifyLedgerChain(rows, anchor), "seq 4");
}

TEST(LedgerChainTest, RehashedLedgerNeedsAnAnchor) {
  auto rows = Chain(5);
  const LedgerCheckpoint anchor{4, rows[3].hash};
  rows[1].sha256 = std::string(64, 'f');
  std::string prev(64, '0');
  for (auto& r : rows) {  // an attacker with write access re-hashes everything consistently
    r.prev_hash = prev;
    r.hash = LedgerRowHash(r);
    prev = r.hash;
  }
  EXPECT_TRUE(VerifyLedgerChain(rows, std::nullopt).ok());
  ExpectTampered(VerifyLedgerChain(rows, anchor), "seq 4");
  ExpectTampered(VerifyLedgerChain({}, LedgerCheckpoint{0, std::string(64, '1')}), "seq 0");
}

}  // namespace
}  // namespace clawguard
