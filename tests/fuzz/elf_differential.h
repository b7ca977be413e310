// elf_differential.h — the ELF check against an independent reader (elfutils libelf), shared by
// the elf_check fuzz target and the loader's differential test (header-only; test code only).
//
// ElfDisagreement: for a library CheckElf accepted, libelf's reading must agree with the check's
// view on every program header, on the dynamic array read at PT_DYNAMIC's p_offset and through
// the SHT_DYNAMIC section, on the file offset ld.so's p_vaddr maps to, and on every DT_NEEDED and
// DT_SONAME string (read through the section's sh_link table); no path-bearing tag may appear in
// libelf's views, and every DT_NEEDED must be a bare name on the allowed list.
// MutateElf: a structure-aware mutation of a real library (program header fields, dynamic tags and
// values, section header fields, single bytes), so that random search reaches the check's deeper
// rules instead of failing at the magic.
#ifndef CLAWGUARD_TESTS_FUZZ_ELF_DIFFERENTIAL_H_
#define CLAWGUARD_TESTS_FUZZ_ELF_DIFFERENTIAL_H_

#include <elf.h>
#include <gelf.h>
#include <libelf.h>

#include <cstdint>
#include <cstring>
#include <iterator>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "loader/elf_check.h"

namespace clawguard::testing {

inline std::string ElfDisagreement(std::string_view bytes, const ElfInfo& info,
                                   const std::set<std::string>& allowed) {
  static const bool ready = elf_version(EV_CURRENT) != EV_NONE;
  if (!ready) return "libelf: elf_version failed";
  std::string copy(bytes);  // libelf wants a mutable image
  Elf* e = elf_memory(copy.data(), copy.size());
  if (e == nullptr) return std::string("libelf cannot open an accepted library: ") + elf_errmsg(-1);
  struct Closer {
    Elf* e;
    ~Closer() { elf_end(e); }
  } closer{e};
  auto hex = [](uint64_t v) { return std::to_string(v); };
  size_t phnum = 0;
  if (elf_getphdrnum(e, &phnum) != 0 || phnum != info.segments.size()) {
    return "program header count: libelf " + hex(phnum) + ", check " + hex(info.segments.size());
  }
  std::vector<GElf_Phdr> ph(phnum);
  std::optional<size_t> dyn_index;
  for (size_t i = 0; i < phnum; ++i) {
    if (gelf_getphdr(e, static_cast<int>(i), &ph[i]) == nullptr)
      return "libelf cannot read program header " + hex(i);
    const ElfSegment& s = info.segments[i];
    if (ph[i].p_type != s.type || ph[i].p_flags != s.flags || ph[i].p_offset != s.offset ||
        ph[i].p_vaddr != s.vaddr || ph[i].p_filesz != s.filesz || ph[i].p_memsz != s.memsz ||
        ph[i].p_align != s.align) {
      return "program header " + hex(i) + " differs";
    }
    if (ph[i].p_type == PT_DYNAMIC) dyn_index = i;
  }
  if (!dyn_index) return "libelf sees no PT_DYNAMIC";
  const GElf_Phdr& dp = ph[*dyn_index];
  // ld.so's view: the PT_LOAD that file-backs p_vaddr maps it to p_offset.
  bool mapped = false;
  for (const auto& p : ph) {
    if (p.p_type != PT_LOAD || dp.p_vaddr < p.p_vaddr) continue;
    const uint64_t rel = dp.p_vaddr - p.p_vaddr;
    if (rel <= p.p_filesz && dp.p_filesz <= p.p_filesz - rel) {
      mapped = p.p_offset + rel == dp.p_offset;
      break;
    }
  }
  if (!mapped) return "PT_DYNAMIC's p_vaddr does not map to its p_offset through a PT_LOAD";
  auto read_dyn = [&](Elf_Data* d, std::vector<GElf_Dyn>& out) -> bool {
    if (d == nullptr) return false;
    for (int i = 0;; ++i) {
      GElf_Dyn dyn;
      if (gelf_getdyn(d, i, &dyn) == nullptr) return false;  // ran off the end without DT_NULL
      if (dyn.d_tag == DT_NULL) return true;
      out.push_back(dyn);
    }
  };
  std::vector<GElf_Dyn> by_offset, by_section;
  if (!read_dyn(elf_getdata_rawchunk(e, static_cast<int64_t>(dp.p_offset), dp.p_filesz, ELF_T_DYN),
                by_offset)) {
    return "libelf cannot read a terminated dynamic array at PT_DYNAMIC's p_offset";
  }
  Elf_Scn* dyn_scn = nullptr;
  GElf_Shdr dyn_shdr{};
  for (Elf_Scn* scn = elf_nextscn(e, nullptr); scn != nullptr; scn = elf_nextscn(e, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) != nullptr && sh.sh_type == SHT_DYNAMIC) {
      if (dyn_scn != nullptr) return "libelf sees two SHT_DYNAMIC sections";
      dyn_scn = scn;
      dyn_shdr = sh;
    }
  }
  if (dyn_scn == nullptr) return "libelf sees no SHT_DYNAMIC section";
  if (!read_dyn(elf_getdata(dyn_scn, nullptr), by_section))
    return "libelf cannot read the .dynamic section";
  auto same = [&](const std::vector<GElf_Dyn>& v) {
    if (v.size() != info.dynamic.size()) return false;
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i].d_tag != info.dynamic[i].tag || v[i].d_un.d_val != info.dynamic[i].value)
        return false;
    }
    return true;
  };
  if (!same(by_offset)) return "the dynamic array at p_offset differs from the check's";
  if (!same(by_section)) return "the .dynamic section differs from the check's dynamic array";
  std::vector<std::string> needed;
  std::string soname;
  for (const auto& d : by_section) {
    switch (d.d_tag) {
      case DT_NEEDED:
      case DT_SONAME: {
        const char* s = elf_strptr(e, dyn_shdr.sh_link, d.d_un.d_val);
        if (s == nullptr) return "libelf cannot read a DT_NEEDED/DT_SONAME string";
        if (d.d_tag == DT_NEEDED)
          needed.emplace_back(s);
        else
          soname = s;
        break;
      }
      case DT_RPATH:
      case DT_RUNPATH:
      case DT_AUXILIARY:
      case DT_FILTER:
      case DT_AUDIT:
      case DT_DEPAUDIT:
      case DT_CONFIG:
      case DT_TEXTREL:
        return "libelf sees path-bearing or text-relocation tag " +
               hex(static_cast<uint64_t>(d.d_tag));
      default: break;
    }
  }
  if (needed != info.needed) return "DT_NEEDED names differ between libelf and the check";
  if (soname != info.soname) return "DT_SONAME differs between libelf and the check";
  for (const auto& n : needed) {
    if (n.find('/') != std::string::npos || allowed.count(n) == 0)
      return "accepted DT_NEEDED '" + n + "'";
  }
  return "";
}

// MutateElf applies one structure-aware mutation to |b| (a real library) with |rng|.
inline void MutateElf(std::string& b, std::mt19937_64& rng) {
  if (b.size() < sizeof(Elf64_Ehdr)) return;
  auto pick = [&](uint64_t n) { return n == 0 ? 0 : rng() % n; };
  const uint64_t interesting[] = {0,          1,
                                  2,          8,
                                  16,         0x1000,
                                  0x2000,     0x3000,
                                  0x3e00,     0xfff,
                                  UINT64_MAX, 1ull << 63,
                                  DT_NEEDED,  DT_AUXILIARY,
                                  DT_FILTER,  DT_RPATH,
                                  DT_RUNPATH, DT_AUDIT,
                                  DT_SONAME,  DT_STRTAB,
                                  DT_FLAGS_1, DF_1_NODELETE,
                                  PT_LOAD,    PT_DYNAMIC,
                                  PT_INTERP,  PT_NOTE};
  auto value = [&]() -> uint64_t {
    switch (pick(3)) {
      case 0: return interesting[pick(std::size(interesting))];
      case 1: return rng();
      default: return pick(0x5000);
    }
  };
  // fits: [at, at + n) inside |b|, without overflow (offsets come from the mutated bytes).
  auto fits = [&](uint64_t at, uint64_t n) { return at <= b.size() && n <= b.size() - at; };
  auto poke64 = [&](uint64_t at, uint64_t v) {
    if (fits(at, 8)) std::memcpy(b.data() + at, &v, 8);
  };
  auto poke32 = [&](uint64_t at, uint32_t v) {
    if (fits(at, 4)) std::memcpy(b.data() + at, &v, 4);
  };
  uint64_t phoff = 0;
  uint16_t phnum = 0;
  std::memcpy(&phoff, b.data() + 32, 8);
  std::memcpy(&phnum, b.data() + 56, 2);
  switch (pick(5)) {
    case 0: {  // a program header field
      if (phnum == 0 || phoff > b.size()) break;
      const uint64_t at = phoff + pick(phnum) * sizeof(Elf64_Phdr);
      const uint64_t field =
          pick(7);  // type/flags (32-bit) or offset/vaddr/paddr/filesz/memsz/align
      if (field == 0)
        poke32(at, static_cast<uint32_t>(value()));
      else if (field == 1)
        poke32(at + 4, static_cast<uint32_t>(pick(8)));
      else
        poke64(at + 8 * (field - 1), value());
      break;
    }
    case 1:  // a dynamic entry: find PT_DYNAMIC at p_offset and change a tag or a value
    case 2: {
      for (uint64_t i = 0; i < phnum; ++i) {
        if (phoff > b.size()) break;
        const uint64_t at = phoff + i * sizeof(Elf64_Phdr);
        if (!fits(at, sizeof(Elf64_Phdr))) break;
        uint32_t type = 0;
        uint64_t off = 0, size = 0;
        std::memcpy(&type, b.data() + at, 4);
        std::memcpy(&off, b.data() + at + 8, 8);
        std::memcpy(&size, b.data() + at + 32, 8);
        if (type != PT_DYNAMIC || size < 16) continue;
        const uint64_t entry = off + pick(size / 16) * 16;
        poke64(entry + (pick(2) == 0 ? 0 : 8), value());
        break;
      }
      break;
    }
    case 3: {  // a section header field
      uint64_t shoff = 0;
      uint16_t shnum = 0;
      std::memcpy(&shoff, b.data() + 40, 8);
      std::memcpy(&shnum, b.data() + 60, 2);
      if (shnum == 0 || shoff > b.size()) break;
      poke64(shoff + pick(shnum) * sizeof(Elf64_Shdr) + 8 * (1 + pick(7)), value());
      break;
    }
    default:  // bytes
      for (uint64_t n = 1 + pick(4); n > 0; --n) b[pick(b.size())] = static_cast<char>(rng());
      break;
  }
}

}  // namespace clawguard::testing

#endif  // CLAWGUARD_TESTS_FUZZ_ELF_DIFFERENTIAL_H_
