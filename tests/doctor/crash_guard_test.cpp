// The crash guard's pieces without the CLI: the tensor/Status wire format
// between parent and worker, the worker-fd argument, signal texts, and the
// crash handler + fault location on a real crash inside a library named like
// cuDNN (the fake libcudnn whose cudnnCreate dereferences null).
#include <dlfcn.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "base/diagnosis_render.h"
#include "doctor/crash_guard.h"
#include "doctor/crash_report.h"
#include "doctor/isolation_wire.h"

namespace vigil::doctor {
namespace {

namespace fs = std::filesystem;

runtime::Tensor Floats(std::vector<int64_t> shape, float start) {
  runtime::Tensor t = runtime::Tensor::Allocate(ir::DataType::kFloat32, std::move(shape)).value();
  for (uint64_t i = 0; i < t.element_count(); ++i) t.data<float>()[i] = start + static_cast<float>(i);
  return t;
}

std::span<const uint8_t> Bytes(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

TEST(IsolationWire, TensorsRoundTrip) {
  std::vector<runtime::NamedTensor> in = {{"x", Floats({2, 3}, 1)}, {"", Floats({0, 5}, 0)}, {"scalar", Floats({}, 7)}};
  std::string bytes = EncodeTensors(in).value();
  auto out = DecodeTensors(Bytes(bytes));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 3u);
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ((*out)[i].name, in[i].name);
    EXPECT_EQ((*out)[i].tensor.shape(), in[i].tensor.shape());
    ASSERT_EQ((*out)[i].tensor.byte_size(), in[i].tensor.byte_size());
    EXPECT_EQ(std::memcmp((*out)[i].tensor.raw_data(), in[i].tensor.raw_data(), in[i].tensor.byte_size()), 0);
  }
}

TEST(IsolationWire, EveryTruncationIsAnErrorNotACrash) {
  std::string bytes = EncodeTensors({{"x", Floats({4, 4}, 0)}}).value();
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto out = DecodeTensors(Bytes(bytes.substr(0, n)));
    EXPECT_FALSE(out.ok()) << "prefix of " << n << " bytes decoded";
  }
  std::string bad = bytes;
  bad[4 + 8 + 8] = 'y';  // the name's byte: still valid
  EXPECT_TRUE(DecodeTensors(Bytes(bad)).ok());
  bad = bytes;
  std::memset(&bad[4 + 8 + 8 + 1 + 4], 0x7f, 8);  // the rank: absurd
  EXPECT_FALSE(DecodeTensors(Bytes(bad)).ok());
}

TEST(IsolationWire, AStatusKeepsItsWholeDiagnosis) {
  Status s = OutOfMemoryError("the plan needs 9 GiB")
                 .WithFact("planned", "9 GiB")
                 .WithCause("batch too large", "64 images")
                 .WithFix("lower the batch");
  Result<std::vector<runtime::NamedTensor>> r = s;
  std::string bytes = EncodeAnswer(r);
  auto back = DecodeAnswer(Bytes(bytes));
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(RenderText(back.status().diagnosis()), RenderText(s.diagnosis()));
  EXPECT_FALSE(DecodeAnswer({}).ok());
  EXPECT_FALSE(DecodeAnswer(Bytes("S{not json")).ok());
  EXPECT_FALSE(DecodeAnswer(Bytes("Q")).ok());
}

TEST(IsolatedChildFds, ParsesOnlyThreeNonNegativeNumbers) {
  auto fds = ParseIsolatedChildFds("3,4,5");
  ASSERT_TRUE(fds);
  EXPECT_EQ(fds->control, 3);
  EXPECT_EQ(fds->answer, 5);
  for (const char* bad : {"", "3,4", "3,4,5,6", "3,-4,5", "a,b,c", "3,4,5 ", "3;4;5"}) {
    EXPECT_FALSE(ParseIsolatedChildFds(bad)) << bad;
  }
}

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
