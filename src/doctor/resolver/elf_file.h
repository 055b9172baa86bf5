// Reads what the doctor needs from an ELF shared object or executable:
// DT_NEEDED, DT_SONAME, DT_RPATH/DT_RUNPATH and the GNU build-id note.
// Bounds-checked: a truncated or hostile file gives a Status, never a crash.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace vigil::doctor {

struct ElfInfo {
  bool is_64bit = false;
  uint16_t machine = 0;          // e_machine: 62 = x86-64, 183 = aarch64
  std::string soname;
  std::vector<std::string> needed;   // DT_NEEDED in file order
  std::vector<std::string> rpath;    // DT_RPATH, split on ':' ($ORIGIN not expanded)
  std::vector<std::string> runpath;  // DT_RUNPATH, split on ':'
  std::string build_id;          // lowercase hex of NT_GNU_BUILD_ID, empty if none
  // PT_LOAD segments: where file bytes land in the link-time address space
  // (to turn an offset inside a mapped file into an address for addr2line).
  struct LoadSegment {
    uint64_t offset = 0, vaddr = 0, filesz = 0;
  };
  std::vector<LoadSegment> loads;
};

// The link-time virtual address of byte `file_offset` of the file, through
// its PT_LOAD segments; the offset itself when no segment holds it.
uint64_t FileOffsetToVaddr(const ElfInfo& elf, uint64_t file_offset);

Result<ElfInfo> ReadElf(const std::string& path);

// Additions beyond the original interface:

// Parses an ELF image already in memory (tests and fuzzers feed bytes here).
// `display_path` appears in messages only.
Result<ElfInfo> ParseElf(std::span<const uint8_t> bytes, const std::string& display_path);

// The identity the dynamic loader checks before anything else. The loader
// silently skips a candidate of another class or machine, but stops with an
// error at a file that is not ELF at all, so the resolver needs only this.
struct ElfIdentity {
  bool is_64bit = false;
  bool little_endian = true;
  uint16_t machine = 0;
};
// Reads only the first bytes of `path`: cheap enough to run on every
// candidate the resolver meets. Non-ELF files give "not an ELF file".
Result<ElfIdentity> ReadElfIdentity(const std::string& path);
Result<ElfIdentity> ParseElfIdentity(std::span<const uint8_t> bytes, const std::string& display_path);

}  // namespace vigil::doctor
