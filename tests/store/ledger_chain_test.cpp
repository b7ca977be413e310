// ledger_chain_test.cpp — LedgerRowHash's encoding (known answer) and every way VerifyLedgerChain
// catches a broken chain, on rows held in memory.
#include <gtest/gtest.h>

#include "clawguard/store/ledger.h"

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
  EXPECT_EQ(st.reason(), Reason::kLedgerTampered) << st.ToString();
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

TEST(LedgerChainTest, IntactChainPassesWithAndWithoutAnchor) {
  auto rows = Chain(5);
  EXPECT_TRUE(VerifyLedgerChain(rows, std::nullopt).ok());
  EXPECT_TRUE(VerifyLedgerChain(rows, LedgerCheckpoint{5, rows[4].hash}).ok());
  EXPECT_TRUE(VerifyLedgerChain(rows, LedgerCheckpoint{3, rows[2].hash}).ok());  // others appended since
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
