// error_test.cpp — every Reason has a unique stable name, a meaning and a defined exit code.
#include "clawguard/error.h"

#include <gtest/gtest.h>

#include <set>
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard {
namespace {

TEST(ReasonTest, EveryReasonHasAUniqueNameMeaningAndExitCode) {
  std::set<std::string_view> names;
  for (int i = 0; i <= static_cast<int>(Reason::kInternal); ++i) {
    const auto r = static_cast<Reason>(i);
    const auto name = ReasonName(r);
    EXPECT_FALSE(name.empty());
    EXPECT_FALSE(ReasonMeaning(r).empty());
    EXPECT_TRUE(names.insert(name).second) << "duplicate name " << name;
    EXPECT_EQ(ReasonFromName(name), r);
    const int exit = ExitCodeFor(r);
    EXPECT_TRUE(exit == 0 || exit == 1 || exit == 2);
  }
}

TEST(ReasonTest, ArchitectureCodesAreSpelledExactly) {
  for (const char* code :
       {"unsigned", "package_too_large", "bundle_invalid", "algorithm_refused", "chain_untrusted", "cert_expired",
        "cert_revoked", "publisher_not_allowed", "signature_invalid", "threshold_not_met", "digest_mismatch",
        "allowlist_invalid", "allowlist_expired", "not_allowlisted", "version_overwritten", "version_rollback",
        "ledger_tampered", "archive_unsafe", "manifest_invalid", "file_digest_mismatch", "elf_unsafe", "abi_mismatch",
        "load_failed", "hsm_unavailable", "hsm_login_failed", "key_not_found", "key_ambiguous", "key_uri_invalid",
        "key_extractable", "key_imported", "cert_key_mismatch", "file_unreadable", "request_too_large", "not_found",
        "header_conflict", "timestamp_out_of_tolerance", "idempotency_key_missing", "fingerprint_mismatch",
        "in_progress", "rate_limited", "breaker_open", "store_unavailable", "plugin_failed", "plugin_timeout",
        "expired_key_seen"}) {
    EXPECT_TRUE(ReasonFromName(code).has_value()) << code;
  }
}

TEST(ReasonTest, ExitCodesFollowTheContract) {
  EXPECT_EQ(ExitCodeFor(Reason::kOk), 0);
  EXPECT_EQ(ExitCodeFor(Reason::kDigestMismatch), 1);
  EXPECT_EQ(ExitCodeFor(Reason::kVersionOverwritten), 1);
  EXPECT_EQ(ExitCodeFor(Reason::kKeyExtractable), 1);
  EXPECT_EQ(ExitCodeFor(Reason::kCertKeyMismatch), 1);
  EXPECT_EQ(ExitCodeFor(Reason::kManifestInvalid), 1);
  EXPECT_EQ(ExitCodeFor(Reason::kHsmLoginFailed), 2);
  EXPECT_EQ(ExitCodeFor(Reason::kKeyUriInvalid), 2);
  EXPECT_EQ(ExitCodeFor(Reason::kFileUnreadable), 2);
  EXPECT_EQ(ExitCodeFor(Reason::kStoreUnavailable), 2);
  EXPECT_EQ(ExitCodeFor(Reason::kConfigInvalid), 2);
}

TEST(ResultTest, HoldsValueOrStatus) {
  Result<int> ok = 3;
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 3);
  Result<int> bad = Status(Reason::kUnsigned, "no bundle");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad, HasReason(Reason::kUnsigned));
  EXPECT_EQ(bad.error().ToString(), "unsigned: no bundle");
}

}  // namespace
}  // namespace clawguard
