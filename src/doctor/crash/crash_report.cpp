#include "doctor/crash/crash_report.h"

#include <signal.h>

#include <cstdio>

#include <fmt/format.h>

#include "doctor/probe/forked_child.h"
#include "doctor/resolver/elf_file.h"

namespace vigil::doctor {
namespace {

std::string BaseName(const std::string& path) { return path.substr(path.rfind('/') + 1); }

bool IsNvidiaLibrary(const std::string& base) {
  for (const char* prefix : {"libcudnn", "libcublas", "libcuda", "libcudart", "libnvrtc", "libnvJitLink",
                             "libnvidia"}) {
    if (base.starts_with(prefix)) return true;
  }
  return false;
}

// NVIDIA's symbol server keys a library by its name up to ".so"
// ("libcudnn_graph.so") and its build-id; the .sym file inside is named after
// the real file ("libcudnn_graph.so.9.14.0.sym"). Seed 004 gives the recipe.
std::vector<std::string> SymboliseCommands(const FaultLocation& f) {
  const std::string base = BaseName(f.library);
  const std::string address = fmt::format("0x{:x}", f.vaddr);
  if (!f.nvidia || f.build_id.empty()) {
    return {fmt::format("addr2line -f -C -e {} {}", f.library, address)};
  }
  const size_t so = base.find(".so");
  const std::string key = so == std::string::npos ? base : base.substr(0, so + 3);
  const std::string url = fmt::format("https://cudatoolkit-symbols.nvidia.com/{}/{}", key, f.build_id);
  return {
      fmt::format("wget {}/index.html   # lists the .sym file for this build", url),
      fmt::format("wget {}/{}.sym", url, base),
      fmt::format("eu-unstrip {} {}.sym -o /tmp/{}.debug", f.library, base, base),
      fmt::format("addr2line -f -C -e /tmp/{}.debug {}", base, address),
  };
}

const char* SegvCode(int code) {
  switch (code) {
    case SEGV_MAPERR: return "address not mapped (SEGV_MAPERR)";
    case SEGV_ACCERR: return "no permission for the access (SEGV_ACCERR)";
    default: return nullptr;
  }
}

const char* BusCode(int code) {
  switch (code) {
    case BUS_ADRALN: return "misaligned address (BUS_ADRALN)";
    case BUS_ADRERR: return "nonexistent physical address (BUS_ADRERR), e.g. a truncated mapped file";
    default: return nullptr;
  }
}

const char* FpeCode(int code) {
  switch (code) {
    case FPE_INTDIV: return "integer divide by zero (FPE_INTDIV)";
    case FPE_INTOVF: return "integer overflow (FPE_INTOVF)";
    default: return nullptr;
  }
}

}  // namespace

std::optional<FaultLocation> LocateInMapsLine(std::string_view maps_line, uint64_t address) {
  // "lo-hi perms offset dev inode path"
  std::string line(maps_line);
  unsigned long long lo = 0, hi = 0, offset = 0;
  char perms[8] = {};
  int path_at = 0;
  if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s %n", &lo, &hi, perms, &offset, &path_at) < 4) {
    return std::nullopt;
  }
  if (path_at <= 0 || static_cast<size_t>(path_at) >= line.size() || line[path_at] != '/') return std::nullopt;
  if (address < lo || address >= hi) return std::nullopt;
  FaultLocation f;
  f.library = line.substr(static_cast<size_t>(path_at));
  if (f.library.ends_with(" (deleted)")) f.library.resize(f.library.size() - 10);
  f.file_offset = address - lo + offset;
  f.vaddr = f.file_offset;
  f.nvidia = IsNvidiaLibrary(BaseName(f.library));
  Result<ElfInfo> elf = ReadElf(f.library);
  if (elf.ok()) {
    f.build_id = elf->build_id;
    f.vaddr = FileOffsetToVaddr(*elf, f.file_offset);
  }
  f.symbolise = SymboliseCommands(f);
  return f;
}

std::string DescribeSignal(int signal, int code) {
  const char* meaning = nullptr;
  if (signal == SIGSEGV) meaning = SegvCode(code);
  if (signal == SIGBUS) meaning = BusCode(code);
  if (signal == SIGFPE) meaning = FpeCode(code);
  std::string text = fmt::format("{} ({})", SignalName(signal), signal);
  if (meaning) text += fmt::format(": {}", meaning);
  return text;
}

std::vector<Fact> CrashFacts(const CrashRecord& r, std::optional<FaultLocation>* where) {
  std::vector<Fact> facts;
  facts.push_back({"signal", DescribeSignal(r.signal, r.code)});
  if (r.signal == SIGSEGV || r.signal == SIGBUS) {
    facts.push_back({"fault address", fmt::format("0x{:x}", r.fault_address)});
  }
  facts.push_back({"instruction address", fmt::format("0x{:x}", r.pc)});
  std::optional<FaultLocation> f = LocateInMapsLine(r.pc_maps_line, r.pc);
  if (f) {
    facts.push_back({"faulting library", fmt::format("{} + 0x{:x}", f->library, f->file_offset)});
    if (!f->build_id.empty()) facts.push_back({"build-id", f->build_id});
    for (size_t i = 0; i < f->symbolise.size(); ++i) {
      facts.push_back({fmt::format("symbolise, step {}", i + 1), f->symbolise[i]});
    }
  } else {
    facts.push_back({"faulting library", "none: the instruction is not in a mapped file (JIT code or a jump "
                                         "through a bad function pointer)"});
  }
  if (where) *where = std::move(f);
  return facts;
}

}  // namespace vigil::doctor
