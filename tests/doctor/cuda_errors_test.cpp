// Error translation (doctor/cuda_errors.h): every cuDNN 9 status in every
// phase, the important ones specifically, the phase of every checked call in
// the CUDA module, and the table against the real headers where present.
#include "doctor/errors/cuda_errors.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#if __has_include(<cudnn_graph.h>) && __has_include(<cuda_runtime_api.h>)
#include <cudnn_graph.h>
#define VIGIL_HAVE_CUDNN_HEADER 1
#endif

namespace vigil::doctor {
namespace {

std::vector<CallPhase> PhasesAndUnknown() {
  std::vector<CallPhase> phases(AllCallPhases().begin(), AllCallPhases().end());
  phases.push_back(CallPhase::kUnknown);
  return phases;
}

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Whether any cause (what or evidence) mentions `part`.
bool CauseMentions(const Diagnosis& d, const std::string& part) {
  for (const Cause& c : d.causes) {
    if (Contains(c.what, part) || Contains(c.evidence, part)) return true;
  }
  return false;
}

bool FixMentions(const Diagnosis& d, const std::string& part) {
  for (const std::string& f : d.fixes) {
    if (Contains(f, part)) return true;
  }
  return false;
}

std::string Describe(const Diagnosis& d) {
  std::string out = std::string(ErrorCodeName(d.code)) + ": " + d.summary;
  for (const Cause& c : d.causes) out += "\n  cause: " + c.what + " [" + c.evidence + "]";
  for (const std::string& f : d.fixes) out += "\n  fix: " + f;
  return out;
}

void ExpectComplete(GpuLibrary library, int number, CallPhase phase, const std::string& name) {
  Diagnosis d = TranslateGpuError(library, number, phase);
  SCOPED_TRACE(Describe(d));
  EXPECT_TRUE(Contains(d.summary, name)) << "summary does not name the status";
  EXPECT_TRUE(Contains(d.summary, std::to_string(number))) << "summary does not give the number";
  EXPECT_TRUE(Contains(d.summary, std::string(CallPhaseName(phase)))) << "summary does not name the phase";
  EXPECT_FALSE(d.causes.empty());
  EXPECT_FALSE(d.fixes.empty());
  for (const Cause& c : d.causes) EXPECT_FALSE(c.what.empty());
  bool phase_fact = false;
  for (const Fact& f : d.facts) phase_fact |= f.name == "phase" && f.value == CallPhaseName(phase);
  EXPECT_TRUE(phase_fact);
}

TEST(CudaErrors, EveryCudnnStatusInEveryPhaseIsDiagnosed) {
  EXPECT_GE(KnownGpuStatuses(GpuLibrary::kCudnn).size(), 48u);
  for (const GpuStatusInfo& s : KnownGpuStatuses(GpuLibrary::kCudnn)) {
    for (CallPhase phase : PhasesAndUnknown()) ExpectComplete(GpuLibrary::kCudnn, s.number, phase, std::string(s.name));
  }
}

TEST(CudaErrors, EveryCudaAndCublasStatusInEveryPhaseIsDiagnosed) {
  for (GpuLibrary library : {GpuLibrary::kCudaRuntime, GpuLibrary::kCublas}) {
    for (const GpuStatusInfo& s : KnownGpuStatuses(library)) {
      for (CallPhase phase : PhasesAndUnknown()) ExpectComplete(library, s.number, phase, std::string(s.name));
    }
  }
}

TEST(CudaErrors, CudnnTableHasEverySubCodeOfCudnn9) {
  // Spot checks of sub-codes named in cudnn_graph.h (cuDNN 9).
  const std::map<int, std::string> expected = {
      {1001, "CUDNN_STATUS_NOT_INITIALIZED"}, {1008, "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED"},
      {2002, "CUDNN_STATUS_BAD_PARAM_NULL_POINTER"}, {2012, "CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE"},
      {3009, "CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE"}, {3014, "CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE"},
      {4004, "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED"}, {5003, "CUDNN_STATUS_EXECUTION_FAILED_CUDART"},
      {5004, "CUDNN_STATUS_EXECUTION_FAILED_CURAND"}};
  for (const auto& [number, name] : expected) {
    const GpuStatusInfo* info = FindGpuStatus(GpuLibrary::kCudnn, number);
    ASSERT_NE(info, nullptr) << number;
    EXPECT_EQ(info->name, name);
  }
}

TEST(CudaErrors, UnknownNumbersAreStillNamedWithTheirPhase) {
  for (GpuLibrary library : {GpuLibrary::kCudnn, GpuLibrary::kCudaRuntime, GpuLibrary::kCublas}) {
    for (CallPhase phase : PhasesAndUnknown()) {
      Diagnosis d = TranslateGpuError(library, 7777, phase);
      SCOPED_TRACE(Describe(d));
      EXPECT_TRUE(Contains(d.summary, "7777"));
      EXPECT_TRUE(Contains(d.summary, "unknown"));
      EXPECT_TRUE(Contains(d.summary, std::string(CallPhaseName(phase))));
      EXPECT_FALSE(d.causes.empty());
      EXPECT_FALSE(d.fixes.empty());
    }
  }
}

TEST(CudaErrors, SummaryNamesTheCall) {
  Diagnosis d = TranslateGpuError(GpuLibrary::kCudnn, 3001, CallPhase::kPlanChoice, "cudnnBackendFinalize(graph.get())");
  EXPECT_TRUE(d.summary.starts_with("cudnnBackendFinalize failed with CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN (3001) "
                                    "during plan choice"))
      << d.summary;
}

TEST(CudaErrors, DeviceAllocationFailureIsOutOfMemoryWithMemoryFixes) {
  for (CallPhase phase : PhasesAndUnknown()) {
    Diagnosis d = TranslateGpuError(GpuLibrary::kCudnn, 4004, phase);
    SCOPED_TRACE(Describe(d));
    EXPECT_EQ(d.code, ErrorCode::kOutOfMemory);
    EXPECT_TRUE(FixMentions(d, "--gpu-mem-limit"));
    EXPECT_TRUE(FixMentions(d, "batch"));
  }
  EXPECT_EQ(TranslateGpuError(GpuLibrary::kCudaRuntime, 2, CallPhase::kMemoryAllocation).code, ErrorCode::kOutOfMemory);
  EXPECT_EQ(TranslateGpuError(GpuLibrary::kCublas, 3, CallPhase::kExecution).code, ErrorCode::kOutOfMemory);
  Diagnosis host = TranslateGpuError(GpuLibrary::kCudnn, 4003, CallPhase::kPlanChoice);
  EXPECT_EQ(host.code, ErrorCode::kOutOfMemory);
  EXPECT_TRUE(CauseMentions(host, "host"));
}

TEST(CudaErrors, NotSupportedAtPlanChoiceNamesTheEnginesLibrary) {
  for (int status : {3000, 3001, 3002, 3003, 3004}) {
    Diagnosis d = TranslateGpuError(GpuLibrary::kCudnn, status, CallPhase::kPlanChoice);
    SCOPED_TRACE(Describe(d));
    EXPECT_EQ(d.code, ErrorCode::kUnsupported);
    EXPECT_TRUE(CauseMentions(d, "no engine"));
    EXPECT_TRUE(CauseMentions(d, "GRAPH_JIT_ONLY"));
    EXPECT_TRUE(CauseMentions(d, "libcudnn_engines_precompiled"));
    EXPECT_TRUE(FixMentions(d, "CPU backend"));
  }
}

TEST(CudaErrors, NotSupportedMeansDifferentThingsInDifferentPhases) {
  Diagnosis plan = TranslateGpuError(GpuLibrary::kCudnn, 3002, CallPhase::kPlanChoice);
  Diagnosis desc = TranslateGpuError(GpuLibrary::kCudnn, 3002, CallPhase::kDescriptorSetup);
  EXPECT_NE(plan.causes.front().what, desc.causes.front().what);
  EXPECT_TRUE(CauseMentions(desc, "onnxruntime#15715")) << Describe(desc);
  Diagnosis create = TranslateGpuError(GpuLibrary::kCudnn, 3000, CallPhase::kHandleCreation);
  EXPECT_EQ(create.code, ErrorCode::kEnvironment) << Describe(create);
}

TEST(CudaErrors, NotInitializedAtHandleCreationIsTheEnvironment) {
  Diagnosis d = TranslateGpuError(GpuLibrary::kCudnn, 1001, CallPhase::kHandleCreation, "cudnnCreate(&handle)");
  SCOPED_TRACE(Describe(d));
  EXPECT_EQ(d.code, ErrorCode::kEnvironment);
  EXPECT_TRUE(CauseMentions(d, "CUDA_VISIBLE_DEVICES"));
  EXPECT_TRUE(CauseMentions(d, "driver"));
  EXPECT_TRUE(FixMentions(d, "vigil doctor"));
  // Later, the handle exists: the same status is a misused handle.
  Diagnosis later = TranslateGpuError(GpuLibrary::kCudnn, 1001, CallPhase::kExecution);
  EXPECT_EQ(later.code, ErrorCode::kInternal) << Describe(later);
  EXPECT_FALSE(CauseMentions(later, "CUDA_VISIBLE_DEVICES"));
}

TEST(CudaErrors, BadParamAtDescriptorSetUpIsAVigilBugNamingTheDescriptor) {
  for (const GpuStatusInfo& s : KnownGpuStatuses(GpuLibrary::kCudnn)) {
    if (s.number / 1000 != 2) continue;
    Diagnosis d = TranslateGpuError(GpuLibrary::kCudnn, s.number, CallPhase::kDescriptorSetup);
    SCOPED_TRACE(Describe(d));
    EXPECT_EQ(d.code, ErrorCode::kInternal);
    EXPECT_TRUE(CauseMentions(d, "descriptor"));
    EXPECT_TRUE(FixMentions(d, "bug in vigil"));
  }
  Diagnosis type = TranslateGpuError(GpuLibrary::kCudnn, 2010, CallPhase::kDescriptorSetup);
  EXPECT_TRUE(CauseMentions(type, "wrong cudnnBackendAttributeType_t")) << Describe(type);
  Diagnosis stream = TranslateGpuError(GpuLibrary::kCudnn, 2007, CallPhase::kExecution);
  EXPECT_TRUE(CauseMentions(stream, "shared between threads")) << Describe(stream);
}

TEST(CudaErrors, ExecutionFailedAtExecutionIsADeviceFault) {
  for (int status : {5000, 5001, 5002, 5003, 5004}) {
    Diagnosis d = TranslateGpuError(GpuLibrary::kCudnn, status, CallPhase::kExecution);
    SCOPED_TRACE(Describe(d));
    EXPECT_EQ(d.code, ErrorCode::kDeviceFault);
    EXPECT_TRUE(CauseMentions(d, "earlier kernel"));
    EXPECT_TRUE(CauseMentions(d, "out of bounds"));
    EXPECT_TRUE(CauseMentions(d, "hardware"));
  }
  EXPECT_TRUE(CauseMentions(TranslateGpuError(GpuLibrary::kCudnn, 5002, CallPhase::kExecution), "cuBLASLt"));
}

TEST(CudaErrors, SublibraryLoadingFailureNamesTheSublibraryOfThePhase) {
  Diagnosis plan = TranslateGpuError(GpuLibrary::kCudnn, 1008, CallPhase::kPlanChoice);
  EXPECT_EQ(plan.code, ErrorCode::kEnvironment);
  EXPECT_TRUE(CauseMentions(plan, "libcudnn_heuristic")) << Describe(plan);
  Diagnosis exec = TranslateGpuError(GpuLibrary::kCudnn, 1008, CallPhase::kExecution);
  EXPECT_TRUE(CauseMentions(exec, "libnvrtc")) << Describe(exec);
  EXPECT_TRUE(FixMentions(exec, "vigil doctor"));
  Diagnosis jit = TranslateGpuError(GpuLibrary::kCudnn, 3009, CallPhase::kDescriptorSetup);
  EXPECT_EQ(jit.code, ErrorCode::kEnvironment);
  EXPECT_TRUE(CauseMentions(jit, "GRAPH_JIT_ONLY")) << Describe(jit);
}

TEST(CudaErrors, CudaDeviceFaultsAndEnvironment) {
  for (int e : {700, 716, 719}) {
    Diagnosis d = TranslateGpuError(GpuLibrary::kCudaRuntime, e, CallPhase::kExecution);
    SCOPED_TRACE(Describe(d));
    EXPECT_EQ(d.code, ErrorCode::kDeviceFault);
    EXPECT_TRUE(FixMentions(d, "restart the process"));
    EXPECT_TRUE(FixMentions(d, "VIGIL_CUDA_SYNC=1"));
  }
  EXPECT_TRUE(CauseMentions(TranslateGpuError(GpuLibrary::kCudaRuntime, 716, CallPhase::kExecution), "misaligned"));
  Diagnosis arch = TranslateGpuError(GpuLibrary::kCudaRuntime, 209, CallPhase::kExecution);
  EXPECT_EQ(arch.code, ErrorCode::kEnvironment);
  EXPECT_TRUE(CauseMentions(arch, "architecture")) << Describe(arch);
  EXPECT_TRUE(FixMentions(arch, "CMAKE_CUDA_ARCHITECTURES"));
  Diagnosis driver = TranslateGpuError(GpuLibrary::kCudaRuntime, 35, CallPhase::kHandleCreation);
  EXPECT_EQ(driver.code, ErrorCode::kEnvironment);
  EXPECT_TRUE(FixMentions(driver, "update the NVIDIA driver")) << Describe(driver);
  Diagnosis none = TranslateGpuError(GpuLibrary::kCudaRuntime, 100, CallPhase::kHandleCreation);
  EXPECT_TRUE(CauseMentions(none, "CUDA_VISIBLE_DEVICES")) << Describe(none);
  for (int e : {3, 46, 101, 803, 804}) {
    EXPECT_EQ(TranslateGpuError(GpuLibrary::kCudaRuntime, e, CallPhase::kHandleCreation).code, ErrorCode::kEnvironment)
        << e;
  }
  Diagnosis config = TranslateGpuError(GpuLibrary::kCudaRuntime, 9, CallPhase::kExecution);
  EXPECT_EQ(config.code, ErrorCode::kInternal);
  EXPECT_TRUE(CauseMentions(config, "grid or block")) << Describe(config);
  // CUDA 13 reports too many threads per block as InvalidValue at the launch.
  Diagnosis launch = TranslateGpuError(GpuLibrary::kCudaRuntime, 1, CallPhase::kExecution);
  EXPECT_TRUE(CauseMentions(launch, "grid or block")) << Describe(launch);
  Diagnosis copy = TranslateGpuError(GpuLibrary::kCudaRuntime, 1, CallPhase::kCopy);
  EXPECT_TRUE(CauseMentions(copy, "host<->device copy")) << Describe(copy);
}

TEST(CudaErrors, CublasStatusesByPhase) {
  Diagnosis plan = TranslateGpuError(GpuLibrary::kCublas, 15, CallPhase::kPlanChoice);
  EXPECT_EQ(plan.code, ErrorCode::kUnsupported);
  EXPECT_TRUE(CauseMentions(plan, "no algorithm")) << Describe(plan);
  EXPECT_EQ(TranslateGpuError(GpuLibrary::kCublas, 1, CallPhase::kHandleCreation).code, ErrorCode::kEnvironment);
  EXPECT_EQ(TranslateGpuError(GpuLibrary::kCublas, 1, CallPhase::kExecution).code, ErrorCode::kInternal);
  EXPECT_EQ(TranslateGpuError(GpuLibrary::kCublas, 13, CallPhase::kExecution).code, ErrorCode::kDeviceFault);
}

TEST(CudaErrors, PhaseOfCallFromTheFunctionName) {
  const std::vector<std::pair<std::string, CallPhase>> cases = {
      {"cudnnCreate(&handle)", CallPhase::kHandleCreation},
      {"cudnnSetStream(c->cudnn, c->stream)", CallPhase::kHandleCreation},
      {"cublasLtCreate(&c->lt)", CallPhase::kHandleCreation},
      {"cudaSetDevice(options_.device)", CallPhase::kHandleCreation},
      {"cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)", CallPhase::kHandleCreation},
      {"cudaDeviceGetDefaultMemPool(&pool, 0)", CallPhase::kHandleCreation},
      {"cudaMemPoolSetAttribute(pool, a, &keep)", CallPhase::kHandleCreation},
      {"cudnnGetVersion()", CallPhase::kLibraryLoad},
      {"cudnnBackendCreateDescriptor(type, &d.d_)", CallPhase::kDescriptorSetup},
      {"cudnnBackendSetAttribute(d_, name, type, count, values)", CallPhase::kDescriptorSetup},
      {"cudnnBackendFinalize(d_)", CallPhase::kDescriptorSetup},
      {"cudnnCreateTensorDescriptor(&x)", CallPhase::kDescriptorSetup},
      {"cudnnSetTensor4dDescriptor(x, 0, 0, 1, 1, 3, 3)", CallPhase::kDescriptorSetup},
      {"cublasLtMatrixLayoutCreate(&l.h, type, r, c, ld)", CallPhase::kDescriptorSetup},
      {"cublasLtMatmulDescSetAttribute(h, a, &v, sizeof v)", CallPhase::kDescriptorSetup},
      {"cublasLtMatmulPreferenceSetAttribute(p, a, &v, 8)", CallPhase::kDescriptorSetup},
      {"cudnnBackendGetAttribute(heur.get(), ...)", CallPhase::kPlanChoice},
      {"cublasLtMatmulAlgoGetHeuristic(lt, op, a, b, c, d, pref, 1, &r, &n)", CallPhase::kPlanChoice},
      {"cudnnGetConvolutionForwardAlgorithm_v7(h, ...)", CallPhase::kPlanChoice},
      {"cudnnGetConvolutionForwardWorkspaceSize(h, ...)", CallPhase::kPlanChoice},
      {"cudaMallocAsync(&p, n, s)", CallPhase::kMemoryAllocation},
      {"::cudaMalloc(&p, n)", CallPhase::kMemoryAllocation},
      {"cudaFreeAsync(p, s)", CallPhase::kMemoryAllocation},
      {"cudaMemGetInfo(&free_bytes, &total)", CallPhase::kMemoryAllocation},
      {"cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, s)", CallPhase::kCopy},
      {"cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost, s)", CallPhase::kCopy},
      {"cudaMemcpyAsync(y, x, n, cudaMemcpyDeviceToDevice, s)", CallPhase::kExecution},
      {"cudaMemsetAsync(p, 0, n, s)", CallPhase::kExecution},
      {"cudaStreamSynchronize(c->stream)", CallPhase::kExecution},
      {"cudnnBackendExecute(handle, plan, pack)", CallPhase::kExecution},
      {"cudnnConvolutionForward(h, ...)", CallPhase::kExecution},
      {"cublasLtMatmul(lt, op, &alpha, ...)", CallPhase::kExecution},
      {"  frobnicate(x)", CallPhase::kUnknown},
      {"", CallPhase::kUnknown},
  };
  for (const auto& [expression, phase] : cases) {
    EXPECT_EQ(PhaseOfCall(expression), phase) << expression << " -> " << CallPhaseName(PhaseOfCall(expression));
  }
}

// Every VIGIL_{CUDA,CUDNN,CUBLAS}_CALL in the CUDA module (the variants
// without an explicit phase) must call a function whose phase is known.
TEST(CudaErrors, EveryCheckedCallInTheCudaModuleHasAPhase) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(VIGIL_SOURCE_DIR) / "src/backends/cuda";
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  std::regex call(R"(VIGIL_(CUDA|CUDNN|CUBLAS)_CALL\(\s*([A-Za-z_:][A-Za-z0-9_:]*))");
  int seen = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string ext = entry.path().extension().string();
    if (ext != ".cpp" && ext != ".cu" && ext != ".cuh" && ext != ".h") continue;
    if (entry.path().filename() == "cuda_check.h") continue;  // the macros' own documentation
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    std::string source = text.str();
    for (std::sregex_iterator it(source.begin(), source.end(), call), end; it != end; ++it) {
      ++seen;
      std::string function = (*it)[2];
      EXPECT_NE(PhaseOfCall(function + "()"), CallPhase::kUnknown)
          << entry.path().filename() << ": " << function << " has no derived phase; use the *_CALL_IN variant";
    }
  }
  EXPECT_GT(seen, 30);
}

// The table against the headers of the installed toolkit, where present.
std::map<std::string, int> Enumerators(const std::string& path, const std::string& pattern) {
  std::map<std::string, int> out;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string source = text.str();
  std::regex re(pattern + R"(\s*=\s*([0-9]+))");
  for (std::sregex_iterator it(source.begin(), source.end(), re), end; it != end; ++it) {
    out[(*it)[1]] = std::stoi((*it)[2]);
  }
  return out;
}

std::string HeaderPath(const char* file) {
  for (const char* dir : {VIGIL_TEST_CUDNN_INCLUDE, VIGIL_TEST_CUDA_INCLUDE}) {
    std::string path = std::string(dir) + "/" + file;
    if (*dir && std::filesystem::exists(path)) return path;
  }
  return {};
}

TEST(CudaErrors, TableCoversEveryCudnnStatusOfTheInstalledHeader) {
  std::string header = HeaderPath("cudnn_graph.h");
  if (header.empty()) GTEST_SKIP() << "no cudnn_graph.h on this machine";
  auto enums = Enumerators(header, R"((CUDNN_STATUS_[A-Z_]+))");
  ASSERT_GT(enums.size(), 40u) << header;
  for (const auto& [name, number] : enums) {
    if (number == 0) continue;  // SUCCESS
    const GpuStatusInfo* info = FindGpuStatus(GpuLibrary::kCudnn, number);
    ASSERT_NE(info, nullptr) << name << " = " << number << " is missing from the table";
    EXPECT_EQ(info->name, name);
  }
}

TEST(CudaErrors, CudaAndCublasTableEntriesMatchTheInstalledHeaders) {
  std::string driver_types = HeaderPath("driver_types.h");
  std::string cublas = HeaderPath("cublas_api.h");
  if (driver_types.empty() || cublas.empty()) GTEST_SKIP() << "no CUDA toolkit headers on this machine";
  auto cuda = Enumerators(driver_types, R"((cudaError[A-Za-z]+))");
  for (const GpuStatusInfo& s : KnownGpuStatuses(GpuLibrary::kCudaRuntime)) {
    ASSERT_TRUE(cuda.count(std::string(s.name))) << s.name;
    EXPECT_EQ(cuda[std::string(s.name)], s.number) << s.name;
  }
  auto blas = Enumerators(cublas, R"((CUBLAS_STATUS_[A-Z_]+))");
  for (const GpuStatusInfo& s : KnownGpuStatuses(GpuLibrary::kCublas)) {
    ASSERT_TRUE(blas.count(std::string(s.name))) << s.name;
    EXPECT_EQ(blas[std::string(s.name)], s.number) << s.name;
  }
}

#ifdef VIGIL_HAVE_CUDNN_HEADER
// Compiled against the real enum: the numbers are cuDNN's, not our guesses.
TEST(CudaErrors, NumbersMatchTheCudnnEnum) {
  const std::pair<cudnnStatus_t, const char*> checks[] = {
      {CUDNN_STATUS_NOT_INITIALIZED, "CUDNN_STATUS_NOT_INITIALIZED"},
      {CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED, "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED"},
      {CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "CUDNN_STATUS_BAD_PARAM_NULL_POINTER"},
      {CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, "CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE"},
      {CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN, "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN"},
      {CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE, "CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE"},
      {CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED, "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED"},
      {CUDNN_STATUS_EXECUTION_FAILED_CUDART, "CUDNN_STATUS_EXECUTION_FAILED_CUDART"},
  };
  for (const auto& [value, name] : checks) {
    const GpuStatusInfo* info = FindGpuStatus(GpuLibrary::kCudnn, static_cast<int>(value));
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(info->name, name);
  }
}
#endif

}  // namespace
}  // namespace vigil::doctor
