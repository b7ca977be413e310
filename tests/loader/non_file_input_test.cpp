// non_file_input_test.cpp — inputs that are not files (FIFOs, devices, folders) and sizes an
// input declares but does not have. Every refusal runs in a bounded child (bounded_child.h): a
// blocking open would otherwise hang CTest, and an exception escaping a no-throw API would kill
// the test binary. Each asserts the exact reason, the message, and that the plugin never ran.
#include <sys/stat.h>

#include <cstring>

#include "bounded_child.h"
#include "loader_fixture.h"

namespace clawguard::testing {
namespace {

constexpr int kBoundSeconds = 60;  // a hang's bound, never a timing assertion

class NonFileInputTest : public LoaderFixture {
 protected:
  // Honest returns a signed, allowlisted package.
  std::string Honest() {
    const std::string pkg = MakePackage(PackageOpts{});
    Sign(pkg);
    Allow({pkg});
    return pkg;
  }
  // Fifo replaces |path| with a FIFO that nobody ever writes to.
  static void Fifo(const std::string& path) {
    std::filesystem::remove(path);
    ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0) << std::strerror(errno);
  }
  // Outcome is "REASON\nMESSAGE", "LOADED", or "CREATE REASON\nMESSAGE" when the loader itself
  // was refused.
  static std::string Outcome(Result<std::unique_ptr<Loader>> loader, const std::string& pkg) {
    if (!loader.ok()) {
      return "CREATE " + std::string(ReasonName(loader.error().reason())) + "\n" +
             loader.error().message();
    }
    auto loaded = (*loader)->Load(pkg);
    if (loaded.ok()) return "LOADED";
    return std::string(ReasonName(loaded.error().reason())) + "\n" + loaded.error().message();
  }
  // ExpectRefusedInChild loads |pkg| in a bounded child and checks reason, message and marker.
  void ExpectRefusedInChild(const std::string& pkg, Reason want, const std::string& message_part,
                            const TrustOpts& t = TrustOpts{}, uint64_t address_space_headroom = 0) {
    const std::string trust = WriteTrust(t);  // in the parent: it may be replaced by a FIFO later
    ExpectOutcomeInChild(
        [&] {
          LoaderOptions o;
          o.trust_policy_path = trust;
          o.allowlist_path = dir_.Sub("allowlist.yaml");
          o.clock = &clock_;
          o.audit_log_path = dir_.Sub("audit.jsonl");
          o.host_api = &host_api_;
          return Outcome(Loader::Create(std::move(o)), pkg);
        },
        std::string(ReasonName(want)), message_part, address_space_headroom);
  }
  void ExpectOutcomeInChild(const std::function<std::string()>& fn, const std::string& want_prefix,
                            const std::string& message_part, uint64_t address_space_headroom = 0) {
    const ChildResult r = RunBounded(fn, kBoundSeconds, address_space_headroom);
    ASSERT_TRUE(r.kind == ChildResult::Kind::kFinished) << r.detail;
    const size_t nl = r.output.find('\n');
    EXPECT_EQ(r.output.substr(0, nl), want_prefix) << r.output;
    EXPECT_NE(r.output.find(message_part), std::string::npos)
        << "expected '" << message_part << "' in: " << r.output;
    EXPECT_FALSE(MarkerExists()) << "the plugin's constructor ran";
  }
};

TEST_F(NonFileInputTest, FifoAsSignatureBundleIsRefusedAtOnceAsUnsigned) {
  const std::string pkg = Honest();
  Fifo(pkg + ".sig");
  ExpectRefusedInChild(pkg, Reason::kUnsigned, "not a regular file: it is a FIFO");
}

TEST_F(NonFileInputTest, FifoAsPackageIsRefusedAtOnceAsUnsigned) {
  const std::string pkg = Honest();
  Fifo(pkg);
  ExpectRefusedInChild(pkg, Reason::kUnsigned, "not a regular file: it is a FIFO");
}

TEST_F(NonFileInputTest, DevZeroAsPackageIsRefused) {
  Allow({});
  ExpectRefusedInChild("/dev/zero", Reason::kUnsigned,
                       "not a regular file: it is a character device");
}

TEST_F(NonFileInputTest, DevNullAsPackageIsRefused) {
  Allow({});
  ExpectRefusedInChild("/dev/null", Reason::kUnsigned,
                       "not a regular file: it is a character device");
}

TEST_F(NonFileInputTest, DevZeroAsSignatureBundleIsRefused) {
  // A symlink named PKG.claw.sig pointing at a device: the target is judged, not the link.
  const std::string pkg = Honest();
  std::filesystem::remove(pkg + ".sig");
  std::filesystem::create_symlink("/dev/zero", pkg + ".sig");
  ExpectRefusedInChild(pkg, Reason::kUnsigned, "not a regular file: it is a character device");
}

TEST_F(NonFileInputTest, DirectoryAsPackageIsRefused) {
  const std::string pkg = Honest();
  std::filesystem::remove(pkg);
  std::filesystem::create_directory(pkg);
  ExpectRefusedInChild(pkg, Reason::kUnsigned, "not a regular file: it is a directory");
}

TEST_F(NonFileInputTest, FifoAsAllowlistOrItsSignatureIsAllowlistInvalid) {
  const std::string pkg = Honest();
  Fifo(dir_.Sub("allowlist.yaml"));
  ExpectRefusedInChild(pkg, Reason::kAllowlistInvalid, "not a regular file: it is a FIFO");

  std::filesystem::remove(dir_.Sub("allowlist.yaml"));  // writing into a FIFO would block the test
  Allow({pkg}, 3, "2027-12-31T00:00:00Z", /*sign=*/true);
  Fifo(dir_.Sub("allowlist.yaml.sig"));
  TrustOpts t;
  t.allowlist_signer = true;
  ExpectRefusedInChild(pkg, Reason::kAllowlistInvalid, "not a regular file: it is a FIFO", t);
}

TEST_F(NonFileInputTest, FifoAsTrustPolicyRootOrCrlIsConfigInvalid) {
  const std::string pkg = Honest();
  const std::string trust = WriteTrust(TrustOpts{});
  auto create_in_child = [&](const std::string& trust_path) {
    return [&, trust_path] {
      LoaderOptions o;
      o.trust_policy_path = trust_path;
      o.allowlist_path = dir_.Sub("allowlist.yaml");
      o.clock = &clock_;
      o.host_api = &host_api_;
      return Outcome(Loader::Create(std::move(o)), pkg);
    };
  };
  // trust.yaml itself.
  const std::string fifo_trust = dir_.Sub("trust-fifo.yaml");
  Fifo(fifo_trust);
  ExpectOutcomeInChild(create_in_child(fifo_trust), "CREATE config_invalid",
                       "not a regular file: it is a FIFO");
  // A pinned root named in it.
  Fifo(dir_.Sub("root.pem"));
  ExpectOutcomeInChild(create_in_child(trust), "CREATE config_invalid",
                       "not a regular file: it is a FIFO");
  // A CRL named in it.
  std::filesystem::remove(dir_.Sub("root.pem"));  // writing into a FIFO would block the test
  WriteFile(dir_.Sub("root.pem"), CertPem(W().root.get()));
  Fifo(dir_.Sub("inter.crl"));
  TrustOpts t;
  t.crl_files = {"inter.crl"};
  const std::string with_crl = WriteTrust(t);
  ExpectOutcomeInChild(create_in_child(with_crl), "CREATE config_invalid",
                       "not a regular file: it is a FIFO");
}

// LieAboutEntrySize rewrites the ustar header of |entry| in the uncompressed tar |tar| so that it
// declares |size| bytes (base-256, as GNU tar writes sizes over 8 GiB) and fixes its checksum.
std::string LieAboutEntrySize(std::string tar, const std::string& entry, uint64_t size) {
  for (size_t off = 0; off + 512 <= tar.size(); off += 512) {
    if (tar.compare(off, entry.size(), entry) != 0 || tar[off + entry.size()] != '\0') continue;
    if (tar.compare(off + 257, 5, "ustar") != 0) continue;
    char* h = tar.data() + off;
    h[124] = static_cast<char>(0x80);  // base-256 marker, then 11 big-endian bytes
    for (int i = 0; i < 11; ++i)
      h[135 - i] = static_cast<char>(i < 8 ? (size >> (8 * i)) & 0xff : 0);
    std::memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; ++i) sum += static_cast<unsigned char>(h[i]);
    std::snprintf(h + 148, 8, "%06o", sum);  // six octal digits, NUL, then the space kept below
    h[155] = ' ';
    return tar;
  }
  ADD_FAILURE() << "no ustar header for " << entry;
  return tar;
}

TEST_F(NonFileInputTest, TarEntryDeclaringAHugeSizeIsArchiveUnsafeWithoutAllocatingIt) {
  PackageOpts o;
  o.compress = "none";
  const std::string raw = MakePackage(o);
  // 1 TiB declared, a few KiB present: the header lies.
  const std::string tar = LieAboutEntrySize(ReadFile(raw), o.entry, 1ull << 40);
  const std::string pkg = dir_.Sub("acme-orders-1.4.2.claw");
  WriteFile(pkg + ".tar", tar);
  auto z = RunCommand({"zstd", "-q", "-f", "-6", pkg + ".tar", "-o", pkg});
  ASSERT_EQ(z.exit_code, 0) << z.err;
  Sign(pkg);
  Allow({pkg});
  // The policy's limits would allow 64 GiB: only the reservation cap keeps the header from
  // choosing the allocation. The child may grow by 1 GiB at most; reserving from the header
  // would throw std::bad_alloc through the loader and kill the child.
  TrustOpts t;
  t.limits = "{ max_package: 16MiB, max_unpacked: 64GiB, max_entries: 8, max_ratio: 1000000 }";
  ExpectRefusedInChild(pkg, Reason::kArchiveUnsafe, "cannot be read", t,
                       /*address_space_headroom=*/1ull << 30);
}

}  // namespace
}  // namespace clawguard::testing
