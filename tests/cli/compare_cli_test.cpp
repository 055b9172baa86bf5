// `vigil compare` end to end. Without a GPU only cpu,cpu can run, and two CPU
// sessions compute bitwise-identical results, so these tests check the
// plumbing (inputs, step order, counts, exit codes, JSON, diagnoses); a
// diverging pair needs the CUDA backend (see docs/compare.md).
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "run_vigil.h"
#include "support/onnx_builder.h"

namespace vigil::testing {
namespace {

namespace fs = std::filesystem;

const std::string kModel = std::string(VIGIL_EXAMPLES_DIR) + "/tiny_cnn.onnx";

fs::path Scratch(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("vigil_compare_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

// A float32 .npy v1.0 file of random values in [-1,1], as numpy writes it.
std::string WriteFloatNpy(const std::string& name, const std::vector<int64_t>& shape) {
  size_t n = 1;
  std::string dims;
  for (int64_t d : shape) {
    n *= static_cast<size_t>(d);
    dims += std::to_string(d) + ", ";
  }
  dims.resize(dims.size() - (shape.size() > 1 ? 2 : 1));
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  header += std::string(63 - (10 + header.size()) % 64, ' ') + "\n";
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes.push_back(static_cast<char>(header.size() & 0xFF));
  bytes.push_back(static_cast<char>(header.size() >> 8));
  bytes += header;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (size_t i = 0; i < n; ++i) {
    float v = dist(rng);
    bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  fs::path p = Scratch(name);
  std::ofstream(p, std::ios::binary) << bytes;
  return p.string();
}

std::string Image() { return WriteFloatNpy("image.npy", {2, 3, 32, 32}); }

// Static shapes, so compare makes up the inputs. s = Sqrt(x) is NaN where x < 0
// (NaN on both sides must count as a match); y is a graph output that z reads,
// so step order has y before z.
std::string StaticModel() {
  const std::string graph = MakeGraph(
      "g",
      {MakeNode("Sqrt", {"x"}, {"s"}), MakeNode("Add", {"s", "x"}, {"y"}), MakeNode("Mul", {"y", "x"}, {"z"}),
       MakeNode("Add", {"k", "k"}, {"k2"})},
      {MakeValueInfo("x", 1, {2, 3}), MakeValueInfo("k", 7, {4})},
      {MakeValueInfo("z", 1, {2, 3}), MakeValueInfo("y", 1, {2, 3}), MakeValueInfo("k2", 7, {4})});
  const fs::path model = Scratch("static.onnx");
  WriteFile(model, MakeModel(graph));
  return model.string();
}

void ExpectExit(const CommandResult& r, int code, const std::string& fragment = {}) {
  ASSERT_FALSE(r.signaled) << "killed by signal " << r.signal << "\n" << r.err;
  EXPECT_EQ(r.exit_code, code) << r.out << r.err;
  if (!fragment.empty()) {
    EXPECT_NE((r.err + r.out).find(fragment), std::string::npos) << "wanted '" << fragment << "' in\n"
                                                                 << r.out << r.err;
  }
}

TEST(CompareCli, CpuAgainstCpuPasses) {
  CommandResult r = RunVigil({"compare", kModel, "--backends", "cpu,cpu", "--input", "image=" + Image()});
  ExpectExit(r, 0, "PASS: all 1 output(s) match within tolerance");
  EXPECT_NE(r.out.find("probs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("float32[2,10]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("max abs error 0, max rel error 0, rel L2 error 0, NaN mismatches 0"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("pass when |got-ref| <= 1e-05 + 0.001*|ref|"), std::string::npos) << r.out;
}

TEST(CompareCli, PerNodeWithZeroToleranceFindsNoDivergence) {
  // Two CPU sessions are bitwise identical, so even atol = rtol = 0 passes.
  CommandResult r = RunVigil({"compare", kModel, "--backends", "cpu,cpu", "--input", Image(), "--per-node",
                              "--atol", "0", "--rtol", "0"});
  ExpectExit(r, 0, "PASS: no value diverges");
  r = RunVigil({"compare", kModel, "--backends", "cpu,cpu", "--input", Image(), "--per-node", "--json"});
  ExpectExit(r, 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["pass"], true);
  EXPECT_TRUE(j["first_divergence"].is_null());
  EXPECT_GT(j["compared"].get<int>(), 1);  // the intermediate values, not just the output
  EXPECT_EQ(j["not_compared"], 0);
}

TEST(CompareCli, JsonListsEachOutput) {
  CommandResult r = RunVigil({"compare", kModel, "--backends", "cpu,cpu", "--input", "image=" + Image(), "--json"});
  ExpectExit(r, 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["pass"], true);
  EXPECT_EQ(j["got"], "cpu");
  EXPECT_EQ(j["reference"], "cpu");
  EXPECT_DOUBLE_EQ(j["rtol"].get<double>(), 1e-3);
  EXPECT_DOUBLE_EQ(j["atol"].get<double>(), 1e-5);
  EXPECT_EQ(j["inputs"][0]["name"], "image");
  ASSERT_EQ(j["outputs"].size(), 1u);
  const nlohmann::json& out = j["outputs"][0];
  EXPECT_EQ(out["name"], "probs");
  EXPECT_EQ(out["reference"], "float32[2,10]");
  EXPECT_EQ(out["pass"], true);
  EXPECT_EQ(out["elements"], 20);
  EXPECT_EQ(out["mismatches"], 0);
  EXPECT_EQ(out["max_abs_error"], 0.0);
  EXPECT_TRUE(j["diverging"].empty());
}

TEST(CompareCli, MakesUpInputsForStaticShapes) {
  const std::string model = StaticModel();
  CommandResult r = RunVigil({"compare", model, "--backends", "cpu,cpu", "--json"});
  ExpectExit(r, 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["inputs"].size(), 2u);
  EXPECT_EQ(j["inputs"][0]["source"], "random");
  EXPECT_EQ(j["inputs"][1]["dtype"], "int64");
  ASSERT_EQ(j["outputs"].size(), 3u);
  EXPECT_EQ(j["outputs"][0]["name"], "z");
  EXPECT_EQ(j["outputs"][0]["nan_mismatches"], 0);  // NaN from Sqrt of negatives, on both sides
  EXPECT_EQ(j["outputs"][2]["name"], "k2");
  EXPECT_EQ(j["pass"], true);

  r = RunVigil({"compare", model, "--backends", "cpu,cpu", "--per-node", "--atol", "0", "--rtol", "0"});
  ExpectExit(r, 0, "PASS: no value diverges: 4 value(s) compared in step order");
}

TEST(CompareCli, MadeUpInputsAreTheSameEveryTime) {
  const std::string model = StaticModel();
  CommandResult a = RunVigil({"compare", model, "--backends", "cpu,cpu", "--json"});
  CommandResult b = RunVigil({"compare", model, "--backends", "cpu,cpu", "--json"});
  ExpectExit(a, 0);
  EXPECT_EQ(a.out, b.out);
}

TEST(CompareCli, SymbolicDimWithoutInputIsDiagnosed) {
  CommandResult r = RunVigil({"compare", kModel, "--backends", "cpu,cpu"});
  ExpectExit(r, 1, "error [InvalidInput]: input 'image' has the shape float32[N,3,32,32]");
  EXPECT_NE(r.err.find("--input NAME=FILE"), std::string::npos) << r.err;
}

TEST(CompareCli, WrongInputIsDiagnosed) {
  const std::string small = WriteFloatNpy("small.npy", {2, 3, 16, 16});
  CommandResult r = RunVigil({"compare", kModel, "--backends", "cpu,cpu", "--input", "image=" + small});
  ExpectExit(r, 1, "input 'image' dim 2 is 16, the model expects 32");
}

TEST(CompareCli, BadBackendsAreUsageErrors) {
  ExpectExit(RunVigil({"compare", kModel, "--backends", "cpu,tpu"}), 2,
             "unknown backend 'tpu' in 'cpu,tpu'; the backends are cpu and cuda");
  ExpectExit(RunVigil({"compare", kModel, "--backends", "cpu"}), 2, "expected two backend names");
  ExpectExit(RunVigil({"compare", kModel, "--backends", "cpu,cpu,cpu"}), 2, "expected two backend names");
  ExpectExit(RunVigil({"compare", kModel, "--backends", "cpu,"}), 2, "unknown backend ''");
  ExpectExit(RunVigil({"compare"}), 2);
}

// Without a usable GPU, the cuda side fails to load with the CUDA backend's
// environment diagnosis, exit 1, never a crash.
TEST(CompareCli, CudaWithoutAGpuGivesTheBackendsDiagnosis) {
  for (const std::vector<std::string>& backends : {std::vector<std::string>{"--backends", "cuda,cpu"},
                                                   std::vector<std::string>{}}) {
    std::vector<std::string> args = {"compare", kModel, "--input", Image()};
    args.insert(args.end(), backends.begin(), backends.end());
    CommandResult r = RunVigil(args);
    if (r.exit_code == 0) GTEST_SKIP() << "a GPU is usable here: the comparison ran";
#ifdef VIGIL_BUILD_CUDA
    ExpectExit(r, 1, "\n  symptom: the cuda backend cannot run here");
    EXPECT_EQ(r.err.find("error [Environment]: "), 0u) << r.err;
#else
    ExpectExit(r, 1, "error [Environment]: the CUDA backend module libvigil_cuda.so was not found");
#endif
    EXPECT_NE(r.err.find("compare side: cuda (got)"), std::string::npos) << r.err;
  }
}

TEST(CompareCli, RepeatOnCpuIsDeterministicAndWithinTolerance) {
  CommandResult r = RunVigil({"compare", kModel, "--backends", "cpu,cpu", "--input", Image(), "--repeat", "3"});
  ExpectExit(r, 0, "PASS: deterministic and within tolerance: 3 repeat(s) bitwise identical");
  EXPECT_NE(r.out.find("probs                identical in all 3 repeats"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("repeat 3   PASS"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("compare: repeat 3/3 on cpu"), std::string::npos) << r.err;
}

TEST(CompareCli, RepeatJsonListsEveryRepeatAndTheVerdict) {
  CommandResult r = RunVigil({"compare", StaticModel(), "--backends", "cpu,cpu", "--repeat", "2", "--json"});
  ExpectExit(r, 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["repeat"], 2);
  EXPECT_EQ(j["deterministic"], true);
  EXPECT_EQ(j["within_tolerance"], true);
  EXPECT_EQ(j["pass"], true);
  ASSERT_EQ(j["repeats"].size(), 2u);
  EXPECT_EQ(j["repeats"][1]["outputs"].size(), 3u);
  ASSERT_EQ(j["outputs"].size(), 3u);
  EXPECT_EQ(j["outputs"][0]["differing_repeats"].size(), 0u);
  EXPECT_NE(j["verdict"].get<std::string>().find("deterministic and within tolerance"), std::string::npos);
}

TEST(CompareCli, RepeatUsageErrors) {
  ExpectExit(RunVigil({"compare", kModel, "--backends", "cpu,cpu", "--repeat", "0"}), 2);
  ExpectExit(RunVigil({"compare", kModel, "--backends", "cpu,cpu", "--input", Image(), "--repeat", "2", "--per-node"}),
             2, "--repeat and --per-node cannot be combined");
}

TEST(CompareCli, HelpShowsExamplesToleranceAndExitCodes) {
  CommandResult r = RunVigil({"compare", "--help"});
  ExpectExit(r, 0, "Exit codes");
  for (const char* want :
       {"Examples", "--backends", "--per-node", "--repeat", "--rtol", "--atol", "1e-3", "1e-5", "--input"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  }
}

}  // namespace
}  // namespace vigil::testing

namespace vigil::testing {
namespace {

// Where a GPU is usable: cuda and cpu accumulate in different orders, so at
// a tolerance of zero the comparison must find a diverging value and name
// the node (this is the test that fails if the comparison were broken).
TEST(CompareCli, CudaAgainstCpuAtZeroToleranceNamesTheFirstDivergingNode) {
  std::string image = std::string(VIGIL_EXAMPLES_DIR) + "/tiny_cnn_input.npy";
  std::string model = std::string(VIGIL_EXAMPLES_DIR) + "/tiny_cnn.onnx";
  CommandResult probe = RunVigil({"run", model, "--input", image, "--backend", "cuda"});
  if (probe.exit_code != 0) GTEST_SKIP() << "no usable CUDA backend here";
  CommandResult r = RunVigil({"compare", model, "--backends", "cuda,cpu", "--input", image, "--per-node", "--rtol",
                              "0", "--atol", "0"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("FAIL: first diverging value"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Conv"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace vigil::cli

namespace vigil::testing {
namespace {

// Where a GPU is usable: the Diverge test op adds 0.5 to element 0 on CUDA
// only, the same in every repeat, so --repeat reports a steady disagreement
// (not a flaky one) and exit 1.
TEST(CompareCli, RepeatOnTheGpuReportsSteadyDisagreementOfDiverge) {
  setenv("VIGIL_ENABLE_TEST_OPS", "1", 1);
  NodeOptions diverge;
  diverge.name = "d";
  diverge.domain = "ai.vigil.testing";
  const std::string graph = MakeGraph(
      "g", {MakeNode("Diverge", {"x"}, {"y"}, {}, diverge)},
      {MakeValueInfo("x", 1, {2, 3})}, {MakeValueInfo("y", 1, {2, 3})});
  const fs::path model = Scratch("diverge.onnx");
  WriteFile(model, MakeModel(graph, {{"", 17}, {"ai.vigil.testing", 1}}));
  CommandResult probe = RunVigil({"run", model.string(), "--backend", "cuda"});
  if (probe.exit_code != 0) {
    unsetenv("VIGIL_ENABLE_TEST_OPS");
    GTEST_SKIP() << "no usable CUDA backend here";
  }
  CommandResult r = RunVigil({"compare", model.string(), "--backends", "cuda,cpu", "--repeat", "3"});
  unsetenv("VIGIL_ENABLE_TEST_OPS");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("disagrees with the cpu reference beyond tolerance in every repeat, the same way"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("identical in all 3 repeats"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace vigil::testing
