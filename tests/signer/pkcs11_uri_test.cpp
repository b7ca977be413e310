// pkcs11_uri_test.cpp — the strict RFC 7512 key URI parser.
#include "signer/pkcs11_uri.h"

#include <gtest/gtest.h>
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard::signer {
namespace {

TEST(Pkcs11UriTest, ParsesTokenAndObject) {
  auto uri = ParsePkcs11Uri("pkcs11:token=release;object=acme-release;type=private");
  ASSERT_TRUE(uri.ok()) << uri.error().ToString();
  EXPECT_EQ(uri->token, "release");
  EXPECT_EQ(uri->object, "acme-release");
  EXPECT_FALSE(uri->id.has_value());
}

TEST(Pkcs11UriTest, PercentDecodesValuesAndId) {
  auto uri = ParsePkcs11Uri("pkcs11:token=acme%20ci;id=%01%a2%FF");
  ASSERT_TRUE(uri.ok()) << uri.error().ToString();
  EXPECT_EQ(uri->token, "acme ci");
  EXPECT_EQ(uri->id, std::string("\x01\xa2\xff", 3));
  EXPECT_FALSE(uri->object.has_value());
}

TEST(Pkcs11UriTest, FormatRoundTrips) {
  Pkcs11Uri in{"acme ci/2026", std::string("rel;ease=1"), std::string("\x00\x10", 2)};
  auto out = ParsePkcs11Uri(FormatPkcs11Uri(in));
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_EQ(out->token, in.token);
  EXPECT_EQ(out->object, in.object);
  EXPECT_EQ(out->id, in.id);  // a binary CKA_ID may hold 0x00
}

struct BadUri {
  const char* uri;
  const char* mentions;
};

class Pkcs11UriRefusalTest : public ::testing::TestWithParam<BadUri> {};

TEST_P(Pkcs11UriRefusalTest, RefusesWithKeyUriInvalid) {
  auto uri = ParsePkcs11Uri(GetParam().uri);
  ASSERT_FALSE(uri.ok()) << GetParam().uri;
  EXPECT_THAT(uri, HasReason(Reason::kKeyUriInvalid));
  EXPECT_NE(uri.error().message().find(GetParam().mentions), std::string::npos)
      << uri.error().message();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, Pkcs11UriRefusalTest,
    ::testing::Values(BadUri{"", "pkcs11:"}, BadUri{"PKCS11:token=a;object=b", "pkcs11:"},
                      BadUri{"file:token=a;object=b", "pkcs11:"},
                      BadUri{"pkcs11:token=a;object=b?pin-value=1234", "pin-value"},
                      BadUri{"pkcs11:token=a;object=b?pin-source=file:/p", "pin-source"},
                      BadUri{"pkcs11:token=a;object=b?module-path=/tmp/evil.so", "module-path"},
                      BadUri{"pkcs11:token=a;object=b?module-name=evil", "module-name"},
                      BadUri{"pkcs11:token=a;object=b;pin-value=1234", "pin-value"},
                      BadUri{"pkcs11:token=a;object=b?x-foo=1", "x-foo"},
                      BadUri{"pkcs11:object=b", "no token"},
                      BadUri{"pkcs11:token=a", "names no key"},
                      BadUri{"pkcs11:token=a;type=private", "names no key"},
                      BadUri{"pkcs11:token=a;object=b;type=public", "type=public"},
                      BadUri{"pkcs11:token=a;token=c;object=b", "twice"},
                      BadUri{"pkcs11:token=a;object=b;object=c", "twice"},
                      BadUri{"pkcs11:token=a;object=b;serial=42", "serial"},
                      BadUri{"pkcs11:token=a;object=a%2", "two hex digits"},
                      BadUri{"pkcs11:token=a;object=a%zz", "two hex digits"},
                      BadUri{"pkcs11:token=a;object=a%00b", "%00"},
                      BadUri{"pkcs11:token=a;object=acme release", "%20"},
                      BadUri{"pkcs11:token=;object=b", "empty"},
                      BadUri{"pkcs11:token=a;;object=b", "name=value"},
                      BadUri{"pkcs11:token=a;object=b#frag", "fragment"}));

}  // namespace
}  // namespace clawguard::signer
