// sha256_test.cpp — Sha256Behind (hashing on a second thread behind a producer) and the hashed
// file read the loader uses for packages: the digest is always that of exactly the bytes
// returned, whatever the chunking, the buffer moves and the error paths.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <string>

#include "clawguard/file_io.h"
#include "clawguard/sha256.h"
#include "support/reason_matchers.h"
#include "support/temp_dir.h"

using ::clawguard::testing::HasReason;

namespace clawguard {
namespace {

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// Fill produces |data| into a growing string in uneven pieces, publishing after each, waiting
// before every append that would move the buffer — the way the extractor does.
Sha256Digest Fill(const std::string& data, uint64_t hint, size_t reserve) {
  std::string out;
  out.reserve(reserve);
  Sha256Behind h(hint);
  size_t at = 0;
  for (size_t piece = 1; at < data.size(); piece = piece * 3 % 200'003 + 1) {
    const size_t n = std::min(piece, data.size() - at);
    if (out.size() + n > out.capacity()) h.Wait();
    out.append(data, at, n);
    at += n;
    h.Publish(out);
  }
  EXPECT_EQ(out, data);
  return h.Finish();
}

TEST(Sha256BehindTest, DigestIsThatOfEveryPublishedByteOnAThreadOrInline) {
  const std::string big = RandomBytes(9 << 20, 1);
  const std::string small = RandomBytes(100'000, 2);
  // On a thread (hint over kInlineBelow), with the buffer reserved and with it moving many times.
  EXPECT_EQ(Fill(big, big.size(), big.size()), Sha256Of(big));
  EXPECT_EQ(Fill(big, big.size(), 0), Sha256Of(big));
  // Inline (hint under kInlineBelow), whatever the real size.
  EXPECT_EQ(Fill(small, small.size(), 0), Sha256Of(small));
  EXPECT_EQ(Fill(big, 0, 0), Sha256Of(big));
  // Nothing published: the empty digest.
  Sha256Behind none(Sha256Behind::kInlineBelow);
  EXPECT_EQ(none.Finish(), Sha256Of(""));
}

TEST(Sha256BehindTest, DestroyingWithoutFinishAbandonsTheDigestAndReturns) {
  const std::string big = RandomBytes(16 << 20, 3);
  for (int i = 0; i < 20; ++i) {
    Sha256Behind h(big.size());
    h.Publish(big);  // the thread is mid-hash when the destructor runs; ASan sees any late read
  }
}

TEST(FileIoTest, ReadOpenedFileHashedReturnsTheDigestOfExactlyTheBytesRead) {
  testing::TempDir dir;
  for (const size_t size : {size_t{0}, size_t{1}, size_t{(1 << 20) + 7}, size_t{(9 << 20) + 3}}) {
    const std::string data = RandomBytes(size, static_cast<uint32_t>(size));
    const std::string p = dir.Sub("f-" + std::to_string(size));
    std::ofstream(p, std::ios::binary) << data;
    auto fd = OpenRegularFile(p);
    ASSERT_TRUE(fd.ok()) << fd.error().ToString();
    auto read = ReadOpenedFileHashed(*fd, p, 64 << 20);
    ASSERT_TRUE(read.ok()) << read.error().ToString();
    EXPECT_EQ(read->bytes, data);
    EXPECT_EQ(read->sha256, Sha256Of(data)) << size;
    // Over the limit: refused with the caller's reason, nothing returned.
    auto fd2 = OpenRegularFile(p);
    ASSERT_TRUE(fd2.ok());
    if (size > 0) {
      EXPECT_THAT(ReadOpenedFileHashed(*fd2, p, size - 1, Reason::kPackageTooLarge),
                  HasReason(Reason::kPackageTooLarge));
    }
  }
}

}  // namespace
}  // namespace clawguard
