// Shape inference of the elementwise family: dtypes, broadcasting with
// symbolic dims, unknown ranks, and the definite inconsistencies that must be
// InvalidModel errors naming the node.
#include <string>
#include <vector>

#include "backends/cpu/elementwise_test_util.h"
#include "ops/shape_helpers.h"

namespace vigil::cpu::testing {
namespace {

using ir::Dim;
using ops::TensorType;

Dim N() { return Dim::Symbolic("N"); }
Dim K(int64_t v) { return Dim::Known(v); }

ir::TypeInfo T(DataType d, std::vector<Dim> dims) { return TensorType(d, std::move(dims)); }

std::vector<ir::TypeInfo> InferOk(const ir::Node& node, int64_t opset, const std::vector<const ir::TypeInfo*>& types,
                                  const std::vector<const ir::Tensor*>& values = {}) {
  auto r = InferNode(node, opset, types, values);
  EXPECT_TRUE(r.ok()) << node.op_type << ": " << r.status().ToString();
  if (!r.ok()) return {};
  return std::move(r).value();
}

void ExpectInferFails(const ir::Node& node, int64_t opset, const std::vector<const ir::TypeInfo*>& types,
                      const std::string& needle) {
  auto r = InferNode(node, opset, types);
  ASSERT_FALSE(r.ok()) << node.op_type << " inference should have failed";
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidModel) << r.status().ToString();
  EXPECT_NE(r.status().summary().find(needle), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().summary().find("node " + node.op_type), std::string::npos) << r.status().ToString();
}

std::string Str(const ir::TypeInfo& t) { return ir::TypeToString(t); }

TEST(ElementwiseInfer, UnaryKeepsTypeAndSymbolicDims) {
  ir::TypeInfo x = T(DataType::kFloat16, {N(), K(3)});
  for (const char* op : {"Relu", "Exp", "Sigmoid", "Abs", "Identity", "Gelu", "Clip"}) {
    auto out = InferOk(MakeNode(op, {"x"}, {"y"}), 20, {&x});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(Str(out[0]), Str(x)) << op;
  }
  auto isnan = InferOk(MakeNode("IsNaN", {"x"}, {"y"}), 20, {&x});
  ASSERT_EQ(isnan.size(), 1u);
  EXPECT_EQ(Str(isnan[0]), Str(T(DataType::kBool, {N(), K(3)})));
  ir::TypeInfo unknown = ops::TensorTypeUnknownShape(DataType::kFloat32);
  auto isinf = InferOk(MakeNode("IsInf", {"x"}, {"y"}), 20, {&unknown});
  ASSERT_EQ(isinf.size(), 1u);
  EXPECT_EQ(Str(isinf[0]), Str(ops::TensorTypeUnknownShape(DataType::kBool)));
  // An input of unknown type is not an error.
  EXPECT_TRUE(InferNode(MakeNode("Relu", {"x"}, {"y"}), 14, {nullptr}).ok());
}

TEST(ElementwiseInfer, BinaryBroadcastsSymbolicDims) {
  ir::TypeInfo a = T(DataType::kFloat32, {N(), K(3), K(1)});
  ir::TypeInfo b = T(DataType::kFloat32, {K(1), K(4)});
  auto out = InferOk(MakeNode("Add", {"a", "b"}, {"y"}), 14, {&a, &b});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Str(out[0]), Str(T(DataType::kFloat32, {N(), K(3), K(4)})));

  ir::TypeInfo m = T(DataType::kFloat32, {Dim::Symbolic("M")});
  ir::TypeInfo n = T(DataType::kFloat32, {N()});
  auto mixed = InferOk(MakeNode("Mul", {"a", "b"}, {"y"}), 14, {&m, &n});
  ASSERT_EQ(mixed.size(), 1u);
  ASSERT_TRUE(mixed[0].shape.rank_known);
  ASSERT_EQ(mixed[0].shape.dims.size(), 1u);
  EXPECT_FALSE(mixed[0].shape.dims[0].is_known());  // a fresh symbol: M or N, whichever is not 1

  ir::TypeInfo unknown = ops::TensorTypeUnknownShape(DataType::kFloat32);
  auto u = InferOk(MakeNode("Sub", {"a", "b"}, {"y"}), 14, {&a, &unknown});
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(Str(u[0]), Str(unknown));

  auto cmp = InferOk(MakeNode("Less", {"a", "b"}, {"y"}), 13, {&a, &b});
  ASSERT_EQ(cmp.size(), 1u);
  EXPECT_EQ(Str(cmp[0]), Str(T(DataType::kBool, {N(), K(3), K(4)})));
}

TEST(ElementwiseInfer, BinaryInconsistenciesFail) {
  ir::TypeInfo a = T(DataType::kFloat32, {K(2), K(3)});
  ir::TypeInfo b = T(DataType::kFloat32, {K(4)});
  ir::TypeInfo i = T(DataType::kInt64, {K(3)});
  ExpectInferFails(MakeNode("Add", {"a", "b"}, {"y"}), 14, {&a, &b}, "cannot broadcast dim");
  ExpectInferFails(MakeNode("Div", {"a", "b"}, {"y"}), 14, {&a, &i}, "input 1 has dtype int64");
  ExpectInferFails(MakeNode("Equal", {"a", "b"}, {"y"}), 19, {&a, &i}, "input 1 has dtype int64");
  ExpectInferFails(MakeNode("And", {"a", "b"}, {"y"}), 7, {&a, &a}, "needs bool");
  ExpectInferFails(MakeNode("Not", {"a"}, {"y"}), 1, {&a}, "needs bool");
  ExpectInferFails(MakeNode("Mod", {"a", "b"}, {"y"}, {IntAttr("fmod", 2)}), 13, {&a, &a}, "fmod");
  ExpectInferFails(MakeNode("BitShift", {"a", "b"}, {"y"}), 11, {&i, &i}, "direction");
  auto arity = InferNode(MakeNode("Add", {"a", "b", "c"}, {"y"}), 14, {&a, &a, &a});
  ASSERT_FALSE(arity.ok());
  EXPECT_NE(arity.status().summary().find("3 inputs"), std::string::npos) << arity.status().ToString();
}

TEST(ElementwiseInfer, LegacyBroadcastBeforeOpset7) {
  ir::TypeInfo a = T(DataType::kFloat32, {N(), K(3), K(4), K(5)});
  ir::TypeInfo b = T(DataType::kFloat32, {K(3), K(1)});
  auto out = InferOk(MakeNode("Add", {"a", "b"}, {"y"}, {IntAttr("broadcast", 1), IntAttr("axis", 1)}), 6, {&a, &b});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Str(out[0]), Str(a));
  // Without axis, B lines up with A's trailing dims: [3,1] against [4,5] does not fit.
  ExpectInferFails(MakeNode("Add", {"a", "b"}, {"y"}, {IntAttr("broadcast", 1)}), 6, {&a, &b}, "broadcast onto");
  ExpectInferFails(MakeNode("Mul", {"a", "b"}, {"y"}), 6, {&a, &b}, "does not equal");
  auto cmp = InferOk(MakeNode("Less", {"a", "b"}, {"y"}, {IntAttr("broadcast", 1), IntAttr("axis", 1)}), 6, {&a, &b});
  ASSERT_EQ(cmp.size(), 1u);
  EXPECT_EQ(cmp[0].elem_type, DataType::kBool);
  // PRelu-6: a 1-D slope is per channel even when another dim has its size.
  ir::TypeInfo x = T(DataType::kFloat32, {K(2), K(3), K(3)});
  ir::TypeInfo s = T(DataType::kFloat32, {K(3)});
  EXPECT_TRUE(InferNode(MakeNode("PRelu", {"x", "s"}, {"y"}), 6, {&x, &s}).ok());
}

TEST(ElementwiseInfer, PowTakesTheBaseDtype) {
  ir::TypeInfo a = T(DataType::kFloat32, {N(), K(3)});
  ir::TypeInfo e = T(DataType::kInt64, {});
  auto out = InferOk(MakeNode("Pow", {"a", "e"}, {"y"}), 15, {&a, &e});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Str(out[0]), Str(a));
}

TEST(ElementwiseInfer, VariadicAndWhere) {
  ir::TypeInfo a = T(DataType::kFloat32, {K(3), K(1), K(4)});
  ir::TypeInfo b = T(DataType::kFloat32, {N(), K(1)});
  ir::TypeInfo c = T(DataType::kFloat32, {K(4)});
  auto out = InferOk(MakeNode("Max", {"a", "b", "c"}, {"y"}), 13, {&a, &b, &c});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Str(out[0]), Str(T(DataType::kFloat32, {K(3), N(), K(4)})));
  ir::TypeInfo i = T(DataType::kInt32, {K(4)});
  ExpectInferFails(MakeNode("Sum", {"a", "b", "c"}, {"y"}), 13, {&a, &b, &i}, "input 2 has dtype int32");

  ir::TypeInfo cond = T(DataType::kBool, {K(2), K(1), K(1)});
  auto w = InferOk(MakeNode("Where", {"c", "x", "y"}, {"z"}), 16, {&cond, &b, &c});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(Str(w[0]), Str(T(DataType::kFloat32, {K(2), N(), K(4)})));
  ExpectInferFails(MakeNode("Where", {"c", "x", "y"}, {"z"}), 16, {&a, &b, &c}, "needs bool");
  ExpectInferFails(MakeNode("Where", {"c", "x", "y"}, {"z"}), 16, {&cond, &b, &i}, "dtype int32");
}

TEST(ElementwiseInfer, PRelu) {
  ir::TypeInfo x = T(DataType::kFloat32, {N(), K(3), K(5), K(5)});
  ir::TypeInfo ok = T(DataType::kFloat32, {K(3), K(1), K(1)});
  auto out = InferOk(MakeNode("PRelu", {"x", "s"}, {"y"}), 16, {&x, &ok});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Str(out[0]), Str(x));
  ir::TypeInfo xk = T(DataType::kFloat32, {K(2), K(3), K(5), K(5)});
  ir::TypeInfo c1d = T(DataType::kFloat32, {K(3)});  // matches exactly one dim
  EXPECT_TRUE(InferNode(MakeNode("PRelu", {"x", "s"}, {"y"}), 16, {&xk, &c1d}).ok());
  ir::TypeInfo bad = T(DataType::kFloat32, {K(7)});
  ExpectInferFails(MakeNode("PRelu", {"x", "s"}, {"y"}), 16, {&xk, &bad}, "does not broadcast to X");
}

TEST(ElementwiseInfer, Clip) {
  ir::TypeInfo x = T(DataType::kFloat32, {N()});
  ir::TypeInfo scalar = T(DataType::kFloat32, {});
  ir::TypeInfo vec = T(DataType::kFloat32, {K(2)});
  ir::TypeInfo i64 = T(DataType::kInt64, {});
  auto out = InferOk(MakeNode("Clip", {"x", "", "hi"}, {"y"}), 13, {&x, nullptr, &scalar});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Str(out[0]), Str(x));
  ExpectInferFails(MakeNode("Clip", {"x", "lo"}, {"y"}), 13, {&x, &vec}, "must be a scalar");
  ExpectInferFails(MakeNode("Clip", {"x", "lo"}, {"y"}), 13, {&x, &i64}, "dtype int64");
  // Clip 6 has attributes, not inputs.
  EXPECT_FALSE(InferNode(MakeNode("Clip", {"x", "lo"}, {"y"}), 6, {&x, &scalar}).ok());
}

TEST(ElementwiseInfer, CastAndCastLike) {
  ir::TypeInfo x = T(DataType::kFloat32, {N(), K(2)});
  auto out = InferOk(MakeNode("Cast", {"x"}, {"y"}, {IntAttr("to", 10)}), 19, {&x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Str(out[0]), Str(T(DataType::kFloat16, {N(), K(2)})));
  ExpectInferFails(MakeNode("Cast", {"x"}, {"y"}), 19, {&x}, "'to'");
  ExpectInferFails(MakeNode("Cast", {"x"}, {"y"}, {IntAttr("to", 1000)}), 19, {&x}, "not an ONNX dtype");
  ir::TypeInfo like = T(DataType::kInt8, {K(7)});
  auto cl = InferOk(MakeNode("CastLike", {"x", "t"}, {"y"}), 19, {&x, &like});
  ASSERT_EQ(cl.size(), 1u);
  EXPECT_EQ(Str(cl[0]), Str(T(DataType::kInt8, {N(), K(2)})));
}

TEST(ElementwiseInfer, BadActivationAttributes) {
  ir::TypeInfo x = T(DataType::kFloat32, {K(2)});
  ExpectInferFails(MakeNode("Gelu", {"x"}, {"y"}, {StringAttr("approximate", "fast")}), 20, {&x}, "approximate");
  ExpectInferFails(MakeNode("Celu", {"x"}, {"y"}, {FloatAttr("alpha", 0)}), 12, {&x}, "alpha");
}

TEST(ElementwiseInfer, IdentityPassesSequenceTypes) {
  ir::TypeInfo seq;
  seq.kind = ir::TypeInfo::Kind::kSequence;
  seq.inner = std::make_shared<ir::TypeInfo>(T(DataType::kFloat32, {K(2)}));
  auto out = InferOk(MakeNode("Identity", {"x"}, {"y"}), 16, {&seq});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Str(out[0]), Str(seq));
}

TEST(ElementwiseInfer, OpsetRanges) {
  // Every op of the family resolves at opset 23 and at its first version.
  for (const char* op : {"Abs", "Relu", "Add", "Cast", "Where", "Max", "Clip", "Identity", "PRelu"}) {
    EXPECT_NE(ops::FindSchema("", op, 23), nullptr) << op;
    EXPECT_NE(FindKernel("", op, 23), nullptr) << op;
  }
  EXPECT_EQ(ops::FindSchema("", "Gelu", 19), nullptr);
  EXPECT_NE(ops::FindSchema("", "Gelu", 20), nullptr);
  EXPECT_NE(ops::FindSchema("", "Add", 7), nullptr);
  EXPECT_NE(ops::FindSchema("", "Add", 6), nullptr);  // legacy broadcast attributes
  EXPECT_EQ(ops::FindSchema("", "Add", 5), nullptr);  // Add-1 (consumed_inputs) is not supported
  EXPECT_NE(FindKernel("", "Clip", 6), FindKernel("", "Clip", 11));
}

}  // namespace
}  // namespace vigil::cpu::testing
