// The crash handler of every child vigil runs to contain a crash: the
// doctor's live check and the isolated run (`vigil run --isolate`). On a
// fatal signal it records the signal, the faulting address, the program
// counter and the /proc/self/maps lines that contain them, then dies of the
// same signal so the parent sees it. Only async-signal-safe calls are used
// (open/read/write/close/sigaction/raise, no malloc, no stdio), and it runs on
// an alternate stack so a stack overflow is reported too.
#pragma once

#include <cstdint>

namespace vigil::doctor {

// Filled by the handler; plain data, so it can live in memory shared with
// the parent.
struct CrashRecord {
  int32_t crashed = 0;         // 1 once the handler ran
  int32_t signal = 0;
  int32_t code = 0;            // si_code (SEGV_MAPERR, ...)
  int32_t reserved = 0;
  uint64_t fault_address = 0;  // si_addr
  uint64_t pc = 0;             // the instruction that faulted
  char pc_maps_line[512] = {};       // "7f..-7f.. r-xp 00012000 08:01 1234 /usr/lib/libx.so"
  char address_maps_line[512] = {};  // the mapping holding fault_address, if any
};

// Installs the handler for SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT.
// `record` (may be null) is filled; when `text_fd` >= 0 the handler also
// writes "signal <number> <pc hex>\n" and "maps <maps line>\n" to it.
void InstallCrashHandler(CrashRecord* record, int text_fd);

// Copies the /proc/self/maps line whose range holds `address` into `out`
// (NUL-terminated, without the newline); returns false if none does.
// Async-signal-safe.
bool FindMapsLine(uint64_t address, char* out, unsigned size);

}  // namespace vigil::doctor
