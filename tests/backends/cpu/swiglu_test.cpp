// SwiGLU (elementwise activation family): A * sigmoid(alpha * A) * B against
// a float64 reference on odd sizes and every float dtype, plus its error
// paths and shape inference.
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/elementwise_test_util.h"

namespace vigil::cpu::testing {
namespace {

ir::Node SwiGLUNode(std::vector<ir::Attribute> attrs = {}) { return MakeNode("SwiGLU", {"a", "b"}, {"y"}, attrs); }

TEST(SwiGLUKernel, AgainstFloat64Reference) {
  for (DataType dt : FloatDtypes()) {
    for (float alpha : {1.0f, 0.5f, -1.75f}) {
      SCOPED_TRACE(DtypeName(dt) + " alpha " + std::to_string(alpha));
      const std::vector<int64_t> shape = {13, 127};
      runtime::Tensor a = TensorOf(dt, shape, RandomValues(13 * 127, -12, 12, 3));
      runtime::Tensor b = TensorOf(dt, shape, RandomValues(13 * 127, -3, 3, 4));
      const std::vector<double> av = DoublesOf(a), bv = DoublesOf(b);
      std::vector<double> want(av.size());
      for (size_t i = 0; i < av.size(); ++i) want[i] = Quantize(dt, av[i] / (1 + std::exp(-alpha * av[i])) * bv[i]);
      auto out = RunOk(alpha == 1.0f ? SwiGLUNode() : SwiGLUNode({FloatAttr("alpha", alpha)}), 28, {&a, &b});
      ASSERT_EQ(out.size(), 1u);
      EXPECT_EQ(out[0].dtype(), dt);
      EXPECT_EQ(out[0].shape(), shape);
      Tolerance tol = ToleranceFor(dt);
      ExpectNear(DoublesOf(out[0]), want, tol, "Y");
    }
  }
}

TEST(SwiGLUKernel, Errors) {
  runtime::Tensor a = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  runtime::Tensor row = F32({1, 3}, {1, 2, 3});
  ExpectRunFails(SwiGLUNode(), 28, {&a, &row}, "no broadcasting");
  runtime::Tensor d = TensorOf(DataType::kFloat64, {2, 3}, {1, 2, 3, 4, 5, 6});
  ExpectRunFails(SwiGLUNode(), 28, {&a, &d}, "one dtype");
  runtime::Tensor i = I64({2}, {1, 2});
  ExpectRunFails(SwiGLUNode(), 28, {&i, &i}, "int64");
  ExpectRunFails(SwiGLUNode(), 28, {&a, nullptr}, "needs inputs A and B");
}

TEST(SwiGLUInfer, Shapes) {
  ir::TypeInfo a = ops::TensorType(DataType::kFloat16, std::vector<ir::Dim>{ir::Dim::Symbolic("n"), ir::Dim::Known(8)});
  auto r = InferNode(SwiGLUNode(), 28, {&a, &a});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ir::ShapeToString((*r)[0].shape), ir::ShapeToString(a.shape));
  EXPECT_EQ((*r)[0].elem_type, DataType::kFloat16);
  ir::TypeInfo b = ops::TensorType(DataType::kFloat16, std::vector<ir::Dim>{ir::Dim::Known(1), ir::Dim::Known(4)});
  auto e = InferNode(SwiGLUNode(), 28, {&a, &b});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().summary().find("node SwiGLU"), std::string::npos) << e.status().summary();
  EXPECT_FALSE(InferNode(SwiGLUNode(), 27, {&a, &a}).ok());  // no SwiGLU before opset 28
}

}  // namespace
}  // namespace vigil::cpu::testing
