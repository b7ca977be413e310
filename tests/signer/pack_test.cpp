// pack_test.cpp — the package writer is deterministic, packs exactly the listed files with fixed
// metadata, fills in digests, refuses what it must; ReadFirstEntryManifest reads only entry one.
#include "signer/pack.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <vector>

#include "clawguard/limits.h"
#include "clawguard/sha256.h"
#include "core/archive_ptr.h"
#include "signer/package_manifest.h"
#include "support/reason_matchers.h"
#include "support/temp_dir.h"

using ::clawguard::testing::HasReason;

namespace clawguard::signer {
namespace {

namespace fs = std::filesystem;
using ::clawguard::testing::ReadFile;
using ::clawguard::testing::RunCommand;
using ::clawguard::testing::TempDir;
using ::clawguard::testing::WriteFile;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kManifest = R"(schema: clawguard/plugin/v1
name: demo-plugin
version: 2.0.0-rc.1
publisher: acme
abi: 1
entry: lib/libdemo.so
files:
  share/b.txt: null
  lib/libdemo.so: null
  a/z.txt: null
capabilities:
  erp:
    - POST /orders/{id}/fulfil
webhooks:
  - route: order.created
    idempotency: { level: 2, business_key: /order_id, retention: 7d }
)";

// MakeSources writes the manifest (with |manifest|) and the three listed files plus an unlisted
// one.
void MakeSources(const std::string& dir, const std::string& manifest = kManifest) {
  WriteFile(dir + "/manifest.yaml", manifest);
  WriteFile(dir + "/lib/libdemo.so", std::string("\x7f"
                                                 "ELF fake library bytes"));
  WriteFile(dir + "/share/b.txt", "bee\n");
  WriteFile(dir + "/a/z.txt", std::string(100000, 'z'));
  WriteFile(dir + "/secret.key", "not listed: must never be packed\n");
}

struct Entry {
  std::string path;
  int filetype = 0;
  int perm = 0;
  int64_t mtime = -1, uid = -1, gid = -1;
  std::string uname, gname, bytes;
};

// ListPackage reads every entry of a package with libarchive.
std::vector<Entry> ListPackage(const std::string& bytes) {
  ArchiveReader a(archive_read_new());
  archive_read_support_filter_zstd(a.get());
  archive_read_support_format_tar(a.get());
  EXPECT_EQ(archive_read_open_memory(a.get(), bytes.data(), bytes.size()), ARCHIVE_OK);
  std::vector<Entry> out;
  archive_entry* e = nullptr;
  while (archive_read_next_header(a.get(), &e) == ARCHIVE_OK) {
    Entry x;
    x.path = archive_entry_pathname(e);
    x.filetype = static_cast<int>(archive_entry_filetype(e));
    x.perm = static_cast<int>(archive_entry_perm(e));
    x.mtime = archive_entry_mtime(e);
    x.uid = archive_entry_uid(e);
    x.gid = archive_entry_gid(e);
    x.uname = archive_entry_uname(e) ? archive_entry_uname(e) : "";
    x.gname = archive_entry_gname(e) ? archive_entry_gname(e) : "";
    EXPECT_FALSE(archive_entry_atime_is_set(e) || archive_entry_ctime_is_set(e)) << x.path;
    x.bytes.resize(static_cast<size_t>(archive_entry_size(e)));
    EXPECT_EQ(archive_read_data(a.get(), x.bytes.data(), x.bytes.size()),
              static_cast<la_ssize_t>(x.bytes.size()));
    out.push_back(std::move(x));
  }
  return out;
}

// Decompress returns the raw tar inside a zstd package.
std::string Decompress(const std::string& bytes) {
  ArchiveReader a(archive_read_new());
  archive_read_support_filter_zstd(a.get());
  archive_read_support_format_raw(a.get());
  EXPECT_EQ(archive_read_open_memory(a.get(), bytes.data(), bytes.size()), ARCHIVE_OK);
  archive_entry* e = nullptr;
  EXPECT_EQ(archive_read_next_header(a.get(), &e), ARCHIVE_OK);
  std::string out;
  char buf[65536];
  for (la_ssize_t n; (n = archive_read_data(a.get(), buf, sizeof(buf))) > 0;)
    out.append(buf, static_cast<size_t>(n));
  return out;
}

// WriteTar builds an archive of regular files (zstd-compressed unless |plain|) for reader tests.
std::string WriteTar(const std::vector<std::pair<std::string, std::string>>& files,
                     bool plain = false) {
  ArchiveWriter a(archive_write_new());
  archive_write_set_format_pax_restricted(a.get());
  if (!plain) archive_write_add_filter_zstd(a.get());
  archive_write_set_bytes_in_last_block(a.get(), 1);
  std::string out;
  archive_write_open2(
      a.get(), &out, nullptr,
      [](archive*, void* c, const void* b, size_t n) -> la_ssize_t {
        static_cast<std::string*>(c)->append(static_cast<const char*>(b), n);
        return static_cast<la_ssize_t>(n);
      },
      nullptr, nullptr);
  for (const auto& [path, bytes] : files) {
    ArchiveEntry e(archive_entry_new());
    archive_entry_set_pathname(e.get(), path.c_str());
    archive_entry_set_filetype(e.get(), AE_IFREG);
    archive_entry_set_perm(e.get(), 0644);
    archive_entry_set_size(e.get(), static_cast<la_int64_t>(bytes.size()));
    archive_write_header(a.get(), e.get());
    archive_write_data(a.get(), bytes.data(), bytes.size());
  }
  archive_write_close(a.get());
  return out;
}

TEST(PackTest, PacksExactlyTheListedFilesWithFixedMetadata) {
  TempDir t;
  MakeSources(t.Sub("src"));
  auto r = PackPlugin(t.Sub("src/manifest.yaml"), std::nullopt, t.Sub("out"));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->package_path, t.Sub("out") + "/demo-plugin-2.0.0-rc.1.claw");
  const std::string bytes = ReadFile(r->package_path);
  EXPECT_EQ(r->sha256_hex, Sha256Hex(bytes));
  const auto entries = ListPackage(bytes);
  std::vector<std::string> names;
  for (const auto& e : entries) names.push_back(e.path);
  EXPECT_THAT(names, ElementsAre("manifest.yaml", "a/z.txt", "lib/libdemo.so", "share/b.txt"));
  for (const auto& e : entries) {
    EXPECT_EQ(e.filetype, AE_IFREG) << e.path;
    EXPECT_EQ(e.perm, e.path == "lib/libdemo.so" ? 0755 : 0644) << e.path;
    EXPECT_EQ(e.mtime, 0) << e.path;
    EXPECT_EQ(e.uid, 0) << e.path;
    EXPECT_EQ(e.gid, 0) << e.path;
    EXPECT_EQ(e.uname, "") << e.path;
    EXPECT_EQ(e.gname, "") << e.path;
  }
  EXPECT_EQ(entries[2].bytes, ReadFile(t.Sub("src/lib/libdemo.so")));
  EXPECT_EQ(entries[1].bytes, std::string(100000, 'z'));
  // pax-restricted with short names: plain ustar headers, no extended-header noise.
  EXPECT_EQ(Decompress(bytes).find("PaxHeader"), std::string::npos);
}

TEST(PackTest, FillsInDigestsAndWritesTheRenderedManifestFirst) {
  TempDir t;
  MakeSources(t.Sub("src"));
  auto r = PackPlugin(t.Sub("src/manifest.yaml"), std::nullopt, t.Sub("out"));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->manifest.files.at("share/b.txt"), "sha256:" + Sha256Hex("bee\n"));
  for (const auto& [path, digest] : r->manifest.files) {
    EXPECT_EQ(digest, "sha256:" + Sha256Hex(ReadFile(t.Sub("src/" + path)))) << path;
  }
  auto first = ReadFirstEntryManifest(ReadFile(r->package_path));
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  EXPECT_EQ(*first, RenderManifestYaml(r->manifest));
  auto parsed = ParseManifest(*first, "packed");
  ASSERT_TRUE(parsed.ok()) << parsed.error().ToString();
  EXPECT_EQ(*parsed, r->manifest);
}

TEST(PackTest, SameInputsGiveSameBytesWhateverTimesModesAndUmask) {
  TempDir t;
  MakeSources(t.Sub("src"));
  auto a = PackPlugin(t.Sub("src/manifest.yaml"), std::nullopt, t.Sub("out1"));
  auto b = PackPlugin(t.Sub("src/manifest.yaml"), std::nullopt, t.Sub("out2"));
  ASSERT_TRUE(a.ok() && b.ok());
  // A copy with other mtimes and modes, packed under another umask.
  fs::copy(t.Sub("src"), t.Sub("copy"), fs::copy_options::recursive);
  for (const auto& p : fs::recursive_directory_iterator(t.Sub("copy"))) {
    if (!p.is_regular_file()) continue;
    fs::last_write_time(p.path(), fs::file_time_type::clock::now() - std::chrono::hours(24 * 400));
    fs::permissions(p.path(), fs::perms::owner_read | fs::perms::owner_write);
  }
  const mode_t old_umask = ::umask(077);
  auto c = PackPlugin(t.Sub("copy/manifest.yaml"), std::nullopt, t.Sub("out3"));
  ::umask(old_umask);
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  const std::string bytes = ReadFile(a->package_path);
  EXPECT_EQ(bytes, ReadFile(b->package_path));
  EXPECT_EQ(bytes, ReadFile(c->package_path));
  EXPECT_EQ(a->sha256_hex, c->sha256_hex);
  EXPECT_EQ(fs::status(c->package_path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                fs::perms::others_read);
}

TEST(PackTest, StartsWithTheZstdFrameMagic) {
  TempDir t;
  MakeSources(t.Sub("src"));
  auto r = PackPlugin(t.Sub("src/manifest.yaml"), std::nullopt, t.Sub("out"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ReadFile(r->package_path).substr(0, 4), std::string("\x28\xb5\x2f\xfd", 4));
}

TEST(PackTest, ReadsFromAnExplicitRoot) {
  TempDir t;
  MakeSources(t.Sub("files"));
  WriteFile(t.Sub("m/manifest.yaml"), kManifest);
  auto r = PackPlugin(t.Sub("m/manifest.yaml"), t.Sub("files"), t.Sub("out"));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  auto again = PackPlugin(t.Sub("files/manifest.yaml"), std::nullopt, t.Sub("out2"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(r->sha256_hex, again->sha256_hex);
}

TEST(PackTest, AcceptsAMatchingGivenDigestAndRefusesAWrongOne) {
  TempDir t;
  std::string m = kManifest;
  const std::string good = "share/b.txt: sha256:" + Sha256Hex("bee\n");
  m.replace(m.find("share/b.txt: null"), 17, good);
  MakeSources(t.Sub("ok"), m);
  ASSERT_TRUE(PackPlugin(t.Sub("ok/manifest.yaml"), std::nullopt, t.Sub("out")).ok());

  m.replace(m.find(good), good.size(), "share/b.txt: sha256:" + std::string(64, '0'));
  MakeSources(t.Sub("bad"), m);
  auto r = PackPlugin(t.Sub("bad/manifest.yaml"), std::nullopt, t.Sub("out-bad"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r, HasReason(Reason::kManifestInvalid));
  EXPECT_THAT(r.error().message(), HasSubstr("share/b.txt"));
  EXPECT_THAT(r.error().message(), HasSubstr(Sha256Hex("bee\n")));
  EXPECT_FALSE(fs::exists(t.Sub("out-bad/demo-plugin-2.0.0-rc.1.claw")));
}

TEST(PackTest, RefusesMissingSymlinkedAndNonRegularFiles) {
  TempDir t;
  MakeSources(t.Sub("src"));
  fs::remove(t.Sub("src/share/b.txt"));
  auto missing = PackPlugin(t.Sub("src/manifest.yaml"), std::nullopt, t.Sub("out"));
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing, HasReason(Reason::kFileUnreadable));
  EXPECT_THAT(missing.error().message(), HasSubstr("share/b.txt"));

  fs::create_symlink(t.Sub("src/secret.key"), t.Sub("src/share/b.txt"));
  auto link = PackPlugin(t.Sub("src/manifest.yaml"), std::nullopt, t.Sub("out"));
  ASSERT_FALSE(link.ok());
  EXPECT_THAT(link, HasReason(Reason::kFileUnreadable));
  EXPECT_THAT(link.error().message(), HasSubstr("symlink"));

  fs::remove(t.Sub("src/share/b.txt"));
  fs::rename(t.Sub("src/share"), t.Sub("elsewhere"));
  WriteFile(t.Sub("elsewhere/b.txt"), "bee\n");
  fs::create_directory_symlink(t.Sub("elsewhere"), t.Sub("src/share"));
  auto dirlink = PackPlugin(t.Sub("src/manifest.yaml"), std::nullopt, t.Sub("out"));
  ASSERT_FALSE(dirlink.ok());
  EXPECT_THAT(dirlink, HasReason(Reason::kFileUnreadable));
  EXPECT_THAT(dirlink.error().message(), HasSubstr("symlink"));

  fs::remove(t.Sub("src/share"));
  fs::create_directories(t.Sub("src/share/b.txt"));
  auto dir = PackPlugin(t.Sub("src/manifest.yaml"), std::nullopt, t.Sub("out"));
  ASSERT_FALSE(dir.ok());
  EXPECT_THAT(dir, HasReason(Reason::kFileUnreadable));
  EXPECT_THAT(dir.error().message(), HasSubstr("not a regular file"));
}

TEST(PackTest, RefusesBadOrMissingManifest) {
  TempDir t;
  MakeSources(t.Sub("src"), std::string(kManifest) + "extra: 1\n");
  auto bad = PackPlugin(t.Sub("src/manifest.yaml"), std::nullopt, t.Sub("out"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad, HasReason(Reason::kManifestInvalid));
  EXPECT_THAT(bad.error().message(), HasSubstr("unknown key 'extra'"));

  auto missing = PackPlugin(t.Sub("nope/manifest.yaml"), std::nullopt, t.Sub("out"));
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing, HasReason(Reason::kFileUnreadable));
}

TEST(PackTest, ZstdAndTarListTheExpectedEntries) {
  TempDir t;
  MakeSources(t.Sub("src"));
  auto r = PackPlugin(t.Sub("src/manifest.yaml"), std::nullopt, t.Sub("out"));
  ASSERT_TRUE(r.ok());
  auto list = RunCommand({"/bin/sh", "-c", "zstd -dc \"$0\" | tar -tvf -", r->package_path});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("-rw-r--r-- 0/0"));
  EXPECT_THAT(list.out, HasSubstr("-rwxr-xr-x 0/0"));
  EXPECT_THAT(list.out, HasSubstr("1970-01-01 00:00 manifest.yaml\n"));
  EXPECT_THAT(list.out, HasSubstr(" lib/libdemo.so\n"));
  EXPECT_EQ(list.out.find("secret.key"), std::string::npos);
  EXPECT_TRUE(list.out.substr(0, list.out.find('\n')).ends_with(" manifest.yaml"))
      << list.out;  // first line
  EXPECT_LT(list.out.find("manifest.yaml"), list.out.find("a/z.txt"));
}

TEST(ReadFirstEntryManifestTest, ReturnsTheExactFirstEntry) {
  const std::string yaml = "schema: anything\n";  // not parsed here
  auto r = ReadFirstEntryManifest(WriteTar({{"manifest.yaml", yaml}, {"lib/x.so", "x"}}));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(*r, yaml);
}

TEST(ReadFirstEntryManifestTest, RefusesManifestNotFirstOrTooLarge) {
  auto second = ReadFirstEntryManifest(WriteTar({{"lib/x.so", "x"}, {"manifest.yaml", "a: 1\n"}}));
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second, HasReason(Reason::kManifestInvalid));
  EXPECT_THAT(second.error().message(), HasSubstr("'lib/x.so'"));

  auto dotted = ReadFirstEntryManifest(WriteTar({{"./manifest.yaml", "a: 1\n"}}));
  ASSERT_FALSE(dotted.ok());
  EXPECT_THAT(dotted, HasReason(Reason::kManifestInvalid));

  auto big = ReadFirstEntryManifest(
      WriteTar({{"manifest.yaml", std::string(limits::kMaxManifest + 1, 'a')}}));
  ASSERT_FALSE(big.ok());
  EXPECT_THAT(big, HasReason(Reason::kManifestInvalid));
  EXPECT_THAT(big.error().message(), HasSubstr("limit"));

  auto empty = ReadFirstEntryManifest(WriteTar({}));
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty, HasReason(Reason::kManifestInvalid));
}

TEST(ReadFirstEntryManifestTest, RefusesUnreadableOrUncompressedArchives) {
  for (const std::string& bytes : {std::string("not an archive at all"), std::string(),
                                   WriteTar({{"manifest.yaml", "a: 1\n"}}).substr(0, 12),
                                   WriteTar({{"manifest.yaml", "a: 1\n"}}, /*plain=*/true)}) {
    auto r = ReadFirstEntryManifest(bytes);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r, HasReason(Reason::kArchiveUnsafe)) << r.error().ToString();
  }
}

}  // namespace
}  // namespace clawguard::signer
