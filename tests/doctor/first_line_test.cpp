// The first line of `vigil doctor`'s report, one scenario per class of
// problem, asserted exactly. At the end of the run the suite prints them as
// a table ("| class | first line |"), temporary folders shown as <system>
// (the folder the stack loads from) and <LD_LIBRARY_PATH folder>.
#include <filesystem>
#include <iostream>
#include <utility>

#include <gtest/gtest.h>

#include "doctor/live/live_check.h"
#include "doctor/report.h"
#include "doctor/rules/rules.h"
#include "fake_stack.h"

namespace vigil::doctor {
namespace {

using testing::FakeStack;
using testing::HealthyStack;
using testing::Replace;
using testing::ScopedEnv;

std::vector<std::pair<std::string, std::string>>& Rows() {
  static std::vector<std::pair<std::string, std::string>> rows;
  return rows;
}

class PrintFirstLines : public ::testing::Environment {
 public:
  void TearDown() override {
    if (Rows().empty()) return;
    std::cout << "\n| class | first line |\n|---|---|\n";
    for (const auto& [scenario, line] : Rows()) std::cout << "| " << scenario << " | " << line << " |\n";
  }
};
[[maybe_unused]] ::testing::Environment* const kPrinter = ::testing::AddGlobalTestEnvironment(new PrintFirstLines);

std::string Real(const std::string& path) { return std::filesystem::canonical(path).string(); }

std::string ReplaceAll(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// Probe + rules (no live check), rendered as `vigil doctor` prints it.
std::string FirstLine(const FakeStack& stack) {
  DoctorReport report;
  report.snapshot = stack.Probe();
  report.findings = RunRules(report.snapshot);
  std::string text = RenderReportText(report);
  return text.substr(0, text.find('\n'));
}

void Record(const std::string& scenario, std::string line, const std::vector<std::pair<std::string, std::string>>& dirs) {
  for (const auto& [dir, label] : dirs) line = ReplaceAll(line, dir, label);
  Rows().emplace_back(scenario, ReplaceAll(line, "|", "\\|"));
}

TEST(FirstLine, MissingCudnn) {
  FakeStack stack({"fake_cuda_h100", "fake_cudart_13", "fake_cublaslt_13"});
  std::string line = FirstLine(stack);
  EXPECT_EQ(line,
            "1 error(s): cuDNN is not found (libcudnn.so.9 or libcudnn.so.8); vigil's CUDA backend needs cuDNN 9 — "
            "fix: install cuDNN 9 for CUDA 13 (`apt install cudnn9-cuda-13` or `pip install nvidia-cudnn-cu13`) and "
            "put its lib folder on LD_LIBRARY_PATH");
  Record("missing cuDNN", line, {});
}

TEST(FirstLine, CudnnBuiltForAnotherCudaMajor) {
  FakeStack stack(Replace(HealthyStack(), "fake_cudnn_9_14", "fake_cudnn_9_14_cu12"));
  std::string line = FirstLine(stack);
  EXPECT_EQ(line,
            "1 error(s): cuDNN 9.14.0 was built for CUDA 12.9 but the CUDA runtime found is 13.0 — fix: install the "
            "cuDNN build for CUDA 13 (e.g. cudnn9-cuda-13 or nvidia-cudnn-cu13), or the CUDA 12 runtime");
  Record("cuDNN built for another CUDA major", line, {});
}

TEST(FirstLine, OlderCopyFirstOnLdLibraryPath) {
  FakeStack stack(HealthyStack());
  std::vector<std::string> old = {"fake_cudnn_9_5_cu12"};
  for (const char* sub : {"graph", "engines_precompiled", "engines_runtime_compiled", "heuristic", "ops", "cnn", "adv"}) {
    old.push_back(std::string("fake_cudnn_") + sub + "_9_5");
  }
  std::string old_dir = stack.AddOtherFolder(old);
  ScopedEnv path("LD_LIBRARY_PATH", old_dir.c_str());
  std::string line = FirstLine(stack);
  std::string system = Real(stack.dir()), ld = Real(old_dir);
  EXPECT_EQ(line, "1 error(s): an older cuDNN (9.5.1 in " + ld +
                      ") is first on LD_LIBRARY_PATH and wins over 9.14.0 in " + system +
                      ", and it is built for CUDA 12 while the runtime is CUDA 13 — fix: take " + ld +
                      " off LD_LIBRARY_PATH, so that cuDNN 9.14.0 in " + system + " loads");
  Record("older cuDNN first on LD_LIBRARY_PATH", line, {{ld, "<LD_LIBRARY_PATH folder>"}, {system, "<system>"}});
}

TEST(FirstLine, SubLibraryMismatch) {
  FakeStack stack(Replace(HealthyStack(), "fake_cudnn_ops_9_14", "fake_cudnn_ops_9_12"));
  std::string line = FirstLine(stack);
  std::string system = Real(stack.dir());
  EXPECT_EQ(line, "1 error(s): cuDNN sub-library libcudnn_ops.so.9 (9.12.0) does not match cuDNN 9.14.0 — fix: "
                  "replace " + system + "/libcudnn_ops.so.9.12.0 with the libcudnn_ops.so.9 of cuDNN 9.14.0 "
                  "(reinstall cuDNN 9.14.0 into " + system + "): every sub-library must come from one release");
  Record("sub-library mismatch", line, {{system, "<system>"}});
}

TEST(FirstLine, Cudnn8BesideCudnn9) {
  FakeStack stack(HealthyStack());
  stack.AddOtherFolder({"fake_cudnn_8_9"}, /*wheel_layout=*/true);
  std::string line = FirstLine(stack);
  EXPECT_EQ(line, "no problems found");
  Record("cuDNN 8 beside 9", line, {});
}

TEST(FirstLine, DeprecatedLogVariables) {
  ScopedEnv info("CUDNN_LOGINFO_DBG", "1");
  ScopedEnv err("CUDNN_LOGERR_DBG", "1");
  FakeStack stack(HealthyStack());
  std::string line = FirstLine(stack);
  EXPECT_EQ(line, "no errors, 2 warning(s): CUDNN_LOGINFO_DBG is deprecated; cuDNN 9 logs through "
                  "CUDNN_LOGLEVEL_DBG — fix: use CUDNN_LOGLEVEL_DBG=3 with CUDNN_LOGDEST_DBG=stderr (or a file), and "
                  "unset CUDNN_LOGINFO_DBG");
  Record("deprecated log variables", line, {});
}

TEST(FirstLine, PreAmpereGpuUnderGraphJitOnly) {
  ScopedEnv config("CUDNN_LIB_CONFIG", "GRAPH_JIT_ONLY");
  FakeStack stack(Replace(HealthyStack(), "fake_cuda_h100", "fake_cuda_t4_580"));  // Tesla T4, 7.5
  std::string line = FirstLine(stack);
  EXPECT_EQ(line, "1 error(s): CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY needs an Ampere (8.0) or newer GPU; GPU 0 (Tesla T4) is "
                  "7.5 — fix: unset CUDNN_LIB_CONFIG and install every cuDNN sub-library (the FULL configuration)");
  Record("pre-Ampere GPU under GRAPH_JIT_ONLY", line, {});
}

// The live check (cudnnCreate and a convolution in a child) against a cuDNN
// whose cudnnCreate stores through NULL.
TEST(FirstLine, CrashInCudnnCreate) {
  FakeStack stack(Replace(HealthyStack(), "fake_cudnn_9_14", "fake_cudnn_9_14_crash"));
  DoctorReport report;
  report.snapshot = stack.Probe();
  report.findings = RunRules(report.snapshot);
  LiveCheckOptions options;
  options.child_args = {"--child-probe"};
  LiveCheckResult live = RunLiveCheck(report.snapshot, options);
  report.live_check = live.summary;
  for (Finding& f : live.findings) report.findings.push_back(std::move(f));
  std::string text = RenderReportText(report);
  std::string line = text.substr(0, text.find('\n'));
  std::string system = Real(stack.dir());
  EXPECT_EQ(ReplaceAll(line, system, "<system>"),
            "1 error(s): the cuDNN live check crashed with SIGSEGV in cudnnCreate, inside libcudnn.so.9.14.0 — fix: "
            "reinstall <system>/libcudnn.so.9.14.0 from one cuDNN release; if it still crashes, report it to NVIDIA "
            "with the build-id and offset");
  Record("crash inside cuDNN (cudnnCreate, live check)", line, {{system, "<system>"}});
}

TEST(FirstLine, HealthyStack) {
  FakeStack stack(HealthyStack());
  std::string line = FirstLine(stack);
  EXPECT_EQ(line, "no problems found");
  Record("healthy stack", line, {});
}

}  // namespace
}  // namespace vigil::doctor
