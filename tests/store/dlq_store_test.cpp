// dlq_store_test.cpp — conformance suite of Dlq (entries, replay claims, capability pauses,
// operator actions), typed over the engines: a factory per engine. Fixed time through
// FixedClock; no sleeps.
// Over 500 lines on purpose: a conformance suite is one typed fixture run on every engine.
//
// This one file is compiled twice: into store_tests (SQLite only) and into pg_tests with
// CLAWGUARD_TEST_PG (tests/pg/CMakeLists.txt), where SQLite and PostgreSQL run the same typed
// cases, the latter on a fresh database of the fixture cluster per test.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "clawguard/clock.h"
#include "clawguard/store/dlq.h"
#include "sqlite/sqlite_dlq.h"
#include "support/fixed_time.h"
#include "support/reason_matchers.h"
#include "support/temp_dir.h"
#ifdef CLAWGUARD_TEST_PG
#include "pg/support/pg_test_db.h"
#include "postgresql/pg_dlq.h"
#endif

using ::clawguard::testing::HasReason;

namespace clawguard {
namespace {

using ::clawguard::testing::kLease;
using ::clawguard::testing::kT0;

// SqliteDlqFactory opens engines on one database file in a temp dir (a second Open is a second
// connection: another host on the same store).
class SqliteDlqFactory {
 public:
  std::unique_ptr<Dlq> Open(const Clock& clock) {
    auto d = sqlite::SqliteDlq::Open(dir_.Sub("state.db"), clock);
    EXPECT_TRUE(d.ok()) << d.error().ToString();
    return d.ok() ? std::unique_ptr<Dlq>(std::move(d).value()) : nullptr;
  }

 private:
  testing::TempDir dir_;
};

#ifdef CLAWGUARD_TEST_PG
// PgDlqFactory opens engines on one fresh database; every Open gets its own connection pool
// (another host), with the test's clock injected (production uses the database clock).
class PgDlqFactory {
 public:
  std::unique_ptr<Dlq> Open(const Clock& clock) {
    pg::PgOptions options;
    options.clock = &clock;
    auto pool = pg::PgPool::Create(db_.url(), options);
    EXPECT_TRUE(pool.ok()) << pool.error().ToString();
    if (!pool.ok()) return nullptr;
    auto d = pg::PgDlq::Open(*pool);
    EXPECT_TRUE(d.ok()) << d.error().ToString();
    return d.ok() ? std::unique_ptr<Dlq>(std::move(d).value()) : nullptr;
  }

 private:
  testing::PgTestDb db_;
};
#endif

std::string Key(char c) { return std::string(64, c); }

template <typename Factory>
class DlqConformanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dlq_ = factory_.Open(clock_);
    ASSERT_NE(dlq_, nullptr);
  }
  static DlqNewEntry Event(DlqClass c, const std::string& key) {
    DlqNewEntry e;
    e.klass = c;
    e.event_key = key;
    e.plugin = "acme-orders";
    e.route = "order.created";
    e.detail = "breaker opened after 3 failures";
    e.request = DlqRequest{"msg_1", "application/json", R"({"id":1001})"};
    return e;
  }
  static DlqNewEntry Call(DlqClass c, const std::string& key, int status) {
    DlqNewEntry e;
    e.klass = c;
    e.event_key = key;
    e.plugin = "acme-orders";
    e.route = "order.created";
    e.call_index = 0;
    e.endpoint = "POST /orders/{id}/fulfil";
    e.erp_status = status;
    e.detail = "ERP answered " + std::to_string(status);
    return e;
  }
  int64_t MustAdd(const DlqNewEntry& e) {
    auto a = dlq_->Add(e);
    EXPECT_TRUE(a.ok()) << a.error().ToString();
    return a.ok() ? a->id : 0;
  }
  DlqEntry MustGet(int64_t id) {
    auto g = dlq_->Get(id);
    EXPECT_TRUE(g.ok() && g->has_value());
    return g.ok() && g->has_value() ? **g : DlqEntry{};
  }

  Factory factory_;
  FixedClock clock_{kT0};
  std::unique_ptr<Dlq> dlq_;
};

#ifdef CLAWGUARD_TEST_PG
using DlqEngines = ::testing::Types<SqliteDlqFactory, PgDlqFactory>;
#else
using DlqEngines = ::testing::Types<SqliteDlqFactory>;
#endif
TYPED_TEST_SUITE(DlqConformanceTest, DlqEngines);

TYPED_TEST(DlqConformanceTest, AddStoresEveryField) {
  const int64_t id = this->MustAdd(this->Event(DlqClass::kBreaker, Key('a')));
  const DlqEntry e = this->MustGet(id);
  EXPECT_EQ(e.klass, DlqClass::kBreaker);
  EXPECT_EQ(e.event_key, Key('a'));
  EXPECT_EQ(e.plugin, "acme-orders");
  EXPECT_EQ(e.route, "order.created");
  EXPECT_EQ(e.call_index, kDlqEventLevel);
  EXPECT_EQ(e.state, DlqState::kOpen);
  EXPECT_EQ(e.occurrences, 1);
  EXPECT_EQ(e.attempts, 0);
  EXPECT_EQ(e.created_ms, kT0);
  ASSERT_TRUE(e.has_request && e.request.has_value());
  EXPECT_EQ(e.request->webhook_id, "msg_1");
  EXPECT_EQ(e.request->content_type, "application/json");
  EXPECT_EQ(e.request->body, R"({"id":1001})");

  const int64_t call = this->MustAdd(this->Call(DlqClass::kNotFound, Key('a'), 404));
  const DlqEntry c = this->MustGet(call);
  EXPECT_NE(call, id);  // another class of the same event is another entry
  EXPECT_EQ(c.call_index, 0);
  EXPECT_EQ(c.endpoint, "POST /orders/{id}/fulfil");
  EXPECT_EQ(c.erp_status, 404);
  EXPECT_FALSE(c.has_request);
}

TYPED_TEST(DlqConformanceTest, RepeatedAddFoldsIntoOneUnresolvedEntry) {
  auto first = this->dlq_->Add(this->Event(DlqClass::kBreaker, Key('b')));
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->created);
  for (int i = 0; i < 5; ++i) {
    this->clock_.Advance(1000);
    auto again = this->dlq_->Add(this->Event(DlqClass::kBreaker, Key('b')));
    ASSERT_TRUE(again.ok());
    EXPECT_FALSE(again->created);
    EXPECT_EQ(again->id, first->id);
  }
  const DlqEntry e = this->MustGet(first->id);
  EXPECT_EQ(e.occurrences, 6);
  EXPECT_EQ(e.created_ms, kT0);
  EXPECT_EQ(e.updated_ms, kT0 + 5000);
  auto all = this->dlq_->List(DlqFilter{});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 1u);

  // Once resolved, the same failure makes a fresh entry.
  ASSERT_TRUE(this->dlq_->Drop(first->id, "handled", "cli:test").ok());
  auto fresh = this->dlq_->Add(this->Event(DlqClass::kBreaker, Key('b')));
  ASSERT_TRUE(fresh.ok());
  EXPECT_TRUE(fresh->created);
  EXPECT_NE(fresh->id, first->id);
}

TYPED_TEST(DlqConformanceTest, CapsDetailAndOmitsOversizedBody) {
  DlqNewEntry e = this->Event(DlqClass::kManualReview, Key('c'));
  e.detail = std::string(kMaxDlqDetail * 3, 'x');
  e.request->body = std::string(kMaxDlqRequestBody + 1, 'y');
  const DlqEntry got = this->MustGet(this->MustAdd(e));
  EXPECT_LE(got.detail.size(), kMaxDlqDetail);
  EXPECT_NE(got.detail.find("[truncated]"), std::string::npos);
  EXPECT_FALSE(got.has_request);
  EXPECT_TRUE(got.request_omitted);
  EXPECT_FALSE(got.request.has_value());
  const Status replay = this->dlq_->RequestReplay(got.id, "cli:test");
  EXPECT_THAT(replay, HasReason(Reason::kNotFound));
  EXPECT_NE(replay.message().find("no stored request"), std::string::npos) << replay.message();
}

TYPED_TEST(DlqConformanceTest, RefusesMalformedEntries) {
  DlqNewEntry e = this->Event(DlqClass::kBreaker, "not-hex");
  EXPECT_THAT(this->dlq_->Add(e), HasReason(Reason::kInternal));
  e = this->Event(DlqClass::kBreaker, Key('d'));
  e.plugin.clear();
  EXPECT_THAT(this->dlq_->Add(e), HasReason(Reason::kInternal));
}

TYPED_TEST(DlqConformanceTest, ListFiltersAndOrders) {
  const int64_t a = this->MustAdd(this->Call(DlqClass::kAuth, Key('1'), 401));
  this->clock_.Advance(10);
  const int64_t b = this->MustAdd(this->Call(DlqClass::kConflict, Key('2'), 409));
  this->clock_.Advance(10);
  const int64_t c = this->MustAdd(this->Call(DlqClass::kAuth, Key('3'), 403));
  ASSERT_TRUE(this->dlq_->Drop(c, "fixed", "cli:test").ok());

  auto newest = this->dlq_->List(DlqFilter{});
  ASSERT_TRUE(newest.ok());
  ASSERT_EQ(newest->size(), 3u);
  EXPECT_EQ((*newest)[0].id, c);
  EXPECT_EQ((*newest)[2].id, a);
  EXPECT_FALSE((*newest)[0].request.has_value());

  auto auth_open = this->dlq_->List(DlqFilter{DlqClass::kAuth, DlqState::kOpen, 10, false});
  ASSERT_TRUE(auth_open.ok());
  ASSERT_EQ(auth_open->size(), 1u);
  EXPECT_EQ((*auth_open)[0].id, a);

  auto oldest_one = this->dlq_->List(DlqFilter{std::nullopt, std::nullopt, 1, false});
  ASSERT_TRUE(oldest_one.ok());
  ASSERT_EQ(oldest_one->size(), 1u);
  EXPECT_EQ((*oldest_one)[0].id, a);
  (void)b;

  EXPECT_THAT(this->dlq_->List(DlqFilter{std::nullopt, std::nullopt, 0, true}),
              HasReason(Reason::kUsage));
  EXPECT_THAT(this->dlq_->List(DlqFilter{std::nullopt, std::nullopt, kMaxDlqList + 1, true}),
              HasReason(Reason::kUsage));
}

TYPED_TEST(DlqConformanceTest, CountsUnresolvedByClassAndAge) {
  this->MustAdd(this->Call(DlqClass::kAuth, Key('1'), 401));  // 25 h old at the end
  this->clock_.Advance(2 * kDlqHourMs);
  this->MustAdd(this->Call(DlqClass::kAuth, Key('2'), 401));      // 23 h
  this->MustAdd(this->Call(DlqClass::kConflict, Key('3'), 409));  // 23 h
  this->clock_.Advance(22 * kDlqHourMs + 30 * 60'000);
  this->MustAdd(this->Call(DlqClass::kAuth, Key('4'), 401));  // 30 min
  const int64_t dropped = this->MustAdd(this->Call(DlqClass::kAuth, Key('5'), 401));
  ASSERT_TRUE(this->dlq_->Drop(dropped, "", "cli:test").ok());
  this->clock_.Advance(30 * 60'000);

  auto counts = this->dlq_->CountUnresolved();
  ASSERT_TRUE(counts.ok());
  std::set<std::tuple<std::string, std::string, int64_t>> got;
  for (const auto& c : *counts) got.emplace(DlqClassName(c.klass), DlqAgeName(c.age), c.count);
  const std::set<std::tuple<std::string, std::string, int64_t>> want = {
      {"auth", "older", 1}, {"auth", "lt_24h", 1}, {"auth", "lt_1h", 1}, {"conflict", "lt_24h", 1}};
  EXPECT_EQ(got, want);
}

TYPED_TEST(DlqConformanceTest, ReplayLifecycle) {
  const int64_t id = this->MustAdd(this->Event(DlqClass::kBreaker, Key('e')));
  auto none = this->dlq_->ClaimReplays("host-a", 10, kLease);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());  // open without a due time: waits for an operator

  ASSERT_TRUE(this->dlq_->RequestReplay(id, "cli:alice").ok());
  EXPECT_EQ(this->MustGet(id).state, DlqState::kReplayRequested);
  EXPECT_THAT(this->dlq_->RequestReplay(id, "cli:alice"),
              HasReason(Reason::kNotFound));  // not open any more

  auto claimed = this->dlq_->ClaimReplays("host-a", 10, kLease);
  ASSERT_TRUE(claimed.ok());
  ASSERT_EQ(claimed->size(), 1u);
  const DlqEntry& c = (*claimed)[0];
  EXPECT_EQ(c.state, DlqState::kReplaying);
  EXPECT_EQ(c.attempts, 1);
  EXPECT_EQ(c.claimed_by, "host-a");
  EXPECT_EQ(c.lease_until_ms, kT0 + kLease);
  ASSERT_TRUE(c.request.has_value());
  EXPECT_EQ(c.request->body, R"({"id":1001})");

  // A live replay cannot be dropped; a failed replay returns the entry to open.
  EXPECT_THAT(this->dlq_->Drop(id, "x", "cli:bob"), HasReason(Reason::kNotFound));
  auto failed = this->dlq_->MarkReplayed(id, c.attempts, /*succeeded=*/false, "ERP still 503", 0);
  ASSERT_TRUE(failed.ok());
  EXPECT_TRUE(*failed);
  DlqEntry e = this->MustGet(id);
  EXPECT_EQ(e.state, DlqState::kOpen);
  EXPECT_EQ(e.detail, "ERP still 503");

  ASSERT_TRUE(this->dlq_->RequestReplay(id, "cli:alice").ok());
  claimed = this->dlq_->ClaimReplays("host-a", 10, kLease);
  ASSERT_TRUE(claimed.ok());
  ASSERT_EQ(claimed->size(), 1u);
  EXPECT_EQ((*claimed)[0].attempts, 2);
  auto done = this->dlq_->MarkReplayed(id, 2, /*succeeded=*/true, "replayed: 200", 0);
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(*done);
  e = this->MustGet(id);
  EXPECT_EQ(e.state, DlqState::kReplayed);
  EXPECT_EQ(e.resolution, "replayed: 200");
  EXPECT_THAT(this->dlq_->Drop(id, "late", "cli:bob"), HasReason(Reason::kNotFound));
}

TYPED_TEST(DlqConformanceTest, ExpiredClaimIsTakenOverAndTheOldClaimIsFenced) {
  const int64_t id = this->MustAdd(this->Call(DlqClass::kTransientExhausted, Key('f'), 503));
  ASSERT_TRUE(this->dlq_->RequestReplay(id, "cli:alice").ok());
  auto first = this->dlq_->ClaimReplays("host-a", 10, kLease);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 1u);

  auto other = this->factory_.Open(this->clock_);  // a second host on the same store
  ASSERT_NE(other, nullptr);
  auto early = other->ClaimReplays("host-b", 10, kLease);
  ASSERT_TRUE(early.ok());
  EXPECT_TRUE(early->empty());  // the lease is live

  this->clock_.Advance(kLease);
  auto taken = other->ClaimReplays("host-b", 10, kLease);
  ASSERT_TRUE(taken.ok());
  ASSERT_EQ(taken->size(), 1u);
  EXPECT_EQ((*taken)[0].attempts, 2);
  EXPECT_EQ((*taken)[0].claimed_by, "host-b");

  auto stale = this->dlq_->MarkReplayed(id, (*first)[0].attempts, true, "host-a finished late", 0);
  ASSERT_TRUE(stale.ok());
  EXPECT_FALSE(*stale);
  EXPECT_EQ(this->MustGet(id).state, DlqState::kReplaying);
  auto ok = other->MarkReplayed(id, 2, true, "done", 0);
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(*ok);
}

TYPED_TEST(DlqConformanceTest, CooldownEntriesAreClaimedWhenDue) {
  DlqNewEntry e = this->Call(DlqClass::kCooldown, Key('c'), 429);
  e.next_attempt_ms = kT0 + 60'000;
  const int64_t id = this->MustAdd(e);
  auto early = this->dlq_->ClaimReplays("host-a", 10, kLease);
  ASSERT_TRUE(early.ok());
  EXPECT_TRUE(early->empty());
  this->clock_.Advance(60'000);
  auto due = this->dlq_->ClaimReplays("host-a", 10, kLease);
  ASSERT_TRUE(due.ok());
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].id, id);
}

TYPED_TEST(DlqConformanceTest, ResolveClosesTheUnresolvedEntryOfAKeyAndClass) {
  const int64_t id = this->MustAdd(this->Call(DlqClass::kCooldown, Key('c'), 429));
  auto none = this->dlq_->Resolve(Key('c'), DlqClass::kAuth, "x");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(*none);
  auto r = this->dlq_->Resolve(Key('c'), DlqClass::kCooldown, "outbox retry answered 200");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(*r);
  const DlqEntry e = this->MustGet(id);
  EXPECT_EQ(e.state, DlqState::kReplayed);
  EXPECT_EQ(e.resolution, "outbox retry answered 200");
  EXPECT_FALSE(*this->dlq_->Resolve(Key('c'), DlqClass::kCooldown, "again"));
}

TYPED_TEST(DlqConformanceTest, ClaimsAreDisjointAndBounded) {
  std::vector<int64_t> ids;
  for (char c : std::string("0123456789")) {
    ids.push_back(this->MustAdd(this->Call(DlqClass::kTransientExhausted, Key(c), 500)));
    ASSERT_TRUE(this->dlq_->RequestReplay(ids.back(), "cli:alice").ok());
  }
  auto other = this->factory_.Open(this->clock_);
  ASSERT_NE(other, nullptr);
  auto a = this->dlq_->ClaimReplays("host-a", 4, kLease);
  auto b = other->ClaimReplays("host-b", 100, kLease);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 4u);
  EXPECT_EQ(b->size(), 6u);
  std::set<int64_t> seen;
  for (const auto& e : *a) seen.insert(e.id);
  for (const auto& e : *b) seen.insert(e.id);
  EXPECT_EQ(seen.size(), 10u);
  EXPECT_THAT(this->dlq_->ClaimReplays("host-a", 0, kLease), HasReason(Reason::kInternal));
}

TYPED_TEST(DlqConformanceTest, UnknownIdsAreNotFound) {
  EXPECT_THAT(this->dlq_->RequestReplay(999, "cli:alice"), HasReason(Reason::kNotFound));
  EXPECT_THAT(this->dlq_->Drop(999, "x", "cli:alice"), HasReason(Reason::kNotFound));
  auto g = this->dlq_->Get(999);
  ASSERT_TRUE(g.ok());
  EXPECT_FALSE(g->has_value());
  auto m = this->dlq_->MarkReplayed(999, 1, true, "", 0);
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(*m);
}

TYPED_TEST(DlqConformanceTest, CapabilityPauses) {
  const std::string cap = "POST /orders/{id}/fulfil";
  auto paused = this->dlq_->IsPaused("acme-orders", cap);
  ASSERT_TRUE(paused.ok());
  EXPECT_FALSE(*paused);
  auto p = this->dlq_->Pause("acme-orders", cap, "ERP answered 401", "host");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(*p);
  p = this->dlq_->Pause("acme-orders", cap, "again", "host");
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(*p);
  EXPECT_TRUE(*this->dlq_->IsPaused("acme-orders", cap));
  EXPECT_FALSE(*this->dlq_->IsPaused("acme-orders", "GET /orders/{id}"));
  EXPECT_FALSE(*this->dlq_->IsPaused("other", cap));
  auto list = this->dlq_->ListPauses();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].reason, "ERP answered 401");
  EXPECT_EQ((*list)[0].actor, "host");
  EXPECT_EQ((*list)[0].since_ms, kT0);
  auto r = this->dlq_->Resume("acme-orders", cap, "cli:alice");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(*r);
  r = this->dlq_->Resume("acme-orders", cap, "cli:alice");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);
  EXPECT_FALSE(*this->dlq_->IsPaused("acme-orders", cap));
  EXPECT_THAT(this->dlq_->Pause("", cap, "x", "host"), HasReason(Reason::kUsage));
}

TYPED_TEST(DlqConformanceTest, OperatorWritesAreRecorded) {
  const int64_t id = this->MustAdd(this->Call(DlqClass::kConflict, Key('d'), 409));
  ASSERT_TRUE(this->dlq_->RequestReplay(id, "cli:alice").ok());
  ASSERT_TRUE(this->dlq_->Pause("acme-orders", "POST /x", "maintenance", "cli:bob").ok());
  ASSERT_TRUE(this->dlq_->RecordOperatorAction("cli:carol", "idem.reset", Key('d'), "").ok());
  EXPECT_THAT(this->dlq_->RequestReplay(id + 100, "cli:mallory"),
              HasReason(Reason::kNotFound));  // refused: not recorded
  auto actions = this->dlq_->ListOperatorActions(10);
  ASSERT_TRUE(actions.ok());
  ASSERT_EQ(actions->size(), 3u);
  EXPECT_EQ((*actions)[0].action, "idem.reset");
  EXPECT_EQ((*actions)[1].action, "capability.pause");
  EXPECT_EQ((*actions)[1].target, "acme-orders POST /x");
  EXPECT_EQ((*actions)[2].action, "dlq.replay");
  EXPECT_EQ((*actions)[2].actor, "cli:alice");
  EXPECT_EQ((*actions)[2].target, std::to_string(id));
  EXPECT_EQ((*actions)[2].time_ms, kT0);
}

TYPED_TEST(DlqConformanceTest, FoldFillsAMissingRequestAndKeepsAStoredOne) {
  DlqNewEntry bare = this->Event(DlqClass::kManualReview, Key('9'));
  bare.request.reset();
  const int64_t id = this->MustAdd(bare);
  EXPECT_FALSE(this->MustGet(id).has_request);
  DlqNewEntry with = this->Event(DlqClass::kManualReview, Key('9'));
  with.request->body = "first body";
  EXPECT_EQ(this->MustAdd(with), id);
  with.request->body = "second body";
  with.detail = "third failure";
  EXPECT_EQ(this->MustAdd(with), id);
  const DlqEntry e = this->MustGet(id);
  ASSERT_TRUE(e.request.has_value());
  EXPECT_EQ(e.request->body, "first body");  // filled once, never replaced
  EXPECT_EQ(e.occurrences, 3);
  EXPECT_EQ(e.detail, "third failure");
}

TYPED_TEST(DlqConformanceTest, KeepsArbitraryBytes) {
  // Bodies, header values and details may hold bytes that are not UTF-8 (or NUL).
  DlqNewEntry e = this->Event(DlqClass::kBreaker, Key('7'));
  const char kOdd[] = "\xff\xfe\x00\x80 not utf-8";
  const std::string odd(kOdd, sizeof(kOdd) - 1);
  e.detail = "ERP said: " + odd;
  e.request = DlqRequest{"msg_\xc3\xa9", "text/plain; charset=latin1", odd};
  const DlqEntry got = this->MustGet(this->MustAdd(e));
  EXPECT_EQ(got.detail, "ERP said: " + odd);
  ASSERT_TRUE(got.request.has_value());
  EXPECT_EQ(got.request->webhook_id, "msg_\xc3\xa9");
  EXPECT_EQ(got.request->body, odd);
  ASSERT_TRUE(this->dlq_->Drop(got.id, "reason " + odd, "cli:test").ok());
  EXPECT_EQ(this->MustGet(got.id).resolution, "reason " + odd);
}

TYPED_TEST(DlqConformanceTest, ConcurrentAddsFromTwoHostsFoldIntoOneEntry) {
  auto other = this->factory_.Open(this->clock_);
  ASSERT_NE(other, nullptr);
  constexpr int kPerThread = 10;
  std::atomic<int> created{0}, failed{0};
  std::vector<std::thread> threads;
  for (Dlq* d : {this->dlq_.get(), other.get(), this->dlq_.get(), other.get()}) {
    threads.emplace_back([&, d] {
      for (int i = 0; i < kPerThread; ++i) {
        auto a = d->Add(this->Call(DlqClass::kTransientExhausted, Key('8'), 503));
        if (!a.ok()) {
          ++failed;
        } else if (a->created) {
          ++created;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(created.load(), 1);
  auto all = this->dlq_->List(DlqFilter{});
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].occurrences, 4 * kPerThread);
}

TEST(DlqNamesTest, EveryClassAndStateRoundTrips) {
  for (DlqClass c : kAllDlqClasses) EXPECT_EQ(DlqClassFromName(DlqClassName(c)), c);
  for (DlqState s : kAllDlqStates) EXPECT_EQ(DlqStateFromName(DlqStateName(s)), s);
  EXPECT_FALSE(DlqClassFromName("nope").has_value());
  EXPECT_EQ(DlqAgeOf(kDlqHourMs - 1), DlqAge::kUnderHour);
  EXPECT_EQ(DlqAgeOf(kDlqHourMs), DlqAge::kUnderDay);
  EXPECT_EQ(DlqAgeOf(24 * kDlqHourMs), DlqAge::kOlder);
}

TEST(DlqNamesTest, TruncateKeepsUtf8Whole) {
  const std::string text = std::string(20, 'a') + "\xC3\xA9\xC3\xA9\xC3\xA9";  // "ééé"
  for (uint64_t max = 15; max < text.size(); ++max) {
    const std::string t = TruncateDlqText(text, max);
    EXPECT_LE(t.size(), max);
    EXPECT_NE(t.find("[truncated]"), std::string::npos);
  }
  EXPECT_EQ(TruncateDlqText("short", 100), "short");
}

}  // namespace
}  // namespace clawguard
