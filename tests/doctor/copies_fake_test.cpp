// Other cuDNN copies, sub-library strays, the fixes offered, and stdout while
// probing, against folders of fake libraries (issue 17).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "doctor/report.h"
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

std::string Real(const std::string& path) { return std::filesystem::canonical(path).string(); }

std::vector<std::string> Cudnn95() {
  std::vector<std::string> fakes = {"fake_cudnn_9_5_cu12"};
  for (const char* sub : {"graph", "engines_precompiled", "engines_runtime_compiled", "heuristic", "ops", "cnn", "adv"}) {
    fakes.push_back(std::string("fake_cudnn_") + sub + "_9_5");
  }
  return fakes;
}

int Count(const std::vector<Finding>& findings, const std::string& id) {
  int n = 0;
  for (const Finding& f : findings) n += f.id == id;
  return n;
}

TEST(CudnnCopies, OlderCopyFirstOnLdLibraryPathIsNamedWithTheRightFix) {
  FakeStack stack(HealthyStack());  // the system's cuDNN 9.14 for CUDA 13
  std::string old_dir = stack.AddOtherFolder(Cudnn95());  // 9.5.1 for CUDA 12
  ScopedEnv path("LD_LIBRARY_PATH", old_dir.c_str());
  StackSnapshot s = stack.Probe();
  ASSERT_TRUE(s.probe_error.empty()) << s.probe_error;
  ASSERT_EQ(s.Find(kCudnn)->version.ToString(), "9.5.1");  // LD_LIBRARY_PATH wins
  std::vector<Finding> findings = RunRules(s);
  const Finding* f = FindById(findings, "cudnn.older_first_on_ld_library_path");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_EQ(f->severity, Severity::kError);
  EXPECT_EQ(f->summary, "an older cuDNN (9.5.1 in " + Real(old_dir) +
                            ") is first on LD_LIBRARY_PATH and wins over 9.14.0 in " + Real(stack.dir()) +
                            ", and it is built for CUDA 12 while the runtime is CUDA 13");
  EXPECT_EQ(f->fix, "take " + Real(old_dir) + " off LD_LIBRARY_PATH, so that cuDNN 9.14.0 in " + Real(stack.dir()) +
                        " loads");
  // Not "install the CUDA 13 build": it is installed, only hidden.
  EXPECT_EQ(FindById(findings, "cudnn.cuda_major_mismatch"), nullptr) << Ids(findings);
  EXPECT_EQ(&findings.front(), f) << Ids(findings);
}

TEST(CudnnCopies, CopiesOfOtherFoldersCarryTheirBuildsCuda) {
  FakeStack stack(HealthyStack());
  stack.AddOtherFolder({"fake_cudnn_9_5_cu12"}, /*wheel_layout=*/true);
  StackSnapshot s = stack.Probe();
  const Component* cudnn = s.Find(kCudnn);
  ASSERT_EQ(cudnn->copies.size(), 1u);
  EXPECT_EQ(cudnn->copies[0].version.ToString(), "9.5.1");  // the file name says only "9"
  EXPECT_EQ(cudnn->copies[0].cuda_version, 12060);
}

TEST(CudnnCopies, Cudnn8BesideCudnn9IsDecodedAndNotAWarning) {
  FakeStack stack(HealthyStack());
  stack.AddOtherFolder({"fake_cudnn_8_9"}, /*wheel_layout=*/true);  // libcudnn.so.8, as a wheel has it
  StackSnapshot s = stack.Probe();
  const Component* cudnn = s.Find(kCudnn);
  ASSERT_EQ(cudnn->copies.size(), 1u);
  EXPECT_EQ(cudnn->copies[0].version.ToString(), "8.9.7");  // v8 encoding, 8907
  std::vector<Finding> findings = RunRules(s);
  EXPECT_EQ(FindById(findings, "cudnn.multiple_versions"), nullptr) << Ids(findings);
  EXPECT_NE(RenderReportText({s, findings, "", {}, nullptr}).find("also 8.9.7"), std::string::npos);
}

TEST(CudnnCopies, TwoVersionsOfTheSameSonameStillWarn) {
  FakeStack stack(HealthyStack());
  stack.AddOtherFolder({"fake_cudnn_8_9"}, true);
  stack.AddOtherFolder({"fake_cudnn_9_19"}, true);
  std::vector<Finding> findings = stack.Findings();
  const Finding* f = FindById(findings, "cudnn.multiple_versions");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_NE(f->summary.find("libcudnn.so.9"), std::string::npos) << f->summary;
}

TEST(SubLibraries, OnlyTheStrayOneIsNamedAndItsFolderIsTheFix) {
  std::vector<std::string> fakes = Replace(HealthyStack(), "fake_cudnn_ops_9_14", "fake_cudnn_ops_9_12");
  fakes = Replace(fakes, "fake_cudnn_cnn_9_14", "fake_cudnn_cnn_9_14_collateral");  // untouched, check fails
  FakeStack stack(fakes);
  std::vector<Finding> findings = stack.Findings();
  ASSERT_EQ(Count(findings, "cudnn.sublib_version_mismatch"), 1) << Ids(findings);
  const Finding* f = FindById(findings, "cudnn.sublib_version_mismatch");
  EXPECT_EQ(f->summary, "cuDNN sub-library libcudnn_ops.so.9 (9.12.0) does not match cuDNN 9.14.0");
  EXPECT_EQ(f->component, "cudnn_ops");
  EXPECT_EQ(f->fix.find("LD_LIBRARY_PATH"), std::string::npos) << f->fix;  // LD_LIBRARY_PATH is not involved
  EXPECT_NE(f->fix.find(Real(stack.dir()) + "/libcudnn_ops.so.9.12.0"), std::string::npos) << f->fix;
  bool mentions_cnn = false;
  for (const Fact& e : f->evidence) mentions_cnn |= e.value.find("libcudnn_cnn.so.9 9.14.0") != std::string::npos;
  EXPECT_TRUE(mentions_cnn);
}

TEST(SubLibraries, StrayFromAnLdLibraryPathFolderSaysTakeItOff) {
  FakeStack stack(Replace(HealthyStack(), "fake_cudnn_ops_9_14", ""));
  std::string stray = stack.AddOtherFolder({"fake_cudnn_ops_9_12"});
  ScopedEnv path("LD_LIBRARY_PATH", stray.c_str());
  std::vector<Finding> findings = stack.Findings();
  const Finding* f = FindById(findings, "cudnn.sublib_version_mismatch");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_EQ(f->fix.rfind("take " + Real(stray) + " off LD_LIBRARY_PATH", 0), 0u) << f->fix;
}

TEST(SubLibraries, WheelFileShowsItsFullVersionAndTheTableMarksIt) {
  FakeStack stack(Replace(HealthyStack(), "fake_cudnn_ops_9_14", ""), {"fake_cudnn_ops_9_12_versioned"});
  StackSnapshot s = stack.Probe();
  EXPECT_EQ(s.Find("cudnn_ops")->version.ToString(), "9.12.0");  // file libcudnn_ops.so.9, version from its API
  std::vector<Finding> findings = RunRules(s);
  const Finding* f = FindById(findings, "cudnn.sublib_version_mismatch");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_NE(f->summary.find("(9.12.0)"), std::string::npos) << f->summary;
  std::string text = RenderReportText({s, findings, "", {}, nullptr});
  size_t ops = text.find("  ✗   ops ");
  ASSERT_NE(ops, std::string::npos) << text;
  std::string ops_line = text.substr(ops, text.find('\n', ops) - ops);
  EXPECT_NE(ops_line.find(" 9.12.0 "), std::string::npos) << ops_line;
  EXPECT_NE(text.find("  ✓   cnn"), std::string::npos) << text;
}

TEST(Fixes, GraphJitOnlyIsSuggestedOnlyWhereItWouldDoWithoutTheLibrary) {
  FakeStack needed(Replace(HealthyStack(), "fake_cudnn_engines_runtime_compiled_9_14", ""));
  const Finding* f1 = nullptr;
  std::vector<Finding> a = needed.Findings();
  f1 = FindById(a, "cudnn.sublib_missing");
  ASSERT_NE(f1, nullptr) << Ids(a);
  EXPECT_EQ(f1->fix.find("GRAPH_JIT_ONLY"), std::string::npos) << f1->fix;
  FakeStack optional(Replace(HealthyStack(), "fake_cudnn_engines_precompiled_9_14", ""));
  std::vector<Finding> b = optional.Findings();
  const Finding* f2 = FindById(b, "cudnn.sublib_missing");
  ASSERT_NE(f2, nullptr) << Ids(b);
  EXPECT_NE(f2->fix.find("CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY"), std::string::npos) << f2->fix;
  // ... but not on a GPU older than Ampere, where GRAPH_JIT_ONLY does not work.
  FakeStack turing(Replace(Replace(HealthyStack(), "fake_cudnn_engines_precompiled_9_14", ""), "fake_cuda_h100",
                           "fake_cuda_t4_535"));
  std::vector<Finding> c = turing.Findings();
  const Finding* f3 = FindById(c, "cudnn.sublib_missing");
  ASSERT_NE(f3, nullptr) << Ids(c);
  EXPECT_EQ(f3->fix.find("GRAPH_JIT_ONLY"), std::string::npos) << f3->fix;
}

TEST(Fixes, PipPackagesMatchTheStacksCudaMajor) {
  FakeStack no_cudnn({"fake_cuda_h100", "fake_cudart_13", "fake_cublaslt_13"});
  std::vector<Finding> a = no_cudnn.Findings();
  const Finding* f = FindById(a, "cudnn.missing");
  ASSERT_NE(f, nullptr) << Ids(a);
  EXPECT_NE(f->fix.find("pip install nvidia-cudnn-cu13"), std::string::npos) << f->fix;
  EXPECT_EQ(f->fix.find("cu12"), std::string::npos) << f->fix;
  FakeStack no_lt(Replace(HealthyStack(), "fake_cublaslt_13", ""));
  std::vector<Finding> b = no_lt.Findings();
  const Finding* g = FindById(b, "cublaslt.missing");
  ASSERT_NE(g, nullptr) << Ids(b);
  EXPECT_NE(g->fix.find("pip install nvidia-cublas-cu13"), std::string::npos) << g->fix;
  EXPECT_EQ(g->fix.find("cu12"), std::string::npos) << g->fix;
  // A CUDA 12 stack gets the cu12 wheel.
  FakeStack cuda12({"fake_cuda_t4_535", "fake_cudart_12", "fake_cublaslt_12"});
  std::vector<Finding> c = cuda12.Findings();
  const Finding* h = FindById(c, "cudnn.missing");
  ASSERT_NE(h, nullptr) << Ids(c);
  EXPECT_NE(h->fix.find("pip install nvidia-cudnn-cu12"), std::string::npos) << h->fix;
}

TEST(Fixes, TwoMissingSubLibrariesPrintTheirFixOnce) {
  FakeStack stack(Replace(Replace(HealthyStack(), "fake_cudnn_cnn_9_14", ""), "fake_cudnn_adv_9_14", ""));
  StackSnapshot s = stack.Probe();
  std::vector<Finding> findings = RunRules(s);
  ASSERT_EQ(Count(findings, "cudnn.sublib_missing"), 2) << Ids(findings);
  std::string text = RenderReportText({s, findings, "", {}, nullptr});
  std::string fix = "  fix: " + FindById(findings, "cudnn.sublib_missing")->fix + "\n";
  size_t first = text.find(fix);
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find(fix, first + 1), std::string::npos) << text;
}

// Runs `body` with fd 1 pointed at a file; returns what reached it.
template <typename Body>
std::string CaptureStdout(Body body) {
  std::fflush(stdout);
  char name[] = "/tmp/vigil-stdout-XXXXXX";
  int file = mkstemp(name);
  int saved = dup(STDOUT_FILENO);
  dup2(file, STDOUT_FILENO);
  body();
  std::fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
  close(file);
  std::ifstream in(name);
  std::stringstream text;
  text << in.rdbuf();
  unlink(name);
  return text.str();
}

TEST(ProbeStdout, CudnnLoggingToStdoutDoesNotReachOurStdout) {
  ScopedEnv log("CUDNN_LOGDEST_DBG", "stdout");
  FakeStack stack(HealthyStack());
  stack.AddOtherFolder({"fake_cudnn_9_19"}, true);  // a copy, probed in a child of its own
  StackSnapshot s;
  std::string out = CaptureStdout([&] { s = stack.Probe(); });
  EXPECT_EQ(out, "");
  EXPECT_EQ(s.Find(kCudnn)->version.ToString(), "9.14.0");
  EXPECT_EQ(s.Find(kCudnn)->copies.at(0).version.ToString(), "9.19.0");
}

}  // namespace
}  // namespace vigil::doctor
