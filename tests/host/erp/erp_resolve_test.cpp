// erp_resolve_test.cpp — ResolveBefore: literals need no lookup, names are looked up on the
// resolver thread, and a name nobody knows is not found. The deadline case (a resolver that never
// answers) is ErpClientTest.NameResolutionCountsAgainstTheCallsDeadline, which sets up its own
// network namespace.
#include "host/erp/erp_resolve.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <chrono>

namespace clawguard::host {
namespace {

std::chrono::steady_clock::time_point In(std::chrono::milliseconds d) {
  return std::chrono::steady_clock::now() + d;
}

TEST(ErpResolveTest, LiteralsAreTheirOwnAddressWithoutALookup) {
  // A deadline already past: a literal never waits for anything.
  const auto past = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  const Resolution v4 = ResolveBefore("127.0.0.1", 8080, past);
  ASSERT_EQ(v4.outcome, Resolution::Outcome::kFound);
  ASSERT_EQ(v4.addresses.size(), 1u);
  ASSERT_EQ(v4.addresses[0].storage.ss_family, AF_INET);
  const auto* in4 = reinterpret_cast<const sockaddr_in*>(&v4.addresses[0].storage);
  EXPECT_EQ(ntohs(in4->sin_port), 8080);
  EXPECT_EQ(ntohl(in4->sin_addr.s_addr), INADDR_LOOPBACK);
  const Resolution v6 = ResolveBefore("::1", 443, past);
  ASSERT_EQ(v6.outcome, Resolution::Outcome::kFound);
  ASSERT_EQ(v6.addresses.size(), 1u);
  EXPECT_EQ(v6.addresses[0].storage.ss_family, AF_INET6);
  EXPECT_EQ(v6.addresses[0].length, sizeof(sockaddr_in6));
}

TEST(ErpResolveTest, ANameIsLookedUpAndAPastDeadlineIsATimeout) {
  const Resolution local = ResolveBefore("localhost", 9, In(std::chrono::seconds(30)));
  ASSERT_EQ(local.outcome, Resolution::Outcome::kFound) << local.detail;
  ASSERT_FALSE(local.addresses.empty());
  for (const ResolvedAddress& a : local.addresses) {
    EXPECT_TRUE(a.storage.ss_family == AF_INET || a.storage.ss_family == AF_INET6);
  }
  // The deadline has passed before the lookup could answer: the caller does not wait for it.
  const Resolution late =
      ResolveBefore("localhost", 9, std::chrono::steady_clock::now() - std::chrono::seconds(1));
  EXPECT_EQ(late.outcome, Resolution::Outcome::kTimedOut);
}

TEST(ErpResolveTest, ANameNobodyKnowsIsNotFound) {
  // RFC 6761: .invalid never resolves (failed, or timed out when no resolver answers here).
  const Resolution none =
      ResolveBefore("erp.clawguard-test.invalid", 80, In(std::chrono::seconds(5)));
  EXPECT_NE(none.outcome, Resolution::Outcome::kFound);
  EXPECT_TRUE(none.addresses.empty());
}

}  // namespace
}  // namespace clawguard::host
