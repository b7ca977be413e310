// elf_image.h — ElfImage: an ELF-64 shared object's bytes read the way the runtime loader maps
// them (not installed; used by elf_check.cpp and its tests).
//
// ld.so never reads the dynamic array, its strings or its tables at file offsets: it maps each
// PT_LOAD's file range [p_offset, p_offset + p_filesz) at p_vaddr and reads at load bias +
// address. ElfImage answers "which file bytes does the object see at this address?" for the
// part of memory that is file-backed inside a segment — [p_vaddr, p_vaddr + p_filesz) of one
// PT_LOAD — and nothing else: the head of a segment's first page (mapped from the file but
// outside every segment), the tail after p_filesz (zeroed or left over, depending on
// p_memsz), and gaps are all refused, so no address has two readings.
//
// Every read is bounds-checked with overflow-safe arithmetic; nothing here allocates from a
// size read out of the file. Thread-compatible (const after construction).
#ifndef CLAWGUARD_LOADER_ELF_IMAGE_H_
#define CLAWGUARD_LOADER_ELF_IMAGE_H_

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clawguard {

// ElfSegment is one program header as the file states it.
struct ElfSegment {
  uint32_t type = 0, flags = 0;
  uint64_t offset = 0, vaddr = 0, filesz = 0, memsz = 0, align = 0;
  bool operator==(const ElfSegment&) const = default;
};

// ElfDynEntry is one entry of the dynamic array.
struct ElfDynEntry {
  int64_t tag = 0;
  uint64_t value = 0;
  bool operator==(const ElfDynEntry&) const = default;
};

// ElfBytes reads little-endian integers and strings at absolute file offsets, never past the end.
class ElfBytes {
 public:
  explicit ElfBytes(std::string_view b) : b_(b) {}
  uint64_t size() const { return b_.size(); }
  // Fits is true when [off, off + len) lies inside the file (no overflow).
  bool Fits(uint64_t off, uint64_t len) const { return off <= b_.size() && len <= b_.size() - off; }
  template <typename T>
  std::optional<T> Read(uint64_t off) const {
    if (!Fits(off, sizeof(T))) return std::nullopt;
    T v{};
    std::memcpy(&v, b_.data() + off,
                sizeof(T));  // little-endian host (static_assert in elf_image.cpp)
    return v;
  }
  // CString reads a NUL-terminated string at |base| + |off| that ends inside [base, base + len).
  std::optional<std::string> CString(uint64_t base, uint64_t len, uint64_t off) const;

 private:
  std::string_view b_;
};

class ElfImage {
 public:
  // ElfImage borrows |bytes|; |loads| are the PT_LOAD segments, already checked to be sorted by
  // address, non-overlapping and inside the file.
  ElfImage(const ElfBytes& bytes, std::vector<ElfSegment> loads)
      : bytes_(bytes), loads_(std::move(loads)) {}

  // FileOffset maps [vaddr, vaddr + len) to the file offset the object sees there, when the whole
  // range is file-backed inside one PT_LOAD; nullopt otherwise.
  std::optional<uint64_t> FileOffset(uint64_t vaddr, uint64_t len) const;
  // Mapped is true when [vaddr, vaddr + len) lies in one PT_LOAD's memory range (file or zero
  // fill); |flags| receives that segment's p_flags.
  bool Mapped(uint64_t vaddr, uint64_t len, uint32_t* flags = nullptr) const;
  // Containing returns the PT_LOAD whose file-backed range holds [vaddr, vaddr + len).
  const ElfSegment* Containing(uint64_t vaddr, uint64_t len) const;

  template <typename T>
  std::optional<T> ReadAt(uint64_t vaddr) const {
    auto off = FileOffset(vaddr, sizeof(T));
    if (!off) return std::nullopt;
    return bytes_.Read<T>(*off);
  }
  // StringAt reads the NUL-terminated string at |index| of the string table [table, table +
  // size), at most |max_len| bytes long (a longer one is nullopt, as is one that runs off the
  // table).
  std::optional<std::string> StringAt(uint64_t table, uint64_t size, uint64_t index,
                                      uint64_t max_len) const;

 private:
  const ElfBytes& bytes_;
  std::vector<ElfSegment> loads_;
};

}  // namespace clawguard

#endif  // CLAWGUARD_LOADER_ELF_IMAGE_H_
