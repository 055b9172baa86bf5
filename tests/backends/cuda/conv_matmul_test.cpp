// Conv/ConvTranspose (cuDNN) and MatMul/Gemm (cuBLASLt) against the CPU
// reference, at odd sizes and with each attribute family.
#include "cuda_test_util.h"

namespace vigil::cuda::testing {
namespace {

using cpu::testing::FloatAttr;
using cpu::testing::IntAttr;
using cpu::testing::IntsAttr;

constexpr ir::DataType kF32 = ir::DataType::kFloat32;
constexpr ir::DataType kF16 = ir::DataType::kFloat16;
constexpr ir::DataType kBF16 = ir::DataType::kBfloat16;

double Tol(ir::DataType t) { return t == kF32 ? 1e-5 : 1e-2; }

struct ConvCase {
  std::vector<int64_t> x, w;
  std::vector<ir::Attribute> attrs;
  bool bias = true;
};

void CheckConv(const ConvCase& k, ir::DataType t, bool transpose = false) {
  NodeCase c;
  c.op = transpose ? "ConvTranspose" : "Conv";
  c.attributes = k.attrs;
  c.inputs = {RandomTensor(t, k.x, 1), RandomTensor(t, k.w, 2)};
  c.constant = {false, true, true};
  if (k.bias) c.inputs.push_back(RandomTensor(t, {transpose ? k.w[1] * 1 : k.w[0]}, 3));
  ExpectCudaMatchesCpu(c, Tol(t));
}

TEST(CudaConv, Conv2DOddChannelsPadsStrides) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (ir::DataType t : {kF32, kF16, kBF16}) {
    CheckConv({{2, 13, 17, 15}, {127, 13, 3, 3}, {IntsAttr("pads", {1, 1, 1, 1})}}, t);
    CheckConv({{1, 3, 31, 29}, {8, 3, 7, 7}, {IntsAttr("pads", {3, 2, 1, 3}), IntsAttr("strides", {2, 2})}}, t);
    CheckConv({{1, 8, 19, 19}, {16, 8, 3, 3}, {IntsAttr("dilations", {2, 2})}, false}, t);
  }
}

TEST(CudaConv, GroupedAndDepthwise) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (ir::DataType t : {kF32, kF16}) {
    CheckConv({{1, 32, 15, 15}, {32, 1, 3, 3}, {IntAttr("group", 32), IntsAttr("pads", {1, 1, 1, 1})}}, t);
    CheckConv({{2, 12, 9, 11}, {18, 4, 3, 3}, {IntAttr("group", 3)}}, t);
  }
}

TEST(CudaConv, Conv1DAnd3DAndAutoPad) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (ir::DataType t : {kF32, kF16}) {
    CheckConv({{2, 5, 37}, {7, 5, 5}, {IntsAttr("pads", {2, 1}), IntsAttr("strides", {2})}}, t);
    CheckConv({{1, 3, 7, 9, 11}, {4, 3, 3, 3, 3}, {IntsAttr("pads", {1, 1, 1, 1, 1, 1})}}, t);
    CheckConv({{1, 4, 10, 13}, {6, 4, 3, 3}, {ir::Attribute(cpu::testing::StringAttr("auto_pad", "SAME_UPPER")),
                                               IntsAttr("strides", {2, 2})}}, t);
  }
}

TEST(CudaConv, ConvTranspose) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (ir::DataType t : {kF32, kF16}) {
    CheckConv({{1, 13, 7, 9}, {13, 6, 3, 3}, {IntsAttr("strides", {2, 2}), IntsAttr("pads", {1, 1, 1, 1})}}, t, true);
    CheckConv({{2, 4, 5, 5}, {4, 3, 4, 4}, {IntsAttr("strides", {2, 2}), IntsAttr("output_padding", {1, 1})}}, t,
              true);
  }
}

void CheckMatMul(std::vector<int64_t> a, std::vector<int64_t> b, ir::DataType t) {
  NodeCase c;
  c.op = "MatMul";
  c.inputs = {RandomTensor(t, a, 4), RandomTensor(t, b, 5)};
  ExpectCudaMatchesCpu(c, Tol(t));
}

TEST(CudaMatMul, ShapesAndBroadcasts) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (ir::DataType t : {kF32, kF16, kBF16}) {
    CheckMatMul({13, 127}, {127, 33}, t);
    CheckMatMul({3, 7, 13, 64}, {3, 7, 64, 9}, t);
    CheckMatMul({4, 17, 31}, {31, 5}, t);          // broadcast B
    CheckMatMul({31}, {2, 31, 6}, t);              // 1-D A
    CheckMatMul({2, 5, 31}, {31}, t);              // 1-D B
    CheckMatMul({2, 1, 5, 8}, {1, 3, 8, 4}, t);    // partial broadcast
  }
}

void CheckGemm(int64_t m, int64_t n, int64_t k, bool ta, bool tb, std::vector<int64_t> c_shape, float alpha,
               float beta, ir::DataType t) {
  NodeCase c;
  c.op = "Gemm";
  c.opset = 13;
  c.attributes = {IntAttr("transA", ta), IntAttr("transB", tb), FloatAttr("alpha", alpha), FloatAttr("beta", beta)};
  c.inputs = {RandomTensor(t, ta ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k}, 6),
              RandomTensor(t, tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, 7)};
  c.constant = {false, true, true};
  if (!c_shape.empty() || beta != 0) c.inputs.push_back(RandomTensor(t, c_shape, 8));
  ExpectCudaMatchesCpu(c, Tol(t));
}

TEST(CudaGemm, TransposesBiasAndBlend) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (ir::DataType t : {kF32, kF16}) {
    CheckGemm(13, 127, 65, false, true, {127}, 1.0f, 1.0f, t);     // bias epilogue
    CheckGemm(13, 127, 65, true, false, {13, 127}, 0.5f, 2.0f, t); // full C, blended
    CheckGemm(7, 9, 5, true, true, {7, 1}, 1.0f, 1.0f, t);         // column broadcast
    CheckGemm(7, 9, 5, false, false, {}, 1.5f, 1.0f, t);           // scalar C
  }
}

}  // namespace
}  // namespace vigil::cuda::testing
