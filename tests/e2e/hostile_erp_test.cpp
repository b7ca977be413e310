// hostile_erp_test.cpp — a real `clawguard host` (the signed example plugin, HostFixture) against
// an ERP that misbehaves as real ERPs do (tools/hostile_erp, one mode per case): slow answers,
// interim 1xx answers, two answers for one request (in one write or two, over http or https: over
// TLS the second answer can hide inside the TLS layer), answers cut mid-body, garbage, 409 for a
// key in flight (Stripe's marker, or a bare 409), keys deduplicated only after completion, no
// answer.
// Events are delivered as a platform does (concurrently, retried until an answer is stored), and
// each case checks the core promise at the ERP and in the store:
//   - exactly one effect per ERP call (per Idempotency-Key), one row per call;
//   - every outbox row holds its own call's answer (the ERP names the key in each answer);
//   - no request for a key while an earlier one for it is in flight at the ERP — except where
//     the ERP is slower than erp.timeout (the host gave up first; it then honours the ERP's 409
//     "in progress" and stores the real answer);
//   - every delivery is answered (the host keeps serving signed webhooks), and all end 200.
//
// This file is compiled twice: into host_tests (SQLite) and into multihost_tests with
// CLAWGUARD_TEST_PG (a fresh database on the pg_cluster fixture), the same cases on both engines.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <mutex>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "host/erp/idempotency_key.h"
#include "hostile_erp/hostile_erp.h"
#include "support/host_fixture.h"
#include "support/temp_dir.h"
#include "support/test_pki.h"
#ifdef CLAWGUARD_TEST_PG
#include "pg/support/pg_test_db.h"
#include "postgresql/pg_conn.h"
#else
#include "sqlite/sqlite_db.h"
#endif

namespace clawguard::host {
namespace {

using clawguard::testing::ReadFile;
using clawguard::testing::WriteFile;
using testing::HostFixture;
using testing::Reply;
using tools::HostileErp;
using tools::HostileMode;

constexpr int kHostileEvents = 4;  // each: call 0 fulfils, call 1 adjusts its one line

struct HostileCase {
  const char* name;
  HostileMode mode;
  int delay_ms = 0;
  int hostile_requests = 0;
  bool marker = true;
  const char* erp_timeout = "5s";
  // The ERP takes longer than erp.timeout: the host gives up on a request the ERP still runs, so
  // its next ask overlaps it and the ERP answers 409 "in progress" — asked again, never stored.
  bool slower_than_the_timeout = false;
  const char* execution = "threads";  // listen.execution (fibers: SQLite only)
  bool keep_alive = true;             // erp.keep_alive
  bool tls = false;                   // the ERP speaks https (a test CA in erp.ca)
};

const HostileCase kCases[] = {
    {"Normal", HostileMode::kNormal},
    {"Slow", HostileMode::kSlow, 1'500},
    {"Interim", HostileMode::kInterim, 90},
    {"DoubleAnswer", HostileMode::kDoubleAnswer},
    {"DoubleAnswerTwoWrites", HostileMode::kDoubleAnswerTwoWrites},
    // Over https the second answer is read with the first into the client's buffer (one record),
    // or waits as a second record inside the TLS layer, where no socket check sees it.
    {"DoubleAnswerOverTls", HostileMode::kDoubleAnswer, 0, 0, true, "5s", false, "threads", true,
     true},
    {"DoubleAnswerTwoWritesOverTls", HostileMode::kDoubleAnswerTwoWrites, 0, 0, true, "5s", false,
     "threads", true, true},
    // A second answer that may arrive after the connection was reused: only a connection per call
    // (erp.keep_alive: false) rules out taking it for the next call's (ARCHITECTURE.md step 5).
    {"LateSecondAnswerWithoutKeepAlive", HostileMode::kLateSecondAnswer, 0, 0, true, "5s", false,
     "threads", false},
    {"CloseMidBody", HostileMode::kCloseMidBody, 0, 1},
    {"Garbage", HostileMode::kGarbage, 0, 1},
    {"ConflictInFlight", HostileMode::kConflictInFlight, 1'500},
    {"BareConflictInFlight", HostileMode::kConflictInFlight, 1'500, 0, /*marker=*/false},
    {"DedupAfterCompletion", HostileMode::kDedupAfterCompletion, 1'500},
    {"NeverAnswer", HostileMode::kNeverAnswer, 0, 1, true, "1s"},
    {"ConflictBeyondTheTimeout", HostileMode::kConflictInFlight, 2'500, 0, true, "1s", true},
    {"BareConflictBeyondTheTimeout", HostileMode::kConflictInFlight, 2'500, 0, false, "1s", true},
    // An ERP that deduplicates a key only once its request finished, 1.5 s per request, against a
    // 1 s erp.timeout: after a timeout the resend waits at least erp.timeout more, so it reaches
    // the ERP after the first request finished and is answered from it — one effect.
    {"DedupAfterCompletionBeyondTheTimeout", HostileMode::kDedupAfterCompletion, 1'500, 0, true,
     "1s", true},
#ifndef CLAWGUARD_TEST_PG
    // With fibers an ERP reply is waited for through the carrier's epoll (erp_polling_stream.h).
    {"SlowWithFibers", HostileMode::kSlow, 1'500, 0, true, "5s", false, "fibers"},
    {"InterimWithFibers", HostileMode::kInterim, 90, 0, true, "5s", false, "fibers"},
    {"DoubleAnswerWithFibers", HostileMode::kDoubleAnswer, 0, 0, true, "5s", false, "fibers"},
    {"DoubleAnswerTwoWritesOverTlsWithFibers", HostileMode::kDoubleAnswerTwoWrites, 0, 0, true,
     "5s", false, "fibers", true, true},
#endif
};

// PrintTo names a case in gtest's messages.
void PrintTo(const HostileCase& c, std::ostream* os) { *os << c.name; }

// StoredRow is what the store holds for one ERP call.
struct StoredRow {
  std::string idempotency_key, state, reply_body, claimed_by;
  int64_t reply_status = 0;
};

class HostileErpTest : public ::testing::TestWithParam<HostileCase> {
 protected:
  void SetUp() override {
    const HostileCase& c = GetParam();
    tools::HostileErpOptions eo;
    eo.mode = c.mode;
    eo.delay = std::chrono::milliseconds(c.delay_ms);
    eo.hostile_requests = c.hostile_requests;
    eo.conflict_marker = c.marker;
    testing::TestPki pki;
    if (c.tls) {
      std::string error;
      ASSERT_TRUE(testing::MakeTestPki(pki_dir_.path().string(), "hostile-erp", &pki, &error))
          << error;
      eo.tls_cert = pki.leaf_cert;
      eo.tls_key = pki.leaf_key;
    }
    auto erp = HostileErp::Start(eo);
    ASSERT_TRUE(erp.ok()) << erp.error().ToString();
    erp_ = std::move(erp).value();

    testing::HostFixtureOptions o;
    o.erp_timeout = c.erp_timeout;
    o.execution = c.execution;
    o.erp_retry = "{ base: 200ms, max: 2s, attempts: 8, jitter: 20%, floor_429: 1s }";
    ASSERT_NO_FATAL_FAILURE(f_.Prepare(o));
    // The fixture's host.yaml names its own test ERP: point it at the hostile one.
    const std::string path = f_.dir().Sub("host.yaml");
    std::string yaml = ReadFile(path);
    const std::string from = "base_url: " + f_.erp().base_url() + "\n";
    const size_t at = yaml.find(from);
    ASSERT_NE(at, std::string::npos) << yaml;
    yaml.replace(
        at, from.size(),
        "base_url: " + erp_->base_url() + "\n" + (c.keep_alive ? "" : "  keep_alive: false\n"));
    if (c.tls) {  // erp.ca: the hostile ERP's test CA instead of the fixture's
      const size_t ca = yaml.find("\n  ca: ");
      ASSERT_NE(ca, std::string::npos) << yaml;
      const size_t ca_end = yaml.find('\n', ca + 1);
      yaml.replace(ca, ca_end - ca, "\n  ca: " + pki.ca_cert);
    }
    // Short breaker cool-downs: a delivery whose ERP call got no answer fails (500) until the
    // worker has the answer, and the platform's retries would otherwise wait out 30 s.
    for (const auto& [breaker, shorter] :
         {std::pair<std::string, std::string>{"key: { failures: 3, window: 5s, cooldown: 30s }",
                                              "key: { failures: 3, window: 5s, cooldown: 1s }"},
          {"erp: { failures: 10, window: 30s, cooldown: 60s, half_open_probes: 1 }",
           "erp: { failures: 10, window: 30s, cooldown: 1s, half_open_probes: 1 }"}}) {
      const size_t b = yaml.find(breaker);
      ASSERT_NE(b, std::string::npos) << yaml;
      yaml.replace(b, breaker.size(), shorter);
    }
#ifdef CLAWGUARD_TEST_PG
    ASSERT_FALSE(db_.url().empty());
    const std::string sqlite_store = "store: sqlite:state/state.db\n";
    const size_t store_at = yaml.find(sqlite_store);
    ASSERT_NE(store_at, std::string::npos) << yaml;
    yaml.replace(store_at, sqlite_store.size(), "store: " + db_.url() + "\n");
#endif
    WriteFile(path, yaml);
    ASSERT_TRUE(f_.StartHost());
  }
  void TearDown() override {
    if (erp_) erp_->Stop();  // ends held connections and delays at once
  }

  std::vector<StoredRow> Rows() {
    std::vector<StoredRow> rows;
    const std::string sql =
        "SELECT idempotency_key, state, reply_status, reply_body, claimed_by FROM outbox_rows "
        "ORDER BY idempotency_key";
#ifdef CLAWGUARD_TEST_PG
    auto pool = pg::PgPool::Create(db_.url(), pg::PgOptions{});
    EXPECT_TRUE(pool.ok()) << pool.error().ToString();
    if (!pool.ok()) return rows;
    auto lease = (*pool)->Acquire();
    EXPECT_TRUE(lease.ok()) << lease.error().ToString();
    if (!lease.ok()) return rows;
    auto r = lease->Exec("rows", sql);
    EXPECT_TRUE(r.ok()) << r.error().ToString();
    if (!r.ok()) return rows;
    for (int i = 0; i < r->rows(); ++i) {
      rows.push_back(
          StoredRow{r->Text(i, 0), r->Text(i, 1), r->Bytes(i, 3), r->Text(i, 4), r->Int(i, 2)});
    }
#else
    auto db = sqlite::SqliteDb::Open(f_.db_path());
    EXPECT_TRUE(db.ok()) << db.error().ToString();
    if (!db.ok()) return rows;
    auto s = (*db)->Prepare(sql);
    EXPECT_TRUE(s.ok());
    if (!s.ok()) return rows;
    while (true) {
      auto row = s->Step();
      EXPECT_TRUE(row.ok());
      if (!row.ok() || !*row) break;
      rows.push_back(StoredRow{s->Text(0), s->Text(1), s->Text(3), s->Text(4), s->Int(2)});
    }
#endif
    return rows;
  }

#ifdef CLAWGUARD_TEST_PG
  clawguard::testing::PgTestDb db_;
#endif
  clawguard::testing::TempDir pki_dir_;
  std::unique_ptr<HostileErp> erp_;
  HostFixture f_;
};

TEST_P(HostileErpTest, OneEffectPerCallEachRowHoldsItsOwnAnswerAndEveryDeliveryIsAnswered) {
  const HostileCase& c = GetParam();
  // Deliver every event at once, each retried as a platform does until its answer is stored.
  std::atomic<int> unanswered{0};
  std::mutex mu;
  std::vector<Reply> last(kHostileEvents);
  std::vector<std::thread> platform;
  platform.reserve(kHostileEvents);
  for (int e = 0; e < kHostileEvents; ++e) {
    platform.emplace_back([&, e] {
      const std::string id = "msg_hostile_" + std::to_string(e);
      const std::string body = HostFixture::OrderBody("ord_" + std::to_string(e));
      Reply r;
      for (int attempt = 0; attempt < 400; ++attempt) {
        r = f_.Deliver(id, body);
        if (!r.ok) ++unanswered;
        if (r.ok && r.status == 200) break;
        std::this_thread::sleep_for(
            std::chrono::milliseconds(200));  // platform pacing, not a timing assert
      }
      std::lock_guard lock(mu);
      last[static_cast<size_t>(e)] = r;
    });
  }
  for (auto& t : platform) t.join();
  EXPECT_EQ(unanswered.load(), 0) << "the host left deliveries without an answer";
  for (int e = 0; e < kHostileEvents; ++e) {
    EXPECT_EQ(last[static_cast<size_t>(e)].status, 200)
        << c.name << " event " << e << ": " << last[static_cast<size_t>(e)].body;
    EXPECT_EQ(last[static_cast<size_t>(e)].body, R"({"status":"fulfilled"})");
  }
  EXPECT_EQ(f_.StopHost(), 0);

  // The calls, by their derived Idempotency-Keys.
  std::set<std::string> keys;
  for (int e = 0; e < kHostileEvents; ++e) {
    const std::string id = "msg_hostile_" + std::to_string(e);
    const std::string order = "ord_" + std::to_string(e);
    const std::string event =
        DeriveEventKey(2, "acme-orders", "order.created", id, order, HostFixture::OrderBody(order))
            .key;
    for (uint32_t i = 0; i < 2; ++i) keys.insert(ErpCallKey(event, "acme-orders", i));
  }

  // At the ERP: one effect per call, nothing without a key.
  const tools::HostileErpStats s = erp_->Stats();
  EXPECT_EQ(s.effects, keys.size()) << erp_->StatsJson();
  EXPECT_EQ(s.max_effects_per_key, 1u) << erp_->StatsJson();
  EXPECT_EQ(s.keyless, 0u);
  for (const std::string& key : keys) {
    auto it = s.keys.find(key);
    ASSERT_NE(it, s.keys.end()) << "no request for " << key;
    EXPECT_EQ(it->second.effects, 1u) << key;
  }
  if (c.slower_than_the_timeout && c.mode == HostileMode::kDedupAfterCompletion) {
    // Nothing answers 409 here: the resend must come after the first request finished.
    EXPECT_EQ(s.overlapping, 0u) << "a resend overlapped a request still running: "
                                 << erp_->StatsJson();
  } else if (c.slower_than_the_timeout) {
    EXPECT_GT(s.conflicts, 0u) << "the ERP never had to say 409 in progress: " << erp_->StatsJson();
  } else {
    EXPECT_EQ(s.overlapping, 0u) << "a call was sent again while its request was in flight: "
                                 << erp_->StatsJson();
    EXPECT_EQ(s.conflicts, 0u) << erp_->StatsJson();
  }

  // In the store: one row per call, answered with its own call's answer, owned by no send.
  const std::vector<StoredRow> rows = Rows();
  ASSERT_EQ(rows.size(), keys.size());
  for (const StoredRow& row : rows) {
    EXPECT_EQ(keys.count(row.idempotency_key), 1u) << row.idempotency_key;
    EXPECT_EQ(row.state, "answered") << row.idempotency_key;
    EXPECT_EQ(row.reply_status, 200) << row.idempotency_key << " " << row.reply_body;
    EXPECT_EQ(row.claimed_by, "") << row.idempotency_key;
    const auto reply = nlohmann::json::parse(row.reply_body, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(reply.is_object()) << row.reply_body;
    EXPECT_EQ(reply.value("key", ""), row.idempotency_key)
        << "a row holds another call's answer: " << row.reply_body;
  }
}

std::string CaseName(const ::testing::TestParamInfo<HostileCase>& i) { return i.param.name; }

#ifdef CLAWGUARD_TEST_PG
INSTANTIATE_TEST_SUITE_P(Postgres, HostileErpTest, ::testing::ValuesIn(kCases), CaseName);
#else
INSTANTIATE_TEST_SUITE_P(Sqlite, HostileErpTest, ::testing::ValuesIn(kCases), CaseName);
#endif

}  // namespace
}  // namespace clawguard::host
