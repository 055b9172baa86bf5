// A micro benchmark of the CUDA elementwise, Transpose, Softmax and
// LayerNormalization kernels on the shapes that dominate ViT-B/16,
// ResNet-50 and MobileNetV2 at batch 64 in float16. Skipped unless
// VIGIL_CUDA_BENCH=1 (it takes a while and measures, it does not check).
//
// The kernels live in the CUDA module, behind the session, so each op is
// timed as the difference between two chains of it: a model of 1 + kChain
// nodes and one of 1 node, both run on device-resident inputs. What the run
// adds around the nodes (validation, the output's copy back) cancels out;
// per node = (median(long) - median(short)) / kChain, medians of 50 timed
// runs after warm-up. GB/s counts the bytes each node must read and write.
//
//   VIGIL_CUDA_BENCH=1 ./vigil_cuda_tests --gtest_filter='CudaKernelBench.*'
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "backends/cpu/kernel_test_util.h"
#include "backends/cuda/cuda_test_util.h"

namespace vigil::cuda {
namespace {

using ir::DataType;
using runtime::Tensor;
using testing::RandomTensor;
namespace ct = cpu::testing;

using Shape = std::vector<int64_t>;

constexpr int kChain = 20;
constexpr int kWarmup = 5;
constexpr int kRuns = 50;

struct BenchCase {
  std::string label;
  std::string op;
  Shape shape;                                  // of the chained input (and output)
  std::vector<ir::Attribute> attrs;
  std::vector<Tensor> constants;                // further inputs, as initializers
  double bytes_per_element = 4;                 // bytes moved per output element
  int64_t opset = 17;
};

// x -> op -> op -> ... (`nodes` of them); every node's input 0 is the
// previous output and its further inputs the case's constants.
ir::Model ChainModel(const BenchCase& c, int nodes) {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", c.opset}};
  ir::ValueInfo in;
  in.name = "x";
  in.has_type = true;
  in.type = ops::TensorType(DataType::kFloat16, c.shape);
  m.graph.inputs.push_back(in);
  for (size_t i = 0; i < c.constants.size(); ++i) {
    m.graph.initializers.push_back(c.constants[i].AsConstant("c" + std::to_string(i)));
  }
  std::string prev = "x";
  for (int k = 0; k < nodes; ++k) {
    ir::Node node;
    node.op_type = c.op;
    node.name = c.op + std::to_string(k);
    node.attributes = c.attrs;
    node.inputs.push_back(prev);
    for (size_t i = 0; i < c.constants.size(); ++i) node.inputs.push_back("c" + std::to_string(i));
    prev = "y" + std::to_string(k);
    node.outputs.push_back(prev);
    m.graph.nodes.push_back(node);
  }
  ir::ValueInfo out;
  out.name = prev;
  m.graph.outputs.push_back(out);
  return m;
}

// Median host time of one run of the chain, in seconds.
double MedianRunSeconds(const BenchCase& c, int nodes, const Tensor& x) {
  runtime::SessionOptions options;
  options.backends = {testing::CudaBackendForTests()};
  options.no_fallback = true;
  options.constant_folding = false;
  auto session = runtime::Session::Create(ChainModel(c, nodes), options);
  if (!session.ok()) {
    ADD_FAILURE() << c.label << ": " << session.status().ToString();
    return 0;
  }
  auto up = (*session)->UploadInput(x);
  if (!up.ok()) {
    ADD_FAILURE() << c.label << ": " << up.status().ToString();
    return 0;
  }
  runtime::InputBinding b{"x", up->dtype(), up->shape(), up->raw_data(), up->byte_size(), "", up->device()};
  std::vector<double> times;
  for (int i = 0; i < kWarmup + kRuns; ++i) {
    auto start = std::chrono::steady_clock::now();
    auto r = (*session)->Run({b});
    auto end = std::chrono::steady_clock::now();
    if (!r.ok()) {
      ADD_FAILURE() << c.label << ": " << r.status().ToString();
      return 0;
    }
    if (i >= kWarmup) times.push_back(std::chrono::duration<double>(end - start).count());
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

Tensor Half(Shape shape, uint32_t seed, float lo = -1, float hi = 1) {
  return RandomTensor(DataType::kFloat16, std::move(shape), seed, lo, hi);
}

std::vector<BenchCase> Cases() {
  const Shape vit = {64, 197, 768}, heads = {64, 197, 12, 64}, mlp = {64, 197, 3072};
  const Shape resnet = {64, 256, 56, 56}, mobilenet = {64, 144, 56, 56};
  std::vector<BenchCase> v;
  // Transposes (self-inverse permutations, so that the chain is well typed).
  v.push_back({"Transpose [64,197,12,64] perm 0213 (rows)", "Transpose", heads,
               {ct::IntsAttr("perm", {0, 2, 1, 3})}, {}, 4});
  v.push_back({"Transpose [64,12,197,64] perm 0132 (tiles)", "Transpose", {64, 12, 197, 64},
               {ct::IntsAttr("perm", {0, 1, 3, 2})}, {}, 4});
  v.push_back({"Transpose [64,768,196] perm 021 (tiles)", "Transpose", {64, 768, 196},
               {ct::IntsAttr("perm", {0, 2, 1})}, {}, 4});
  // Binary: same shape, trailing bias, per-channel NCHW, scalar.
  v.push_back({"Add [64,197,768] + same (residual)", "Add", vit, {}, {Half(vit, 2)}, 6});
  v.push_back({"Add [64,197,768] + [768] (bias)", "Add", vit, {}, {Half({768}, 3)}, 4});
  v.push_back({"Mul [64,197,3072] * same", "Mul", mlp, {}, {Half(mlp, 4)}, 6});
  v.push_back({"Div [64,197,3072] / scalar", "Div", mlp, {}, {Half({}, 5, 1.2f, 1.5f)}, 4});
  v.push_back({"Add [64,256,56,56] + same (residual)", "Add", resnet, {}, {Half(resnet, 6)}, 6});
  v.push_back({"Add [64,256,56,56] + [256,1,1] (channel)", "Add", resnet, {}, {Half({256, 1, 1}, 7)}, 4});
  // Unary.
  v.push_back({"Erf [64,197,3072]", "Erf", mlp, {}, {}, 4});
  v.push_back({"Relu [64,256,56,56]", "Relu", resnet, {}, {}, 4});
  v.push_back({"Clip [64,144,56,56] 0..6", "Clip", mobilenet, {}, {Half({}, 8, 0, 0), Half({}, 9, 6, 6)}, 4});
  // Normalisations over the last axis.
  v.push_back({"Softmax [64,12,197,197] axis -1", "Softmax", {64, 12, 197, 197}, {ct::IntAttr("axis", -1)}, {}, 4});
  v.push_back({"LayerNormalization [64,197,768]", "LayerNormalization", vit, {ct::IntAttr("axis", -1)},
               {Half({768}, 10), Half({768}, 11)}, 4});
  return v;
}

TEST(CudaKernelBench, Float16ModelShapes) {
  const char* on = std::getenv("VIGIL_CUDA_BENCH");
  if (!on || std::string(on) != "1") GTEST_SKIP() << "a benchmark: set VIGIL_CUDA_BENCH=1 to run it";
  VIGIL_SKIP_WITHOUT_CUDA();
  std::printf("%-46s %10s %10s\n", "float16 kernel", "us/node", "GB/s");
  for (const BenchCase& c : Cases()) {
    const Tensor x = Half(c.shape, 1);
    const double one = MedianRunSeconds(c, 1, x);
    const double many = MedianRunSeconds(c, 1 + kChain, x);
    const double per_node = (many - one) / kChain;
    const double bytes = c.bytes_per_element * static_cast<double>(x.element_count());
    std::printf("%-46s %10.1f %10.0f\n", c.label.c_str(), per_node * 1e6, per_node > 0 ? bytes / per_node / 1e9 : 0.0);
    std::fflush(stdout);
  }
}

}  // namespace
}  // namespace vigil::cuda
