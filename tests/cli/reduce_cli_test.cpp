// `vigil reduce` end to end, on the CPU: a 100+ node model with one injected
// failing node (the test-only ops of ai.vigil.testing, enabled by
// VIGIL_ENABLE_TEST_OPS=1) is reduced to exactly that node.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "run_vigil.h"
#include "support/onnx_builder.h"

namespace vigil::testing {
namespace {

namespace fs = std::filesystem;

fs::path Scratch(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("vigil_reduce_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

// Sets VIGIL_ENABLE_TEST_OPS=1 for the vigil processes a test starts.
class TestOpsEnabled {
 public:
  TestOpsEnabled() { setenv("VIGIL_ENABLE_TEST_OPS", "1", 1); }
  ~TestOpsEnabled() { unsetenv("VIGIL_ENABLE_TEST_OPS"); }
};

NodeOptions Named(const std::string& name, const std::string& domain = {}) {
  NodeOptions o;
  o.name = name;
  o.domain = domain;
  return o;
}

std::vector<float> Filled(size_t n, float base) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = base + 0.01f * static_cast<float>(i % 7);
  return v;
}

// 108 nodes in blocks of six on x: float32[1,2,4,4] (Conv with weights and
// bias, Add of an initializer or of a value six nodes back, Mul, Relu, and a
// Reshape to [1,32] and back), with a `bad_op` node of ai.vigil.testing
// named "bad" after node 54 when bad_op is not empty.
std::string ChainModel(const std::string& file, const std::string& bad_op) {
  std::vector<std::string> nodes, inits;
  std::string prev = "x";
  std::vector<std::string> values;
  for (int i = 0; i < 108; ++i) {
    const std::string out = "v" + std::to_string(i), p = "p" + std::to_string(i);
    const std::string name = "n" + std::to_string(i);
    switch (i % 6) {
      case 0:
        inits.push_back(MakeFloatTensor(p + "_w", {2, 2, 3, 3}, Filled(36, 0.05f)));
        inits.push_back(MakeFloatTensor(p + "_b", {2}, {0.1f, -0.1f}));
        nodes.push_back(MakeNode("Conv", {prev, p + "_w", p + "_b"}, {out}, {AttrInts("pads", {1, 1, 1, 1})},
                                 Named(name)));
        break;
      case 1:
        if (i % 12 == 7) {
          nodes.push_back(MakeNode("Add", {prev, values[i - 6]}, {out}, {}, Named(name)));
        } else {
          inits.push_back(MakeFloatTensor(p, {4}, Filled(4, -0.2f)));
          nodes.push_back(MakeNode("Add", {prev, p}, {out}, {}, Named(name)));
        }
        break;
      case 2:
        inits.push_back(MakeFloatTensor(p, {1}, {0.5f}));
        nodes.push_back(MakeNode("Mul", {prev, p}, {out}, {}, Named(name)));
        break;
      case 3: nodes.push_back(MakeNode("Relu", {prev}, {out}, {}, Named(name))); break;
      case 4:
        inits.push_back(MakeTensor(p, 7, {2}, RawBytes(std::vector<int64_t>{1, 32})));
        nodes.push_back(MakeNode("Reshape", {prev, p}, {out}, {}, Named(name)));
        break;
      case 5:
        inits.push_back(MakeTensor(p, 7, {4}, RawBytes(std::vector<int64_t>{1, 2, 4, 4})));
        nodes.push_back(MakeNode("Reshape", {prev, p}, {out}, {}, Named(name)));
        break;
    }
    values.push_back(out);
    prev = out;
    if (i == 54 && !bad_op.empty()) {
      nodes.push_back(MakeNode(bad_op, {prev}, {"bad_out"}, {}, Named("bad", "ai.vigil.testing")));
      prev = "bad_out";
      values.back() = prev;  // later skip connections read through it
    }
  }
  GraphParts parts;
  parts.initializers = inits;
  const std::string graph = MakeGraph("chain", nodes, {MakeValueInfo("x", 1, {1, 2, 4, 4})},
                                      {MakeValueInfo(prev, 1, {1, 2, 4, 4})}, parts);
  const fs::path path = Scratch(file);
  WriteFile(path, MakeModel(graph, {{"", 17}, {"ai.vigil.testing", 1}}));
  return path.string();
}

std::string RunCheck() { return std::string(VIGIL_BINARY) + " run {model} {inputs}"; }

nlohmann::json ParseJson(const CommandResult& r) {
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not JSON: " << e.what() << "\n" << r.out << r.err;
    return {};
  }
}

void ExpectExit(const CommandResult& r, int code, const std::string& fragment = {}) {
  ASSERT_FALSE(r.signaled) << "killed by signal " << r.signal << "\n" << r.err;
  EXPECT_EQ(r.exit_code, code) << r.out << r.err;
  if (!fragment.empty()) {
    EXPECT_NE((r.err + r.out).find(fragment), std::string::npos) << "wanted '" << fragment << "' in\n"
                                                                 << r.out << r.err;
  }
}

// The reduced model must be one node of `op`, readable by our reader, with
// inputs that `vigil check` accepts for it.
void ExpectReducedTo(const nlohmann::json& j, const std::string& op) {
  const nlohmann::json& reduced = j["reduced"];
  ASSERT_EQ(reduced["nodes"].size(), 1u) << j.dump(2);
  EXPECT_EQ(reduced["nodes"][0]["op_type"], op);
  EXPECT_EQ(reduced["nodes"][0]["name"], "bad");
  EXPECT_EQ(reduced["nodes"][0]["index"], 55);
  const std::string model = reduced["model"];
  CommandResult inspect = RunVigil({"inspect", model, "--json"});
  ExpectExit(inspect, 0);
  nlohmann::json info = ParseJson(inspect);
  EXPECT_EQ(info["nodes"], 1) << inspect.out;
  std::vector<std::string> args = {"check", model};
  ASSERT_EQ(reduced["inputs"].size(), 1u);
  EXPECT_EQ(reduced["inputs"][0]["name"], "v54");
  EXPECT_EQ(reduced["inputs"][0]["recorded"], true);
  args.push_back("--input");
  args.push_back(reduced["inputs"][0]["name"].get<std::string>() + "=" + reduced["inputs"][0]["file"].get<std::string>());
  ExpectExit(RunVigil(args), 0);
}

TEST(ReduceCli, FindsTheCrashingNodeInA109NodeModel) {
  TestOpsEnabled enabled;
  const std::string model = ChainModel("crash.onnx", "Crash");
  const std::string out = Scratch("crash_out/crash.reduced.onnx").string();
  CommandResult r = RunVigil({"reduce", model, "--check", RunCheck(), "--output", out, "--json"});
  ExpectExit(r, 0);
  nlohmann::json j = ParseJson(r);
  EXPECT_EQ(j["nodes_in_model"], 109);
  ExpectReducedTo(j, "Crash");
  EXPECT_TRUE(fs::exists(Scratch("crash_out/crash.reduced_inputs/v54.npy")));
  // The crash killed recording children, never vigil; the report says which node.
  ASSERT_EQ(j["recording"]["failed_nodes"].size(), 1u) << j["recording"].dump(2);
  EXPECT_EQ(j["recording"]["failed_nodes"][0]["index"], 55);
  EXPECT_NE(j["recording"]["failed_nodes"][0]["why"].get<std::string>().find("SIGSEGV"), std::string::npos);
  EXPECT_LE(j["steps"].size(), 20u) << "binary search expected";
  EXPECT_NE(r.err.find("[1] nodes 0..108 (109 nodes): fails"), std::string::npos) << r.err;
  EXPECT_NE(j["reproduce"].get<std::string>().find(out), std::string::npos);
}

TEST(ReduceCli, TextReportNamesTheNodeAndTheReproduceCommand) {
  TestOpsEnabled enabled;
  const std::string model = ChainModel("crash_text.onnx", "Crash");
  const std::string out = Scratch("text_out.onnx").string();
  CommandResult r = RunVigil({"reduce", model, "--check", RunCheck(), "-o", out});
  ExpectExit(r, 0, "reduced");
  EXPECT_NE(r.out.find("to 1 of its 109 nodes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ai.vigil.testing.Crash"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("'bad'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reproduce:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--input 'v54="), std::string::npos) << r.out;
}

TEST(ReduceCli, FailRegexSelectsTheFailure) {
  TestOpsEnabled enabled;
  const std::string model = ChainModel("fail.onnx", "Fail");
  const std::string out = Scratch("fail_out.onnx").string();
  CommandResult r = RunVigil(
      {"reduce", model, "--check", RunCheck(), "--fail-regex", "injected failure", "--output", out, "--json"});
  ExpectExit(r, 0);
  nlohmann::json j = ParseJson(r);
  ExpectReducedTo(j, "Fail");
  // A regex that matches nothing: the check passes on the whole model.
  CommandResult none = RunVigil({"reduce", model, "--check", RunCheck(), "--fail-regex", "no such text", "-o", out});
  ExpectExit(none, 1, "nothing to reduce: the check passes on the whole model");
}

TEST(ReduceCli, TimedOutChecksCountAsFailingAndAreKilled) {
  const std::string model = ChainModel("hang.onnx", "Crash");
  const std::string out = Scratch("hang_out.onnx").string();
  // The op type is in the model file's bytes: a check that hangs on it.
  auto start = std::chrono::steady_clock::now();
  CommandResult r = RunVigil({"reduce", model, "--check", "if grep -q Crash {model}; then sleep 30; fi", "--timeout",
                              "0.5", "-o", out, "--json"});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ExpectExit(r, 0);
  nlohmann::json j = ParseJson(r);
  ASSERT_EQ(j["reduced"]["nodes"].size(), 1u) << r.out;
  EXPECT_EQ(j["reduced"]["nodes"][0]["op_type"], "Crash");
  EXPECT_NE(r.err.find("timed out after 0.5 s"), std::string::npos) << r.err;
  EXPECT_LT(seconds, 25) << "the sleeping check processes were not killed";
}

TEST(ReduceCli, WholeModelPassingIsNothingToReduce) {
  const std::string model = ChainModel("clean.onnx", "");
  CommandResult r = RunVigil({"reduce", model, "--check", RunCheck(), "-o", Scratch("clean_out.onnx").string()});
  ExpectExit(r, 1, "nothing to reduce: the check passes on the whole model");
  EXPECT_NE(r.err.find("check result: exit 0"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(Scratch("clean_out.onnx")));
}

TEST(ReduceCli, BadCheckIsAUsageError) {
  const std::string model = ChainModel("usage.onnx", "");
  ExpectExit(RunVigil({"reduce", model, "--check", ""}), 2, "--check is empty");
  ExpectExit(RunVigil({"reduce", model}), 2, "--check is empty");
  ExpectExit(RunVigil({"reduce", model, "--check", "vigil run model.onnx"}), 2, "does not contain {model}");
  ExpectExit(RunVigil({"reduce", model, "--check", RunCheck(), "--fail-regex", "("}), 2,
             "is not a valid regular expression");
  ExpectExit(RunVigil({"reduce", model, "--check", RunCheck(), "--first-divergent"}), 2, "takes no --check");
}

TEST(ReduceCli, FirstDivergentOnIdenticalBackendsHasNothingToReduce) {
  const std::string model = ChainModel("same.onnx", "");
  CommandResult r = RunVigil({"reduce", model, "--first-divergent", "--backends", "cpu,cpu"});
  ExpectExit(r, 1, "nothing to reduce: no value diverges between cpu and cpu");
  ExpectExit(RunVigil({"reduce", model, "--first-divergent", "--backends", "cpu"}), 2, "GOT,REFERENCE");
}

// On a GPU: Diverge adds 0.5 to element 0 on CUDA only, so it is the first
// diverging node, and alone it still diverges.
TEST(ReduceCli, FirstDivergentFindsTheDivergeNodeOnTheGpu) {
  TestOpsEnabled enabled;
  const std::string model = ChainModel("diverge.onnx", "Diverge");
  CommandResult probe = RunVigil({"run", model, "--backend", "cuda"});
  if (probe.exit_code != 0) GTEST_SKIP() << "no usable CUDA backend here";
  const std::string out = Scratch("diverge_out.onnx").string();
  CommandResult r = RunVigil({"reduce", model, "--first-divergent", "--backends", "cuda,cpu", "-o", out, "--json"});
  ExpectExit(r, 0);
  nlohmann::json j = ParseJson(r);
  ExpectReducedTo(j, "Diverge");
  EXPECT_EQ(j["alone_diverges"], true) << r.out;
}

TEST(ReduceCli, HelpShowsPlaceholdersExamplesAndExitCodes) {
  CommandResult r = RunVigil({"reduce", "--help"});
  ExpectExit(r, 0, "Exit codes");
  for (const char* want : {"{model}", "{inputs}", "{dir}", "--fail-regex", "--first-divergent", "--timeout",
                           "--keep-temp", "Examples"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want;
  }
}

}  // namespace
}  // namespace vigil::testing
