// The live check in a child process (this test binary re-executed with
// --child-probe), against fake libraries.
#include <gtest/gtest.h>

#include "doctor/live_check.h"
#include "fake_stack.h"

namespace vigil::doctor {
namespace {

using testing::FakeStack;
using testing::FindById;
using testing::HealthyStack;
using testing::Ids;
using testing::Replace;
using testing::ScopedEnv;

LiveCheckResult Live(const FakeStack& stack, int timeout_ms = 10000) {
  LiveCheckOptions options;
  options.child_args = {"--child-probe"};
  options.timeout_ms = timeout_ms;
  return RunLiveCheck(stack.Probe(), options);
}

TEST(LiveCheck, ConvolutionRunsOnAHealthyStack) {
  FakeStack stack(HealthyStack());
  LiveCheckResult r = Live(stack);
  EXPECT_TRUE(r.ran);
  EXPECT_TRUE(r.findings.empty()) << Ids(r.findings);
  EXPECT_NE(r.summary.find("ok"), std::string::npos) << r.summary;
}

TEST(LiveCheck, SkippedWithoutDriver) {
  FakeStack stack(Replace(HealthyStack(), "fake_cuda_h100", ""));
  LiveCheckResult r = Live(stack);
  EXPECT_FALSE(r.ran);
  EXPECT_NE(r.summary.find("no driver"), std::string::npos);
}

TEST(LiveCheck, CrashInCudnnCreateNamesSignalAndLibrary) {
  FakeStack stack(Replace(HealthyStack(), "fake_cudnn_9_14", "fake_cudnn_9_14_crash"));
  LiveCheckResult r = Live(stack);
  const Finding* f = FindById(r.findings, "live.crash");
  ASSERT_NE(f, nullptr) << Ids(r.findings) << r.summary;
  EXPECT_NE(f->summary.find("SIGSEGV"), std::string::npos) << f->summary;
  EXPECT_NE(f->summary.find("cudnnCreate"), std::string::npos) << f->summary;
  bool names_library = false, has_build_id = false;
  for (const Fact& e : f->evidence) {
    names_library |= e.name == "faulting library" && e.value.find("libcudnn.so.9.14.0") != std::string::npos;
    has_build_id |= e.name == "build-id" && !e.value.empty();
  }
  EXPECT_TRUE(names_library);
  EXPECT_TRUE(has_build_id);
}

TEST(LiveCheck, HangIsReportedAfterTheTimeout) {
  FakeStack stack(Replace(HealthyStack(), "fake_cudnn_9_14", "fake_cudnn_9_14_hang"));
  LiveCheckResult r = Live(stack, 1500);
  const Finding* f = FindById(r.findings, "live.timeout");
  ASSERT_NE(f, nullptr) << Ids(r.findings);
  EXPECT_NE(f->summary.find("cudnnCreate"), std::string::npos);
}

TEST(LiveCheck, CudnnCreateFailureNamesTheStatus) {
  FakeStack stack(Replace(HealthyStack(), "fake_cudnn_9_14", "fake_cudnn_9_14_notinit"));
  LiveCheckResult r = Live(stack);
  const Finding* f = FindById(r.findings, "live.cudnn_create_failed");
  ASSERT_NE(f, nullptr) << Ids(r.findings);
  EXPECT_NE(f->summary.find("CUDNN_STATUS_NOT_INITIALIZED"), std::string::npos) << f->summary;
  bool last_error = false;
  for (const Fact& e : f->evidence) last_error |= e.name == "cudnnGetLastErrorString";
  EXPECT_TRUE(last_error);
}

TEST(LiveCheck, GraphJitOnlyLegacyRefusalIsExpectedNotBroken) {
  ScopedEnv env("CUDNN_LIB_CONFIG", "GRAPH_JIT_ONLY");
  FakeStack stack(HealthyStack());
  LiveCheckResult r = Live(stack);
  const Finding* f = FindById(r.findings, "live.graph_jit_only_legacy_unavailable");
  ASSERT_NE(f, nullptr) << Ids(r.findings);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_NE(f->summary.find("expected"), std::string::npos);
}

TEST(LiveCheck, SameRefusalWithoutGraphJitOnlyIsAnError) {
  LiveCheckResult r = InterpretLiveCheck(
      "stage cudnnCreate\ncreated\nstage cudnnCreateTensorDescriptor\n"
      "status cudnnCreateTensorDescriptor 3009 CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE\n",
      StackSnapshot{}, false, 0);
  const Finding* f = FindById(r.findings, "live.convolution_failed");
  ASSERT_NE(f, nullptr) << Ids(r.findings);
  EXPECT_EQ(f->severity, Severity::kError);
}

}  // namespace
}  // namespace vigil::doctor
