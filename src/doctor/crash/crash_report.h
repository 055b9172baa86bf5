// Turns what a crashed child's handler recorded (crash_handler.h) into
// evidence: the signal and its meaning, the library that holds the faulting
// instruction and the offset inside it, that library's build-id, and the
// commands that symbolise the offset (NVIDIA publishes symbols for its CUDA
// libraries, cuDNN included, by build-id).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "doctor/crash/crash_handler.h"

namespace vigil::doctor {

struct FaultLocation {
  std::string library;       // the mapped file's path
  uint64_t file_offset = 0;  // of the address inside that file
  uint64_t vaddr = 0;        // the same as a link-time address (what addr2line takes)
  std::string build_id;      // empty when the file has none or cannot be read
  bool nvidia = false;       // one of NVIDIA's libraries (cuDNN, cuBLAS, CUDA)
  std::vector<std::string> symbolise;  // shell commands that name the function
};

// Locates `address` in the mapping described by one /proc/<pid>/maps line;
// nothing for anonymous mappings or unparsable lines.
std::optional<FaultLocation> LocateInMapsLine(std::string_view maps_line, uint64_t address);

// "SIGSEGV (11): address not mapped (SEGV_MAPERR)".
std::string DescribeSignal(int signal, int code);

// Facts for a diagnosis: signal, fault address, faulting library + offset,
// build-id, symbol server and the symbolise commands.
std::vector<Fact> CrashFacts(const CrashRecord& record, std::optional<FaultLocation>* where = nullptr);

}  // namespace vigil::doctor
