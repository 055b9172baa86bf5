// `vigil bench` end to end: generated inputs (float32 and float16, symbolic
// dims from --dim), the JSON report, and diagnosed bad options.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "run_vigil.h"
#include "support/onnx_builder.h"

namespace vigil::testing {
namespace {

namespace fs = std::filesystem;

const std::string kModel = std::string(VIGIL_EXAMPLES_DIR) + "/tiny_cnn.onnx";

TEST(BenchCli, ExampleWithGeneratedBatch) {
  CommandResult r = RunVigil({"bench", kModel, "--dim", "N=3", "--warmup", "1", "--iters", "5", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_EQ(j["iters"], 5);
  EXPECT_GT(j["p50_ms"].get<double>(), 0.0);
  EXPECT_LE(j["p50_ms"].get<double>(), j["p99_ms"].get<double>());
  EXPECT_GT(j["arena_bytes"].get<double>(), 0.0);
}

// The --tf32/--fp16 comparison runs on a GPU only; the JSON says why not.
TEST(BenchCli, PrecisionOptionsAreForTheGpu) {
  CommandResult r = RunVigil({"bench", kModel, "--dim", "N=2", "--iters", "2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["precision_options_skipped"], "not on the GPU");
  EXPECT_FALSE(j.contains("precision_options"));
  r = RunVigil({"bench", kModel, "--dim", "N=2", "--iters", "2", "--json", "--no-precision-hint"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["precision_options_skipped"], "--no-precision-hint");
  r = RunVigil({"bench", kModel, "--dim", "N=2", "--iters", "2", "--fp16"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("precision:"), std::string::npos) << r.out;
}

TEST(BenchCli, GeneratesFloat16AndBfloat16Inputs) {
  fs::path dir = fs::temp_directory_path() / ("vigil_bench_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (int dtype : {10, 16}) {  // FLOAT16, BFLOAT16
    std::string graph = MakeGraph("g", {MakeNode("Relu", {"x"}, {"y"})}, {MakeValueInfo("x", dtype, {"N", 7})},
                                  {MakeValueInfo("y", dtype, {"N", 7})});
    fs::path model = dir / ("relu_" + std::to_string(dtype) + ".onnx");
    WriteFile(model, MakeModel(graph, {{"", 17}}));
    CommandResult r = RunVigil({"bench", model.string(), "--dim", "N=5", "--iters", "3", "--json"});
    EXPECT_EQ(r.exit_code, 0) << "dtype " << dtype << ": " << r.out << r.err;
  }
  fs::remove_all(dir);
}

TEST(BenchCli, ProfileTimesEveryNodeAndWritesATrace) {
  fs::path trace = fs::temp_directory_path() / ("vigil_bench_trace_" + std::to_string(::getpid()) + ".json");
  CommandResult r = RunVigil({"bench", kModel, "--dim", "N=2", "--warmup", "1", "--iters", "4", "--profile",
                              trace.string(), "--profile-top", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("profile: 4 run(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("slowest nodes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("by op type"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Conv"), std::string::npos) << r.out;
  std::ifstream in(trace);
  nlohmann::json j = nlohmann::json::parse(in);
  // One event per node of the tiny CNN, in execution order, back to back.
  CommandResult inspect = RunVigil({"inspect", kModel, "--json"});
  size_t nodes = nlohmann::json::parse(inspect.out)["nodes"].get<size_t>();
  ASSERT_EQ(j["traceEvents"].size(), nodes);
  double t = 0;
  for (const auto& e : j["traceEvents"]) {
    EXPECT_EQ(e["ph"], "X");
    EXPECT_DOUBLE_EQ(e["ts"].get<double>(), t);
    EXPECT_GT(e["dur"].get<double>(), 0.0);
    t += e["dur"].get<double>();
  }
  fs::remove(trace);
}

TEST(BenchCli, InputsOnDeviceNeedADevice) {
  CommandResult r = RunVigil({"bench", kModel, "--iters", "1", "--inputs-on-device"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("no node of this session runs on a device"), std::string::npos) << r.err;
}

TEST(BenchCli, OutputsOnDeviceNeedADevice) {
  CommandResult r = RunVigil({"bench", kModel, "--iters", "1", "--outputs-on-device"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("cannot be kept on the device: no node of this session runs on one"), std::string::npos)
      << r.err;
}

TEST(BenchCli, BadDimIsDiagnosed) {
  CommandResult r = RunVigil({"bench", kModel, "--dim", "N=lots"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("'lots' is not a number"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace vigil::testing
