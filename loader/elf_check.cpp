// elf_check.cpp — see elf_check.h. Layouts: System V gABI, ELF-64 Object File Format 1.5.
#include "elf_check.h"

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <optional>

namespace clawguard {
namespace {

#if defined(__x86_64__)
constexpr uint16_t kThisMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kThisMachine = EM_AARCH64;
#else
#error "ClawGuard's ELF check knows x86-64 and AArch64 only"
#endif

Status Unsafe(const std::string& m) { return Status(Reason::kElfUnsafe, m); }

// Cursor reads little-endian integers at absolute offsets, never past the end.
class Cursor {
 public:
  explicit Cursor(std::string_view b) : b_(b) {}
  size_t size() const { return b_.size(); }
  // Fits is true when [off, off+len) lies inside the buffer (no overflow).
  bool Fits(uint64_t off, uint64_t len) const { return off <= b_.size() && len <= b_.size() - off; }
  template <typename T>
  std::optional<T> Read(uint64_t off) const {
    if (!Fits(off, sizeof(T))) return std::nullopt;
    T v{};
    std::memcpy(&v, b_.data() + off, sizeof(T));  // host is little-endian (checked by static_assert)
    return v;
  }
  // CString reads a NUL-terminated string starting at |off| inside [base, base+len).
  std::optional<std::string> CString(uint64_t base, uint64_t len, uint64_t off) const {
    if (!Fits(base, len) || off >= len) return std::nullopt;
    std::string_view region = b_.substr(base + off, len - off);
    const size_t nul = region.find('\0');
    if (nul == std::string_view::npos) return std::nullopt;
    return std::string(region.substr(0, nul));
  }

 private:
  std::string_view b_;
};
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the ELF cursor assumes a little-endian host");

struct Phdr {
  uint32_t type, flags;
  uint64_t offset, vaddr, filesz;
};

#define CG_READ(var, type, off, what)                                  \
  auto var##_opt = c.Read<type>(off);                                  \
  if (!var##_opt) return Unsafe(std::string(what) + " lies outside the file"); \
  const type var = *var##_opt

Result<std::vector<Phdr>> ReadPhdrs(const Cursor& c) {
  CG_READ(phoff, uint64_t, 32, "e_phoff");
  CG_READ(phentsize, uint16_t, 54, "e_phentsize");
  CG_READ(phnum, uint16_t, 56, "e_phnum");
  if (phentsize != sizeof(Elf64_Phdr)) return Unsafe("e_phentsize is " + std::to_string(phentsize) + ", expected 56");
  if (phnum == 0 || phnum == PN_XNUM) return Unsafe("no usable program headers (e_phnum " + std::to_string(phnum) + ")");
  if (!c.Fits(phoff, uint64_t{phnum} * phentsize)) return Unsafe("program headers lie outside the file");
  std::vector<Phdr> out;
  for (uint64_t i = 0; i < phnum; ++i) {
    const uint64_t at = phoff + i * phentsize;
    Phdr p{*c.Read<uint32_t>(at), *c.Read<uint32_t>(at + 4), *c.Read<uint64_t>(at + 8), *c.Read<uint64_t>(at + 16),
           *c.Read<uint64_t>(at + 32)};
    out.push_back(p);
  }
  return out;
}

// VaddrToOffset maps a virtual address to a file offset through the PT_LOAD segments.
std::optional<uint64_t> VaddrToOffset(const std::vector<Phdr>& phdrs, uint64_t vaddr) {
  for (const auto& p : phdrs) {
    if (p.type != PT_LOAD) continue;
    if (vaddr >= p.vaddr && vaddr - p.vaddr < p.filesz) return p.offset + (vaddr - p.vaddr);
  }
  return std::nullopt;
}

Status CheckEntrySymbol(const Cursor& c) {
  CG_READ(shoff, uint64_t, 40, "e_shoff");
  CG_READ(shentsize, uint16_t, 58, "e_shentsize");
  CG_READ(shnum, uint16_t, 60, "e_shnum");
  if (shoff == 0 || shnum == 0) return Unsafe("no section headers: cannot find clawguard_plugin_v1 in .dynsym");
  if (shentsize != sizeof(Elf64_Shdr)) return Unsafe("e_shentsize is " + std::to_string(shentsize) + ", expected 64");
  if (!c.Fits(shoff, uint64_t{shnum} * shentsize)) return Unsafe("section headers lie outside the file");
  bool saw_dynsym = false;
  for (uint64_t i = 0; i < shnum; ++i) {
    const uint64_t sh = shoff + i * shentsize;
    if (*c.Read<uint32_t>(sh + 4) != SHT_DYNSYM) continue;
    saw_dynsym = true;
    const uint64_t off = *c.Read<uint64_t>(sh + 24), size = *c.Read<uint64_t>(sh + 32);
    const uint64_t entsize = *c.Read<uint64_t>(sh + 56);
    const uint32_t link = *c.Read<uint32_t>(sh + 40);
    if (entsize != sizeof(Elf64_Sym)) return Unsafe(".dynsym sh_entsize is not 24");
    if (!c.Fits(off, size)) return Unsafe(".dynsym lies outside the file");
    if (link >= shnum) return Unsafe(".dynsym sh_link points past the section headers");
    const uint64_t strsh = shoff + uint64_t{link} * shentsize;
    const uint64_t stroff = *c.Read<uint64_t>(strsh + 24), strsize = *c.Read<uint64_t>(strsh + 32);
    if (*c.Read<uint32_t>(strsh + 4) != SHT_STRTAB || !c.Fits(stroff, strsize)) {
      return Unsafe(".dynsym's string table is not a string table inside the file");
    }
    for (uint64_t s = 0; s < size / entsize; ++s) {
      const uint64_t sym = off + s * entsize;
      const uint32_t name = *c.Read<uint32_t>(sym);
      auto text = c.CString(stroff, strsize, name);
      if (!text || *text != kPluginEntrySymbol) continue;
      const uint8_t info = *c.Read<uint8_t>(sym + 4), other = *c.Read<uint8_t>(sym + 5);
      const uint16_t shndx = *c.Read<uint16_t>(sym + 6);
      const int bind = ELF64_ST_BIND(info);
      if (shndx == SHN_UNDEF) return Unsafe("clawguard_plugin_v1 is undefined in .dynsym (imported, not defined)");
      if (bind != STB_GLOBAL && bind != STB_WEAK) return Unsafe("clawguard_plugin_v1 is not a global symbol");
      if (ELF64_ST_VISIBILITY(other) != STV_DEFAULT) return Unsafe("clawguard_plugin_v1 does not have default visibility");
      if (ELF64_ST_TYPE(info) != STT_FUNC) return Unsafe("clawguard_plugin_v1 is not a function");
      return Status::Ok();
    }
  }
  if (!saw_dynsym) return Unsafe("no .dynsym section: clawguard_plugin_v1 cannot be exported");
  return Unsafe("clawguard_plugin_v1 is not defined in .dynsym (build with CG_EXPORT from clawguard/plugin.h)");
}

}  // namespace

Result<ElfInfo> CheckElf(std::string_view bytes, const std::set<std::string>& allowed_needed) {
  const Cursor c(bytes);
  if (!c.Fits(0, sizeof(Elf64_Ehdr))) return Unsafe("too short for an ELF-64 header (" + std::to_string(bytes.size()) + " bytes)");
  if (std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) return Unsafe("not an ELF file (bad magic)");
  if (static_cast<uint8_t>(bytes[EI_CLASS]) != ELFCLASS64) return Unsafe("not ELFCLASS64");
  if (static_cast<uint8_t>(bytes[EI_DATA]) != ELFDATA2LSB) return Unsafe("not little-endian (ELFDATA2LSB)");
  if (static_cast<uint8_t>(bytes[EI_VERSION]) != EV_CURRENT) return Unsafe("unknown ELF version");
  CG_READ(type, uint16_t, 16, "e_type");
  CG_READ(machine, uint16_t, 18, "e_machine");
  if (type != ET_DYN) return Unsafe("e_type is " + std::to_string(type) + ", expected ET_DYN (a shared object)");
  if (machine != kThisMachine) {
    return Unsafe("e_machine is " + std::to_string(machine) + ", this host is " + std::to_string(kThisMachine));
  }
  CLAWGUARD_ASSIGN_OR_RETURN(std::vector<Phdr> phdrs, ReadPhdrs(c));
  const Phdr* dynamic = nullptr;
  const Phdr* stack = nullptr;
  for (const auto& p : phdrs) {
    if (p.type == PT_DYNAMIC) {
      if (dynamic != nullptr) return Unsafe("more than one PT_DYNAMIC");
      dynamic = &p;
    }
    if (p.type == PT_GNU_STACK) stack = &p;
  }
  if (stack == nullptr) return Unsafe("no PT_GNU_STACK header: the kernel would give it an executable stack");
  if ((stack->flags & PF_X) != 0) return Unsafe("PT_GNU_STACK requests an executable stack (PF_X)");
  if (dynamic == nullptr) return Unsafe("no PT_DYNAMIC: not a dynamically loadable object");
  if (!c.Fits(dynamic->offset, dynamic->filesz)) return Unsafe("PT_DYNAMIC lies outside the file");

  std::vector<uint64_t> needed_offsets;
  std::optional<uint64_t> strtab, strsz;
  bool terminated = false;
  for (uint64_t at = dynamic->offset; at + sizeof(Elf64_Dyn) <= dynamic->offset + dynamic->filesz; at += sizeof(Elf64_Dyn)) {
    const int64_t tag = *c.Read<int64_t>(at);
    const uint64_t val = *c.Read<uint64_t>(at + 8);
    if (tag == DT_NULL) {
      terminated = true;
      break;
    }
    switch (tag) {
      case DT_RPATH: return Unsafe("DT_RPATH present: the library would search paths it chooses");
      case DT_RUNPATH: return Unsafe("DT_RUNPATH present: the library would search paths it chooses");
      case DT_TEXTREL: return Unsafe("DT_TEXTREL present: text relocations make code writable");
      case DT_FLAGS:
        if ((val & DF_TEXTREL) != 0) return Unsafe("DF_TEXTREL set in DT_FLAGS: text relocations make code writable");
        break;
      case DT_NEEDED: needed_offsets.push_back(val); break;
      case DT_STRTAB: strtab = val; break;
      case DT_STRSZ: strsz = val; break;
      default: break;
    }
  }
  if (!terminated) return Unsafe("PT_DYNAMIC has no DT_NULL terminator inside its segment");
  ElfInfo info;
  if (!needed_offsets.empty()) {
    if (!strtab || !strsz) return Unsafe("DT_NEEDED without DT_STRTAB/DT_STRSZ");
    auto off = VaddrToOffset(phdrs, *strtab);
    if (!off || !c.Fits(*off, *strsz)) return Unsafe("DT_STRTAB does not map into a PT_LOAD segment of the file");
    for (uint64_t n : needed_offsets) {
      auto name = c.CString(*off, *strsz, n);
      if (!name) return Unsafe("a DT_NEEDED string lies outside DT_STRTAB");
      if (allowed_needed.count(*name) == 0) {
        return Unsafe("DT_NEEDED '" + *name + "' is not in the trust policy's elf.allowed_needed");
      }
      info.needed.push_back(*name);
    }
  }
  CLAWGUARD_RETURN_IF_ERROR(CheckEntrySymbol(c));
  return info;
}

}  // namespace clawguard
