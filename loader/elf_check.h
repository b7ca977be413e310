// elf_check.h — CheckElf: the entry library's ELF checks, from the in-memory bytes, before dlopen.
//
// Every field is read through a bounded cursor with overflow-safe offset arithmetic. Checks, in
// order, each a kElfUnsafe with a precise message:
//   ELF magic, ELFCLASS64, little-endian, EV_CURRENT; ET_DYN; e_machine of this build's machine;
//   program headers inside the file; exactly one PT_DYNAMIC; a PT_GNU_STACK without PF_X (a
//   missing one means an executable stack to the kernel); no DT_RPATH / DT_RUNPATH; no
//   DT_TEXTREL and no DF_TEXTREL in DT_FLAGS; every DT_NEEDED (strings from DT_STRTAB mapped
//   through PT_LOAD vaddr → offset) in |allowed_needed|; `clawguard_plugin_v1` defined (not
//   SHN_UNDEF), global or weak, default visibility, in .dynsym (SHT_DYNSYM and its sh_link
//   string table).
// Deviation: the symbol is looked up through the section headers only (a library stripped of
// section headers is refused rather than walked through DT_GNU_HASH). Thread-safe.
#ifndef CLAWGUARD_LOADER_ELF_CHECK_H_
#define CLAWGUARD_LOADER_ELF_CHECK_H_

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/error.h"

namespace clawguard {

inline constexpr std::string_view kPluginEntrySymbol = "clawguard_plugin_v1";

// ElfInfo is what CheckElf learned (for logs and tests).
struct ElfInfo {
  std::vector<std::string> needed;
};

// CheckElf checks |bytes| as a plugin shared object for this machine.
Result<ElfInfo> CheckElf(std::string_view bytes, const std::set<std::string>& allowed_needed);

}  // namespace clawguard

#endif  // CLAWGUARD_LOADER_ELF_CHECK_H_
