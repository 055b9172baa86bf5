// The live check in a child process (this test binary re-executed with
// --child-probe), against fake libraries.
#include <gtest/gtest.h>

#include "doctor/errors/cuda_errors.h"
#include "doctor/live/live_check.h"
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
  std::string fault_address, instruction;
  for (const Fact& e : f->evidence) {
    names_library |= e.name == "faulting library" && e.value.find("libcudnn.so.9.14.0") != std::string::npos;
    has_build_id |= e.name == "build-id" && !e.value.empty();
    if (e.name == "fault address") fault_address = e.value;
    if (e.name == "instruction address") instruction = e.value;
  }
  EXPECT_TRUE(names_library);
  EXPECT_TRUE(has_build_id);
  // The fake stores to NULL: the fault address is si_addr (0), not the
  // instruction's address, which is reported beside it.
  EXPECT_EQ(fault_address, "0x0");
  EXPECT_NE(instruction, "");
  EXPECT_NE(instruction, "0x0");
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

// --- forced statuses (FAKE_CUDNN_FAIL) in each phase of the live check ---

std::string Evidence(const Finding& f, const std::string& name) {
  for (const Fact& e : f.evidence) {
    if (e.name == name) return e.value;
  }
  return {};
}

// All "likely cause N" evidence, joined.
std::string Causes(const Finding& f) {
  std::string out;
  for (const Fact& e : f.evidence) {
    if (e.name.starts_with("likely cause")) out += e.value + "\n";
  }
  return out;
}

std::string Dump(const Finding& f) {
  std::string out = f.id + ": " + f.summary + "\n";
  for (const Fact& e : f.evidence) out += "  " + e.name + ": " + e.value + "\n";
  return out + "  fix: " + f.fix;
}

// Runs the live check with `spec` forced and returns the failed-call finding.
Finding Forced(const char* spec, const char* id) {
  ScopedEnv env("FAKE_CUDNN_FAIL", spec);
  FakeStack stack(HealthyStack());
  LiveCheckResult r = Live(stack);
  const Finding* f = FindById(r.findings, id);
  if (!f) {
    ADD_FAILURE() << spec << ": no " << id << " in " << Ids(r.findings) << " (" << r.summary << ")";
    return {};
  }
  return *f;
}

TEST(LiveCheckForced, NotInitializedAtHandleCreation) {
  Finding f = Forced("cudnnCreate=1001", "live.cudnn_create_failed");
  SCOPED_TRACE(Dump(f));
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(Evidence(f, "phase"), "handle creation");
  EXPECT_NE(f.summary.find("CUDNN_STATUS_NOT_INITIALIZED (1001) during handle creation"), std::string::npos);
  EXPECT_NE(Causes(f).find("CUDA_VISIBLE_DEVICES"), std::string::npos);
  EXPECT_NE(Causes(f).find("driver"), std::string::npos);
  EXPECT_NE(f.fix.find("vigil doctor"), std::string::npos);
}

TEST(LiveCheckForced, DeviceAllocationFailureAtHandleCreation) {
  Finding f = Forced("cudnnCreate=4004", "live.cudnn_create_failed");
  SCOPED_TRACE(Dump(f));
  EXPECT_NE(f.summary.find("CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED"), std::string::npos);
  EXPECT_NE(Causes(f).find("preallocated"), std::string::npos);
  EXPECT_NE(f.fix.find("--gpu-mem-limit"), std::string::npos);
}

TEST(LiveCheckForced, ShapeMismatchAtDescriptorSetUp) {
  Finding f = Forced("cudnnSetTensor4dDescriptor=2008", "live.convolution_failed");
  SCOPED_TRACE(Dump(f));
  EXPECT_EQ(Evidence(f, "call"), "cudnnSetTensor4dDescriptor");
  EXPECT_EQ(Evidence(f, "phase"), "descriptor set-up");
  EXPECT_NE(f.summary.find("CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH"), std::string::npos);
  EXPECT_NE(Causes(f).find("tensor dimensions"), std::string::npos);
}

TEST(LiveCheckForced, SublibraryLoadingFailureAtDescriptorSetUp) {
  Finding f = Forced("cudnnCreateTensorDescriptor=1008", "live.convolution_failed");
  SCOPED_TRACE(Dump(f));
  EXPECT_EQ(Evidence(f, "phase"), "descriptor set-up");
  EXPECT_NE(Causes(f).find("sub-library"), std::string::npos);
  EXPECT_NE(f.fix.find("LD_LIBRARY_PATH"), std::string::npos);
}

TEST(LiveCheckForced, ExecutionFailedAtExecution) {
  Finding f = Forced("cudnnConvolutionForward=5000", "live.convolution_failed");
  SCOPED_TRACE(Dump(f));
  EXPECT_EQ(Evidence(f, "call"), "cudnnConvolutionForward");
  EXPECT_EQ(Evidence(f, "phase"), "execution");
  EXPECT_NE(f.summary.find("CUDNN_STATUS_EXECUTION_FAILED (5000) during execution"), std::string::npos);
  EXPECT_NE(Causes(f).find("hardware"), std::string::npos);
  EXPECT_NE(f.fix.find("dcgmi diag"), std::string::npos);
}

TEST(LiveCheckForced, NotSupportedAtExecution) {
  Finding f = Forced("cudnnConvolutionForward=3000", "live.convolution_failed");
  SCOPED_TRACE(Dump(f));
  EXPECT_EQ(Evidence(f, "phase"), "execution");
  EXPECT_NE(Causes(f).find("chosen engine"), std::string::npos);
}

TEST(LiveCheckForced, UnknownStatusStillNamesNumberAndPhase) {
  Finding f = Forced("cudnnSetFilter4dDescriptor=6123", "live.convolution_failed");
  SCOPED_TRACE(Dump(f));
  EXPECT_NE(f.summary.find("6123"), std::string::npos);
  EXPECT_NE(f.summary.find("descriptor set-up"), std::string::npos);
  EXPECT_FALSE(Causes(f).empty());
}

TEST(LiveCheckForced, PlanChoiceLineIsTranslatedAsPlanChoice) {
  // The legacy convolution has no plan-choice call; a child that reports one
  // (an algorithm query) still gets the plan-choice translation.
  LiveCheckResult r = InterpretLiveCheck(
      "stage cudnnCreate\ncreated\nstatus cudnnGetConvolutionForwardAlgorithm_v7 3001 "
      "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN\n",
      StackSnapshot{}, false, 0);
  const Finding* f = FindById(r.findings, "live.convolution_failed");
  ASSERT_NE(f, nullptr) << Ids(r.findings);
  EXPECT_EQ(Evidence(*f, "phase"), "plan choice");
  EXPECT_NE(Causes(*f).find("libcudnn_engines_precompiled"), std::string::npos) << Dump(*f);
}

// Every cuDNN 9 status, forced through the fake library at handle creation
// and at execution, comes back as a finding that names the status and the
// phase, with the table's first cause among its evidence.
TEST(LiveCheckForced, EveryCudnnStatusAtHandleCreationAndExecution) {
  const std::pair<const char*, const char*> sites[] = {{"cudnnCreate", "live.cudnn_create_failed"},
                                                       {"cudnnConvolutionForward", "live.convolution_failed"}};
  size_t checked = 0;
  for (const GpuStatusInfo& st : KnownGpuStatuses(GpuLibrary::kCudnn)) {
    for (const auto& [call, id] : sites) {
      const std::string spec = std::string(call) + "=" + std::to_string(st.number);
      SCOPED_TRACE(spec);
      Finding f = Forced(spec.c_str(), id);
      if (f.id.empty()) continue;
      const std::string phase = std::string(call) == "cudnnCreate" ? "handle creation" : "execution";
      EXPECT_NE(f.summary.find(std::string(st.name)), std::string::npos) << Dump(f);
      EXPECT_NE(f.summary.find("during " + phase), std::string::npos) << Dump(f);
      EXPECT_EQ(Evidence(f, "phase"), phase);
      Diagnosis expected = TranslateGpuError(GpuLibrary::kCudnn, st.number,
                                             phase == "execution" ? CallPhase::kExecution : CallPhase::kHandleCreation);
      ASSERT_FALSE(expected.causes.empty());
      EXPECT_NE(Causes(f).find(expected.causes[0].what), std::string::npos) << Dump(f);
      EXPECT_FALSE(f.fix.empty());
      ++checked;
    }
  }
  EXPECT_GE(checked, 2 * 45u);
}

}  // namespace
}  // namespace vigil::doctor
