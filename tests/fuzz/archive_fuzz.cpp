// fuzz-requires: clawguard_loader
// archive_fuzz.cpp — ExtractPackage (libarchive zstd + pax tar from memory, every hostile-archive
// check) on arbitrary bytes as the package, against a fixed signed statement (the manifest below).
// Input: the package bytes; or "TAR\n" + bytes, which the harness first wraps in a zstd frame
// (libarchive raw writer) so the fuzzer can mutate the tar structure itself, not only the zstd
// stream. Small limits keep each run fast. Invariants: refusals carry the documented reasons; an
// accepted package holds exactly the signed manifest bytes and an entry that matches its digest.
#include <archive.h>
#include <archive_entry.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "clawguard/bundle.h"
#include "clawguard/manifest.h"
#include "clawguard/sha256.h"
#include "core/archive_ptr.h"
#include "loader/archive_extractor.h"

namespace {

// The signed manifest; its files hold "lib\n" and "a\n" (see make_seeds.sh).
constexpr std::string_view kManifest =
    "schema: clawguard/plugin/v1\n"
    "name: fz\n"
    "version: 1.0.0\n"
    "publisher: fuzz\n"
    "abi: 1\n"
    "entry: lib/libfz.so\n"
    "files:\n"
    "  lib/libfz.so: sha256:a325dcacb80b202a014b420b93fc19061900018f8ce216d0a0cb00d610ec7f97\n"
    "  data/a.txt: sha256:87428fc522803d31065e7bce3cf03fe475096631e5e07bbd7a0fde60c4cf25c7\n";

const clawguard::Statement& SignedStatement() {
  static const clawguard::Statement st = [] {
    auto m = clawguard::ParseManifest(kManifest, "fuzz manifest");
    if (!m.ok()) std::abort();  // harness bug
    clawguard::Statement s;
    s.subject_name = "fz-1.0.0.claw";
    s.subject_sha256 = std::string(64, '0');
    s.name = m->name;
    s.version = m->version;
    s.publisher = m->publisher;
    s.abi = m->abi;
    s.manifest_sha256 = clawguard::Sha256Hex(kManifest);
    s.manifest = clawguard::ManifestToJson(*m);
    return s;
  }();
  return st;
}

// ZstdWrap compresses |raw| into one zstd frame (libarchive's raw format + zstd filter).
std::string ZstdWrap(std::string_view raw) {
  clawguard::ArchiveWriter w(archive_write_new());
  std::string out(raw.size() + 1024, '\0');
  size_t used = 0;
  if (!w || archive_write_add_filter_zstd(w.get()) != ARCHIVE_OK ||
      archive_write_set_format_raw(w.get()) != ARCHIVE_OK ||
      archive_write_set_bytes_in_last_block(w.get(), 1) != ARCHIVE_OK ||
      archive_write_open_memory(w.get(), out.data(), out.size(), &used) != ARCHIVE_OK) {
    std::abort();  // harness bug: libarchive without zstd write support
  }
  clawguard::ArchiveEntry e(archive_entry_new());
  if (!e) std::abort();
  archive_entry_set_pathname(e.get(), "raw");
  archive_entry_set_filetype(e.get(), AE_IFREG);
  archive_entry_set_size(e.get(), static_cast<la_int64_t>(raw.size()));
  const bool ok =
      archive_write_header(w.get(), e.get()) == ARCHIVE_OK &&
      archive_write_data(w.get(), raw.data(), raw.size()) == static_cast<la_ssize_t>(raw.size()) &&
      archive_write_close(w.get()) == ARCHIVE_OK;
  if (!ok) return std::string();
  out.resize(used);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string wrapped;
  if (in.substr(0, 4) == "TAR\n") {
    wrapped = ZstdWrap(in.substr(4));
    in = wrapped;
  }
  const clawguard::TrustLimits limits{/*max_package=*/1 << 20, /*max_unpacked=*/1 << 20,
                                      /*max_entries=*/16,
                                      /*max_ratio=*/200};
  auto out = clawguard::ExtractPackage(in, SignedStatement(), limits);
  if (out.ok()) {
    if (out->manifest_bytes != kManifest) std::abort();
    if (out->entry_bytes != "lib\n") std::abort();
    if (out->unpacked_bytes > limits.max_unpacked) std::abort();
    return 0;
  }
  switch (out.error().reason()) {
    case clawguard::Reason::kArchiveUnsafe:
    case clawguard::Reason::kManifestInvalid:
    case clawguard::Reason::kFileDigestMismatch: return 0;
    default: std::abort();  // an undocumented refusal reason
  }
}
