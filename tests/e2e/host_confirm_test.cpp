// host_confirm_test.cpp — level 3 end to end: a real `clawguard host` answers 202 and holds the
// plugin's ERP calls as intents (nothing reaches the ERP); `clawguard idem show|confirm` through
// the CLI binary while the host runs → the host's retry worker sends each intent once with its
// Idempotency-Key; a second confirm is a no-op; both confirms are audited.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <thread>

#include "host/erp/idempotency_key.h"
#include "support/host_fixture.h"

namespace clawguard::host {
namespace {

using clawguard::testing::ReadFile;
using clawguard::testing::RunClawguard;
using testing::HostFixture;
using testing::HostFixtureOptions;

template <typename Fn>
bool ConfirmWaitFor(Fn done, std::chrono::seconds guard = std::chrono::seconds(30)) {
  const auto until = std::chrono::steady_clock::now() + guard;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(HostConfirmTest, Level3HoldsIntentsUntilIdemConfirmThenSendsEachOnce) {
  HostFixture f;
  HostFixtureOptions o;
  o.level = 3;
  ASSERT_NO_FATAL_FAILURE(f.Prepare(o));
  ASSERT_TRUE(f.StartHost());

  const std::string body = HostFixture::OrderBody("ord_held");
  const auto first = f.Deliver("msg_held", body);
  ASSERT_TRUE(first.ok);
  EXPECT_EQ(first.status, 202) << first.body;
  const auto replay = f.Deliver("msg_held", body);
  EXPECT_EQ(replay.status, 202);
  EXPECT_TRUE(replay.replayed);
  EXPECT_EQ(f.erp().requests_total(), 0u);

  const std::string key =
      DeriveEventKey(3, "acme-orders", "order.created", "msg_held", "ord_held", body).key;
  const std::string store = "sqlite:" + f.db_path();
  auto show = RunClawguard({"idem", "show", key, "--store", store, "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.out << show.err;
  const auto shown = nlohmann::json::parse(show.out);
  EXPECT_EQ(shown["record"]["level"], 3);
  EXPECT_EQ(shown["record"]["status"], 202);
  ASSERT_EQ(shown["outbox"].size(), 2u);
  EXPECT_EQ(shown["outbox"][0]["state"], "held");
  EXPECT_EQ(shown["outbox"][0]["path"], "/orders/ord_held/fulfil");
  EXPECT_EQ(shown["outbox"][1]["state"], "held");
  EXPECT_EQ(show.out.find("e2e-erp-token"), std::string::npos);

  const std::string audit = f.dir().Sub("operator.jsonl");
  auto confirm =
      RunClawguard({"idem", "confirm", key, "--store", store, "--audit-log", audit, "--json"});
  ASSERT_EQ(confirm.exit_code, 0) << confirm.out << confirm.err;
  EXPECT_EQ(nlohmann::json::parse(confirm.out)["confirmed"], 2);
  ASSERT_TRUE(ConfirmWaitFor([&] { return f.erp().effects_total() == 2; }))
      << "the running host never sent the intents";
  EXPECT_EQ(f.erp().effects("/orders/ord_held/fulfil"), 1u);
  EXPECT_EQ(f.erp().effects("/inventory/adjust"), 1u);

  auto again = RunClawguard({"idem", "confirm", key, "--store", store, "--audit-log", audit});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("nothing to confirm"), std::string::npos) << again.out;
  ASSERT_TRUE(ConfirmWaitFor([&] {
    auto rows = RunClawguard({"idem", "show", key, "--store", store, "--json"});
    const auto j = nlohmann::json::parse(rows.out, nullptr, false);
    return j.is_object() && j["outbox"].size() == 2 && j["outbox"][0]["state"] == "answered" &&
           j["outbox"][1]["state"] == "answered";
  }));
  EXPECT_EQ(f.erp().requests_total(), 2u);  // each intent once, never resent
  EXPECT_TRUE(f.erp().AtMostOneEffectPerKey());

  const std::string lines = ReadFile(audit);
  EXPECT_EQ(Count(lines, "\"operator_action\""), 2u) << lines;
  EXPECT_EQ(Count(lines, "\"result\":\"confirmed\""), 1u) << lines;
  EXPECT_EQ(Count(lines, "\"result\":\"nothing_held\""), 1u) << lines;
  EXPECT_EQ(f.StopHost(), 0);
}

TEST(IdemCommandTest, RefusesBadKeysAndMissingStores) {
  clawguard::testing::TempDir dir;
  auto bad_key =
      RunClawguard({"idem", "show", "not-a-key", "--store", "sqlite:" + dir.Sub("x.db")});
  EXPECT_EQ(bad_key.exit_code, 2);
  EXPECT_NE(bad_key.err.find("64 lowercase hex"), std::string::npos) << bad_key.err;
  auto missing = RunClawguard(
      {"idem", "confirm", std::string(64, 'a'), "--store", "sqlite:" + dir.Sub("x.db")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("store_unavailable"), std::string::npos) << missing.err;
  auto pg = RunClawguard(
      {"idem", "reset", std::string(64, 'a'), "--store", "postgresql://u:pw@h:5432/db"});
  EXPECT_EQ(pg.exit_code, 2);
  EXPECT_EQ(pg.err.find("pw@"), std::string::npos) << pg.err;
}

}  // namespace
}  // namespace clawguard::host
