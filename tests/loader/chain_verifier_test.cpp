// chain_verifier_test.cpp — the counting rule below the bundle parser, and ELF parsing of
// truncated/garbage input through the bounded cursor.
#include "loader/chain_verifier.h"
#include "loader/elf_check.h"

#include "loader_fixture.h"
#include "support/reason_matchers.h"

using ::clawguard::testing::HasReason;

namespace clawguard::testing {
namespace {

class ChainVerifierTest : public LoaderFixture {
 protected:
  Statement St() const {
    Statement st;
    st.name = "acme-orders";
    st.version = "1.4.2";
    st.publisher = "acme";
    return st;
  }
  // Sig builds one signature over |payload| by |key| with its chain.
  static void AddSig(Bundle& b, EVP_PKEY* key, std::vector<X509*> chain) {
    const std::string keyid =
        KeyIdOf(X509_get0_pubkey(chain[0])).value();  // get0: owned by the leaf
    b.signatures.push_back({keyid, SignRaw(key, Pae(b.payload_type, b.payload))});
    std::vector<std::string> ders;
    for (X509* c : chain) ders.push_back(CertificateDer(c).value());
    b.certificates[keyid] = ders;
  }
};

TEST_F(ChainVerifierTest, CountsTheSameKeyOnceEvenIfTheParserLetItThrough) {
  TrustOpts t;
  t.threshold = 2;
  auto policy = TrustPolicy::Load(WriteTrust(t), clock_);
  ASSERT_TRUE(policy.ok()) << policy.error().ToString();
  auto v = ChainVerifier::Create(**policy, clock_);
  ASSERT_TRUE(v.ok());
  Bundle b;
  b.payload_type = std::string(kInTotoPayloadType);
  b.payload = "{}";
  AddSig(b, W().key1.get(), {W().leaf1.get(), W().inter.get()});
  AddSig(b, W().key1.get(), {W().leaf1.get(), W().inter.get()});
  auto r = (*v)->Verify(b, St());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r, HasReason(Reason::kThresholdNotMet)) << r.error().ToString();
  AddSig(b, W().key2.get(), {W().leaf2.get(), W().inter.get()});
  auto r2 = (*v)->Verify(b, St());
  ASSERT_TRUE(r2.ok()) << r2.error().ToString();
  EXPECT_EQ(r2->signers.size(), 2u);
  EXPECT_EQ(r2->ignored.size(), 1u);
}

TEST_F(ChainVerifierTest, FirstFailingReasonWinsOverThreshold) {
  TrustOpts t;
  t.threshold = 2;
  auto policy = TrustPolicy::Load(WriteTrust(t), clock_);
  ASSERT_TRUE(policy.ok());
  auto v = ChainVerifier::Create(**policy, clock_);
  ASSERT_TRUE(v.ok());
  Bundle b;
  b.payload_type = std::string(kInTotoPayloadType);
  b.payload = "{}";
  AddSig(b, W().key1.get(), {W().leaf1.get()});  // no intermediate: chain_untrusted
  AddSig(b, W().key2.get(), {W().leaf2.get(), W().inter.get()});
  auto r = (*v)->Verify(b, St());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r, HasReason(Reason::kChainUntrusted));
}

TEST(ElfCheckTest, RefusesTruncatedAndGarbageInputWithoutReadingPastTheEnd) {
  const std::string so = ReadFile(World::Get().Plugin("alpha"));
  const std::set<std::string> allowed = {"libc.so.6"};
  ASSERT_TRUE(CheckElf(so, allowed).ok()) << CheckElf(so, allowed).error().ToString();
  for (size_t n :
       {size_t{0}, size_t{4}, size_t{63}, size_t{64}, size_t{200}, so.size() / 2, so.size() - 1}) {
    auto r = CheckElf(std::string_view(so).substr(0, n), allowed);
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_THAT(r, HasReason(Reason::kElfUnsafe)) << n;
  }
  std::string bad = so;
  // e_phoff far past the end.
  for (int i = 0; i < 8; ++i) bad[32 + i] = static_cast<char>(0xff);
  auto r = CheckElf(bad, allowed);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r, HasReason(Reason::kElfUnsafe));
  auto g = CheckElf(std::string(4096, '\x7f'), allowed);
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g, HasReason(Reason::kElfUnsafe));
}

TEST(ElfCheckTest, ListsNeededLibraries) {
  auto r = CheckElf(ReadFile(World::Get().Plugin("needed")), {"libc.so.6", "libm.so.6"});
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->needed.size(), 2u);
}

}  // namespace
}  // namespace clawguard::testing
