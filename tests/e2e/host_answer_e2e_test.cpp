// host_answer_e2e_test.cpp — the answer rule in a real `clawguard host` with a signed plugin built
// from tests/host/plugins/answer_as.c: a 204 with a body is a plugin failure (500
// plugin_failed, nothing stored, the retry runs the plugin again), never a completed record whose
// every answer — first and replayed — is a 500 the HTTP layer produced; a 204 without a body is
// stored and replayed as 204.
#include <gtest/gtest.h>

#include "support/host_fixture.h"

namespace clawguard::host {
namespace {

using testing::HostFixture;
using testing::HostFixtureOptions;

std::string Ask(const std::string& order, const std::string& ask) {
  return R"({"type":"order.created","order_id":")" + order + R"(","ask":")" + ask + R"("})";
}

TEST(HostAnswerE2eTest, A204WithABodyIsAPluginFailureAndA204WithoutOneIsStoredAndReplayed) {
  HostFixture fixture;
  HostFixtureOptions o;
  o.plugin_source = "answer_as";
  ASSERT_NO_FATAL_FAILURE(fixture.Prepare(o));
  ASSERT_TRUE(fixture.StartHost());
  for (int attempt = 0; attempt < 2; ++attempt) {
    const testing::Reply bad =
        fixture.Deliver("msg_204_body", Ask("1", "status=204;body=not allowed"));
    ASSERT_TRUE(bad.ok);
    EXPECT_EQ(bad.status, 500);
    EXPECT_NE(bad.body.find("/plugin_failed\""), std::string::npos) << bad.body;
    EXPECT_FALSE(bad.replayed);  // nothing was stored: the retry ran the plugin again
  }
  const testing::Reply first = fixture.Deliver("msg_204_empty", Ask("2", "status=204;body="));
  ASSERT_TRUE(first.ok);
  EXPECT_EQ(first.status, 204);
  EXPECT_FALSE(first.replayed);
  const testing::Reply replay = fixture.Deliver("msg_204_empty", Ask("2", "status=204;body="));
  ASSERT_TRUE(replay.ok);
  EXPECT_EQ(replay.status, 204);
  EXPECT_TRUE(replay.replayed);
  EXPECT_EQ(fixture.StopHost(), 0);
  const std::string audit = clawguard::testing::ReadFile(fixture.audit_log());
  EXPECT_NE(audit.find("status 204 carries no content"), std::string::npos) << audit;
}

}  // namespace
}  // namespace clawguard::host
