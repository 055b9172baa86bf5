// Reads what the doctor needs from an ELF shared object or executable:
// DT_NEEDED, DT_SONAME, DT_RPATH/DT_RUNPATH and the GNU build-id note.
// Bounds-checked: a truncated or hostile file gives a Status, never a crash.
#pragma once

#include <cstdint>
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
};

Result<ElfInfo> ReadElf(const std::string& path);

}  // namespace vigil::doctor
