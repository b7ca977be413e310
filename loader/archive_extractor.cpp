// archive_extractor.cpp — see archive_extractor.h.
#include "archive_extractor.h"

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <stdexcept>

#include "clawguard/file_io.h"
#include "clawguard/limits.h"
#include "clawguard/sha256.h"
#include "core/archive_ptr.h"

namespace clawguard {
namespace {

Status Unsafe(const std::string& m) { return Status(Reason::kArchiveUnsafe, m); }
Status BadManifest(const std::string& m) { return Status(Reason::kManifestInvalid, m); }

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// CheckPath refuses every path shape that could escape or alias (reason: archive_unsafe).
Status CheckPath(const std::string& p) {
  if (p.empty()) return Unsafe("an entry has an empty path");
  if (p[0] == '/') return Unsafe("entry '" + p + "' has an absolute path");
  if (p.find('\\') != std::string::npos) return Unsafe("entry '" + p + "' contains a backslash");
  if (p == ".." || p.rfind("../", 0) == 0 || p.find("/../") != std::string::npos ||
      (p.size() >= 3 && p.compare(p.size() - 3, 3, "/..") == 0)) {
    return Unsafe("entry '" + p + "' contains a '..' segment");
  }
  if (!IsCanonicalPath(p)) return Unsafe("entry '" + p + "' is not a canonical path");
  return Status::Ok();
}

Status CheckType(archive_entry* e, const std::string& p) {
  if (archive_entry_hardlink(e) != nullptr) return Unsafe("entry '" + p + "' is a hardlink");
  switch (archive_entry_filetype(e)) {
    case AE_IFREG: break;
    case AE_IFLNK: return Unsafe("entry '" + p + "' is a symlink");
    case AE_IFCHR:
    case AE_IFBLK: return Unsafe("entry '" + p + "' is a device node");
    case AE_IFIFO: return Unsafe("entry '" + p + "' is a fifo");
    case AE_IFDIR: return Unsafe("entry '" + p + "' is a directory (the package holds files only)");
    default: return Unsafe("entry '" + p + "' is not a regular file");
  }
  if (archive_entry_sparse_count(e) > 0) return Unsafe("entry '" + p + "' is a sparse file");
  return Status::Ok();
}

// Budget counts actual bytes read against max_unpacked and max_ratio.
struct Budget {
  uint64_t packed;
  const TrustLimits& limits;
  uint64_t total = 0;
  Status Add(uint64_t n, uint64_t entry_total, const std::string& p) {
    total += n;
    if (entry_total > limits.max_unpacked)
      return Unsafe("entry '" + p + "' unpacks to more than max_unpacked");
    if (total > limits.max_unpacked) {
      return Unsafe("the package unpacks to more than max_unpacked (" +
                    std::to_string(limits.max_unpacked) + " bytes)");
    }
    // total / packed > max_ratio, without overflow: compare total / max_ratio with packed.
    if (total / limits.max_ratio > packed ||
        (total / limits.max_ratio == packed && total % limits.max_ratio != 0)) {
      return Unsafe("decompression ratio over max_ratio " + std::to_string(limits.max_ratio) +
                    " (" + std::to_string(total) + " bytes from " + std::to_string(packed) + ")");
    }
    return Status::Ok();
  }
};

// EntryData is one entry's bytes and their sha256, hashed while they are read (one pass).
struct EntryData {
  std::string bytes;
  std::string sha256;
};

// Reservation is how much of an entry's declared size may be reserved up front: never more than
// what max_unpacked still allows, or what max_ratio still allows for this package's packed size
// (a header may lie; a package of P bytes can never make us reserve more than P × max_ratio). Only
// bytes actually read are charged to the budget and can grow the buffer past this.
uint64_t Reservation(uint64_t declared, const Budget& budget) {
  const TrustLimits& l = budget.limits;
  const uint64_t unpacked_room = l.max_unpacked > budget.total ? l.max_unpacked - budget.total : 0;
  // packed * max_ratio without overflow (saturating).
  const uint64_t ratio_cap =
      budget.packed > UINT64_MAX / l.max_ratio ? UINT64_MAX : budget.packed * l.max_ratio;
  const uint64_t ratio_room = ratio_cap > budget.total ? ratio_cap - budget.total : 0;
  return std::min({declared, unpacked_room, ratio_room});
}

// ReadEntry reads the current entry. The buffer is reserved up front from the header's size,
// capped by Reservation; a reservation the host cannot make (an address-space limit) is skipped
// and the buffer grows with the bytes actually read, which the budget is always charged with.
// Without the reservation a 64 MiB library doubled its way to a 128 MiB buffer (2× the RSS and a
// copy per doubling: docs/decisions/0005).
Result<EntryData> ReadEntry(archive* a, archive_entry* e, const std::string& p, Budget& budget) {
  EntryData out;
  if (archive_entry_size_is_set(e) && archive_entry_size(e) > 0) {
    try {
      out.bytes.reserve(
          static_cast<size_t>(Reservation(static_cast<uint64_t>(archive_entry_size(e)), budget)));
      AdviseHugePages(out.bytes.data(), out.bytes.capacity());
    } catch (const std::bad_alloc&) {
      // Not fatal: a lying or simply large header; reading charges the real size.
    } catch (const std::length_error&) {
    }
  }
  // archive_read_data_block lends libarchive's own buffer: each block is copied once, straight
  // into the entry, and hashed on a second thread behind the decompression (Sha256Behind).
  Sha256Behind hash(out.bytes.capacity());  // declared after |out|: destroyed first on every path
  while (true) {
    const void* block = nullptr;
    size_t n = 0;
    la_int64_t offset = 0;
    const int r = archive_read_data_block(a, &block, &n, &offset);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK) {
      return Unsafe("entry '" + p + "' cannot be read: " +
                    std::string(archive_error_string(a) ? archive_error_string(a) : "?"));
    }
    // A block anywhere but right after the bytes read so far is a hole (sparse data): refused.
    if (offset < 0 || static_cast<uint64_t>(offset) != out.bytes.size()) {
      return Unsafe("entry '" + p + "' has a hole at byte " + std::to_string(out.bytes.size()));
    }
    if (n == 0) continue;
    CLAWGUARD_RETURN_IF_ERROR(
        budget.Add(static_cast<uint64_t>(n), out.bytes.size() + static_cast<uint64_t>(n), p));
    if (out.bytes.size() + n > out.bytes.capacity())
      hash.Wait();  // the append below moves the buffer
    out.bytes.append(static_cast<const char*>(block), n);
    hash.Publish(out.bytes);
  }
  out.sha256 = DigestHex(hash.Finish());
  return out;
}

Status CheckManifestAgainstPredicate(const std::string& bytes, const Statement& st, Manifest& out) {
  if (Sha256Hex(bytes) != st.manifest_sha256) {
    return BadManifest("manifest.yaml sha256 " + Sha256Hex(bytes) +
                       " is not the signed manifestSha256 " + st.manifest_sha256);
  }
  CLAWGUARD_ASSIGN_OR_RETURN(out, ParseManifest(bytes, "manifest.yaml"));
  if (ManifestToJson(out) != st.manifest)
    return BadManifest("manifest.yaml differs from the signed predicate's manifest");
  if (out.name != st.name || out.version != st.version || out.publisher != st.publisher ||
      out.abi != st.abi) {
    return BadManifest(
        "manifest.yaml name/version/publisher/abi differ from the signed predicate's (" + out.name +
        " " + out.version + " " + out.publisher + " abi " + std::to_string(out.abi) + ")");
  }
  for (const auto& [path, digest] : out.files) {
    if (!digest)
      return BadManifest("manifest.yaml lists '" + path + "' without a sha256 (pack fills it in)");
  }
  return Status::Ok();
}

Result<ExtractedPackage> Extract(std::string_view package, const Statement& statement,
                                 const TrustLimits& limits, uint64_t& unpacked_so_far);

}  // namespace

Result<ExtractedPackage> ExtractPackage(std::string_view package, const Statement& statement,
                                        const TrustLimits& limits) {
  if (limits.max_ratio == 0 || limits.max_entries == 0) {
    return Status(Reason::kInternal, "the trust policy's archive limits must be above 0");
  }
  uint64_t unpacked = 0;
  try {
    return Extract(package, statement, limits, unpacked);
  } catch (const std::bad_alloc&) {
    // Only bytes actually read grow the buffers, each within max_unpacked: a host that cannot hold
    // them refuses the package rather than abort.
    return Unsafe("the package cannot be unpacked in memory (out of memory after " +
                  std::to_string(unpacked) +
                  " bytes); lower limits.max_unpacked or give the host more memory");
  } catch (const std::exception& e) {
    return Unsafe(std::string("the package cannot be unpacked: ") + e.what());
  }
}

namespace {

Result<ExtractedPackage> Extract(std::string_view package, const Statement& statement,
                                 const TrustLimits& limits, uint64_t& unpacked_so_far) {
  ArchiveReader a(archive_read_new());
  if (!a) return Status(Reason::kInternal, "archive_read_new failed");
  if (archive_read_support_filter_zstd(a.get()) != ARCHIVE_OK ||
      archive_read_support_format_tar(a.get()) != ARCHIVE_OK) {
    return Status(Reason::kInternal, "libarchive lacks zstd or tar support");
  }
  if (archive_read_open_memory(a.get(), package.data(), package.size()) != ARCHIVE_OK) {
    return Unsafe(std::string("not a zstd-compressed tar archive: ") +
                  (archive_error_string(a.get()) ? archive_error_string(a.get()) : "?"));
  }
  ExtractedPackage out;
  Budget budget{package.size(), limits};
  std::set<std::string> names, lower_names;
  std::map<std::string, std::string> digests;  // path → "sha256:<hex>" of what was read
  bool first = true;
  uint64_t entries = 0;
  while (true) {
    archive_entry* e = nullptr;  // owned by |a|, valid until the next header
    const int rc = archive_read_next_header(a.get(), &e);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK) {
      return Unsafe(std::string("malformed archive: ") +
                    (archive_error_string(a.get()) ? archive_error_string(a.get()) : "?"));
    }
    if (archive_filter_code(a.get(), 0) != ARCHIVE_FILTER_ZSTD)
      return Unsafe("the package is not zstd-compressed");
    if (++entries > limits.max_entries) {
      return Unsafe("more than max_entries (" + std::to_string(limits.max_entries) + ") entries");
    }
    const char* raw = archive_entry_pathname(e);
    if (raw == nullptr) return Unsafe("an entry has no readable path");
    const std::string p = raw;
    if (first && p != kManifestFileName) {
      return BadManifest("the first entry is '" + p + "'; manifest.yaml must be the first entry");
    }
    CLAWGUARD_RETURN_IF_ERROR(CheckPath(p));
    CLAWGUARD_RETURN_IF_ERROR(CheckType(e, p));
    if (!names.insert(p).second) return Unsafe("entry '" + p + "' appears twice");
    if (!lower_names.insert(Lower(p)).second)
      return Unsafe("entry '" + p + "' collides with another by case");
    if (!first && out.manifest.files.count(p) == 0)
      return Unsafe("entry '" + p + "' is not listed in the manifest");
    auto read = ReadEntry(a.get(), e, p, budget);
    unpacked_so_far = budget.total;
    if (!read) return read.error();
    EntryData& entry = *read;
    std::string& data = entry.bytes;
    if (first) {
      if (data.size() > limits::kMaxManifest)
        return BadManifest("manifest.yaml is over " + std::to_string(limits::kMaxManifest) +
                           " bytes");
      CLAWGUARD_RETURN_IF_ERROR(CheckManifestAgainstPredicate(data, statement, out.manifest));
      out.manifest_bytes = std::move(data);
      first = false;
      continue;
    }
    const std::string digest = "sha256:" + entry.sha256;
    if (out.manifest.files.at(p) != digest) {
      return Status(
          Reason::kFileDigestMismatch,
          "'" + p + "' has " + digest + "; the manifest says " + *out.manifest.files.at(p));
    }
    if (p == out.manifest.entry) out.entry_bytes = std::move(data);
    digests[p] = digest;
  }
  if (first) return BadManifest("the archive is empty; manifest.yaml must be the first entry");
  for (const auto& [path, digest] : out.manifest.files) {
    if (digests.count(path) == 0)
      return BadManifest("manifest.yaml lists '" + path + "' but the archive does not hold it");
  }
  out.unpacked_bytes = budget.total;
  return out;
}

}  // namespace
}  // namespace clawguard
