// archive_ptr_test.cpp — the libarchive owners of core/archive_ptr.h (here because the signer's
// tests link libarchive; ClawGuard::core does not).
#include "core/archive_ptr.h"

#include <gtest/gtest.h>

#include <string>

namespace clawguard {
namespace {

// Sink collects what a write handle writes and counts the closes of the handle.
struct Sink {
  std::string bytes;
  int closes = 0;
};

la_ssize_t SinkWrite(archive* /*a*/, void* data, const void* buffer, size_t length) {
  static_cast<Sink*>(data)->bytes.append(static_cast<const char*>(buffer), length);
  return static_cast<la_ssize_t>(length);
}

int SinkClose(archive* /*a*/, void* data) {
  ++static_cast<Sink*>(data)->closes;
  return ARCHIVE_OK;
}

// Source hands its bytes to a read handle in one block and counts the closes of the handle.
struct Source {
  std::string bytes;
  bool read = false;
  int closes = 0;
};

la_ssize_t SourceRead(archive* /*a*/, void* data, const void** buffer) {
  auto* s = static_cast<Source*>(data);
  *buffer = s->bytes.data();
  if (s->read) return 0;
  s->read = true;
  return static_cast<la_ssize_t>(s->bytes.size());
}

int SourceClose(archive* /*a*/, void* data) {
  ++static_cast<Source*>(data)->closes;
  return ARCHIVE_OK;
}

TEST(ArchivePtrTest, OwnersCloseTheirHandlesWhenTheyGo) {
  Sink sink;
  {
    ArchiveWriter w(archive_write_new());
    ASSERT_NE(w, nullptr);
    ASSERT_EQ(archive_write_set_format_pax_restricted(w.get()), ARCHIVE_OK);
    ASSERT_EQ(archive_write_open(w.get(), &sink, /*opener=*/nullptr, SinkWrite, SinkClose),
              ARCHIVE_OK);
    ArchiveEntry e(archive_entry_new());
    ASSERT_NE(e, nullptr);
    archive_entry_set_pathname(e.get(), "a.txt");
    archive_entry_set_filetype(e.get(), AE_IFREG);
    archive_entry_set_perm(e.get(), 0644);
    archive_entry_set_size(e.get(), 2);
    ASSERT_EQ(archive_write_header(w.get(), e.get()), ARCHIVE_OK);
    ASSERT_EQ(archive_write_data(w.get(), "a\n", 2), 2);
    EXPECT_EQ(sink.closes, 0);
  }
  // archive_write_free closed the handle, which wrote out the blocks it still held.
  EXPECT_EQ(sink.closes, 1);
  ASSERT_FALSE(sink.bytes.empty());

  Source source;
  source.bytes = sink.bytes;
  {
    ArchiveReader r(archive_read_new());
    ASSERT_NE(r, nullptr);
    ASSERT_EQ(archive_read_support_format_tar(r.get()), ARCHIVE_OK);
    ASSERT_EQ(archive_read_open(r.get(), &source, /*opener=*/nullptr, SourceRead, SourceClose),
              ARCHIVE_OK);
    archive_entry* entry = nullptr;  // owned by |r|, valid until the next header
    ASSERT_EQ(archive_read_next_header(r.get(), &entry), ARCHIVE_OK);
    EXPECT_STREQ(archive_entry_pathname(entry), "a.txt");
    char data[8] = {};
    EXPECT_EQ(archive_read_data(r.get(), data, sizeof(data)), 2);
    EXPECT_STREQ(data, "a\n");
    EXPECT_EQ(source.closes, 0);
  }
  EXPECT_EQ(source.closes, 1);  // archive_read_free closed the handle
}

}  // namespace
}  // namespace clawguard
