// Writing a subgraph cut out by `vigil reduce` as files a check command (or a
// user) can run: MODEL.onnx plus one .npy per graph input. Shared by the
// check mode and --first-divergent.
#pragma once

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "ir/graph.h"
#include "runtime/tensor.h"

namespace vigil::cli {

// Options of `vigil reduce`, shared by its two modes.
struct ReduceOptions {
  std::string model_path;
  std::string check;
  std::string fail_regex;
  std::vector<std::string> inputs;
  std::string output;  // empty: MODEL's stem + ".reduced.onnx" in the current directory
  double timeout_s = 60;
  int max_checks = 200;
  bool keep_temp = false;
  bool json = false;
  bool first_divergent = false;
  std::string backends = "cuda,cpu";
  double rtol = 1e-3;
  double atol = 1e-5;
};

struct WrittenSubgraph {
  std::string model_path;
  std::vector<std::pair<std::string, std::string>> inputs;  // value name, .npy path
  std::vector<std::string> made_up;  // inputs with no recorded value: random values of the inferred type
};

// Writes `sub` to `model_path` and each of its graph inputs to
// `inputs_dir`/<safe name>.npy, from `values`; an input without a value gets
// seeded random values when its type is fully known, else it is an error.
Result<WrittenSubgraph> WriteSubgraph(const ir::Model& sub,
                                      const std::unordered_map<std::string, runtime::Tensor>& values,
                                      const std::string& model_path, const std::string& inputs_dir);

// "resnet.onnx" -> "resnet.reduced.onnx" (in the current directory).
std::string DefaultReducedPath(const std::string& model_path);
// "out/x.reduced.onnx" -> "out/x.reduced_inputs".
std::string InputsDirFor(const std::string& output_path);

// Value names as file names: characters outside [A-Za-z0-9._-] become '_',
// and clashes get a numeric suffix.
std::vector<std::string> SafeFileNames(const std::vector<std::string>& names);

// Text and JSON lines for the kept nodes, inputs and outputs of `sub`.
std::string DescribeSubgraph(const ir::Model& sub, const std::vector<size_t>& original_indices,
                             const WrittenSubgraph& written);
nlohmann::json SubgraphJson(const ir::Model& sub, const std::vector<size_t>& original_indices,
                            const WrittenSubgraph& written);

// A fresh temporary directory (mkdtemp under $TMPDIR or /tmp).
Result<std::string> MakeTempDir(const std::string& prefix);

}  // namespace vigil::cli
