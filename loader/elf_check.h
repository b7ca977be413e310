// elf_check.h — CheckElf: the entry library's ELF checks, from the in-memory bytes, before dlopen.
//
// The check sees what the runtime loader will do, and default-denies what it does not know.
// Every refusal is kElfUnsafe with a message that names the field and what was expected:
//   1. Header: ELF magic, ELFCLASS64, little-endian, EV_CURRENT (both), OS ABI System V or GNU,
//      ET_DYN, e_machine of this build, 56-byte program headers inside the file (≤
//      kMaxElfSegments).
//   2. Program headers, default-deny by type: PT_LOAD, PT_DYNAMIC, PT_GNU_STACK, PT_GNU_RELRO,
//      PT_GNU_EH_FRAME, PT_GNU_PROPERTY, PT_NOTE and PT_TLS only (PT_INTERP, PT_PHDR, PT_NULL and
//      every other type refused). PT_LOADs: at least one, sorted by p_vaddr, their page-rounded
//      memory ranges disjoint (ld.so maps each over the previous one's pages otherwise),
//      p_filesz ≤ p_memsz, file range inside the file, p_vaddr ≡ p_offset modulo the page size
//      and modulo a power-of-two p_align, never writable and executable, a span ≤ kMaxElfSpan.
//      Exactly one PT_DYNAMIC (ld.so takes the last), at most one PT_GNU_STACK (present, without
//      PF_X: a missing one means an executable stack to the kernel), PT_TLS and PT_GNU_RELRO.
//      Every other segment lies inside one PT_LOAD with p_offset agreeing with p_vaddr, so a
//      file-offset reader and the runtime loader see the same bytes.
//   3. The dynamic array is read where ld.so reads it — at p_vaddr through the PT_LOAD that
//      file-backs it (p_filesz == p_memsz > 0; DT_NULL inside the segment) — and default-denied
//      by tag: DT_NEEDED (every one on |allowed_needed|, a bare name of [A-Za-z0-9._+-]: no '/'
//      path, no '$' token), DT_SONAME (a bare name not on |allowed_needed|: a plugin must not
//      answer for a system library or a memfd path), the string, symbol, hash, version,
//      relocation (RELA/RELR/JMPREL with their entry sizes; this machine's ld.so aborts on REL),
//      init/fini (and arrays), PLTGOT, TLSDESC tags, DT_BIND_NOW, DT_FLAGS ⊆ {BIND_NOW,
//      STATIC_TLS} and DT_FLAGS_1 ⊆ {NOW}. Everything else is refused, among them DT_AUXILIARY
//      and DT_FILTER (dlopen would load a library from any path and answer symbols from it),
//      DT_AUDIT/DT_DEPAUDIT, DT_RPATH/DT_RUNPATH, DT_TEXTREL/DF_TEXTREL, DF_1_NODELETE (the
//      library would outlive dlclose) and unknown tags. A tag other than DT_NEEDED appears once.
//      Every address-valued tag points into a PT_LOAD (tables into its file-backed part, DT_INIT
//      and DT_FINI into an executable one); every DT_VERNEED entry names a DT_NEEDED library.
//   4. Section headers agree with the segments (readelf and a reviewer see what ld.so sees):
//      one SHT_DYNAMIC at PT_DYNAMIC's offset, address and size; its sh_link string table at
//      DT_STRTAB with DT_STRSZ bytes; one SHT_DYNSYM at DT_SYMTAB. `clawguard_plugin_v1` is
//      defined once in .dynsym: a global or weak function with default visibility.
// Deviation: the entry symbol is found through .dynsym (section headers), not the hash tables
// dlsym walks; dlsym's answer is checked after dlopen (memfd_loader.h). Thread-safe.
#ifndef CLAWGUARD_LOADER_ELF_CHECK_H_
#define CLAWGUARD_LOADER_ELF_CHECK_H_

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/error.h"
#include "elf_image.h"

namespace clawguard {

inline constexpr std::string_view kPluginEntrySymbol = "clawguard_plugin_v1";
inline constexpr uint64_t kMaxElfSegments = 64;          // program headers
inline constexpr uint64_t kMaxElfDynamicEntries = 4096;  // entries of the dynamic array
inline constexpr uint64_t kMaxElfVersionEntries = 4096;  // DT_VERNEEDNUM / DT_VERDEFNUM
inline constexpr uint64_t kMaxElfSpan = 1ull << 32;      // first PT_LOAD start to last end, bytes

// ElfInfo is the check's view of an accepted library (for logs, the loader and the differential
// tests that compare it with an independent reader).
struct ElfInfo {
  std::vector<std::string> needed;   // DT_NEEDED names, in order
  std::string soname;                // DT_SONAME, "" when absent
  std::vector<ElfSegment> segments;  // every program header, in file order
  std::vector<ElfDynEntry> dynamic;  // the dynamic array before DT_NULL, as ld.so reads it
};

// CheckElf checks |bytes| as a plugin shared object for this machine.
Result<ElfInfo> CheckElf(std::string_view bytes, const std::set<std::string>& allowed_needed);

}  // namespace clawguard

#endif  // CLAWGUARD_LOADER_ELF_CHECK_H_
