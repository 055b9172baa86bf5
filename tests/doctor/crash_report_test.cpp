// The crash handler and the crash report (src/doctor/crash), shared by the
// live check and crash isolation: signal texts, and the handler + fault
// location on a real crash inside a library named like cuDNN (the fake
// libcudnn whose cudnnCreate dereferences null).
#include <dlfcn.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <new>

#include <gtest/gtest.h>

#include "doctor/crash/crash_handler.h"
#include "doctor/crash/crash_report.h"

namespace vigil::doctor {
namespace {

namespace fs = std::filesystem;

TEST(CrashReport, SignalTexts) {
  EXPECT_EQ(DescribeSignal(SIGSEGV, SEGV_MAPERR), "SIGSEGV (11): address not mapped (SEGV_MAPERR)");
  EXPECT_EQ(DescribeSignal(SIGBUS, BUS_ADRALN), "SIGBUS (7): misaligned address (BUS_ADRALN)");
  EXPECT_EQ(DescribeSignal(SIGABRT, 0), "SIGABRT (6)");
}

TEST(CrashReport, MapsLinesThatAreNotFilesLocateNothing) {
  EXPECT_FALSE(LocateInMapsLine("7f0000000000-7f0000001000 rw-p 00000000 00:00 0 ", 0x7f0000000010));
  EXPECT_FALSE(LocateInMapsLine("7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]", 0x7ffd00000010));
  EXPECT_FALSE(LocateInMapsLine("garbage", 1));
  // Outside the line's range.
  EXPECT_FALSE(LocateInMapsLine("1000-2000 r-xp 00000000 08:01 5 /bin/true", 0x3000));
}

// Forks a child that installs the handler with its record in shared memory,
// loads the fake libcudnn that crashes in cudnnCreate, and calls it.
TEST(CrashReport, CrashInsideAFakeCudnnNamesTheLibraryAndTheSymbolServer) {
  const fs::path lib = fs::path(VIGIL_FAKES_DIR) / "fake_cudnn_9_14_crash" / "libcudnn.so.9.14.0";
  ASSERT_TRUE(fs::exists(lib)) << lib;
  void* shared = mmap(nullptr, sizeof(CrashRecord), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  auto* record = new (shared) CrashRecord();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    InstallCrashHandler(record, -1);
    void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) _exit(2);
    auto create = reinterpret_cast<int (*)(void**)>(dlsym(h, "cudnnCreate"));
    void* handle = nullptr;
    if (create) create(&handle);
    _exit(3);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
  ASSERT_EQ(record->crashed, 1);
  EXPECT_EQ(record->signal, SIGSEGV);
  EXPECT_EQ(record->fault_address, 0u);
  std::optional<FaultLocation> where;
  std::vector<Fact> facts = CrashFacts(*record, &where);
  ASSERT_TRUE(where) << record->pc_maps_line;
  EXPECT_EQ(fs::path(where->library).filename(), "libcudnn.so.9.14.0");
  EXPECT_TRUE(where->nvidia);
  EXPECT_FALSE(where->build_id.empty());
  ASSERT_EQ(where->symbolise.size(), 4u);
  EXPECT_NE(where->symbolise[1].find("https://cudatoolkit-symbols.nvidia.com/libcudnn.so/" + where->build_id +
                                     "/libcudnn.so.9.14.0.sym"),
            std::string::npos)
      << where->symbolise[1];
  bool has_library_fact = false;
  for (const Fact& f : facts) has_library_fact = has_library_fact || f.name == "faulting library";
  EXPECT_TRUE(has_library_fact);
  munmap(shared, sizeof(CrashRecord));
}

}  // namespace
}  // namespace vigil::doctor
