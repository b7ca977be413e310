// elf_check.cpp — see elf_check.h. Layouts: System V gABI, ELF-64 Object File Format 1.5; what
// the runtime loader does: glibc elf/dl-load.c (_dl_map_object_from_fd), elf/dl-map-segments.h,
// elf/get-dynamic-info.h, elf/dl-version.c.
// Over 500 lines on purpose: one pass over one untrusted file, each stage (header, segments,
// dynamic tags, symbol versions, sections) checked against what the earlier ones parsed and read
// top to bottom in the order ld.so maps it; a split would pass that parsed state between files.
#include "elf_check.h"

#include <elf.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <map>
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

constexpr uint64_t kMaxElfName = 4096;  // longest DT_NEEDED / DT_SONAME / version file name read
constexpr uint64_t kDynEntrySize = sizeof(Elf64_Dyn);

Status Unsafe(std::string m) { return Status(Reason::kElfUnsafe, std::move(m)); }

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
  return buf;
}

uint64_t PageSize() {
  static const uint64_t page = [] {
    const long v = ::sysconf(_SC_PAGESIZE);
    return v > 0 ? static_cast<uint64_t>(v) : uint64_t{4096};
  }();
  return page;
}

bool IsPowerOfTwoOrZero(uint64_t v) { return (v & (v - 1)) == 0; }

std::string SegmentName(uint32_t type) {
  switch (type) {
    case PT_NULL: return "PT_NULL";
    case PT_LOAD: return "PT_LOAD";
    case PT_DYNAMIC: return "PT_DYNAMIC";
    case PT_INTERP: return "PT_INTERP";
    case PT_NOTE: return "PT_NOTE";
    case PT_SHLIB: return "PT_SHLIB";
    case PT_PHDR: return "PT_PHDR";
    case PT_TLS: return "PT_TLS";
    case PT_GNU_EH_FRAME: return "PT_GNU_EH_FRAME";
    case PT_GNU_STACK: return "PT_GNU_STACK";
    case PT_GNU_RELRO: return "PT_GNU_RELRO";
    case PT_GNU_PROPERTY: return "PT_GNU_PROPERTY";
    default: return "type " + Hex(type);
  }
}

// ---- 1. header --------------------------------------------------------------------------------

Status CheckHeader(const ElfBytes& c) {
  if (!c.Fits(0, sizeof(Elf64_Ehdr))) {
    return Unsafe("too short for an ELF-64 header (" + std::to_string(c.size()) + " bytes)");
  }
  const auto ident = [&](int i) { return *c.Read<uint8_t>(static_cast<uint64_t>(i)); };
  if (ident(EI_MAG0) != ELFMAG0 || ident(EI_MAG1) != ELFMAG1 || ident(EI_MAG2) != ELFMAG2 ||
      ident(EI_MAG3) != ELFMAG3) {
    return Unsafe("not an ELF file (bad magic)");
  }
  if (ident(EI_CLASS) != ELFCLASS64) return Unsafe("not ELFCLASS64");
  if (ident(EI_DATA) != ELFDATA2LSB) return Unsafe("not little-endian (ELFDATA2LSB)");
  if (ident(EI_VERSION) != EV_CURRENT) return Unsafe("e_ident[EI_VERSION] is not EV_CURRENT");
  if (ident(EI_OSABI) != ELFOSABI_SYSV && ident(EI_OSABI) != ELFOSABI_GNU) {
    return Unsafe("e_ident[EI_OSABI] is " + std::to_string(ident(EI_OSABI)) +
                  ", expected System V (0) or GNU (3)");
  }
  const uint16_t type = *c.Read<uint16_t>(16), machine = *c.Read<uint16_t>(18);
  const uint32_t version = *c.Read<uint32_t>(20);
  if (type != ET_DYN)
    return Unsafe("e_type is " + std::to_string(type) + ", expected ET_DYN (a shared object)");
  if (machine != kThisMachine) {
    return Unsafe("e_machine is " + std::to_string(machine) + ", this host is " +
                  std::to_string(kThisMachine));
  }
  if (version != EV_CURRENT)
    return Unsafe("e_version is " + std::to_string(version) + ", expected EV_CURRENT");
  return Status::Ok();
}

Result<std::vector<ElfSegment>> ReadSegments(const ElfBytes& c) {
  const uint64_t phoff = *c.Read<uint64_t>(32);
  const uint16_t phentsize = *c.Read<uint16_t>(54), phnum = *c.Read<uint16_t>(56);
  if (phentsize != sizeof(Elf64_Phdr))
    return Unsafe("e_phentsize is " + std::to_string(phentsize) + ", expected 56");
  if (phnum == 0 || phnum == PN_XNUM)
    return Unsafe("no usable program headers (e_phnum " + std::to_string(phnum) + ")");
  if (phnum > kMaxElfSegments) {
    return Unsafe("e_phnum is " + std::to_string(phnum) + "; at most " +
                  std::to_string(kMaxElfSegments) + " are read");
  }
  if (!c.Fits(phoff, uint64_t{phnum} * phentsize))
    return Unsafe("the program headers lie outside the file");
  std::vector<ElfSegment> out;
  out.reserve(phnum);
  for (uint64_t i = 0; i < phnum; ++i) {
    const uint64_t at = phoff + i * phentsize;
    ElfSegment p;
    p.type = *c.Read<uint32_t>(at);
    p.flags = *c.Read<uint32_t>(at + 4);
    p.offset = *c.Read<uint64_t>(at + 8);
    p.vaddr = *c.Read<uint64_t>(at + 16);
    p.filesz = *c.Read<uint64_t>(at + 32);
    p.memsz = *c.Read<uint64_t>(at + 40);
    p.align = *c.Read<uint64_t>(at + 48);
    out.push_back(p);
  }
  return out;
}

// ---- 2. program headers -----------------------------------------------------------------------

struct Layout {
  std::vector<ElfSegment> loads;
  ElfSegment dynamic;
};

Status CheckLoad(const ElfBytes& c, const ElfSegment& p, size_t i) {
  const std::string where = "PT_LOAD (program header " + std::to_string(i) + ")";
  uint64_t end = 0;
  if (p.filesz > p.memsz) {
    return Unsafe(where + " has p_filesz " + Hex(p.filesz) + " > p_memsz " + Hex(p.memsz));
  }
  if (!c.Fits(p.offset, p.filesz))
    return Unsafe(where + " maps file bytes past the end of the file");
  if (__builtin_add_overflow(p.vaddr, p.memsz, &end))
    return Unsafe(where + " wraps around the address space");
  if (((p.vaddr - p.offset) & (PageSize() - 1)) != 0) {
    return Unsafe(where + ": p_vaddr " + Hex(p.vaddr) + " and p_offset " + Hex(p.offset) +
                  " differ by a non-multiple of the page size (ld.so refuses it)");
  }
  if (!IsPowerOfTwoOrZero(p.align))
    return Unsafe(where + " has p_align " + Hex(p.align) + ", not a power of two");
  if (p.align > 1 && (p.vaddr & (p.align - 1)) != (p.offset & (p.align - 1))) {
    return Unsafe(where + ": p_vaddr and p_offset are not congruent modulo p_align " +
                  Hex(p.align));
  }
  if ((p.flags & ~static_cast<uint32_t>(PF_R | PF_W | PF_X)) != 0) {
    return Unsafe(where + " has p_flags bits " + Hex(p.flags) + " beyond R, W and X");
  }
  if ((p.flags & PF_W) != 0 && (p.flags & PF_X) != 0)
    return Unsafe(where + " is writable and executable");
  return Status::Ok();
}

Status CheckLoadOrder(const std::vector<ElfSegment>& loads) {
  const uint64_t page = PageSize();
  for (size_t i = 1; i < loads.size(); ++i) {
    const ElfSegment& a = loads[i - 1];
    const ElfSegment& b = loads[i];
    if (b.vaddr <= a.vaddr) {
      return Unsafe("PT_LOAD segments are not sorted by p_vaddr (" + Hex(a.vaddr) + " then " +
                    Hex(b.vaddr) + ")");
    }
    // a's pages end at round-up(vaddr + memsz); b's start at round-down(vaddr): ld.so maps b with
    // MAP_FIXED, so overlapping pages would show b's bytes at addresses a claims.
    const uint64_t a_end = a.vaddr + a.memsz;  // no overflow: CheckLoad
    const uint64_t a_pages_end =
        a_end > UINT64_MAX - (page - 1) ? UINT64_MAX : (a_end + page - 1) & ~(page - 1);
    if (a_pages_end > (b.vaddr & ~(page - 1))) {
      return Unsafe("PT_LOAD segments at " + Hex(a.vaddr) + " and " + Hex(b.vaddr) +
                    " share or overlap pages");
    }
  }
  const uint64_t span =
      loads.back().vaddr + loads.back().memsz - (loads.front().vaddr & ~(page - 1));
  if (span > kMaxElfSpan) {
    return Unsafe("the PT_LOAD segments span " + Hex(span) + " bytes; at most " + Hex(kMaxElfSpan) +
                  " are allowed");
  }
  return Status::Ok();
}

// CheckInsideLoad: a non-PT_LOAD segment's bytes are some PT_LOAD's bytes, at the same offset
// whether read by address (ld.so) or by p_offset (readelf, file-offset readers).
Status CheckInsideLoad(const ElfImage& image, const ElfSegment& p, size_t i) {
  const std::string where = SegmentName(p.type) + " (program header " + std::to_string(i) + ")";
  if (p.filesz > p.memsz)
    return Unsafe(where + " has p_filesz " + Hex(p.filesz) + " > p_memsz " + Hex(p.memsz));
  // RELRO covers memory (ld.so mprotects it), the others cover bytes read from the image.
  if (p.type == PT_TLS && !IsPowerOfTwoOrZero(p.align))
    return Unsafe(where + " has p_align " + Hex(p.align) + ", not a power of two");
  const uint64_t len = p.type == PT_GNU_RELRO ? p.memsz : p.filesz;
  if (len == 0 && p.type != PT_DYNAMIC) return Status::Ok();
  if (p.type == PT_GNU_RELRO) {
    if (!image.Mapped(p.vaddr, len)) return Unsafe(where + " is not inside one PT_LOAD segment");
    const ElfSegment* load = image.Containing(p.vaddr, 0);
    if (load != nullptr && p.offset != load->offset + (p.vaddr - load->vaddr)) {
      return Unsafe(where + ": p_offset " + Hex(p.offset) + " is not where p_vaddr " +
                    Hex(p.vaddr) + " maps");
    }
    return Status::Ok();
  }
  auto off = image.FileOffset(p.vaddr, len);
  if (!off) return Unsafe(where + " is not inside the file-backed part of one PT_LOAD segment");
  if (*off != p.offset) {
    return Unsafe(where + ": p_offset " + Hex(p.offset) + " is not where p_vaddr " + Hex(p.vaddr) +
                  " maps (" + Hex(*off) +
                  "): a file-offset reader and the runtime loader would read different bytes");
  }
  return Status::Ok();
}

Result<Layout> CheckSegments(const ElfBytes& c, const std::vector<ElfSegment>& segs) {
  Layout out;
  std::optional<size_t> dynamic, stack, tls, relro;
  auto once = [](std::optional<size_t>& slot, size_t i, const char* name) -> Status {
    if (slot) return Unsafe(std::string("more than one ") + name + " (ld.so would use the last)");
    slot = i;
    return Status::Ok();
  };
  for (size_t i = 0; i < segs.size(); ++i) {
    const ElfSegment& p = segs[i];
    switch (p.type) {
      case PT_LOAD:
        CLAWGUARD_RETURN_IF_ERROR(CheckLoad(c, p, i));
        out.loads.push_back(p);
        break;
      case PT_DYNAMIC: CLAWGUARD_RETURN_IF_ERROR(once(dynamic, i, "PT_DYNAMIC")); break;
      case PT_GNU_STACK: CLAWGUARD_RETURN_IF_ERROR(once(stack, i, "PT_GNU_STACK")); break;
      case PT_TLS: CLAWGUARD_RETURN_IF_ERROR(once(tls, i, "PT_TLS")); break;
      case PT_GNU_RELRO: CLAWGUARD_RETURN_IF_ERROR(once(relro, i, "PT_GNU_RELRO")); break;
      case PT_NOTE:
      case PT_GNU_EH_FRAME:
      case PT_GNU_PROPERTY: break;
      case PT_INTERP:
        return Unsafe(
            "PT_INTERP present: a plugin is a library, not a program with an interpreter");
      default:
        return Unsafe("program header " + std::to_string(i) + " is " + SegmentName(p.type) +
                      ", which a plugin may not carry");
    }
  }
  if (out.loads.empty()) return Unsafe("no PT_LOAD segment");
  CLAWGUARD_RETURN_IF_ERROR(CheckLoadOrder(out.loads));
  if (!stack) return Unsafe("no PT_GNU_STACK header: the kernel would give it an executable stack");
  if ((segs[*stack].flags & PF_X) != 0)
    return Unsafe("PT_GNU_STACK requests an executable stack (PF_X)");
  if (!dynamic) return Unsafe("no PT_DYNAMIC: not a dynamically loadable object");
  out.dynamic = segs[*dynamic];
  if (out.dynamic.filesz == 0 || out.dynamic.filesz != out.dynamic.memsz) {
    return Unsafe("PT_DYNAMIC has p_filesz " + Hex(out.dynamic.filesz) + " and p_memsz " +
                  Hex(out.dynamic.memsz) + ": expected equal and non-zero");
  }
  if (out.dynamic.vaddr % alignof(Elf64_Dyn) != 0 || out.dynamic.offset % alignof(Elf64_Dyn) != 0) {
    return Unsafe("PT_DYNAMIC is not 8-byte aligned");
  }
  const ElfImage image(c, out.loads);
  for (size_t i = 0; i < segs.size(); ++i) {
    if (segs[i].type == PT_LOAD || segs[i].type == PT_GNU_STACK) continue;
    CLAWGUARD_RETURN_IF_ERROR(CheckInsideLoad(image, segs[i], i));
  }
  return out;
}

// ---- 3. dynamic array -------------------------------------------------------------------------

// TagRule says whether a dynamic tag may appear and how its value is checked.
enum class TagRule { kDenied, kNeeded, kSingle };

struct TagInfo {
  const char* name;
  TagRule rule;
  const char* why;  // for denied tags: what it would make ld.so do
};

TagInfo InfoOf(int64_t tag) {
  switch (tag) {
    case DT_NEEDED: return {"DT_NEEDED", TagRule::kNeeded, nullptr};
    case DT_SONAME: return {"DT_SONAME", TagRule::kSingle, nullptr};
    case DT_STRTAB: return {"DT_STRTAB", TagRule::kSingle, nullptr};
    case DT_STRSZ: return {"DT_STRSZ", TagRule::kSingle, nullptr};
    case DT_SYMTAB: return {"DT_SYMTAB", TagRule::kSingle, nullptr};
    case DT_SYMENT: return {"DT_SYMENT", TagRule::kSingle, nullptr};
    case DT_HASH: return {"DT_HASH", TagRule::kSingle, nullptr};
    case DT_GNU_HASH: return {"DT_GNU_HASH", TagRule::kSingle, nullptr};
    case DT_RELA: return {"DT_RELA", TagRule::kSingle, nullptr};
    case DT_RELASZ: return {"DT_RELASZ", TagRule::kSingle, nullptr};
    case DT_RELAENT: return {"DT_RELAENT", TagRule::kSingle, nullptr};
    case DT_RELACOUNT: return {"DT_RELACOUNT", TagRule::kSingle, nullptr};
    case DT_RELR: return {"DT_RELR", TagRule::kSingle, nullptr};
    case DT_RELRSZ: return {"DT_RELRSZ", TagRule::kSingle, nullptr};
    case DT_RELRENT: return {"DT_RELRENT", TagRule::kSingle, nullptr};
    case DT_JMPREL: return {"DT_JMPREL", TagRule::kSingle, nullptr};
    case DT_PLTRELSZ: return {"DT_PLTRELSZ", TagRule::kSingle, nullptr};
    case DT_PLTREL: return {"DT_PLTREL", TagRule::kSingle, nullptr};
    case DT_PLTGOT: return {"DT_PLTGOT", TagRule::kSingle, nullptr};
    case DT_INIT: return {"DT_INIT", TagRule::kSingle, nullptr};
    case DT_FINI: return {"DT_FINI", TagRule::kSingle, nullptr};
    case DT_INIT_ARRAY: return {"DT_INIT_ARRAY", TagRule::kSingle, nullptr};
    case DT_INIT_ARRAYSZ: return {"DT_INIT_ARRAYSZ", TagRule::kSingle, nullptr};
    case DT_FINI_ARRAY: return {"DT_FINI_ARRAY", TagRule::kSingle, nullptr};
    case DT_FINI_ARRAYSZ: return {"DT_FINI_ARRAYSZ", TagRule::kSingle, nullptr};
    case DT_VERSYM: return {"DT_VERSYM", TagRule::kSingle, nullptr};
    case DT_VERNEED: return {"DT_VERNEED", TagRule::kSingle, nullptr};
    case DT_VERNEEDNUM: return {"DT_VERNEEDNUM", TagRule::kSingle, nullptr};
    case DT_VERDEF: return {"DT_VERDEF", TagRule::kSingle, nullptr};
    case DT_VERDEFNUM: return {"DT_VERDEFNUM", TagRule::kSingle, nullptr};
    case DT_FLAGS: return {"DT_FLAGS", TagRule::kSingle, nullptr};
    case DT_FLAGS_1: return {"DT_FLAGS_1", TagRule::kSingle, nullptr};
    case DT_BIND_NOW: return {"DT_BIND_NOW", TagRule::kSingle, nullptr};
    case DT_TLSDESC_PLT: return {"DT_TLSDESC_PLT", TagRule::kSingle, nullptr};
    case DT_TLSDESC_GOT: return {"DT_TLSDESC_GOT", TagRule::kSingle, nullptr};
#if defined(__aarch64__)
    case DT_AARCH64_BTI_PLT: return {"DT_AARCH64_BTI_PLT", TagRule::kSingle, nullptr};
    case DT_AARCH64_PAC_PLT: return {"DT_AARCH64_PAC_PLT", TagRule::kSingle, nullptr};
    case DT_AARCH64_VARIANT_PCS: return {"DT_AARCH64_VARIANT_PCS", TagRule::kSingle, nullptr};
#endif
    case DT_REL:
    case DT_RELSZ:
    case DT_RELENT:
    case DT_RELCOUNT:
      return {"DT_REL", TagRule::kDenied,
              "this machine's runtime loader knows RELA relocations only (it would abort)"};
    case DT_RPATH:
      return {"DT_RPATH", TagRule::kDenied, "the library would search paths it chooses"};
    case DT_RUNPATH:
      return {"DT_RUNPATH", TagRule::kDenied, "the library would search paths it chooses"};
    case DT_TEXTREL: return {"DT_TEXTREL", TagRule::kDenied, "text relocations make code writable"};
    case DT_AUXILIARY:
      return {"DT_AUXILIARY", TagRule::kDenied,
              "dlopen would load a library it names and answer symbols from it"};
    case DT_FILTER:
      return {"DT_FILTER", TagRule::kDenied,
              "dlopen would load a library it names and answer symbols from it"};
    case DT_AUDIT:
      return {"DT_AUDIT", TagRule::kDenied,
              "it names an audit library for the runtime loader to run"};
    case DT_DEPAUDIT:
      return {"DT_DEPAUDIT", TagRule::kDenied,
              "it names an audit library for the runtime loader to run"};
    case DT_CONFIG: return {"DT_CONFIG", TagRule::kDenied, "it names a loader configuration file"};
    case DT_SYMBOLIC: return {"DT_SYMBOLIC", TagRule::kDenied, "it changes symbol resolution"};
    case DT_DEBUG: return {"DT_DEBUG", TagRule::kDenied, "it belongs to executables"};
    case DT_PREINIT_ARRAY:
      return {"DT_PREINIT_ARRAY", TagRule::kDenied, "it belongs to executables"};
    case DT_PREINIT_ARRAYSZ:
      return {"DT_PREINIT_ARRAYSZ", TagRule::kDenied, "it belongs to executables"};
    default: return {nullptr, TagRule::kDenied, nullptr};
  }
}

// Dynamic is the parsed dynamic array: DT_NEEDED offsets in order and every other tag's value.
struct Dynamic {
  std::vector<uint64_t> needed;
  std::map<int64_t, uint64_t> single;
  std::optional<uint64_t> Get(int64_t tag) const {
    auto it = single.find(tag);
    return it == single.end() ? std::nullopt : std::optional<uint64_t>(it->second);
  }
};

Result<std::vector<ElfDynEntry>> ReadDynamic(const ElfBytes& c, const ElfImage& image,
                                             const ElfSegment& d) {
  // ld.so reads l_addr + p_vaddr; the segment check made p_offset agree with it.
  auto off = image.FileOffset(d.vaddr, d.filesz);
  if (!off) return Unsafe("PT_DYNAMIC is not inside the file-backed part of one PT_LOAD segment");
  const uint64_t count = d.filesz / kDynEntrySize;
  std::vector<ElfDynEntry> out;
  for (uint64_t i = 0; i < count; ++i) {
    if (i >= kMaxElfDynamicEntries) {
      return Unsafe("the dynamic array has more than " + std::to_string(kMaxElfDynamicEntries) +
                    " entries");
    }
    const uint64_t at = *off + i * kDynEntrySize;
    ElfDynEntry e{*c.Read<int64_t>(at), *c.Read<uint64_t>(at + 8)};
    if (e.tag == DT_NULL) return out;
    out.push_back(e);
  }
  return Unsafe(
      "PT_DYNAMIC has no DT_NULL terminator inside its segment (ld.so would read past it)");
}

Result<Dynamic> ClassifyTags(const std::vector<ElfDynEntry>& entries) {
  Dynamic d;
  for (const auto& e : entries) {
    const TagInfo info = InfoOf(e.tag);
    switch (info.rule) {
      case TagRule::kNeeded: d.needed.push_back(e.value); break;
      case TagRule::kSingle:
        if (!d.single.emplace(e.tag, e.value).second) {
          return Unsafe(std::string(info.name) +
                        " appears more than once (ld.so would use the last)");
        }
        break;
      case TagRule::kDenied:
        if (info.name == nullptr)
          return Unsafe("dynamic tag " + Hex(static_cast<uint64_t>(e.tag)) +
                        " is not one a plugin may carry");
        return Unsafe(std::string(info.name) + " present: " + info.why);
    }
  }
  return d;
}

Status CheckFlags(const Dynamic& d) {
  if (auto flags = d.Get(DT_FLAGS)) {
    if ((*flags & DF_TEXTREL) != 0)
      return Unsafe("DF_TEXTREL set in DT_FLAGS: text relocations make code writable");
    if ((*flags & DF_ORIGIN) != 0)
      return Unsafe("DF_ORIGIN set in DT_FLAGS: the library would resolve $ORIGIN paths");
    if ((*flags & DF_SYMBOLIC) != 0)
      return Unsafe("DF_SYMBOLIC set in DT_FLAGS: it changes symbol resolution");
    const uint64_t unknown = *flags & ~static_cast<uint64_t>(DF_BIND_NOW | DF_STATIC_TLS);
    if (unknown != 0) return Unsafe("DT_FLAGS has bits " + Hex(unknown) + " a plugin may not set");
  }
  if (auto flags1 = d.Get(DT_FLAGS_1)) {
    if ((*flags1 & DF_1_NODELETE) != 0) {
      return Unsafe("DF_1_NODELETE set in DT_FLAGS_1: the library would stay mapped after dlclose");
    }
    if ((*flags1 & DF_1_GLOBAL) != 0)
      return Unsafe("DF_1_GLOBAL set in DT_FLAGS_1: its symbols would serve other objects");
    if ((*flags1 & DF_1_INTERPOSE) != 0)
      return Unsafe("DF_1_INTERPOSE set in DT_FLAGS_1: it would interpose on other objects");
    if ((*flags1 & DF_1_LOADFLTR) != 0)
      return Unsafe("DF_1_LOADFLTR set in DT_FLAGS_1: filtees would be loaded at once");
    if ((*flags1 & DF_1_ORIGIN) != 0)
      return Unsafe("DF_1_ORIGIN set in DT_FLAGS_1: the library would resolve $ORIGIN paths");
    const uint64_t unknown = *flags1 & ~static_cast<uint64_t>(DF_1_NOW);
    if (unknown != 0)
      return Unsafe("DT_FLAGS_1 has bits " + Hex(unknown) + " a plugin may not set");
  }
  return Status::Ok();
}

// CheckTable: [addr, addr + size) of a table the runtime loader reads is file-backed.
Status CheckTable(const ElfImage& image, const Dynamic& d, int64_t addr_tag, int64_t size_tag,
                  int64_t ent_tag, uint64_t entsize) {
  const auto addr = d.Get(addr_tag);
  const auto size = d.Get(size_tag);
  const char* an = InfoOf(addr_tag).name;
  const char* sn = InfoOf(size_tag).name;
  if (!addr && !size) {
    if (ent_tag != 0 && d.Get(ent_tag))
      return Unsafe(std::string(InfoOf(ent_tag).name) + " without " + an);
    return Status::Ok();
  }
  if (!addr || !size) return Unsafe(std::string(an) + " and " + sn + " must appear together");
  if (ent_tag != 0) {
    if (auto ent = d.Get(ent_tag); ent && *ent != entsize) {
      return Unsafe(std::string(InfoOf(ent_tag).name) + " is " + std::to_string(*ent) +
                    ", expected " + std::to_string(entsize));
    }
  }
  if (entsize != 0 && *size % entsize != 0) {
    return Unsafe(std::string(sn) + " " + std::to_string(*size) + " is not a multiple of " +
                  std::to_string(entsize));
  }
  if (*addr % alignof(uint64_t) != 0)
    return Unsafe(std::string(an) + " " + Hex(*addr) + " is not 8-byte aligned");
  if (*size > 0 && !image.FileOffset(*addr, *size)) {
    return Unsafe(std::string(an) + " [" + Hex(*addr) + ", +" + Hex(*size) +
                  ") is not file-backed inside one PT_LOAD");
  }
  return Status::Ok();
}

Status CheckAddress(const ElfImage& image, const Dynamic& d, int64_t tag, uint64_t len,
                    bool file_backed, bool exec) {
  const auto v = d.Get(tag);
  if (!v) return Status::Ok();
  const char* name = InfoOf(tag).name;
  uint32_t flags = 0;
  if (file_backed ? !image.FileOffset(*v, len) : !image.Mapped(*v, len, &flags)) {
    return Unsafe(std::string(name) + " " + Hex(*v) + " does not point into " +
                  (file_backed ? "the file-backed part of " : "") + "a PT_LOAD segment");
  }
  if (exec) {
    (void)image.Mapped(*v, len, &flags);
    if ((flags & PF_X) == 0)
      return Unsafe(std::string(name) + " " + Hex(*v) + " is not in an executable segment");
  }
  return Status::Ok();
}

struct Strings {
  uint64_t table = 0, size = 0;
};

// IsBareName: a library name ld.so looks up as a name — no '/', which makes it a path, and no '$',
// which starts a dynamic string token ($ORIGIN, $LIB, $PLATFORM) that expands into one.
bool IsBareName(const std::string& n) {
  if (n.empty()) return false;
  for (const char ch : n) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-' || ch == '+';
    if (!ok) return false;
  }
  return true;
}

Result<std::string> NameAt(const ElfImage& image, const Strings& s, uint64_t index,
                           const std::string& what) {
  auto name = image.StringAt(s.table, s.size, index, kMaxElfName);
  if (!name)
    return Unsafe(what + " string at index " + std::to_string(index) +
                  " is not a terminated string inside DT_STRTAB (at most " +
                  std::to_string(kMaxElfName) + " bytes)");
  return *name;
}

// CheckVersions walks DT_VERNEED and DT_VERDEF the way ld.so does (vn_next / vd_next until 0)
// and requires the count tags to agree; every needed version names a DT_NEEDED library.
Status CheckVersions(const ElfImage& image, const Dynamic& d, const Strings& s,
                     const std::vector<std::string>& needed) {
  if (d.Get(DT_VERNEED).has_value() != d.Get(DT_VERNEEDNUM).has_value()) {
    return Unsafe("DT_VERNEED and DT_VERNEEDNUM must appear together");
  }
  if (auto vn = d.Get(DT_VERNEED)) {
    uint64_t at = *vn, seen = 0;
    while (true) {
      if (++seen > kMaxElfVersionEntries)
        return Unsafe("DT_VERNEED has more than " + std::to_string(kMaxElfVersionEntries) +
                      " entries");
      auto version = image.ReadAt<uint16_t>(at);
      auto cnt = image.ReadAt<uint16_t>(at + 2);
      auto file = image.ReadAt<uint32_t>(at + 4);
      auto aux = image.ReadAt<uint32_t>(at + 8);
      auto next = image.ReadAt<uint32_t>(at + 12);
      if (!version || !cnt || !file || !aux || !next)
        return Unsafe("a DT_VERNEED entry is not file-backed inside a PT_LOAD");
      if (*version != 1)
        return Unsafe("a DT_VERNEED entry has vn_version " + std::to_string(*version) +
                      ", expected 1");
      CLAWGUARD_ASSIGN_OR_RETURN(std::string name, NameAt(image, s, *file, "a DT_VERNEED file"));
      bool listed = false;
      for (const auto& n : needed) listed = listed || n == name;
      if (!listed)
        return Unsafe("DT_VERNEED names '" + name + "', which is not a DT_NEEDED library");
      uint64_t a = at + *aux, auxes = 0;
      while (*cnt > 0) {
        if (++auxes > kMaxElfVersionEntries)
          return Unsafe("a DT_VERNEED entry has too many versions");
        auto vna_name = image.ReadAt<uint32_t>(a + 8);
        auto vna_next = image.ReadAt<uint32_t>(a + 12);
        if (!vna_name || !vna_next)
          return Unsafe("a DT_VERNEED version is not file-backed inside a PT_LOAD");
        CLAWGUARD_RETURN_IF_ERROR(NameAt(image, s, *vna_name, "a DT_VERNEED version").status());
        if (*vna_next == 0) break;
        a += *vna_next;
      }
      if (auxes != *cnt)
        return Unsafe("a DT_VERNEED entry's vn_cnt " + std::to_string(*cnt) +
                      " does not match its versions");
      if (*next == 0) break;
      at += *next;
    }
    if (seen != *d.Get(DT_VERNEEDNUM))
      return Unsafe("DT_VERNEEDNUM does not match the DT_VERNEED chain");
  }
  if (d.Get(DT_VERDEF).has_value() != d.Get(DT_VERDEFNUM).has_value()) {
    return Unsafe("DT_VERDEF and DT_VERDEFNUM must appear together");
  }
  if (auto vd = d.Get(DT_VERDEF)) {
    uint64_t at = *vd, seen = 0;
    while (true) {
      if (++seen > kMaxElfVersionEntries)
        return Unsafe("DT_VERDEF has more than " + std::to_string(kMaxElfVersionEntries) +
                      " entries");
      auto version = image.ReadAt<uint16_t>(at);
      auto next = image.ReadAt<uint32_t>(at + 16);
      if (!version || !next || !image.FileOffset(at, sizeof(Elf64_Verdef))) {
        return Unsafe("a DT_VERDEF entry is not file-backed inside a PT_LOAD");
      }
      if (*version != 1)
        return Unsafe("a DT_VERDEF entry has vd_version " + std::to_string(*version) +
                      ", expected 1");
      if (*next == 0) break;
      at += *next;
    }
    if (seen != *d.Get(DT_VERDEFNUM))
      return Unsafe("DT_VERDEFNUM does not match the DT_VERDEF chain");
  }
  return Status::Ok();
}

Status CheckDynamic(const ElfImage& image, const Dynamic& d, const std::set<std::string>& allowed,
                    ElfInfo& info) {
  CLAWGUARD_RETURN_IF_ERROR(CheckFlags(d));
  const auto strtab = d.Get(DT_STRTAB), strsz = d.Get(DT_STRSZ), symtab = d.Get(DT_SYMTAB);
  if (!strtab || !strsz || *strsz == 0)
    return Unsafe("no DT_STRTAB/DT_STRSZ: the library cannot name its symbols");
  if (!image.FileOffset(*strtab, *strsz)) {
    return Unsafe("DT_STRTAB [" + Hex(*strtab) + ", +" + Hex(*strsz) +
                  ") is not file-backed inside one PT_LOAD");
  }
  if (!symtab) return Unsafe("no DT_SYMTAB: the library exports nothing");
  if (d.Get(DT_SYMENT).value_or(0) != sizeof(Elf64_Sym))
    return Unsafe("DT_SYMENT is missing or not 24");
  if (!d.Get(DT_GNU_HASH) && !d.Get(DT_HASH))
    return Unsafe("no DT_GNU_HASH or DT_HASH: dlsym could not find the entry point");
  CLAWGUARD_RETURN_IF_ERROR(CheckAddress(image, d, DT_SYMTAB, sizeof(Elf64_Sym), true, false));
  CLAWGUARD_RETURN_IF_ERROR(CheckAddress(image, d, DT_HASH, 8, true, false));
  CLAWGUARD_RETURN_IF_ERROR(CheckAddress(image, d, DT_GNU_HASH, 16, true, false));
  CLAWGUARD_RETURN_IF_ERROR(CheckAddress(image, d, DT_VERSYM, 2, true, false));
  CLAWGUARD_RETURN_IF_ERROR(CheckAddress(image, d, DT_PLTGOT, 8, false, false));
  CLAWGUARD_RETURN_IF_ERROR(CheckAddress(image, d, DT_TLSDESC_GOT, 8, false, false));
  CLAWGUARD_RETURN_IF_ERROR(CheckAddress(image, d, DT_TLSDESC_PLT, 1, false, true));
  CLAWGUARD_RETURN_IF_ERROR(CheckAddress(image, d, DT_INIT, 1, false, true));
  CLAWGUARD_RETURN_IF_ERROR(CheckAddress(image, d, DT_FINI, 1, false, true));
  CLAWGUARD_RETURN_IF_ERROR(
      CheckTable(image, d, DT_RELA, DT_RELASZ, DT_RELAENT, sizeof(Elf64_Rela)));
  CLAWGUARD_RETURN_IF_ERROR(CheckTable(image, d, DT_RELR, DT_RELRSZ, DT_RELRENT, sizeof(uint64_t)));
  CLAWGUARD_RETURN_IF_ERROR(
      CheckTable(image, d, DT_INIT_ARRAY, DT_INIT_ARRAYSZ, 0, sizeof(uint64_t)));
  CLAWGUARD_RETURN_IF_ERROR(
      CheckTable(image, d, DT_FINI_ARRAY, DT_FINI_ARRAYSZ, 0, sizeof(uint64_t)));
  if (d.Get(DT_RELACOUNT).value_or(0) > d.Get(DT_RELASZ).value_or(0) / sizeof(Elf64_Rela)) {
    return Unsafe("DT_RELACOUNT is larger than the DT_RELA table");
  }
  if (d.Get(DT_JMPREL) || d.Get(DT_PLTRELSZ) || d.Get(DT_PLTREL)) {
    // RELA only: this machine's ld.so asserts DT_PLTREL == DT_RELA (it would abort the host).
    if (d.Get(DT_PLTREL) != std::optional<uint64_t>(DT_RELA))
      return Unsafe("DT_PLTREL is missing or not DT_RELA");
    CLAWGUARD_RETURN_IF_ERROR(CheckTable(image, d, DT_JMPREL, DT_PLTRELSZ, 0, sizeof(Elf64_Rela)));
  }
  const Strings s{*strtab, *strsz};
  for (uint64_t n : d.needed) {
    CLAWGUARD_ASSIGN_OR_RETURN(std::string name, NameAt(image, s, n, "a DT_NEEDED"));
    if (!IsBareName(name)) {
      return Unsafe("DT_NEEDED '" + name +
                    "' is not a bare soname of [A-Za-z0-9._+-] (a '/' makes the runtime loader "
                    "open it as a path, a '$' expands into one)");
    }
    if (allowed.count(name) == 0)
      return Unsafe("DT_NEEDED '" + name + "' is not in the trust policy's elf.allowed_needed");
    info.needed.push_back(std::move(name));
  }
  if (auto so = d.Get(DT_SONAME)) {
    CLAWGUARD_ASSIGN_OR_RETURN(info.soname, NameAt(image, s, *so, "the DT_SONAME"));
    if (!IsBareName(info.soname)) {
      return Unsafe("DT_SONAME '" + info.soname +
                    "' is not a bare name of [A-Za-z0-9._+-] (glibc matches later dlopen "
                    "paths against it)");
    }
    if (allowed.count(info.soname) != 0) {
      return Unsafe("DT_SONAME '" + info.soname +
                    "' is a library on elf.allowed_needed: the plugin would answer for it");
    }
  }
  return CheckVersions(image, d, s, info.needed);
}

// ---- 4. sections ------------------------------------------------------------------------------

struct Section {
  uint32_t type = 0, link = 0;
  uint64_t flags = 0, addr = 0, offset = 0, size = 0, entsize = 0;
};

// SectionFlagsPlain: a section the runtime loader maps is allocated and nothing else a section
// reader would interpret (SHF_COMPRESSED would make readelf/libelf show other bytes than ld.so
// maps).
Status SectionFlagsPlain(const Section& s, const char* name) {
  if ((s.flags & SHF_ALLOC) == 0) return Unsafe(std::string(name) + " is not SHF_ALLOC");
  const uint64_t other = s.flags & ~static_cast<uint64_t>(SHF_ALLOC | SHF_WRITE);
  if (other != 0)
    return Unsafe(std::string(name) + " has section flags " + Hex(other) +
                  " beyond ALLOC and WRITE");
  return Status::Ok();
}

Status CheckSections(const ElfBytes& c, const ElfImage& image, const ElfSegment& dyn,
                     const Dynamic& d) {
  const uint64_t shoff = *c.Read<uint64_t>(40);
  const uint16_t shentsize = *c.Read<uint16_t>(58), shnum = *c.Read<uint16_t>(60);
  if (shoff == 0 || shnum == 0)
    return Unsafe("no section headers: cannot find clawguard_plugin_v1 in .dynsym");
  if (shentsize != sizeof(Elf64_Shdr))
    return Unsafe("e_shentsize is " + std::to_string(shentsize) + ", expected 64");
  if (!c.Fits(shoff, uint64_t{shnum} * shentsize))
    return Unsafe("the section headers lie outside the file");
  auto section = [&](uint64_t i) {
    const uint64_t at = shoff + i * shentsize;
    return Section{*c.Read<uint32_t>(at + 4),  *c.Read<uint32_t>(at + 40),
                   *c.Read<uint64_t>(at + 8),  *c.Read<uint64_t>(at + 16),
                   *c.Read<uint64_t>(at + 24), *c.Read<uint64_t>(at + 32),
                   *c.Read<uint64_t>(at + 56)};
  };
  std::optional<uint64_t> dynamic_index, dynsym_index;
  for (uint64_t i = 0; i < shnum; ++i) {
    const uint32_t type = section(i).type;
    if (type == SHT_DYNAMIC) {
      if (dynamic_index) return Unsafe("more than one SHT_DYNAMIC section");
      dynamic_index = i;
    } else if (type == SHT_DYNSYM) {
      if (dynsym_index) return Unsafe("more than one SHT_DYNSYM section");
      dynsym_index = i;
    }
  }
  if (!dynamic_index) return Unsafe("no SHT_DYNAMIC section");
  const Section ds = section(*dynamic_index);
  if (ds.offset != dyn.offset || ds.addr != dyn.vaddr || ds.size != dyn.filesz) {
    return Unsafe("the .dynamic section (offset " + Hex(ds.offset) + ", address " + Hex(ds.addr) +
                  ", size " + Hex(ds.size) +
                  ") is not PT_DYNAMIC: section readers and the runtime loader would see different "
                  "dynamic arrays");
  }
  CLAWGUARD_RETURN_IF_ERROR(SectionFlagsPlain(ds, ".dynamic"));
  const uint64_t strtab = *d.Get(DT_STRTAB), strsz = *d.Get(DT_STRSZ);
  if (ds.link == 0 || ds.link >= shnum) return Unsafe(".dynamic's sh_link does not name a section");
  const Section ss = section(ds.link);
  if (ss.type != SHT_STRTAB || ss.addr != strtab || ss.size != strsz ||
      image.FileOffset(strtab, strsz) != ss.offset) {
    return Unsafe(
        ".dynamic's string table section is not DT_STRTAB/DT_STRSZ as the runtime loader maps it");
  }
  CLAWGUARD_RETURN_IF_ERROR(SectionFlagsPlain(ss, ".dynstr"));
  if (!dynsym_index) return Unsafe("no .dynsym section: clawguard_plugin_v1 cannot be exported");
  const Section sym = section(*dynsym_index);
  if (sym.entsize != sizeof(Elf64_Sym)) return Unsafe(".dynsym sh_entsize is not 24");
  CLAWGUARD_RETURN_IF_ERROR(SectionFlagsPlain(sym, ".dynsym"));
  if (sym.link != ds.link) return Unsafe(".dynsym's string table is not .dynamic's");
  if (sym.addr != *d.Get(DT_SYMTAB) || sym.size % sizeof(Elf64_Sym) != 0 ||
      image.FileOffset(sym.addr, sym.size) != sym.offset) {
    return Unsafe(".dynsym is not DT_SYMTAB as the runtime loader maps it");
  }
  // The name is compared in place (no scan per symbol), so the walk is linear in .dynsym.
  const std::string wanted = std::string(kPluginEntrySymbol) + '\0';
  std::optional<uint64_t> found;
  for (uint64_t s = 0; s < sym.size / sizeof(Elf64_Sym); ++s) {
    const uint64_t at = sym.offset + s * sizeof(Elf64_Sym);
    const uint32_t name = *c.Read<uint32_t>(at);
    if (name >= strsz || wanted.size() > strsz - name) continue;
    bool same = true;
    for (size_t k = 0; k < wanted.size() && same; ++k)
      same = *c.Read<char>(ss.offset + name + k) == wanted[k];
    if (!same) continue;
    if (found) return Unsafe("clawguard_plugin_v1 appears more than once in .dynsym");
    found = at;
  }
  if (!found)
    return Unsafe(
        "clawguard_plugin_v1 is not defined in .dynsym (build with CG_EXPORT from "
        "clawguard/plugin.h)");
  const uint8_t sinfo = *c.Read<uint8_t>(*found + 4), other = *c.Read<uint8_t>(*found + 5);
  const uint16_t shndx = *c.Read<uint16_t>(*found + 6);
  const int bind = ELF64_ST_BIND(sinfo);
  if (shndx == SHN_UNDEF)
    return Unsafe("clawguard_plugin_v1 is undefined in .dynsym (imported, not defined)");
  if (bind != STB_GLOBAL && bind != STB_WEAK)
    return Unsafe("clawguard_plugin_v1 is not a global symbol");
  if (ELF64_ST_VISIBILITY(other) != STV_DEFAULT)
    return Unsafe("clawguard_plugin_v1 does not have default visibility");
  if (ELF64_ST_TYPE(sinfo) != STT_FUNC) return Unsafe("clawguard_plugin_v1 is not a function");
  return Status::Ok();
}

}  // namespace

Result<ElfInfo> CheckElf(std::string_view bytes, const std::set<std::string>& allowed_needed) {
  const ElfBytes c(bytes);
  CLAWGUARD_RETURN_IF_ERROR(CheckHeader(c));
  ElfInfo info;
  CLAWGUARD_ASSIGN_OR_RETURN(info.segments, ReadSegments(c));
  CLAWGUARD_ASSIGN_OR_RETURN(Layout layout, CheckSegments(c, info.segments));
  const ElfImage image(c, layout.loads);
  CLAWGUARD_ASSIGN_OR_RETURN(info.dynamic, ReadDynamic(c, image, layout.dynamic));
  CLAWGUARD_ASSIGN_OR_RETURN(Dynamic dynamic, ClassifyTags(info.dynamic));
  CLAWGUARD_RETURN_IF_ERROR(CheckDynamic(image, dynamic, allowed_needed, info));
  CLAWGUARD_RETURN_IF_ERROR(CheckSections(c, image, layout.dynamic, dynamic));
  return info;
}

}  // namespace clawguard
