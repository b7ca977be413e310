// pin_source_test.cpp — ReadPin from env:, file: and fd:; env cleared; the PIN never echoed.
#include "signer/pin_source.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include "support/reason_matchers.h"
#include "support/temp_dir.h"

using ::clawguard::testing::HasReason;

namespace clawguard::signer {
namespace {

using clawguard::testing::TempDir;
using clawguard::testing::WriteFile;

std::string View(const SecretBytes& s) { return std::string(InsecureSecretAccess::View(s)); }

TEST(PinSourceTest, EnvIsReadThenCleared) {
  ::setenv("CG_PIN_TEST", "s3cret-4711", 1);
  auto pin = ReadPin("env:CG_PIN_TEST");
  ASSERT_TRUE(pin.ok()) << pin.error().ToString();
  EXPECT_EQ(View(*pin), "s3cret-4711");
  EXPECT_EQ(std::getenv("CG_PIN_TEST"), nullptr);
}

TEST(PinSourceTest, UnsetEnvIsLoginFailed) {
  ::unsetenv("CG_PIN_UNSET");
  auto pin = ReadPin("env:CG_PIN_UNSET");
  ASSERT_FALSE(pin.ok());
  EXPECT_THAT(pin, HasReason(Reason::kHsmLoginFailed));
  EXPECT_NE(pin.error().message().find("CG_PIN_UNSET"), std::string::npos);
}

TEST(PinSourceTest, FileStripsOneTrailingNewline) {
  TempDir dir;
  WriteFile(dir.Sub("pin"), "1234\n");
  auto pin = ReadPin("file:" + dir.Sub("pin"));
  ASSERT_TRUE(pin.ok()) << pin.error().ToString();
  EXPECT_EQ(View(*pin), "1234");
  WriteFile(dir.Sub("pin2"), "12 34\r\n\n");
  pin = ReadPin("file:" + dir.Sub("pin2"));
  ASSERT_TRUE(pin.ok());
  EXPECT_EQ(View(*pin), "12 34\r\n");  // only one newline is stripped
}

TEST(PinSourceTest, MissingFileIsUnreadable) {
  auto pin = ReadPin("file:/nonexistent/pin");
  ASSERT_FALSE(pin.ok());
  EXPECT_THAT(pin, HasReason(Reason::kFileUnreadable));
}

TEST(PinSourceTest, OversizedFileIsRefused) {
  TempDir dir;
  WriteFile(dir.Sub("big"), std::string(5000, 'x'));
  auto pin = ReadPin("file:" + dir.Sub("big"));
  ASSERT_FALSE(pin.ok());
  EXPECT_THAT(pin, HasReason(Reason::kHsmLoginFailed));
}

TEST(PinSourceTest, EmptyPinIsRefused) {
  TempDir dir;
  WriteFile(dir.Sub("empty"), "\n");
  auto pin = ReadPin("file:" + dir.Sub("empty"));
  ASSERT_FALSE(pin.ok());
  EXPECT_THAT(pin, HasReason(Reason::kHsmLoginFailed));
}

TEST(PinSourceTest, FdIsReadToEofAndClosed) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "9876\n", 5), 5);
  ::close(fds[1]);
  auto pin = ReadPin("fd:" + std::to_string(fds[0]));
  ASSERT_TRUE(pin.ok()) << pin.error().ToString();
  EXPECT_EQ(View(*pin), "9876");
  EXPECT_EQ(::fcntl(fds[0], F_GETFD), -1);  // closed
}

TEST(PinSourceTest, ClosedFdIsLoginFailed) {
  auto pin = ReadPin("fd:987");
  ASSERT_FALSE(pin.ok());
  EXPECT_THAT(pin, HasReason(Reason::kHsmLoginFailed));
}

TEST(PinSourceTest, OtherFormsAreUsageErrorsThatNeverEchoThePin) {
  for (const char* src :
       {"1234", "pin:1234", "env:", "fd:", "fd:12ab", "fd:-1", "file:", "env:A=1234", "ENV:X"}) {
    auto pin = ReadPin(src);
    ASSERT_FALSE(pin.ok()) << src;
    EXPECT_THAT(pin, HasReason(Reason::kUsage)) << src;
    EXPECT_EQ(pin.error().message().find("1234"), std::string::npos) << pin.error().message();
  }
}

}  // namespace
}  // namespace clawguard::signer
