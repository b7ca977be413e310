// core_utils_test.cpp — encodings, SecretBytes, strict JSON, RFC 3339 time and bounded file I/O.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "clawguard/clock.h"
#include "clawguard/encoding.h"
#include "clawguard/file_io.h"
#include "clawguard/secret_bytes.h"
#include "clawguard/sha256.h"
#include "clawguard/strict_json.h"
#include "loader/bounded_child.h"
#include "support/reason_matchers.h"
#include "support/temp_dir.h"

using ::clawguard::testing::HasReason;

namespace clawguard {
namespace {

using ::testing::HasSubstr;

TEST(EncodingTest, HexRoundTripAndStrictness) {
  EXPECT_EQ(HexEncode(std::string("\x00\xff\x10", 3)), "00ff10");
  EXPECT_EQ(*HexDecode("00FF10"), std::string("\x00\xff\x10", 3));
  EXPECT_FALSE(HexDecode("abc").has_value());
  EXPECT_FALSE(HexDecode("zz").has_value());
  EXPECT_TRUE(IsLowerHex(std::string(64, 'a'), 64));
  EXPECT_FALSE(IsLowerHex(std::string(64, 'A'), 64));
}

TEST(EncodingTest, Base64StandardWithPaddingOnly) {
  EXPECT_EQ(Base64Encode("hello"), "aGVsbG8=");
  EXPECT_EQ(*Base64Decode("aGVsbG8="), "hello");
  EXPECT_FALSE(Base64Decode("aGVsbG8").has_value());    // no padding
  EXPECT_FALSE(Base64Decode("aGVsbG8-").has_value());   // URL alphabet
  EXPECT_FALSE(Base64Decode("aGVs bG8=").has_value());  // whitespace
  EXPECT_EQ(*Base64Decode(""), "");
}

TEST(EncodingTest, EncodeFieldsIsLengthPrefixed) {
  EXPECT_EQ(EncodeFields({"ab", ""}), std::string("\x00\x00\x00\x02"
                                                  "ab"
                                                  "\x00\x00\x00\x00",
                                                  10));
}

TEST(Sha256Test, KnownAnswer) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 h;
  h.Update("a");
  h.Update("bc");
  EXPECT_EQ(DigestHex(h.Finish()), Sha256Hex("abc"));
}

TEST(SecretBytesTest, ConstantTimeEqualsAndWipe) {
  SecretBytes a("1234"), b("1234"), c("1235");
  EXPECT_TRUE(a.Equals(b));
  EXPECT_FALSE(a.Equals(c));
  SecretBytes moved(std::move(a));
  EXPECT_EQ(InsecureSecretAccess::View(moved), "1234");
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  moved.Wipe();
  EXPECT_TRUE(moved.empty());
  EXPECT_FALSE(ConstantTimeEquals("ab", "abc"));
}

TEST(StrictJsonTest, RefusesDuplicateKeysAndGarbage) {
  EXPECT_TRUE(ParseJsonStrict(R"({"a":1,"b":{"a":2}})", Reason::kBundleInvalid, "bundle").ok());
  const Status dup = ParseJsonStrict(R"({"a":1,"a":2})", Reason::kBundleInvalid, "bundle").error();
  EXPECT_THAT(dup, HasReason(Reason::kBundleInvalid));
  EXPECT_THAT(dup.message(), HasSubstr("duplicate key \"a\""));
  EXPECT_THAT(ParseJsonStrict(R"({"a":1} x)", Reason::kBundleInvalid, "bundle"),
              HasReason(Reason::kBundleInvalid));
  EXPECT_FALSE(ParseJsonStrict(std::string(100, '['), Reason::kBundleInvalid, "b").ok());
}

TEST(ClockTest, Rfc3339RoundTrip) {
  EXPECT_EQ(*ParseRfc3339Utc("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(*ParseRfc3339Utc("2027-12-31T00:00:00Z"), 1830211200);
  EXPECT_EQ(FormatRfc3339Utc(1830211200), "2027-12-31T00:00:00Z");
  EXPECT_FALSE(ParseRfc3339Utc("2027-02-30T00:00:00Z").has_value());
  EXPECT_FALSE(ParseRfc3339Utc("2027-12-31 00:00:00Z").has_value());
  EXPECT_FALSE(ParseRfc3339Utc("2027-12-31T00:00:00+01:00").has_value());
}

TEST(FileIoTest, ReadBoundedAndAtomicWrite) {
  testing::TempDir dir;
  const std::string p = dir.Sub("f.bin");
  ASSERT_TRUE(WriteFileAtomic(p, "hello").ok());
  EXPECT_EQ(*ReadFileBounded(p, 5), "hello");
  EXPECT_THAT(ReadFileBounded(p, 4, Reason::kPackageTooLarge), HasReason(Reason::kPackageTooLarge));
  EXPECT_THAT(ReadFileBounded(dir.Sub("missing"), 10), HasReason(Reason::kFileUnreadable));
  EXPECT_THAT(ReadFileBounded(dir.path().string(), 10), HasReason(Reason::kFileUnreadable));
}

TEST(FileIoTest, RefusesFifoDeviceDirectoryAndSocketWithoutBlocking) {
  testing::TempDir dir;
  ASSERT_EQ(::mkfifo(dir.Sub("fifo").c_str(), 0600), 0);
  // A listening socket's path.
  const int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock_path = dir.Sub("sock");
  ASSERT_LT(sock_path.size(), sizeof(addr.sun_path));
  std::memcpy(addr.sun_path, sock_path.c_str(), sock_path.size() + 1);
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  struct Case {
    std::string path, type;
  };
  const std::vector<Case> cases = {{dir.Sub("fifo"), "a FIFO (named pipe)"},
                                   {"/dev/zero", "a character device"},
                                   {"/dev/null", "a character device"},
                                   {dir.path().string(), "a directory"},
                                   {sock_path, "a socket"}};
  for (const auto& c : cases) {
    // In a bounded child: an open that blocks fails the test instead of hanging it.
    const auto r = testing::RunBounded(
        [&] {
          auto read = ReadFileBounded(c.path, 1024);
          auto opened = OpenRegularFile(c.path, "a hint");
          if (read.ok() || opened.ok()) return std::string("read it");
          return std::string(ReasonName(read.error().reason())) + "|" + read.error().message() +
                 "|" + opened.error().message();
        },
        60);
    ASSERT_TRUE(r.kind == testing::ChildResult::Kind::kFinished) << c.path << ": " << r.detail;
    EXPECT_THAT(r.output, HasSubstr("file_unreadable|")) << c.path;
    EXPECT_THAT(r.output, HasSubstr("is not a regular file: it is " + c.type)) << c.path;
    EXPECT_THAT(r.output, HasSubstr("; a hint")) << c.path;
  }
  ::close(sock);
}

}  // namespace
}  // namespace clawguard
