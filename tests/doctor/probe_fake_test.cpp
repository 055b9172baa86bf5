// The probe and every rule against folders of fake libraries: no GPU needed.
#include <gtest/gtest.h>

#include "doctor/rules/rules.h"
#include "fake_stack.h"

namespace vigil::doctor {
namespace {

using testing::FakeStack;
using testing::FindById;
using testing::HealthyStack;
using testing::Ids;
using testing::Replace;
using testing::ScopedEnv;

// Expects a finding with this id and severity; returns a copy of it (the
// findings are often a temporary).
Finding Expect(const std::vector<Finding>& findings, const std::string& id, Severity severity) {
  const Finding* f = FindById(findings, id);
  EXPECT_NE(f, nullptr) << id << " not in: " << Ids(findings);
  if (f == nullptr) return Finding{};
  EXPECT_EQ(f->severity, severity) << id;
  return *f;
}

TEST(ProbeFakes, HealthyStackHasNoFindingsAndRightVersions) {
  FakeStack stack(HealthyStack());
  StackSnapshot s = stack.Probe();
  ASSERT_TRUE(s.probe_error.empty()) << s.probe_error;
  EXPECT_EQ(s.driver_release, "580.65.06");
  EXPECT_EQ(s.Find(kDriver)->version.ToString(), "580.65.6");
  EXPECT_EQ(s.Find(kDriver)->version_text, "580.65.06");  // as nvidia-smi writes it
  EXPECT_EQ(s.Find(kCudnn)->version.ToString(), "9.14.0");
  EXPECT_EQ(s.Find(kCudart)->version.ToString(), "13.0");
  EXPECT_EQ(s.Find(kCublasLt)->version.ToString(), "13.1.0");
  for (const std::string& sub : CudnnSubLibraries(9)) {
    const Component* c = s.Find(SubLibraryId(sub));
    ASSERT_NE(c, nullptr) << sub;
    EXPECT_TRUE(c->found) << sub << ": " << c->load_error;
    EXPECT_EQ(c->version.ToString(), "9.14.0") << sub;
  }
  EXPECT_EQ(*s.Find("cudnn_ops")->version_check_status, 0);
  EXPECT_FALSE(s.Find("cudnn_heuristic")->version_check_status.has_value());
  ASSERT_EQ(s.gpus.size(), 1u);
  EXPECT_EQ(s.gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(s.gpus[0].cc_major, 9);
  EXPECT_GT(s.gpus[0].free_memory, 0);
  std::vector<Finding> findings = RunRules(s);
  EXPECT_FALSE(HasError(findings)) << Ids(findings);
}

TEST(ProbeFakes, NoDriverBlocksGpuUse) {
  FakeStack stack(Replace(HealthyStack(), "fake_cuda_h100", ""));
  Finding f = Expect(stack.Findings(), "driver.missing", Severity::kError);
  EXPECT_NE(f.summary.find("blocks GPU use"), std::string::npos);
  EXPECT_FALSE(f.fix.empty());
}

TEST(ProbeFakes, DriverTooOldForRuntimeMajor) {
  FakeStack stack(Replace(HealthyStack(), "fake_cuda_h100", "fake_cuda_t4_535"));
  std::vector<Finding> findings = stack.Findings();
  Expect(findings, "driver.too_old_for_runtime", Severity::kError);
  // cuDNN 9.14 for CUDA 13 needs >= 580.65.06 (cuDNN 9.17 support matrix row).
  Expect(findings, "driver.too_old_for_cudnn", Severity::kError);
}

TEST(ProbeFakes, OlderDriverMinorRunsUnderMinorVersionCompatibility) {
  std::vector<std::string> fakes = Replace(HealthyStack(), "fake_cuda_h100", "fake_cuda_t4_535");
  fakes = Replace(fakes, "fake_cudart_13", "fake_cudart_12");
  fakes = Replace(fakes, "fake_cudnn_9_14", "fake_cudnn_9_5_cu12");
  fakes = Replace(fakes, "fake_cublaslt_13", "fake_cublaslt_12");
  FakeStack stack(fakes);
  std::vector<Finding> findings = stack.Findings();
  Expect(findings, "driver.minor_version_compat", Severity::kInfo);
  EXPECT_EQ(FindById(findings, "driver.too_old_for_runtime"), nullptr) << Ids(findings);
  EXPECT_EQ(FindById(findings, "driver.too_old_for_cudnn"), nullptr) << Ids(findings);
}

TEST(ProbeFakes, RuntimeMissing) {
  FakeStack stack(Replace(HealthyStack(), "fake_cudart_13", ""));
  Expect(stack.Findings(), "cudart.missing", Severity::kWarning);
}

TEST(ProbeFakes, VisibleDevicesHidingEverything) {
  ScopedEnv env("CUDA_VISIBLE_DEVICES", "-1");
  FakeStack stack(HealthyStack());
  stack.SetPhysicalGpus(1);
  std::vector<Finding> findings = stack.Findings();
  Finding f = Expect(findings, "env.cuda_visible_devices_hides_all", Severity::kError);
  EXPECT_NE(f.summary.find("-1"), std::string::npos);
  EXPECT_EQ(FindById(findings, "gpu.none"), nullptr);
}

TEST(ProbeFakes, DriverWithoutDevice) {
  FakeStack stack(Replace(HealthyStack(), "fake_cuda_h100", "fake_cuda_nodev"));
  Finding f = Expect(stack.Findings(), "gpu.query_failed", Severity::kError);
  EXPECT_NE(f.summary.find("CUDA_ERROR_NO_DEVICE"), std::string::npos) << f.summary;
}

TEST(ProbeFakes, CudnnMissing) {
  std::vector<std::string> fakes = {"fake_cuda_h100", "fake_cudart_13", "fake_cublaslt_13"};
  FakeStack stack(fakes);
  Expect(stack.Findings(), "cudnn.missing", Severity::kError);
}

TEST(ProbeFakes, OnlyCudnn8) {
  std::vector<std::string> fakes = {"fake_cuda_h100", "fake_cudart_12", "fake_cudnn_8_9", "fake_cublaslt_12"};
  for (const char* sub : {"ops_infer", "ops_train", "cnn_infer", "cnn_train", "adv_infer", "adv_train"}) {
    fakes.push_back(std::string("fake_cudnn_") + sub + "_8_9");
  }
  FakeStack stack(fakes);
  StackSnapshot s = stack.Probe();
  EXPECT_EQ(s.Find(kCudnn)->version.ToString(), "8.9.7");  // v8 encoding: 8907
  EXPECT_TRUE(s.Find("cudnn_cnn_infer")->found);
  EXPECT_EQ(s.Find("cudnn_cnn_infer")->version.ToString(), "8.9.7");
  std::vector<Finding> findings = RunRules(s);
  Expect(findings, "cudnn.major_unsupported", Severity::kError);
  EXPECT_EQ(FindById(findings, "cudnn.sublib_missing"), nullptr) << Ids(findings);
}

TEST(ProbeFakes, CudnnFileNameDisagreesWithApi) {
  FakeStack stack(Replace(HealthyStack(), "fake_cudnn_9_14", "fake_cudnn_renamed"));
  Expect(stack.Findings(), "cudnn.version_mismatch_file_name", Severity::kError);
}

TEST(ProbeFakes, CudnnBuiltForAnotherCudaMajor) {
  FakeStack stack(Replace(HealthyStack(), "fake_cudnn_9_14", "fake_cudnn_9_14_cu12"));
  Finding f = Expect(stack.Findings(), "cudnn.cuda_major_mismatch", Severity::kError);
  EXPECT_NE(f.fix.find("cu13"), std::string::npos) << f.fix;
}

TEST(ProbeFakes, SubLibraryMissing) {
  FakeStack stack(Replace(HealthyStack(), "fake_cudnn_cnn_9_14", ""));
  Finding f = Expect(stack.Findings(), "cudnn.sublib_missing", Severity::kError);
  EXPECT_NE(f.summary.find("libcudnn_cnn.so.9"), std::string::npos);
}

TEST(ProbeFakes, SubLibraryFromAnotherRelease) {
  FakeStack stack(Replace(HealthyStack(), "fake_cudnn_ops_9_14", "fake_cudnn_ops_9_12"));
  Finding f = Expect(stack.Findings(), "cudnn.sublib_version_mismatch", Severity::kError);
  EXPECT_NE(f.summary.find("9.12.0"), std::string::npos) << f.summary;
  bool has_status = false;
  for (const Fact& e : f.evidence) has_status |= e.value.find("SUBLIBRARY_VERSION_MISMATCH") != std::string::npos;
  EXPECT_TRUE(has_status);
}

TEST(ProbeFakes, TwoCudnnVersionsReachable) {
  FakeStack stack(HealthyStack());
  std::string other = stack.AddOtherFolder({"fake_cudnn_9_19"});
  StackSnapshot s = stack.Probe();
  ASSERT_TRUE(s.probe_error.empty()) << s.probe_error;
  const Component* cudnn = s.Find(kCudnn);
  ASSERT_NE(cudnn, nullptr);
  ASSERT_EQ(cudnn->copies.size(), 1u);
  EXPECT_EQ(cudnn->copies[0].version.ToString(), "9.19.0");
  Finding f = Expect(RunRules(s), "cudnn.multiple_versions", Severity::kWarning);
  ASSERT_FALSE(f.evidence.empty());
  EXPECT_EQ(f.evidence[0].name, "loaded (wins)");
  EXPECT_NE(f.evidence[0].value.find("9.14.0"), std::string::npos);
}

TEST(ProbeFakes, GpuTooOldForCudnnForCuda13) {
  FakeStack stack(Replace(HealthyStack(), "fake_cuda_h100", "fake_cuda_p4"));
  Finding f = Expect(stack.Findings(), "cudnn.compute_capability_unsupported", Severity::kError);
  EXPECT_NE(f.summary.find("6.1"), std::string::npos) << f.summary;
}

TEST(ProbeFakes, GpuTooNewForCudnn95) {
  std::vector<std::string> fakes = Replace(HealthyStack(), "fake_cuda_h100", "fake_cuda_b200");
  fakes = Replace(fakes, "fake_cudnn_9_14", "fake_cudnn_9_5_cu12");
  fakes = Replace(fakes, "fake_cudart_13", "fake_cudart_12");
  fakes = Replace(fakes, "fake_cublaslt_13", "fake_cublaslt_12");
  FakeStack stack(fakes);
  Finding f = Expect(stack.Findings(), "cudnn.compute_capability_unsupported", Severity::kError);
  EXPECT_NE(f.summary.find("newer"), std::string::npos) << f.summary;
}

TEST(ProbeFakes, UnknownLibConfig) {
  ScopedEnv env("CUDNN_LIB_CONFIG", "GRAPH_ONLY");
  FakeStack stack(HealthyStack());
  Expect(stack.Findings(), "env.cudnn_lib_config_unknown", Severity::kError);
}

TEST(ProbeFakes, GraphJitOnlyNeedsAmpere) {
  ScopedEnv env("CUDNN_LIB_CONFIG", "GRAPH_JIT_ONLY");
  FakeStack stack(Replace(HealthyStack(), "fake_cuda_h100", "fake_cuda_t4_535"));
  Expect(stack.Findings(), "env.graph_jit_only_pre_ampere", Severity::kError);
}

TEST(ProbeFakes, GraphJitOnlyNeedsItsThreeLibraries) {
  ScopedEnv env("CUDNN_LIB_CONFIG", "GRAPH_JIT_ONLY");
  std::vector<std::string> fakes = Replace(HealthyStack(), "fake_cudnn_engines_runtime_compiled_9_14", "");
  fakes = Replace(fakes, "fake_cudnn_engines_precompiled_9_14", "");  // allowed to be absent
  FakeStack stack(fakes);
  std::vector<Finding> findings = stack.Findings();
  Finding f = Expect(findings, "env.graph_jit_only_missing_libraries", Severity::kError);
  EXPECT_NE(f.summary.find("libcudnn_engines_runtime_compiled.so.9"), std::string::npos);
  EXPECT_EQ(f.summary.find("precompiled"), std::string::npos) << f.summary;
  EXPECT_EQ(FindById(findings, "cudnn.sublib_missing"), nullptr) << Ids(findings);
}

TEST(ProbeFakes, GraphJitOnlyWithOnlyStaticLibraries) {
  ScopedEnv env("CUDNN_LIB_CONFIG", "GRAPH_JIT_ONLY");
  FakeStack stack({"fake_cuda_h100", "fake_cudart_13", "fake_cublaslt_13"});
  stack.AddFile("libcudnn_graph_static.a");
  Expect(stack.Findings(), "env.graph_jit_only_static", Severity::kError);
}

TEST(ProbeFakes, DeprecatedLoggingVariables) {
  ScopedEnv a("CUDNN_LOGINFO_DBG", "1");
  ScopedEnv b("CUDNN_LOGERR_DBG", "1");
  FakeStack stack(HealthyStack());
  std::vector<Finding> findings = stack.Findings();
  int count = 0;
  for (const Finding& f : findings) count += f.id == "env.cudnn_deprecated_log_variable";
  EXPECT_EQ(count, 2) << Ids(findings);
  EXPECT_FALSE(HasError(findings));
}

TEST(ProbeFakes, UnwritableLogDestination) {
  ScopedEnv env("CUDNN_LOGDEST_DBG", "/nonexistent-vigil-dir/cudnn.log");
  FakeStack stack(HealthyStack());
  Expect(stack.Findings(), "env.cudnn_logdest_unwritable", Severity::kWarning);
}

TEST(ProbeFakes, WritableLogDestinationIsFine) {
  FakeStack stack(HealthyStack());
  ScopedEnv env("CUDNN_LOGDEST_DBG", (stack.dir() + "/cudnn.log").c_str());
  EXPECT_EQ(FindById(stack.Findings(), "env.cudnn_logdest_unwritable"), nullptr);
}

TEST(ProbeFakes, InvalidLogLevel) {
  ScopedEnv env("CUDNN_LOGLEVEL_DBG", "5");
  FakeStack stack(HealthyStack());
  Expect(stack.Findings(), "env.cudnn_loglevel_invalid", Severity::kWarning);
}

TEST(ProbeFakes, CublasLtMissing) {
  FakeStack stack(Replace(HealthyStack(), "fake_cublaslt_13", ""));
  Expect(stack.Findings(), "cublaslt.missing", Severity::kError);
}

TEST(ProbeFakes, CublasLtOfAnotherCudaMajor) {
  // Only a CUDA 12 cuBLASLt next to the CUDA 13 runtime.
  FakeStack stack(Replace(HealthyStack(), "fake_cublaslt_13", "fake_cublaslt_12"));
  Expect(stack.Findings(), "cublaslt.cuda_major_mismatch", Severity::kError);
}

TEST(ProbeFakes, LibraryCrashingOnLoadIsAFindingNotOurCrash) {
  FakeStack stack(Replace(HealthyStack(), "fake_cudnn_9_14", "fake_cudnn_9_14_loadcrash"));
  Finding f = Expect(stack.Findings(), "probe.failed", Severity::kError);
  EXPECT_NE(f.summary.find("SIGSEGV"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("libcudnn.so.9"), std::string::npos) << f.summary;
}

}  // namespace
}  // namespace vigil::doctor
