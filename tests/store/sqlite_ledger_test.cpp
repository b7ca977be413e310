// sqlite_ledger_test.cpp — the Ledger conformance suite, typed over the engines: append/no-op/
// overwrite across kinds, heads, the allowlist floor as chain rows, the rollback floor applied
// inside Record (also by concurrent writers), concurrency, persistence, a newer schema, the
// migration that carries the old side-table floor into the chain, and tampering of the stored
// rows detected by VerifyLedgerChain.
// Over 500 lines on purpose: a conformance suite is one typed fixture run on every engine.
//
// Compiled into store_tests (SQLite) and, with CLAWGUARD_TEST_PG, into pg_tests where SQLite and
// PostgreSQL run the same typed cases (a fresh database of the fixture cluster per test).
#include "sqlite/sqlite_ledger.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "sqlite/sqlite_db.h"
#include "support/reason_matchers.h"
#include "support/temp_dir.h"
#ifdef CLAWGUARD_TEST_PG
#include "pg/support/pg_test_db.h"
#include "postgresql/pg_ledger.h"
#endif

using ::clawguard::testing::HasReason;

namespace clawguard {
namespace {

using testing::TempDir;

const std::string kA(64, 'a'), kB(64, 'b'), kC(64, 'c');
constexpr int64_t kLedgerT0 = 1764633600000;  // 2025-12-02T00:00:00Z

// SqliteLedgerFactory: one database file in a temp dir.
class SqliteLedgerFactory {
 public:
  Result<std::unique_ptr<Ledger>> Open(const Clock& clock) {
    CLAWGUARD_ASSIGN_OR_RETURN(std::unique_ptr<SqliteLedger> l, SqliteLedger::Open(path_, clock));
    return std::unique_ptr<Ledger>(std::move(l));
  }
  // Exec runs SQL on the file through a second connection, as an attacker with write access would.
  void Exec(const std::string& sql) {
    auto db = sqlite::SqliteDb::Open(path_);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec(sql).ok()) << sql;
  }
  std::string NewerSchemaSql() const {
    return "INSERT INTO ledger_schema_version (version) VALUES (99)";
  }
  // TriggerSql / ViewSql: an attacker's schema objects that would answer the ledger's reads.
  std::string TriggerSql() const {
    return "CREATE TRIGGER cg_trap AFTER INSERT ON ledger BEGIN SELECT 1; END";
  }
  std::string ViewSql() const {
    return "ALTER TABLE ledger RENAME TO chain_orig; CREATE VIEW ledger AS SELECT * FROM "
           "chain_orig";
  }
  // SideTableFloorSql puts the database back at schema 1 with |floor| in the old side table.
  std::string SideTableFloorSql(int64_t floor) const {
    return "CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL); "
           "INSERT INTO ledger_meta (key, value) VALUES ('highest_allowlist_version', " +
           std::to_string(floor) + "); DELETE FROM ledger_schema_version WHERE version = 2";
  }

 private:
  TempDir dir_;
  std::string path_ = dir_.Sub("state.db");
};

#ifdef CLAWGUARD_TEST_PG
// PgLedgerFactory: one fresh database; each Open has its own pool and the test's clock.
class PgLedgerFactory {
 public:
  Result<std::unique_ptr<Ledger>> Open(const Clock& clock) {
    pg::PgOptions options;
    options.clock = &clock;
    CLAWGUARD_ASSIGN_OR_RETURN(std::shared_ptr<pg::PgPool> pool,
                               pg::PgPool::Create(db_.url(), options));
    CLAWGUARD_ASSIGN_OR_RETURN(std::unique_ptr<pg::PgLedger> l,
                               pg::PgLedger::Open(std::move(pool)));
    return std::unique_ptr<Ledger>(std::move(l));
  }
  void Exec(const std::string& sql) { db_.Exec(sql); }
  std::string TriggerSql() const {
    return "CREATE FUNCTION cg_trap() RETURNS trigger AS $$ BEGIN RETURN NEW; END $$ LANGUAGE "
           "plpgsql; "
           "CREATE TRIGGER cg_trap BEFORE INSERT ON ledger FOR EACH ROW EXECUTE FUNCTION cg_trap()";
  }
  std::string ViewSql() const {
    return "ALTER TABLE ledger RENAME TO chain_orig; CREATE VIEW ledger AS SELECT * FROM "
           "chain_orig";
  }
  std::string NewerSchemaSql() const {
    return "INSERT INTO clawguard_schema_version (version, applied_ms) VALUES (99, 0)";
  }
  // SideTableFloorSql puts the database back at schema 3 with |floor| in the old side row (undoing
  // the later migrations too: version 5 added outbox_rows.claimed_by).
  std::string SideTableFloorSql(int64_t floor) const {
    return "INSERT INTO ledger_meta (key, value) VALUES ('highest_allowlist_version', " +
           std::to_string(floor) +
           "); ALTER TABLE outbox_rows DROP COLUMN claimed_by; DELETE FROM "
           "clawguard_schema_version WHERE version >= 4";
  }

 private:
  testing::PgTestDb db_;
};
#endif

template <typename Factory>
class SqliteLedgerTest : public ::testing::Test {
 protected:
  std::unique_ptr<Ledger> OpenLedger() {
    auto l = factory_.Open(clock_);
    EXPECT_TRUE(l.ok()) << l.error().ToString();
    return l.ok() ? std::move(l).value() : nullptr;
  }
  void Exec(const std::string& sql) { factory_.Exec(sql); }
  Factory factory_;
  FixedClock clock_{kLedgerT0};
};

#ifdef CLAWGUARD_TEST_PG
using LedgerEngines = ::testing::Types<SqliteLedgerFactory, PgLedgerFactory>;
#else
using LedgerEngines = ::testing::Types<SqliteLedgerFactory>;
#endif
TYPED_TEST_SUITE(SqliteLedgerTest, LedgerEngines);

TYPED_TEST(SqliteLedgerTest, EmptyLedgerHasZeroHead) {
  auto l = this->OpenLedger();
  auto head = l->Head();
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->count, 0);
  EXPECT_EQ(head->head, std::string(64, '0'));
  EXPECT_TRUE(l->ReadAll()->empty());
  EXPECT_FALSE(HighestAllowlistVersion(l->ReadAll().value()).has_value());
}

TYPED_TEST(SqliteLedgerTest, AppendsNoOpsAndRefusesOverwritesAcrossKinds) {
  auto l = this->OpenLedger();
  auto r1 = l->Record(LedgerKind::kRelease, "acme-orders", "1.4.2", kA);
  ASSERT_TRUE(r1.ok()) << r1.error().ToString();
  EXPECT_TRUE(r1->appended);
  EXPECT_EQ(r1->head.count, 1);

  this->clock_.Advance(5000);
  auto again = l->Record(LedgerKind::kRelease, "acme-orders", "1.4.2", kA);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->appended);
  EXPECT_EQ(again->head.count, 1);
  EXPECT_EQ(again->head.head, r1->head.head);

  auto deploy =
      l->Record(LedgerKind::kDeploy, "acme-orders", "1.4.2", kA);  // same bytes, other kind
  ASSERT_TRUE(deploy.ok());
  EXPECT_TRUE(deploy->appended);
  EXPECT_EQ(deploy->head.count, 2);

  auto over = l->Record(LedgerKind::kDeploy, "acme-orders", "1.4.2", kB);
  ASSERT_FALSE(over.ok());
  EXPECT_THAT(over, HasReason(Reason::kVersionOverwritten));
  EXPECT_NE(over.error().message().find(kA.substr(0, 16)), std::string::npos)
      << over.error().message();
  EXPECT_NE(over.error().message().find(kB.substr(0, 16)), std::string::npos)
      << over.error().message();
  EXPECT_NE(over.error().message().find("release row"), std::string::npos)
      << over.error().message();

  // A release of other bytes is refused because of the deploy row too (both kinds are checked).
  ASSERT_TRUE(l->Record(LedgerKind::kDeploy, "acme-orders", "2.0.0", kC).ok());
  auto release_over = l->Record(LedgerKind::kRelease, "acme-orders", "2.0.0", kB);
  ASSERT_FALSE(release_over.ok());
  EXPECT_THAT(release_over, HasReason(Reason::kVersionOverwritten));
  EXPECT_NE(release_over.error().message().find("deploy row"), std::string::npos);

  auto rows = l->ReadAll();
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 3u);  // the refusals wrote nothing
  EXPECT_EQ((*rows)[0].time, kLedgerT0 / 1000);
  EXPECT_EQ((*rows)[1].time, kLedgerT0 / 1000 + 5);
  EXPECT_EQ((*rows)[1].prev_hash, (*rows)[0].hash);
  EXPECT_TRUE(VerifyLedgerChain(*rows, l->Head().value()).ok());
}

TYPED_TEST(SqliteLedgerTest, RowsForOneNameAndHead) {
  auto l = this->OpenLedger();
  ASSERT_TRUE(l->Record(LedgerKind::kRelease, "acme-orders", "1.0.0", kA).ok());
  ASSERT_TRUE(l->Record(LedgerKind::kRelease, "acme-stock", "1.0.0", kB).ok());
  ASSERT_TRUE(l->Record(LedgerKind::kDeploy, "acme-orders", "1.0.0", kA).ok());
  auto rows = l->RowsFor("acme-orders");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].seq, 1);
  EXPECT_EQ((*rows)[0].kind, LedgerKind::kRelease);
  EXPECT_EQ((*rows)[1].seq, 3);
  EXPECT_EQ((*rows)[1].kind, LedgerKind::kDeploy);
  EXPECT_TRUE(l->RowsFor("nobody")->empty());
  auto head = l->Head();
  EXPECT_EQ(head->count, 3);
  EXPECT_EQ(head->head, (*rows)[1].hash);
}

TYPED_TEST(SqliteLedgerTest, AllowlistFloorIsAChainRowThatIsNeverLowered) {
  auto l = this->OpenLedger();
  auto first = RecordAllowlist(*l, 12, kA);
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  EXPECT_TRUE(first->appended);
  auto lower = RecordAllowlist(*l, 7, kB);
  ASSERT_FALSE(lower.ok());
  EXPECT_THAT(lower, HasReason(Reason::kAllowlistInvalid));
  EXPECT_NE(lower.error().message().find("lower than version 12"), std::string::npos)
      << lower.error().message();
  // The same version again is a no-op whatever its bytes: the row keeps the bytes that raised it.
  auto same = RecordAllowlist(*l, 12, kB);
  ASSERT_TRUE(same.ok()) << same.error().ToString();
  EXPECT_FALSE(same->appended);
  ASSERT_TRUE(RecordAllowlist(*l, 13, kC).ok());
  auto rows = l->ReadAll().value();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].kind, LedgerKind::kAllowlist);
  EXPECT_EQ(rows[0].name, kAllowlistLedgerName);
  EXPECT_EQ(rows[0].version, "12");
  EXPECT_EQ(rows[0].sha256, kA);
  EXPECT_EQ(rows[1].version, "13");
  EXPECT_EQ(HighestAllowlistVersion(rows), 13);
  EXPECT_EQ(ReadAllowlistFloor(*l).value(), 13);
  EXPECT_TRUE(VerifyLedgerChain(rows, std::nullopt).ok());
  // Allowlist rows never collide with a plugin's name or SemVer versions.
  EXPECT_THAT(l->Record(LedgerKind::kDeploy, std::string(kAllowlistLedgerName), "1.0.0", kA),
              HasReason(Reason::kInternal));
  EXPECT_THAT(l->Record(LedgerKind::kAllowlist, "acme-orders", "14", kA),
              HasReason(Reason::kInternal));
  EXPECT_THAT(RecordAllowlist(*l, 0, kA), HasReason(Reason::kInternal));
}

TYPED_TEST(SqliteLedgerTest, RecordRefusesADeployBelowTheHighestDeployed) {
  // Two connections: the second writer never saw the first one's row before its own Record,
  // as two hosts whose pre-checks both passed.
  auto first = this->OpenLedger();
  auto second = this->OpenLedger();
  ASSERT_TRUE(first->Record(LedgerKind::kDeploy, "acme-orders", "1.5.0", kA).ok());
  auto rolled = second->Record(LedgerKind::kDeploy, "acme-orders", "1.4.0", kB);
  ASSERT_FALSE(rolled.ok());
  EXPECT_THAT(rolled, HasReason(Reason::kVersionRollback));
  EXPECT_NE(rolled.error().message().find("1.4.0 is lower than 1.5.0"), std::string::npos)
      << rolled.error().message();
  // An attempt row is held to the same floor (nothing may be opened below it)…
  EXPECT_THAT(second->Record(LedgerKind::kAttempt, "acme-orders", "1.4.0", kB),
              HasReason(Reason::kVersionRollback));
  // … but raises none itself, and a release row is never a rollback.
  ASSERT_TRUE(second->Record(LedgerKind::kAttempt, "acme-orders", "2.0.0", kC).ok());
  ASSERT_TRUE(second->Record(LedgerKind::kDeploy, "acme-orders", "1.6.0", kC).ok());
  ASSERT_TRUE(second->Record(LedgerKind::kRelease, "acme-orders", "1.0.0", kB).ok());
  // The policy may allow it; other names have their own floor.
  auto allowed =
      second->Record(LedgerKind::kDeploy, "acme-orders", "1.4.0", kB, LedgerRecordRules{true, {}});
  ASSERT_TRUE(allowed.ok()) << allowed.error().ToString();
  EXPECT_TRUE(allowed->appended);
  ASSERT_TRUE(second->Record(LedgerKind::kDeploy, "acme-stock", "0.1.0", kA).ok());
  auto rows = first->ReadAll().value();
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_TRUE(VerifyLedgerChain(rows, std::nullopt).ok());
}

// Two writers on their own connections deploy 1.5.0 and 1.4.0 of one name at once, many times:
// whichever order the store serialises them in, the chain never holds the lower deploy after the
// higher one (the floor is checked inside each Record's transaction).
TYPED_TEST(SqliteLedgerTest, ConcurrentDeploysNeverLeaveALowerDeployAfterAHigherOne) {
  constexpr int kRounds = 12;
  auto high_writer = this->OpenLedger();
  auto low_writer = this->OpenLedger();
  int refused = 0;
  for (int round = 0; round < kRounds; ++round) {
    const std::string name = "acme-race-" + std::to_string(round);
    std::mutex mu;
    std::condition_variable cv;
    bool go = false;
    Result<LedgerAppend> high = Status(Reason::kInternal, "not run"),
                         low = Status(Reason::kInternal, "not run");
    auto run = [&](Ledger& l, const std::string& version, const std::string& sha,
                   Result<LedgerAppend>& out) {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return go; });
      lock.unlock();
      out = l.Record(LedgerKind::kDeploy, name, version, sha);
    };
    std::thread a(run, std::ref(*high_writer), "1.5.0", kA, std::ref(high));
    std::thread b(run, std::ref(*low_writer), "1.4.0", kB, std::ref(low));
    {
      std::lock_guard<std::mutex> lock(mu);
      go = true;
    }
    cv.notify_all();
    a.join();
    b.join();
    ASSERT_TRUE(high.ok()) << high.error().ToString();
    if (!low.ok()) {
      EXPECT_THAT(low, HasReason(Reason::kVersionRollback)) << low.error().ToString();
      ++refused;
    }
    const auto rows = high_writer->RowsFor(name).value();
    ASSERT_EQ(rows.size(), low.ok() ? 2u : 1u);
    EXPECT_EQ(rows.back().version, "1.5.0") << "round " << round << ": the lower deploy came last";
  }
  EXPECT_TRUE(VerifyLedgerChain(high_writer->ReadAll().value(), std::nullopt).ok());
  ::testing::Test::RecordProperty("rollbacks_refused", refused);
}

TYPED_TEST(SqliteLedgerTest, ConcurrentRecordsOfOneVersionHaveExactlyOneWinner) {
  auto shared = this->OpenLedger();
  for (bool separate_connections : {false, true}) {
    const std::string version = separate_connections ? "2.0.0" : "1.0.0";
    std::atomic<int> won{0}, overwritten{0}, other{0};
    std::vector<std::thread> threads;
    threads.reserve(8);
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        std::unique_ptr<Ledger> own;
        if (separate_connections) own = this->factory_.Open(this->clock_).value();
        Ledger& l = separate_connections ? *own : *shared;
        auto r = l.Record(LedgerKind::kRelease, "acme-orders", version,
                          std::string(64, static_cast<char>('0' + t)));
        if (r.ok() && r->appended) {
          ++won;
        } else if (!r.ok() && r.error().reason() == Reason::kVersionOverwritten) {
          ++overwritten;
        } else {
          ++other;
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(won.load(), 1) << version;
    EXPECT_EQ(overwritten.load(), 7) << version;
    EXPECT_EQ(other.load(), 0) << version;
  }
  auto rows = shared->ReadAll();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_TRUE(VerifyLedgerChain(*rows, std::nullopt).ok());
}

TYPED_TEST(SqliteLedgerTest, ReopeningPreservesState) {
  LedgerCheckpoint head;
  {
    auto l = this->OpenLedger();
    ASSERT_TRUE(l->Record(LedgerKind::kRelease, "acme-orders", "1.0.0", kA).ok());
    ASSERT_TRUE(l->Record(LedgerKind::kDeploy, "acme-orders", "1.0.0", kA).ok());
    ASSERT_TRUE(RecordAllowlist(*l, 4, kB).ok());
    head = l->Head().value();
  }
  auto l = this->OpenLedger();
  EXPECT_EQ(l->Head()->head, head.head);
  EXPECT_EQ(l->Head()->count, 3);
  EXPECT_EQ(ReadAllowlistFloor(*l).value(), 4);
  EXPECT_THAT(l->Record(LedgerKind::kRelease, "acme-orders", "1.0.0", kB),
              HasReason(Reason::kVersionOverwritten));
  EXPECT_TRUE(VerifyLedgerChain(l->ReadAll().value(), head).ok());
}

TYPED_TEST(SqliteLedgerTest, RefusesANewerSchema) {
  { auto l = this->OpenLedger(); }
  this->Exec(this->factory_.NewerSchemaSql());
  auto l = this->factory_.Open(this->clock_);
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(l, HasReason(Reason::kStoreUnavailable));
  EXPECT_NE(l.error().message().find("99"), std::string::npos);
}

// Upgrading keeps the allowlist floor of the old side table: the migration appends it to the
// chain as an allowlist row (sha256 unknown: all zeros), and the side value is gone.
TYPED_TEST(SqliteLedgerTest, MigrationCarriesTheSideTableAllowlistFloorIntoTheChain) {
  {
    ASSERT_TRUE(this->OpenLedger()->Record(LedgerKind::kRelease, "acme-orders", "1.0.0", kA).ok());
  }
  this->Exec(this->factory_.SideTableFloorSql(9));
  auto l = this->OpenLedger();
  ASSERT_NE(l, nullptr);
  auto rows = l->ReadAll().value();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].kind, LedgerKind::kAllowlist);
  EXPECT_EQ(rows[1].name, kAllowlistLedgerName);
  EXPECT_EQ(rows[1].version, "9");
  EXPECT_EQ(rows[1].sha256, std::string(64, '0'));
  EXPECT_TRUE(VerifyLedgerChain(rows, std::nullopt).ok())
      << VerifyLedgerChain(rows, std::nullopt).ToString();
  EXPECT_EQ(ReadAllowlistFloor(*l).value(), 9);
  EXPECT_THAT(RecordAllowlist(*l, 8, kB), HasReason(Reason::kAllowlistInvalid));
  // Opening again migrates nothing more.
  auto again = this->OpenLedger();
  EXPECT_EQ(again->ReadAll().value().size(), 2u);
}

template <typename Factory>
class SqliteLedgerTamperTest : public SqliteLedgerTest<Factory> {
 protected:
  void SetUp() override {
    auto l = this->OpenLedger();
    for (int i = 1; i <= 4; ++i) {
      ASSERT_TRUE(
          l->Record(LedgerKind::kRelease, "acme-orders", "1." + std::to_string(i) + ".0", kA).ok());
    }
    anchor_ = l->Head().value();
  }
  // VerifyFile re-reads the stored rows through a fresh ledger and walks the chain.
  Status VerifyFile(const std::optional<LedgerCheckpoint>& anchor) {
    auto l = this->OpenLedger();
    auto rows = l->ReadAll();
    if (!rows.ok()) return rows.error();
    return VerifyLedgerChain(*rows, anchor);
  }
  LedgerCheckpoint anchor_;
};
TYPED_TEST_SUITE(SqliteLedgerTamperTest, LedgerEngines);

TYPED_TEST(SqliteLedgerTamperTest, IntactFileVerifies) {
  EXPECT_TRUE(this->VerifyFile(this->anchor_).ok());
}

TYPED_TEST(SqliteLedgerTamperTest, DetectsAnEditedRow) {
  this->Exec("UPDATE ledger SET sha256 = '" + kB + "' WHERE seq = 2");
  const Status st = this->VerifyFile(std::nullopt);
  EXPECT_THAT(st, HasReason(Reason::kLedgerTampered));
  EXPECT_NE(st.message().find("seq 2"), std::string::npos) << st.message();
}

TYPED_TEST(SqliteLedgerTamperTest, DetectsADeletedTailWithAnAnchor) {
  this->Exec("DELETE FROM ledger WHERE seq >= 3");
  EXPECT_TRUE(this->VerifyFile(std::nullopt).ok());  // a cut-off tail is a valid shorter chain
  const Status st = this->VerifyFile(this->anchor_);
  EXPECT_THAT(st, HasReason(Reason::kLedgerTampered));
  EXPECT_NE(st.message().find("seq 3"), std::string::npos) << st.message();
}

TYPED_TEST(SqliteLedgerTamperTest, DetectsAConsistentlyRehashedLedgerWithAnAnchor) {
  this->Exec("UPDATE ledger SET sha256 = '" + kB + "' WHERE seq = 2");
  {
    auto rows = this->OpenLedger()->ReadAll().value();
    std::string prev(64, '0');
    for (auto& r : rows) {
      r.prev_hash = prev;
      r.hash = LedgerRowHash(r);
      prev = r.hash;
      this->Exec("UPDATE ledger SET prev_hash = '" + r.prev_hash + "', hash = '" + r.hash +
                 "' WHERE seq = " + std::to_string(r.seq));
    }
  }
  EXPECT_TRUE(this->VerifyFile(std::nullopt).ok());  // without an anchor nothing can tell
  const Status st = this->VerifyFile(this->anchor_);
  EXPECT_THAT(st, HasReason(Reason::kLedgerTampered));
  EXPECT_NE(st.message().find("seq 4"), std::string::npos) << st.message();
}

TYPED_TEST(SqliteLedgerTamperTest, UnknownKindIsTamperingWithAMessageThatSaysWhatToDo) {
  this->Exec("UPDATE ledger SET kind = 'rogue' WHERE seq = 1");
  const Status st = this->OpenLedger()->ReadAll().error();
  EXPECT_THAT(st, HasReason(Reason::kLedgerTampered));
  EXPECT_NE(st.message().find("seq 1: kind 'rogue' is not one this build knows"), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("upgrade clawguard"), std::string::npos) << st.message();
}

// Deleting or lowering the allowlist floor row is caught like any other row: lowering breaks the
// row's hash; deleting it (the tail) leaves a shorter chain that the anchor catches.
TYPED_TEST(SqliteLedgerTamperTest, LoweringOrDeletingTheAllowlistFloorIsTampering) {
  auto l = this->OpenLedger();
  ASSERT_TRUE(RecordAllowlist(*l, 7, kB).ok());
  const LedgerCheckpoint anchored = l->Head().value();
  this->Exec("UPDATE ledger SET version = '1' WHERE kind = 'allowlist'");
  EXPECT_THAT(ReadAllowlistFloor(*this->OpenLedger()), HasReason(Reason::kLedgerTampered));
  this->Exec("DELETE FROM ledger WHERE kind = 'allowlist'");
  EXPECT_FALSE(
      ReadAllowlistFloor(*this->OpenLedger()).value().has_value());  // a valid shorter chain…
  const Status st = this->VerifyFile(anchored);                      // … that the anchor refuses
  EXPECT_THAT(st, HasReason(Reason::kLedgerTampered));
  EXPECT_NE(st.message().find("seq 5"), std::string::npos) << st.message();
}

namespace {

// RewriteSql rewrites every row from |from| (1-based) on, as an attacker re-chaining after an edit
// of row |from|'s version would: UPDATEs for the edited chain.
std::string RewriteSql(std::vector<LedgerRow> rows, size_t from, const std::string& new_version) {
  rows[from - 1].version = new_version;
  std::string sql;
  for (size_t i = from - 1; i < rows.size(); ++i) {
    rows[i].prev_hash = i == 0 ? std::string(64, '0') : rows[i - 1].hash;
    rows[i].hash = LedgerRowHash(rows[i]);
    sql += "UPDATE ledger SET version = '" + rows[i].version + "', prev_hash = '" +
           rows[i].prev_hash + "', hash = '" + rows[i].hash +
           "' WHERE seq = " + std::to_string(rows[i].seq) + "; ";
  }
  return sql;
}

}  // namespace

// The chain is checked again inside Record's transaction against the caller's anchors: a rewrite
// committed after the caller's check (the race an outside review won) is refused, nothing is
// written, and no head that extends the rewritten chain is ever returned.
TYPED_TEST(SqliteLedgerTest, RecordRefusesAChainThatNoLongerHoldsTheCallersAnchor) {
  auto l = this->OpenLedger();
  ASSERT_TRUE(l->Record(LedgerKind::kDeploy, "acme-orders", "1.0.0", kA).ok());
  ASSERT_TRUE(l->Record(LedgerKind::kDeploy, "acme-orders", "2.0.0", kB).ok());
  const LedgerCheckpoint anchor = l->Head().value();
  this->Exec(RewriteSql(l->ReadAll().value(), 2, "0.9.0"));  // the 2.0.0 floor is gone, re-chained
  ASSERT_TRUE(VerifyLedgerChain(l->ReadAll().value(), std::nullopt).ok());
  LedgerRecordRules rules;
  rules.anchors = {anchor};
  auto r = l->Record(LedgerKind::kAttempt, "acme-billing", "1.0.0", kC, rules);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r, HasReason(Reason::kLedgerTampered)) << r.error().ToString();
  EXPECT_EQ(l->ReadAll().value().size(), 2u);
  // Also the no-op path: an identical row never reports the rewritten head.
  auto same = l->Record(LedgerKind::kDeploy, "acme-orders", "1.0.0", kA, rules);
  ASSERT_FALSE(same.ok());
  EXPECT_THAT(same, HasReason(Reason::kLedgerTampered));
}

// A trigger or a view could answer Record's reads with one chain and keep another: the ledger is
// kept in plain tables only.
TYPED_TEST(SqliteLedgerTest, RecordRefusesATriggerOnTheLedger) {
  {
    ASSERT_TRUE(this->OpenLedger()->Record(LedgerKind::kRelease, "acme-orders", "1.0.0", kA).ok());
  }
  this->Exec(this->factory_.TriggerSql());
  auto l = this->OpenLedger();
  auto r = l->Record(LedgerKind::kRelease, "acme-orders", "1.1.0", kB);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r, HasReason(Reason::kLedgerTampered)) << r.error().ToString();
}

TYPED_TEST(SqliteLedgerTest, RecordRefusesALedgerThatIsAView) {
  {
    ASSERT_TRUE(this->OpenLedger()->Record(LedgerKind::kRelease, "acme-orders", "1.0.0", kA).ok());
  }
  this->Exec(this->factory_.ViewSql());
  auto l = this->factory_.Open(this->clock_);
  if (!l.ok()) {  // refusing the database at open is as good
    EXPECT_THAT(l, ::testing::Not(HasReason(Reason::kOk)));
    return;
  }
  auto r = (*l)->Record(LedgerKind::kRelease, "acme-orders", "1.1.0", kB);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r, HasReason(Reason::kLedgerTampered)) << r.error().ToString();
}

}  // namespace
}  // namespace clawguard
