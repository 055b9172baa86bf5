// Real failing statuses through the module's checked-call code (cuda_check,
// cudnn_log): an incomplete cuDNN descriptor, an attribute of the wrong type,
// heuristics without a graph, an absurd cudaMalloc, an invalid launch
// configuration. Each must come back with the right code, phase and causes.
// The GPU tests skip without a GPU; the log-capture parts that need none
// (ring, message parsing, file tail, mode choice) run everywhere.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cudnn_log.h"

void LaunchDoNothingForErrorPathTests(unsigned threads_per_block);

namespace vigil::cuda {
namespace {

bool HaveGpu(std::string* why) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    *why = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
    cudaGetLastError();
    return false;
  }
  if (count == 0) *why = "no CUDA device is visible";
  return count > 0;
}

#define SKIP_WITHOUT_GPU()                                      \
  do {                                                          \
    std::string why_;                                           \
    if (!HaveGpu(&why_)) GTEST_SKIP() << "no GPU: " << why_;    \
  } while (0)

std::string Fact(const Status& s, const std::string& name) {
  for (const vigil::Fact& f : s.diagnosis().facts) {
    if (f.name == name) return f.value;
  }
  return {};
}

bool CauseMentions(const Status& s, const std::string& part) {
  for (const Cause& c : s.diagnosis().causes) {
    if (c.what.find(part) != std::string::npos || c.evidence.find(part) != std::string::npos) return true;
  }
  return false;
}

bool FixMentions(const Status& s, const std::string& part) {
  for (const std::string& f : s.diagnosis().fixes) {
    if (f.find(part) != std::string::npos) return true;
  }
  return false;
}

std::string Dump(const Status& s) {
  if (s.ok()) return "OK";
  std::string out = s.ToString();
  for (const vigil::Fact& f : s.diagnosis().facts) out += "\n  " + f.name + ": " + f.value;
  for (const Cause& c : s.diagnosis().causes) out += "\n  cause: " + c.what + " [" + c.evidence + "]";
  for (const std::string& f : s.diagnosis().fixes) out += "\n  fix: " + f;
  return out;
}

// A cuDNN handle and the log capture for the GPU tests. Other tests in this
// binary load the CUDA module, whose own copy of the log capture keeps its
// callback installed while its backend lives (for the whole process); to this
// file's copy that is a host program's callback, which it must leave alone.
// So the fixture sets that callback aside for the test and restores it after:
// the tests then see the same state whatever ran before them.
class CudnnErrorPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_GPU();
    ASSERT_EQ(cudnnGetCallback(&saved_mask_, &saved_udata_, &saved_fn_), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnSetCallback(saved_mask_, nullptr, nullptr), CUDNN_STATUS_SUCCESS);
    saved_ = true;
    AcquireCudnnLogCapture();
    acquired_ = true;
    ASSERT_EQ(cudnnCreate(&handle_), CUDNN_STATUS_SUCCESS);
  }
  void TearDown() override {
    if (handle_) cudnnDestroy(handle_);
    if (acquired_) ReleaseCudnnLogCapture();
    if (saved_) cudnnSetCallback(saved_mask_, saved_udata_, saved_fn_);
  }
  cudnnHandle_t handle_ = nullptr;
  bool acquired_ = false;
  bool saved_ = false;
  unsigned saved_mask_ = 0;
  void* saved_udata_ = nullptr;
  cudnnCallback_t saved_fn_ = nullptr;
};

Status FinalizeEmptyTensor(cudnnBackendDescriptor_t* d) {
  VIGIL_CUDNN_CALL(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, d));
  VIGIL_CUDNN_CALL(cudnnBackendFinalize(*d));  // no dims, strides, type, id
  return Status::Ok();
}

TEST_F(CudnnErrorPaths, FinalizingAnIncompleteDescriptorIsABadParamAtDescriptorSetUp) {
  cudnnBackendDescriptor_t d = nullptr;
  Status s = FinalizeEmptyTensor(&d);
  if (d) cudnnBackendDestroyDescriptor(d);
  ASSERT_FALSE(s.ok());
  SCOPED_TRACE(Dump(s));
  EXPECT_EQ(s.code(), ErrorCode::kInternal);
  EXPECT_TRUE(Fact(s, "status").starts_with("CUDNN_STATUS_BAD_PARAM"));
  EXPECT_EQ(Fact(s, "phase"), "descriptor set-up");
  EXPECT_EQ(Fact(s, "library"), "cuDNN");
  EXPECT_NE(Fact(s, "call").find("cudnnBackendFinalize"), std::string::npos);
  EXPECT_NE(Fact(s, "at").find("error_paths_test.cpp"), std::string::npos);
  EXPECT_FALSE(Fact(s, "device").empty());
  EXPECT_TRUE(CauseMentions(s, "descriptor"));
  EXPECT_TRUE(FixMentions(s, "bug in vigil"));
  std::cout << Dump(s) << "\n";  // an example for docs/errors.md
  // cuDNN's log: through the callback (checked on an H100 with cuDNN 9.14:
  // it fires without CUDNN_LOGLEVEL_DBG), or the file's tail under --cudnn-log.
  if (CudnnLogSettingsFromEnvironment().mode == CudnnLogMode::kFile) {
    EXPECT_FALSE(Fact(s, "cudnn log file").empty());
    EXPECT_NE(Fact(s, "cudnn log").find("CUDNN_STATUS_BAD_PARAM"), std::string::npos);
  } else if (CudnnLogSettingsFromEnvironment().mode == CudnnLogMode::kCapture) {
    EXPECT_NE(Fact(s, "cudnn log").find("[error]"), std::string::npos) << "no cuDNN message reached the callback";
  }
}

TEST_F(CudnnErrorPaths, AnAttributeOfTheWrongTypeIsABadParamAtDescriptorSetUp) {
  cudnnBackendDescriptor_t d = nullptr;
  ASSERT_EQ(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &d), CUDNN_STATUS_SUCCESS);
  auto set_float_dims = [&]() -> Status {
    float dims = 3.0f;
    VIGIL_CUDNN_CALL(cudnnBackendSetAttribute(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_FLOAT, 1, &dims));
    return Status::Ok();
  };
  Status s = set_float_dims();
  cudnnBackendDestroyDescriptor(d);
  ASSERT_FALSE(s.ok());
  SCOPED_TRACE(Dump(s));
  EXPECT_EQ(s.code(), ErrorCode::kInternal);
  EXPECT_TRUE(Fact(s, "status").starts_with("CUDNN_STATUS_BAD_PARAM"));
  EXPECT_EQ(Fact(s, "phase"), "descriptor set-up");
  EXPECT_TRUE(CauseMentions(s, "descriptor"));
}

TEST_F(CudnnErrorPaths, HeuristicsWithoutAGraphFailAtPlanChoice) {
  cudnnBackendDescriptor_t heur = nullptr;
  ASSERT_EQ(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur), CUDNN_STATUS_SUCCESS);
  auto finalize = [&]() -> Status {
    VIGIL_CUDNN_CALL_IN(kPlanChoice, cudnnBackendFinalize(heur));
    return Status::Ok();
  };
  Status s = finalize();
  Status same = VIGIL_CUDNN_STATUS_IN(kPlanChoice, cudnnBackendFinalize(heur));
  cudnnBackendDestroyDescriptor(heur);
  ASSERT_FALSE(s.ok());
  SCOPED_TRACE(Dump(s));
  EXPECT_EQ(Fact(s, "phase"), "plan choice");
  EXPECT_NE(s.summary().find("during plan choice"), std::string::npos);
  ASSERT_FALSE(same.ok());
  EXPECT_EQ(Fact(same, "phase"), "plan choice");
}

Status AllocateAbsurdly(void** p) {
  VIGIL_CUDA_CALL(cudaMalloc(p, size_t{1} << 50));  // 1 PiB
  return Status::Ok();
}

TEST(CudaErrorPaths, AnAbsurdAllocationIsOutOfMemory) {
  SKIP_WITHOUT_GPU();
  void* p = nullptr;
  Status s = AllocateAbsurdly(&p);
  ASSERT_FALSE(s.ok());
  SCOPED_TRACE(Dump(s));
  EXPECT_EQ(s.code(), ErrorCode::kOutOfMemory);
  EXPECT_EQ(Fact(s, "status"), "cudaErrorMemoryAllocation (2)");
  EXPECT_EQ(Fact(s, "phase"), "memory allocation");
  EXPECT_TRUE(FixMentions(s, "--gpu-mem-limit"));
  EXPECT_TRUE(FixMentions(s, "batch"));
  EXPECT_FALSE(Fact(s, "cudaGetErrorString").empty());
  cudaGetLastError();
  EXPECT_TRUE(StickyError().ok()) << "out of memory must not mark the context as dead";
}

TEST(CudaErrorPaths, AnInvalidLaunchConfigurationIsReportedAtExecution) {
  SKIP_WITHOUT_GPU();
  cudaGetLastError();
  LaunchDoNothingForErrorPathTests(4096);  // more threads per block than any GPU allows
  Status s = CheckLaunch("DoNothing", __FILE__, __LINE__);
  ASSERT_FALSE(s.ok());
  SCOPED_TRACE(Dump(s));
  EXPECT_EQ(s.code(), ErrorCode::kInternal);
  // CUDA 12 says InvalidConfiguration; CUDA 13 says InvalidValue.
  EXPECT_TRUE(Fact(s, "status") == "cudaErrorInvalidConfiguration (9)" ||
              Fact(s, "status") == "cudaErrorInvalidValue (1)");
  EXPECT_EQ(Fact(s, "phase"), "execution");
  EXPECT_NE(s.summary().find("DoNothing"), std::string::npos);
  EXPECT_TRUE(CauseMentions(s, "grid or block"));
  EXPECT_TRUE(StickyError().ok()) << "a refused launch must not mark the context as dead";
}

// --- log capture without a GPU -----------------------------------------

TEST(CudnnLog, CallbackMessagesAreJoinedLineByLine) {
  const char message[] = "first line\0second line\0\0garbage";
  EXPECT_EQ(JoinCallbackMessage(message), "first line\nsecond line");
  EXPECT_EQ(JoinCallbackMessage(message, 5), "first");
  EXPECT_EQ(JoinCallbackMessage(nullptr), "");
}

TEST(CudnnLog, RingIsBoundedAndPerThread) {
  CudnnMessageRing ring;
  for (size_t i = 0; i < 3 * kRingCapacity; ++i) ring.Add(1, 1, "message " + std::to_string(i));
  EXPECT_EQ(ring.size(), kRingCapacity);
  EXPECT_EQ(ring.last_sequence(), 3 * kRingCapacity);
  ring.Add(2, 2, std::string(10 * kMaxMessageBytes, 'x'));
  auto other = ring.Since(2, 0, 10);
  ASSERT_EQ(other.size(), 1u);
  EXPECT_LT(other[0].text.size(), kMaxMessageBytes + 32);
  auto mine = ring.Since(1, ring.last_sequence() - 5, 3);
  ASSERT_EQ(mine.size(), 3u);  // the newest three of the last five
  EXPECT_EQ(mine.back().text, "message " + std::to_string(3 * kRingCapacity - 1));
}

TEST(CudnnLog, RingIsSafeUnderConcurrentWriters) {
  CudnnMessageRing ring;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&ring, t] {
      for (int i = 0; i < 1000; ++i) ring.Add(static_cast<uint64_t>(t), 1, "m");
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ring.size(), kRingCapacity);
  EXPECT_EQ(ring.last_sequence(), 8000u);
}

TEST(CudnnLog, ModeFollowsTheLoggingVariables) {
  EXPECT_EQ(DecideCudnnLogMode(nullptr, nullptr, nullptr, nullptr, nullptr).mode, CudnnLogMode::kCapture);
  EXPECT_EQ(DecideCudnnLogMode("/tmp/x.log", nullptr, nullptr, nullptr, nullptr).mode, CudnnLogMode::kCapture);
  EXPECT_EQ(DecideCudnnLogMode("/tmp/x.log", "0", nullptr, nullptr, nullptr).mode, CudnnLogMode::kCapture);
  CudnnLogSettings file = DecideCudnnLogMode("/tmp/x.log", "3", nullptr, nullptr, nullptr);
  EXPECT_EQ(file.mode, CudnnLogMode::kFile);
  EXPECT_EQ(file.path, "/tmp/x.log");
  EXPECT_EQ(DecideCudnnLogMode("/tmp/x.log", nullptr, "1", nullptr, nullptr).mode, CudnnLogMode::kFile);
  EXPECT_EQ(DecideCudnnLogMode("stderr", "2", nullptr, nullptr, nullptr).mode, CudnnLogMode::kStream);
}

std::string TempFile(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "." + std::to_string(getpid()))).string();
}

TEST(CudnnLog, FileTailKeepsTheLastLinesWithinTheByteLimit) {
  std::string path = TempFile("vigil_tail");
  {
    std::ofstream out(path);
    for (int i = 0; i < 500; ++i) out << "line " << i << "\n";
  }
  std::string tail = FileTail(path, 40, 8192);
  EXPECT_TRUE(tail.starts_with("line 460\n")) << tail.substr(0, 40);
  EXPECT_TRUE(tail.ends_with("line 499"));
  std::string small = FileTail(path, 40, 30);  // fewer bytes than 40 lines
  EXPECT_LE(small.size(), 30u);
  EXPECT_TRUE(small.ends_with("line 499"));
  EXPECT_FALSE(small.starts_with("ine"));  // the partial first line is dropped
  EXPECT_EQ(FileTail(path + ".missing"), "");
  std::filesystem::remove(path);
}

TEST(CudnnLog, FileModeAttachesTheTailAndThePath) {
  std::string path = TempFile("vigil_cudnn_log");
  {
    std::ofstream out(path);
    out << "E! CuDNN (v91900) function cudnnBackendFinalize() called:\n"
        << "e!     Error: CUDNN_STATUS_BAD_PARAM; Reason: dims not set\n";
  }
  setenv("CUDNN_LOGDEST_DBG", path.c_str(), 1);
  setenv("CUDNN_LOGLEVEL_DBG", "3", 1);
  Status s = InternalError("a failing cuDNN call");
  AttachCudnnLog(s);
  unsetenv("CUDNN_LOGDEST_DBG");
  unsetenv("CUDNN_LOGLEVEL_DBG");
  EXPECT_EQ(Fact(s, "cudnn log file"), path);
  EXPECT_NE(Fact(s, "cudnn log").find("Reason: dims not set"), std::string::npos) << Dump(s);
  std::filesystem::remove(path);
}

TEST(CudnnLog, CaptureModeWithoutACallbackSaysSo) {
  Status s = InternalError("a failing cuDNN call");
  AttachCudnnLog(s);
  EXPECT_NE(Fact(s, "cudnn log").find("not captured"), std::string::npos) << Dump(s);
}

}  // namespace
}  // namespace vigil::cuda
