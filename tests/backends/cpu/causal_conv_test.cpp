// CausalConvWithState (conv family) against a float64 reference that reads
// input and past state by index (no concatenation), on odd sizes, kernel
// sizes 1 to 5, inputs shorter than the state, with and without bias, past
// state and SiLU; plus the error paths and shape inference.
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/elementwise_test_util.h"

namespace vigil::cpu::testing {
namespace {

using Shape = std::vector<int64_t>;

struct Case {
  int64_t b = 2, c = 13, l = 7, k = 4;
  bool bias = false, past = false;
  std::string activation = "none";
  DataType dtype = DataType::kFloat32;
};

void Check(const Case& c) {
  SCOPED_TRACE("C " + std::to_string(c.c) + " L " + std::to_string(c.l) + " K " + std::to_string(c.k) +
               (c.bias ? " bias" : "") + (c.past ? " past" : "") + " " + c.activation + " " + DtypeName(c.dtype));
  const DataType dt = c.dtype;
  const int64_t ctx_len = c.k - 1;
  runtime::Tensor x = TensorOf(dt, {c.b, c.c, c.l}, RandomValues(c.b * c.c * c.l, -2, 2, 1));
  runtime::Tensor w = TensorOf(dt, {c.c, 1, c.k}, RandomValues(c.c * c.k, -1, 1, 2));
  runtime::Tensor bias = TensorOf(dt, {c.c}, RandomValues(c.c, -1, 1, 3));
  runtime::Tensor past = TensorOf(dt, {c.b, c.c, ctx_len}, RandomValues(c.b * c.c * ctx_len, -2, 2, 4));
  const std::vector<double> xv = DoublesOf(x), wv = DoublesOf(w), bv = DoublesOf(bias), pv = DoublesOf(past);
  // Step s of the sequence past_state ++ input, s in [0, K - 1 + L).
  auto step = [&](int64_t b, int64_t ch, int64_t s) {
    if (s >= ctx_len) return xv[(b * c.c + ch) * c.l + s - ctx_len];
    return c.past ? pv[(b * c.c + ch) * ctx_len + s] : 0.0;
  };
  std::vector<double> want_y, want_state;
  for (int64_t b = 0; b < c.b; ++b)
    for (int64_t ch = 0; ch < c.c; ++ch) {
      for (int64_t t = 0; t < c.l; ++t) {
        double acc = c.bias ? bv[ch] : 0;
        for (int64_t j = 0; j < c.k; ++j) acc += wv[ch * c.k + j] * step(b, ch, t + j);
        acc = Quantize(dt, acc);
        if (c.activation != "none") acc = acc / (1 + std::exp(-acc));
        want_y.push_back(Quantize(dt, acc));
      }
      for (int64_t s = c.l; s < c.l + ctx_len; ++s) want_state.push_back(step(b, ch, s));
    }
  std::vector<ir::Attribute> attrs;
  if (c.activation != "none") attrs.push_back(StringAttr("activation", c.activation));
  ir::Node node = MakeNode("CausalConvWithState", {"x", "w", c.bias ? "bias" : "", c.past ? "past" : ""},
                           {"y", "state"}, attrs);
  auto out = RunOk(node, 27, {&x, &w, c.bias ? &bias : nullptr, c.past ? &past : nullptr});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), (Shape{c.b, c.c, c.l}));
  EXPECT_EQ(out[1].shape(), (Shape{c.b, c.c, ctx_len}));
  // The kernel also sums in double and rounds before the activation.
  ExpectNear(DoublesOf(out[0]), want_y, ToleranceFor(dt), "output");
  ExpectNear(DoublesOf(out[1]), want_state, {0, 0}, "present_state");
}

TEST(CausalConvWithStateKernel, AgainstIndexedReference) {
  for (DataType dt : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16}) {
    for (int64_t k : {1, 2, 4, 5}) {
      for (int64_t l : {7, 2, 1}) {
        for (bool past : {false, true}) {
          Case c;
          c.dtype = dt;
          c.k = k;
          c.l = l;
          c.past = past;
          c.bias = l != 2;
          c.activation = l == 1 ? "swish" : (past ? "silu" : "none");
          Check(c);
        }
      }
    }
  }
}

TEST(CausalConvWithStateKernel, Errors) {
  runtime::Tensor x = F32({1, 2, 3}, {1, 2, 3, 4, 5, 6});
  runtime::Tensor w = F32({2, 1, 2}, {1, 2, 3, 4});
  ir::Node node = MakeNode("CausalConvWithState", {"x", "w", "b", "p"}, {"y", "s"});
  EXPECT_EQ(RunOk(node, 27, {&x, &w, nullptr, nullptr}).size(), 2u);
  runtime::Tensor w3 = F32({3, 1, 2}, {1, 2, 3, 4, 5, 6});
  ExpectRunFails(node, 27, {&x, &w3, nullptr, nullptr}, "weight is float32[3,1,2]");
  runtime::Tensor w0 = F32({2, 1, 0}, {});
  ExpectRunFails(node, 27, {&x, &w0, nullptr, nullptr}, "K >= 1");
  runtime::Tensor bias = F32({3}, {1, 2, 3});
  ExpectRunFails(node, 27, {&x, &w, &bias, nullptr}, "bias is");
  runtime::Tensor past = F32({1, 2, 2}, {1, 2, 3, 4});
  ExpectRunFails(node, 27, {&x, &w, nullptr, &past}, "past_state is float32[1,2,2]");
  runtime::Tensor x2 = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  ExpectRunFails(node, 27, {&x2, &w, nullptr, nullptr}, "expected rank 3");
  runtime::Tensor wd = TensorOf(DataType::kFloat64, {2, 1, 2}, {1, 2, 3, 4});
  ExpectRunFails(node, 27, {&x, &wd, nullptr, nullptr}, "float64");
  ir::Node gelu = MakeNode("CausalConvWithState", {"x", "w"}, {"y"}, {StringAttr("activation", "gelu")});
  ExpectRunFails(gelu, 27, {&x, &w}, "activation is 'gelu'");
}

TEST(CausalConvWithStateInfer, Shapes) {
  auto t = [](std::vector<ir::Dim> dims) { return ops::TensorType(DataType::kFloat32, std::move(dims)); };
  const ir::Dim B = ir::Dim::Symbolic("b"), L = ir::Dim::Symbolic("l");
  ir::TypeInfo x = t({B, ir::Dim::Known(8), L});
  ir::TypeInfo w = t({ir::Dim::Known(8), ir::Dim::Known(1), ir::Dim::Known(4)});
  ir::Node node = MakeNode("CausalConvWithState", {"x", "w"}, {"y", "s"});
  auto r = InferNode(node, 27, {&x, &w});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ir::ShapeToString((*r)[0].shape), ir::ShapeToString(x.shape));
  EXPECT_EQ(ir::ShapeToString((*r)[1].shape), ir::ShapeToString(t({B, ir::Dim::Known(8), ir::Dim::Known(3)}).shape));
  ir::TypeInfo w2 = t({ir::Dim::Known(8), ir::Dim::Known(4)});
  auto e = InferNode(node, 27, {&x, &w2});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().summary().find("node CausalConvWithState"), std::string::npos) << e.status().summary();
}

}  // namespace
}  // namespace vigil::cpu::testing
