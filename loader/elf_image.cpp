// elf_image.cpp — see elf_image.h.
#include "elf_image.h"

#include <algorithm>

namespace clawguard {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the ELF reader assumes a little-endian host");

std::optional<std::string> ElfBytes::CString(uint64_t base, uint64_t len, uint64_t off) const {
  if (!Fits(base, len) || off >= len) return std::nullopt;
  const std::string_view region = b_.substr(base + off, len - off);
  const size_t nul = region.find('\0');
  if (nul == std::string_view::npos) return std::nullopt;
  return std::string(region.substr(0, nul));
}

const ElfSegment* ElfImage::Containing(uint64_t vaddr, uint64_t len) const {
  for (const auto& p : loads_) {
    if (vaddr < p.vaddr) continue;
    const uint64_t rel = vaddr - p.vaddr;
    if (rel <= p.filesz && len <= p.filesz - rel) return &p;
  }
  return nullptr;
}

std::optional<uint64_t> ElfImage::FileOffset(uint64_t vaddr, uint64_t len) const {
  const ElfSegment* p = Containing(vaddr, len);
  if (p == nullptr) return std::nullopt;
  const uint64_t off = p->offset + (vaddr - p->vaddr);
  if (!bytes_.Fits(off, len)) return std::nullopt;
  return off;
}

bool ElfImage::Mapped(uint64_t vaddr, uint64_t len, uint32_t* flags) const {
  for (const auto& p : loads_) {
    if (vaddr < p.vaddr) continue;
    const uint64_t rel = vaddr - p.vaddr;
    if (rel <= p.memsz && len <= p.memsz - rel) {
      if (flags != nullptr) *flags = p.flags;
      return true;
    }
  }
  return false;
}

std::optional<std::string> ElfImage::StringAt(uint64_t table, uint64_t size, uint64_t index,
                                              uint64_t max_len) const {
  if (index >= size) return std::nullopt;
  auto off = FileOffset(table, size);
  if (!off) return std::nullopt;
  const uint64_t window = std::min(size - index, max_len == UINT64_MAX ? max_len : max_len + 1);
  return bytes_.CString(*off + index, window, 0);
}

}  // namespace clawguard
