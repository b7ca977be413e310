// ossl_test.cpp — the owner of memory OpenSSL allocates for the caller (ossl.h UniqueBuffer).
#include "clawguard/ossl.h"

#include <gtest/gtest.h>
#include <openssl/crypto.h>

#include <cstdlib>
#include <string>

namespace clawguard {
namespace {

// Counting allocator for OpenSSL, installed in a fresh process (CRYPTO_set_mem_functions works
// only before OpenSSL's first allocation): what was freed last.
void* g_last_freed = nullptr;
int g_frees = 0;

void* CountingMalloc(size_t n, const char* /*file*/, int /*line*/) { return std::malloc(n); }
void* CountingRealloc(void* p, size_t n, const char* /*file*/, int /*line*/) {
  return std::realloc(p, n);
}
void CountingFree(void* p, const char* /*file*/, int /*line*/) {
  if (p != nullptr) {
    g_last_freed = p;
    ++g_frees;
  }
  std::free(p);
}

TEST(OsslTest, UniqueBufferFreesWithOpensslFree) {
  GTEST_FLAG_SET(death_test_style,
                 "threadsafe");  // a re-executed child: OpenSSL allocated nothing yet
  EXPECT_EXIT(
      {
        if (CRYPTO_set_mem_functions(CountingMalloc, CountingRealloc, CountingFree) != 1)
          std::_Exit(2);
        auto* raw = static_cast<unsigned char*>(OPENSSL_malloc(32));
        if (raw == nullptr) std::_Exit(3);
        {
          const ossl::UniqueBuffer owned(raw);
          if (g_frees != 0) std::_Exit(4);  // not before the owner goes
        }
        std::_Exit(g_frees == 1 && g_last_freed == raw ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(OsslTest, UniqueBufferOwnsI2dOutput) {
  ossl::UniquePtr<BIGNUM> n(BN_new());
  ASSERT_NE(n, nullptr);
  ASSERT_EQ(BN_set_word(n.get(), 0x1234), 1);
  ossl::UniquePtr<ASN1_INTEGER> i(BN_to_ASN1_INTEGER(n.get(), nullptr));
  ASSERT_NE(i, nullptr);
  unsigned char* raw = nullptr;
  const int len = i2d_ASN1_INTEGER(i.get(), &raw);  // allocates |raw|; owned by |der|
  const ossl::UniqueBuffer der(raw);
  ASSERT_EQ(len, 4);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(der.get()), static_cast<size_t>(len)),
            std::string("\x02\x02\x12\x34", 4));
  static_assert(sizeof(ossl::UniqueBuffer) == sizeof(unsigned char*),
                "the owner costs no more than the pointer");
}

}  // namespace
}  // namespace clawguard
