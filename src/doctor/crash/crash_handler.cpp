#include "doctor/crash/crash_handler.h"

#include <fcntl.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstring>
#include <initializer_list>

namespace vigil::doctor {
namespace {

CrashRecord* g_record = nullptr;
int g_text_fd = -1;
// The handler's own stack: a crash from a stack overflow has none left.
alignas(16) char g_alt_stack[64 * 1024];

unsigned FormatHex(uint64_t value, char* out) {
  char tmp[16];
  unsigned n = 0;
  do {
    tmp[n++] = "0123456789abcdef"[value & 0xf];
    value >>= 4;
  } while (value != 0);
  for (unsigned i = 0; i < n; ++i) out[i] = tmp[n - 1 - i];
  return n;
}

unsigned FormatDecimal(int value, char* out) {
  char tmp[12];
  unsigned n = 0;
  unsigned v = value < 0 ? 0u : static_cast<unsigned>(value);
  do {
    tmp[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  for (unsigned i = 0; i < n; ++i) out[i] = tmp[n - 1 - i];
  return n;
}

uint64_t ParseHex(const char* p, const char* end, const char** next) {
  uint64_t v = 0;
  while (p < end) {
    char c = *p;
    int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (d < 0) break;
    v = v * 16 + static_cast<uint64_t>(d);
    ++p;
  }
  *next = p;
  return v;
}

void WriteText(const char* text, size_t n) {
  while (g_text_fd >= 0 && n > 0) {
    ssize_t w = write(g_text_fd, text, n);
    if (w <= 0) return;
    text += w;
    n -= static_cast<size_t>(w);
  }
}

uint64_t ProgramCounter(const siginfo_t* info, const void* context) {
#if defined(__x86_64__)
  (void)info;
  return static_cast<uint64_t>(static_cast<const ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  (void)info;
  return static_cast<uint64_t>(static_cast<const ucontext_t*>(context)->uc_mcontext.pc);
#else
  (void)context;
  return reinterpret_cast<uint64_t>(info->si_addr);
#endif
}

void OnCrash(int sig, siginfo_t* info, void* context) {
  const uint64_t pc = ProgramCounter(info, context);
  const uint64_t address = reinterpret_cast<uint64_t>(info->si_addr);
  if (g_record != nullptr) {
    g_record->signal = sig;
    g_record->code = info->si_code;
    g_record->fault_address = address;
    g_record->pc = pc;
    FindMapsLine(pc, g_record->pc_maps_line, sizeof g_record->pc_maps_line);
    FindMapsLine(address, g_record->address_maps_line, sizeof g_record->address_maps_line);
    g_record->crashed = 1;
  }
  if (g_text_fd >= 0) {
    // "signal <number> <pc> <si_addr>": the instruction, then the address
    // it touched (for SIGSEGV/SIGBUS; for SIGILL/SIGFPE, the instruction).
    char line[96] = "signal ";
    unsigned n = 7;
    n += FormatDecimal(sig, line + n);
    line[n++] = ' ';
    n += FormatHex(pc, line + n);
    line[n++] = ' ';
    n += FormatHex(address, line + n);
    line[n++] = '\n';
    WriteText(line, n);
    char maps[512];
    if (FindMapsLine(pc, maps, sizeof maps)) {
      WriteText("maps ", 5);
      WriteText(maps, strlen(maps));
      WriteText("\n", 1);
    }
  }
  signal(sig, SIG_DFL);  // die of the same signal, so the parent sees it
  raise(sig);
}

}  // namespace

bool FindMapsLine(uint64_t address, char* out, unsigned size) {
  if (size == 0) return false;
  out[0] = '\0';
  char buffer[4096];
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t used = 0;
  bool found = false;
  for (;;) {
    ssize_t n = read(fd, buffer + used, sizeof buffer - used);
    if (n <= 0) break;
    used += static_cast<size_t>(n);
    char* line = buffer;
    char* end = buffer + used;
    for (char* nl; (nl = static_cast<char*>(memchr(line, '\n', static_cast<size_t>(end - line)))) != nullptr;
         line = nl + 1) {
      const char* p = nullptr;
      uint64_t lo = ParseHex(line, nl, &p);
      uint64_t hi = (p < nl && *p == '-') ? ParseHex(p + 1, nl, &p) : 0;
      if (address >= lo && address < hi) {
        size_t len = static_cast<size_t>(nl - line);
        if (len >= size) len = size - 1;
        memcpy(out, line, len);
        out[len] = '\0';
        found = true;
        break;
      }
    }
    if (found) break;
    used = static_cast<size_t>(end - line);
    memmove(buffer, line, used);
    if (used == sizeof buffer) used = 0;  // an absurdly long line: drop it
  }
  close(fd);
  return found;
}

void InstallCrashHandler(CrashRecord* record, int text_fd) {
  g_record = record;
  g_text_fd = text_fd;
  stack_t stack{};
  stack.ss_sp = g_alt_stack;
  stack.ss_size = sizeof g_alt_stack;
  sigaltstack(&stack, nullptr);
  struct sigaction action {};
  action.sa_sigaction = OnCrash;
  action.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &action, nullptr);
}

}  // namespace vigil::doctor
