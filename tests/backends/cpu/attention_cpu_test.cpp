// ai.vigil.Attention on the CPU (ir/fuse_attention.h) against the spec's
// formula written out independently here, on small odd sizes, both layouts
// and every float dtype; and its shape inference.
#include <cmath>

#include <gtest/gtest.h>

#include "float_kernel_test_util.h"
#include "ir/fuse_attention.h"
#include "ir/layout_nhwc.h"  // kVigilDomain

namespace vigil::cpu {
namespace {

using namespace vigil::cpu::float_testing;

ir::Node AttentionNode(int64_t heads, float scale, const std::string& layout) {
  ir::Node n = kt::MakeNode(ir::kAttentionOp, {"qkv"}, {"y"});
  n.domain = ir::kVigilDomain;
  n.attributes = {kt::IntAttr("num_heads", heads), kt::FloatAttr("scale", scale)};
  if (!layout.empty()) n.attributes.push_back(kt::StringAttr("layout", layout));
  return n;
}

// Y for QKV `x` of [S,B,3E] (sbe) or [B,S,3E] (bse), in double.
std::vector<double> Reference(const std::vector<double>& x, bool sbe, int64_t seq, int64_t batch, int64_t heads,
                              int64_t dim, double scale) {
  const int64_t e = heads * dim;
  auto in = [&](int64_t s, int64_t b, int64_t c) { return x[((sbe ? s * batch + b : b * seq + s) * 3 * e) + c]; };
  std::vector<double> y(static_cast<size_t>(seq * batch * e));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t s = 0; s < seq; ++s) {
        std::vector<double> p(static_cast<size_t>(seq));
        double top = -INFINITY, sum = 0;
        for (int64_t t = 0; t < seq; ++t) {
          double dot = 0;
          for (int64_t j = 0; j < dim; ++j) dot += in(s, b, h * dim + j) * in(t, b, e + h * dim + j);
          p[t] = scale * dot;
          top = std::max(top, p[t]);
        }
        for (double& v : p) sum += (v = std::exp(v - top));
        for (int64_t i = 0; i < dim; ++i) {
          double acc = 0;
          for (int64_t t = 0; t < seq; ++t) acc += p[t] / sum * in(t, b, 2 * e + h * dim + i);
          y[(sbe ? s * batch + b : b * seq + s) * e + h * dim + i] = acc;
        }
      }
    }
  }
  return y;
}

void ExpectMatchesReference(DataType dt, const std::string& layout) {
  const int64_t seq = 7, batch = 3, heads = 2, dim = 5, e = heads * dim;
  const bool sbe = layout != "bse";
  const double scale = 1.0 / std::sqrt(double(dim));
  // Values in [-3, 3) so the softmax is far from uniform.
  std::vector<double> x = RoundTo(dt, Random(static_cast<size_t>(seq * batch * 3 * e), 11, -3, 3));
  const Shape shape = sbe ? Shape{seq, batch, 3 * e} : Shape{batch, seq, 3 * e};
  runtime::Tensor qkv = MakeFloat(dt, shape, x);
  auto out = kt::RunKernel(AttentionNode(heads, static_cast<float>(scale), layout), 1, {&qkv});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const runtime::Tensor& y = (*out)[0];
  EXPECT_EQ(y.dtype(), dt);
  EXPECT_EQ(y.shape(), (Shape{shape[0], shape[1], e}));
  const double scale_f = static_cast<float>(scale);  // the attribute is a float
  ExpectClose(ReadFloat(y), Reference(x, sbe, seq, batch, heads, dim, scale_f), Tolerance(dt), Tolerance(dt));
}

TEST(AttentionCpu, MatchesTheFormulaSequenceFirst) { ExpectMatchesReference(DataType::kFloat32, "sbe"); }
TEST(AttentionCpu, MatchesTheFormulaBatchFirst) { ExpectMatchesReference(DataType::kFloat32, "bse"); }
TEST(AttentionCpu, LayoutDefaultsToSequenceFirst) { ExpectMatchesReference(DataType::kFloat32, ""); }
TEST(AttentionCpu, MatchesTheFormulaFloat16) { ExpectMatchesReference(DataType::kFloat16, "sbe"); }
TEST(AttentionCpu, MatchesTheFormulaBfloat16) { ExpectMatchesReference(DataType::kBfloat16, "bse"); }
TEST(AttentionCpu, MatchesTheFormulaFloat64) { ExpectMatchesReference(DataType::kFloat64, "sbe"); }

TEST(AttentionCpu, RejectsAProjectionThatDoesNotSplitIntoHeads) {
  runtime::Tensor qkv = MakeFloat(DataType::kFloat32, {4, 2, 9}, Random(72, 3));  // 9 = 3 * 3, not 3 * 2 * D
  auto out = kt::RunKernel(AttentionNode(2, 0.5f, "sbe"), 1, {&qkv});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().ToString().find("3 * 2"), std::string::npos) << out.status().ToString();
  EXPECT_FALSE(kt::RunKernel(AttentionNode(0, 0.5f, "sbe"), 1, {&qkv}).ok());
  EXPECT_FALSE(kt::RunKernel(AttentionNode(1, 0.5f, "sbh"), 1, {&qkv}).ok());
}

TEST(AttentionCpu, InfersTheOutputShape) {
  ir::TypeInfo qkv = Type(DataType::kFloat16, {K(197), S("N"), K(2304)});
  auto out = kt::InferNode(AttentionNode(12, 0.125f, "sbe"), 1, {&qkv});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].elem_type, DataType::kFloat16);
  EXPECT_EQ(DimsOf((*out)[0]), "[197,N,768]");

  ir::TypeInfo uneven = Type(DataType::kFloat16, {K(197), S("N"), K(2301)});
  EXPECT_FALSE(kt::InferNode(AttentionNode(12, 0.125f, "sbe"), 1, {&uneven}).ok());
  ir::TypeInfo rank2 = Type(DataType::kFloat16, {K(197), K(2304)});
  EXPECT_FALSE(kt::InferNode(AttentionNode(12, 0.125f, "sbe"), 1, {&rank2}).ok());
  ir::TypeInfo ints = Type(DataType::kInt32, {K(197), S("N"), K(2304)});
  EXPECT_FALSE(kt::InferNode(AttentionNode(12, 0.125f, "sbe"), 1, {&ints}).ok());
  ir::Node no_scale = AttentionNode(12, 0.125f, "sbe");
  no_scale.attributes.erase(no_scale.attributes.begin() + 1);
  EXPECT_FALSE(kt::InferNode(no_scale, 1, {&qkv}).ok());
}

}  // namespace
}  // namespace vigil::cpu
