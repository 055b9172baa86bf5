// `vigil bench` end to end: generated inputs (float32 and float16, symbolic
// dims from --dim), the JSON report, and diagnosed bad options.
#include <unistd.h>

#include <filesystem>

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

TEST(BenchCli, BadDimIsDiagnosed) {
  CommandResult r = RunVigil({"bench", kModel, "--dim", "N=lots"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("'lots' is not a number"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace vigil::testing
