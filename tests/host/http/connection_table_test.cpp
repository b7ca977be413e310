// connection_table_test.cpp — ConnectionTable: which idle connection a new one replaces, and when
// a new one is refused (the HttpServer tests drive the same rules over real sockets).
#include "host/http/connection_table.h"

#include <gtest/gtest.h>

#include <deque>

namespace clawguard::host {
namespace {

using Entry = ConnectionTable::Entry;
using SteadyTime = ConnectionTable::SteadyTime;

class ConnectionTableTest : public ::testing::Test {
 protected:
  // Connect admits a new entry from |peer|; the doomed owners go to shed_.
  Entry* Connect(ConnectionTable& t, const std::string& peer, bool* admitted = nullptr) {
    entries_.emplace_back();
    Entry* e = &entries_.back();
    e->owner = e;
    e->peer = peer;
    const bool ok = t.Admit(e, &shed_, now_);
    if (admitted != nullptr) *admitted = ok;
    return e;
  }
  std::deque<Entry> entries_;  // stable addresses
  std::vector<void*> shed_;
  SteadyTime now_ = std::chrono::steady_clock::now();
};

TEST_F(ConnectionTableTest, ANewConnectionOverThePeerBoundShedsThatPeersOldestIdleOne) {
  ConnectionTable t(/*max=*/10, /*max_per_peer=*/2);
  Entry* a1 = Connect(t, "10.0.0.1");
  Entry* b1 = Connect(t, "10.0.0.2");
  Connect(t, "10.0.0.1");
  bool admitted = false;
  Connect(t, "10.0.0.1", &admitted);
  EXPECT_TRUE(admitted);
  ASSERT_EQ(shed_.size(), 1u);
  EXPECT_EQ(shed_[0], a1);  // its own oldest, not the other peer's (b1 is older than a2)
  EXPECT_TRUE(a1->doomed);
  EXPECT_FALSE(b1->doomed);
  const ConnectionStats s = t.Stats(now_);
  EXPECT_EQ(s.open, 3u);
  EXPECT_EQ(s.peers, 2u);
  EXPECT_EQ(s.shed_total, 1u);
  EXPECT_TRUE(s.shedding);
}

TEST_F(ConnectionTableTest, UnprovenIdleConnectionsGoBeforeProvenOnesAndBusyOnesNever) {
  ConnectionTable t(/*max=*/3, /*max_per_peer=*/3);
  Entry* proven = Connect(t, "p");
  ASSERT_TRUE(t.Busy(proven));
  t.Idle(proven, /*proven=*/true, /*first=*/false);
  Entry* busy = Connect(t, "p");
  ASSERT_TRUE(t.Busy(busy));
  Entry* idle = Connect(t, "p");
  Connect(t, "q");
  ASSERT_EQ(shed_.size(), 1u);
  EXPECT_EQ(shed_[0], idle);   // unproven, though the proven one is older
  EXPECT_FALSE(t.Busy(idle));  // a doomed connection's request is never handled
  Entry* newest = Connect(t, "r");
  ASSERT_EQ(shed_.size(), 2u);
  EXPECT_EQ(shed_[1], &entries_[3]);  // "q", unproven, goes next
  Connect(t, "s");
  ASSERT_EQ(shed_.size(), 3u);
  EXPECT_EQ(shed_[2], newest);
  EXPECT_FALSE(proven->doomed);
  EXPECT_FALSE(busy->doomed);
}

TEST_F(ConnectionTableTest, ProvenIdleConnectionsGoLeastRecentlyUsedFirstWhenNothingElseIsIdle) {
  ConnectionTable t(/*max=*/2, /*max_per_peer=*/2);
  Entry* a = Connect(t, "p");
  Entry* b = Connect(t, "p");
  for (Entry* e : {a, b}) {
    ASSERT_TRUE(t.Busy(e));
    t.Idle(e, /*proven=*/true, /*first=*/false);
  }
  ASSERT_TRUE(t.Busy(a));  // a is used again: b is now the least recently used
  t.Idle(a, /*proven=*/true, /*first=*/false);
  Connect(t, "q");
  ASSERT_EQ(shed_.size(), 1u);
  EXPECT_EQ(shed_[0], b);
}

TEST_F(ConnectionTableTest, WithNothingIdleANewConnectionIsRefused) {
  ConnectionTable t(/*max=*/2, /*max_per_peer=*/1);
  Entry* a = Connect(t, "p");
  ASSERT_TRUE(t.Busy(a));
  bool admitted = true;
  Connect(t, "p", &admitted);  // over the peer bound, and the peer's only connection is busy
  EXPECT_FALSE(admitted);
  Entry* b = Connect(t, "q");
  ASSERT_TRUE(t.Busy(b));
  Connect(t, "r", &admitted);  // over the listener bound, nothing idle
  EXPECT_FALSE(admitted);
  EXPECT_TRUE(shed_.empty());
  const ConnectionStats s = t.Stats(now_);
  EXPECT_EQ(s.open, 2u);
  EXPECT_EQ(s.refused_total, 2u);
  EXPECT_EQ(s.peers, 2u);  // the refused peer "r" left no record
  // Closing a busy connection makes room again.
  t.Remove(a);
  Connect(t, "r", &admitted);
  EXPECT_TRUE(admitted);
}

TEST_F(ConnectionTableTest, AClosingConnectionIsFirstInLine) {
  ConnectionTable t(/*max=*/2, /*max_per_peer=*/2);
  Entry* old_idle = Connect(t, "p");
  Entry* closing = Connect(t, "p");
  ASSERT_TRUE(t.Busy(closing));
  t.Idle(closing, /*proven=*/false, /*first=*/true);  // answered with Connection: close, draining
  Connect(t, "q");
  ASSERT_EQ(shed_.size(), 1u);
  EXPECT_EQ(shed_[0], closing);  // before the older idle one
  EXPECT_FALSE(old_idle->doomed);
}

TEST_F(ConnectionTableTest, SheddingIsReportedForTheWindowOnly) {
  ConnectionTable t(/*max=*/1, /*max_per_peer=*/1);
  EXPECT_FALSE(t.Stats(now_).shedding);
  Connect(t, "p");
  Connect(t, "p");
  EXPECT_TRUE(t.Stats(now_).shedding);
  EXPECT_FALSE(t.Stats(now_ + kSheddingWindow).shedding);
}

TEST_F(ConnectionTableTest, RemoveAndDoomKeepTheCountsExact) {
  ConnectionTable t(/*max=*/3, /*max_per_peer=*/3);
  Entry* a = Connect(t, "p");
  Entry* b = Connect(t, "q");
  t.Remove(a);
  t.Remove(a);  // twice: nothing more
  EXPECT_EQ(t.Stats(now_).open, 1u);
  EXPECT_EQ(t.Stats(now_).peers, 1u);
  Connect(t, "r");
  Connect(t, "s");
  Connect(t, "t");  // sheds b, the oldest
  ASSERT_EQ(shed_.size(), 1u);
  EXPECT_EQ(shed_[0], b);
  t.Remove(b);  // the doomed connection ends: already counted out
  EXPECT_EQ(t.Stats(now_).open, 3u);
  EXPECT_EQ(t.Stats(now_).peers, 3u);
}

}  // namespace
}  // namespace clawguard::host
