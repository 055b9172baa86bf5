// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear: CPU kernels
// against naive float64 references (per-tensor, per-axis, blocked; every
// integer type; rounding half to even; saturation), shape inference, errors.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/kernel_test_util.h"
#include "vigil/float16.h"

namespace vigil::cpu::testing {
namespace {

using ir::DataType;

// Index of the scale element for flat element i of x (reference layout rule).
size_t RefScaleIndex(const std::vector<int64_t>& xs, const std::vector<int64_t>& ss, int64_t axis, int64_t block,
                     size_t i) {
  if (ss.empty() || (ss.size() == 1 && ss[0] == 1)) return 0;
  // Unravel i into x's coordinates.
  std::vector<int64_t> coord(xs.size());
  size_t rest = i;
  for (size_t d = xs.size(); d-- > 0;) {
    coord[d] = static_cast<int64_t>(rest % xs[d]);
    rest /= xs[d];
  }
  if (block == 0) return static_cast<size_t>(coord[axis]);
  coord[axis] /= block;
  size_t idx = 0;
  for (size_t d = 0; d < ss.size(); ++d) idx = idx * ss[d] + coord[d];
  return idx;
}

template <typename Q>
runtime::Tensor IntTensor(DataType t, std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  std::vector<Q> q(v.begin(), v.end());
  return MakeTensor(t, std::move(shape), q);
}

runtime::Tensor IntTensorOf(DataType t, std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  switch (t) {
    case DataType::kUint8: return IntTensor<uint8_t>(t, std::move(shape), v);
    case DataType::kInt8: return IntTensor<int8_t>(t, std::move(shape), v);
    case DataType::kUint16: return IntTensor<uint16_t>(t, std::move(shape), v);
    case DataType::kInt16: return IntTensor<int16_t>(t, std::move(shape), v);
    default: return IntTensor<int32_t>(t, std::move(shape), v);
  }
}

std::vector<int64_t> IntValues(const runtime::Tensor& t) {
  std::vector<int64_t> v(t.element_count());
  for (size_t i = 0; i < v.size(); ++i) {
    switch (t.dtype()) {
      case DataType::kUint8: v[i] = t.data<uint8_t>()[i]; break;
      case DataType::kInt8: v[i] = t.data<int8_t>()[i]; break;
      case DataType::kUint16: v[i] = t.data<uint16_t>()[i]; break;
      case DataType::kInt16: v[i] = t.data<int16_t>()[i]; break;
      default: v[i] = t.data<int32_t>()[i]; break;
    }
  }
  return v;
}

std::pair<int64_t, int64_t> Range(DataType t) {
  switch (t) {
    case DataType::kUint8: return {0, 255};
    case DataType::kInt8: return {-128, 127};
    case DataType::kUint16: return {0, 65535};
    case DataType::kInt16: return {-32768, 32767};
    default: return {INT32_MIN, INT32_MAX};
  }
}

runtime::Tensor FloatTensor(DataType t, std::vector<int64_t> shape, const std::vector<double>& v) {
  runtime::Tensor out = runtime::Tensor::Allocate(t, std::move(shape)).value();
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DataType::kFloat32) out.data<float>()[i] = static_cast<float>(v[i]);
    else if (t == DataType::kFloat64) out.data<double>()[i] = v[i];
    else if (t == DataType::kFloat16) out.data<uint16_t>()[i] = FloatToFloat16(static_cast<float>(v[i]));
    else out.data<uint16_t>()[i] = FloatToBfloat16(static_cast<float>(v[i]));
  }
  return out;
}

std::vector<double> FloatValues(const runtime::Tensor& t) {
  std::vector<double> v(t.element_count());
  for (size_t i = 0; i < v.size(); ++i) {
    if (t.dtype() == DataType::kFloat32) v[i] = t.data<float>()[i];
    else if (t.dtype() == DataType::kFloat64) v[i] = t.data<double>()[i];
    else if (t.dtype() == DataType::kFloat16) v[i] = Float16ToFloat(t.data<uint16_t>()[i]);
    else v[i] = Bfloat16ToFloat(t.data<uint16_t>()[i]);
  }
  return v;
}

double Round(DataType t, double v) { return FloatValues(FloatTensor(t, {1}, {v}))[0]; }

struct QuantCase {
  std::vector<int64_t> xshape, sshape;
  int64_t axis = 1, block = 0, opset = 21;
  DataType xtype = DataType::kFloat32, stype = DataType::kFloat32, qtype = DataType::kUint8;
  bool zp = true;
};

// Runs QuantizeLinear and DequantizeLinear on random data against float64 references.
void CheckQuantRoundTrip(const QuantCase& c, uint32_t seed = 7) {
  SCOPED_TRACE(fmt::format("x {} scale {} axis {} block {} q {}", fmt::join(c.xshape, ","), fmt::join(c.sshape, ","),
                           c.axis, c.block, ir::DataTypeName(c.qtype)));
  std::mt19937 rng(seed);
  const size_t n = runtime::ElementCount(c.xshape).value(), ns = runtime::ElementCount(c.sshape).value();
  auto [lo, hi] = Range(c.qtype);
  std::vector<double> x(n), scale(ns);
  std::vector<int64_t> zp(ns, 0);
  std::uniform_real_distribution<double> ud(-300, 300);
  for (double& v : x) v = Round(c.xtype, ud(rng));
  for (double& v : scale) v = Round(c.stype, std::uniform_real_distribution<double>(0.5, 3)(rng));
  if (c.zp) {
    for (int64_t& z : zp) z = std::uniform_int_distribution<int64_t>(std::max<int64_t>(lo, -50), std::min<int64_t>(hi, 50))(rng);
  }
  const int64_t axis = c.axis < 0 ? c.axis + static_cast<int64_t>(c.xshape.size()) : c.axis;
  runtime::Tensor xt = FloatTensor(c.xtype, c.xshape, x), st = FloatTensor(c.stype, c.sshape, scale);
  runtime::Tensor zt = IntTensorOf(c.qtype, c.sshape, zp);
  std::vector<ir::Attribute> attrs = {IntAttr("axis", c.axis)};
  if (c.block) attrs.push_back(IntAttr("block_size", c.block));
  if (!c.zp && c.opset >= 21) attrs.push_back(IntAttr("output_dtype", static_cast<int64_t>(c.qtype)));
  ir::Node q = MakeNode("QuantizeLinear", {"x", "s", c.zp ? "z" : ""}, {"y"}, attrs);
  auto qr = RunKernel(q, c.opset, {&xt, &st, c.zp ? &zt : nullptr});
  ASSERT_TRUE(qr.ok()) << qr.status().ToString();
  const runtime::Tensor& y = (*qr)[0];
  ASSERT_EQ(y.dtype(), c.qtype);
  ASSERT_EQ(y.shape(), c.xshape);
  std::vector<int64_t> got = IntValues(y);
  for (size_t i = 0; i < n; ++i) {
    const size_t k = RefScaleIndex(c.xshape, c.sshape, axis, c.block, i);
    // The ONNX reference (numpy) divides in x's type when x and scale share
    // a 16-bit type, so the quotient is rounded to that type before rint.
    double quotient = x[i] / scale[k];
    if (c.xtype == c.stype && c.xtype != DataType::kFloat32) quotient = Round(c.xtype, quotient);
    double want = std::nearbyint(quotient) + zp[k];
    want = std::min<double>(std::max<double>(want, lo), hi);
    ASSERT_EQ(got[i], static_cast<int64_t>(want)) << "element " << i << " x " << x[i] << " scale " << scale[k];
  }
  // Dequantize what was produced: (q - zp) * scale.
  ir::Node dq = MakeNode("DequantizeLinear", {"y", "s", c.zp ? "z" : ""}, {"x"}, attrs);
  dq.attributes.resize(c.block ? 2 : 1);  // no output_dtype before opset 23
  auto dr = RunKernel(dq, c.opset, {&y, &st, c.zp ? &zt : nullptr});
  ASSERT_TRUE(dr.ok()) << dr.status().ToString();
  const runtime::Tensor& back = (*dr)[0];
  ASSERT_EQ(back.dtype(), c.opset >= 19 ? c.stype : DataType::kFloat32);
  std::vector<double> bv = FloatValues(back);
  const double tol = c.stype == DataType::kFloat32 ? 1e-6 : c.stype == DataType::kFloat16 ? 1e-3 : 8e-3;
  for (size_t i = 0; i < n; ++i) {
    const size_t k = RefScaleIndex(c.xshape, c.sshape, axis, c.block, i);
    const double want = (got[i] - zp[k]) * scale[k];
    ASSERT_TRUE(std::abs(bv[i] - want) <= tol * (1 + std::abs(want))) << "element " << i << ": " << bv[i] << " vs " << want;
  }
}

TEST(QuantizeLinear, PerTensorAllTypesAndOpsets) {
  for (DataType q : {DataType::kUint8, DataType::kInt8, DataType::kUint16, DataType::kInt16})
    for (bool zp : {true, false}) CheckQuantRoundTrip({{3, 13, 5}, {}, 1, 0, 21, DataType::kFloat32, DataType::kFloat32, q, zp});
  CheckQuantRoundTrip({{127}, {1}, 1, 0, 10});  // 1-element 1-D scale is per-tensor
  CheckQuantRoundTrip({{2, 7}, {}, 1, 0, 13, DataType::kFloat32, DataType::kFloat32, DataType::kInt8});
  CheckQuantRoundTrip({{2, 7}, {}, 1, 0, 10, DataType::kFloat32, DataType::kFloat32, DataType::kUint8, false});
  CheckQuantRoundTrip({{0, 4}, {}, 1, 0, 19});  // empty
}

TEST(QuantizeLinear, PerAxis) {
  CheckQuantRoundTrip({{2, 13, 3}, {13}, 1, 0, 13, DataType::kFloat32, DataType::kFloat32, DataType::kInt8});
  CheckQuantRoundTrip({{4, 3, 127}, {127}, -1, 0, 19});
  CheckQuantRoundTrip({{5, 2}, {5}, 0, 0, 21, DataType::kFloat32, DataType::kFloat32, DataType::kInt16});
}

TEST(QuantizeLinear, Blocked) {
  CheckQuantRoundTrip({{3, 10}, {3, 3}, 1, 4, 21});  // last block is short (10 = 4+4+2)
  CheckQuantRoundTrip({{9, 2, 3}, {3, 2, 3}, 0, 3, 21, DataType::kFloat32, DataType::kFloat32, DataType::kInt8});
  CheckQuantRoundTrip({{2, 5, 7}, {2, 5, 1}, -1, 8, 21, DataType::kFloat32, DataType::kFloat32, DataType::kUint16});
}

TEST(QuantizeLinear, HalfTypes) {
  CheckQuantRoundTrip({{4, 6}, {6}, 1, 0, 19, DataType::kFloat16, DataType::kFloat16, DataType::kInt8});
  CheckQuantRoundTrip({{4, 6}, {}, 1, 0, 21, DataType::kBfloat16, DataType::kBfloat16, DataType::kUint8});
}

TEST(QuantizeLinear, RoundsHalfToEvenAndSaturates) {
  runtime::Tensor x = F32({10}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 1000.f, -1000.f, INFINITY, -INFINITY});
  runtime::Tensor s = F32({}, {1.0f});
  runtime::Tensor z = MakeTensor(DataType::kInt8, {}, std::vector<int8_t>{0});
  ir::Node n = MakeNode("QuantizeLinear", {"x", "s", "z"}, {"y"});
  auto r = RunKernel(n, 13, {&x, &s, &z});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values<int8_t>((*r)[0]), (std::vector<int8_t>{0, 2, 2, 0, -2, -2, 127, -128, 127, -128}));
  runtime::Tensor zu = MakeTensor(DataType::kUint8, {}, std::vector<uint8_t>{3});
  r = RunKernel(n, 13, {&x, &s, &zu});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values<uint8_t>((*r)[0]), (std::vector<uint8_t>{3, 5, 5, 3, 1, 1, 255, 0, 255, 0}));
  ir::Node no_zp = MakeNode("QuantizeLinear", {"x", "s"}, {"y"});
  r = RunKernel(no_zp, 10, {&x, &s});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dtype(), DataType::kUint8);  // default output type
}

TEST(QuantizeLinear, Int32Input) {
  runtime::Tensor x = MakeTensor(DataType::kInt32, {4}, std::vector<int32_t>{5, -5, 7, 100000});
  runtime::Tensor s = F32({}, {2.0f});
  runtime::Tensor z = MakeTensor(DataType::kInt8, {}, std::vector<int8_t>{1});
  auto r = RunKernel(MakeNode("QuantizeLinear", {"x", "s", "z"}, {"y"}), 19, {&x, &s, &z});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values<int8_t>((*r)[0]), (std::vector<int8_t>{3, -1, 5, 127}));  // 2.5->2, -2.5->-2, 3.5->4
}

TEST(DequantizeLinear, Int32AndInt16Inputs) {
  runtime::Tensor x = MakeTensor(DataType::kInt32, {3}, std::vector<int32_t>{-1000000, 0, 77});
  runtime::Tensor s = F32({}, {0.5f});
  auto r = RunKernel(MakeNode("DequantizeLinear", {"x", "s"}, {"y"}), 13, {&x, &s});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values<float>((*r)[0]), (std::vector<float>{-500000.f, 0.f, 38.5f}));
  runtime::Tensor x16 = MakeTensor(DataType::kInt16, {2, 2}, std::vector<int16_t>{-32768, 32767, 0, 10});
  runtime::Tensor s2 = F32({2}, {1.0f, 0.25f});
  runtime::Tensor z2 = MakeTensor(DataType::kInt16, {2}, std::vector<int16_t>{0, 2});
  r = RunKernel(MakeNode("DequantizeLinear", {"x", "s", "z"}, {"y"}, {IntAttr("axis", 0)}), 21, {&x16, &s2, &z2});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values<float>((*r)[0]), (std::vector<float>{-32768.f, 32767.f, -0.5f, 2.0f}));
}

// ---- DynamicQuantizeLinear ------------------------------------------------------

void CheckDynamic(const std::vector<float>& x) {
  SCOPED_TRACE(::testing::PrintToString(x));
  runtime::Tensor xt = F32({static_cast<int64_t>(x.size())}, x);
  auto r = RunKernel(MakeNode("DynamicQuantizeLinear", {"x"}, {"y", "s", "z"}), 11, {&xt});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // float64 reference of the spec's formulas.
  double lo = 0, hi = 0;
  for (float v : x) {
    lo = std::min<double>(lo, v);
    hi = std::max<double>(hi, v);
  }
  const double scale = (hi == lo ? 1.0 : hi - lo) / 255.0;
  const double zp = std::nearbyint(std::min(std::max(-lo / scale, 0.0), 255.0));
  const float got_scale = Values<float>((*r)[1])[0];
  EXPECT_NEAR(got_scale, scale, 1e-7 * (1 + scale));
  EXPECT_EQ(Values<uint8_t>((*r)[2])[0], static_cast<uint8_t>(zp));
  std::vector<uint8_t> y = Values<uint8_t>((*r)[0]);
  for (size_t i = 0; i < x.size(); ++i) {
    // x / scale in float32, as the spec's reference computes it: a quotient
    // within float rounding of .5 decides the tie.
    const double want = std::min(std::max(std::nearbyint(double(x[i] / got_scale)) + zp, 0.0), 255.0);
    EXPECT_EQ(y[i], static_cast<uint8_t>(want)) << "element " << i;
  }
  EXPECT_TRUE((*r)[1].shape().empty());
  EXPECT_TRUE((*r)[2].shape().empty());
}

TEST(DynamicQuantizeLinear, MatchesSpecFormulas) {
  CheckDynamic({0.f, 2.f, -3.f, -2.5f, 1.34f, 0.5f});
  CheckDynamic({-1.f, -2.1f, -1.3f, -2.5f, -3.34f, -4.f});  // all negative
  CheckDynamic({1.f, 2.1f, 1.3f, 2.5f, 3.34f, 4.f, 1.5f, 2.6f, 3.9f, 4.f, 3.f, 2.345f});  // all positive
  CheckDynamic({0.f, 0.f, 0.f});  // zero range
  CheckDynamic({});
  std::mt19937 rng(3);
  std::vector<float> big(1001);
  for (float& v : big) v = std::uniform_real_distribution<float>(-7, 11)(rng);
  CheckDynamic(big);
}

TEST(DynamicQuantizeLinear, NanAndWrongTypeFail) {
  runtime::Tensor x = F32({2}, {1.0f, NAN});
  auto r = RunKernel(MakeNode("DynamicQuantizeLinear", {"x"}, {"y", "s", "z"}), 11, {&x});
  EXPECT_FALSE(r.ok());
  runtime::Tensor d = MakeTensor(DataType::kInt32, {1}, std::vector<int32_t>{1});
  r = RunKernel(MakeNode("DynamicQuantizeLinear", {"x"}, {"y", "s", "z"}), 11, {&d});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
}

// ---- errors ---------------------------------------------------------------------------

Status RunQuant(const std::string& op, int64_t opset, const runtime::Tensor& x, const runtime::Tensor& s,
                const runtime::Tensor* z, std::vector<ir::Attribute> attrs = {}) {
  ir::Node n = MakeNode(op, {"x", "s", z ? "z" : ""}, {"y"}, std::move(attrs));
  auto r = RunKernel(n, opset, {&x, &s, z});
  return std::move(r).TakeStatus();
}

TEST(QuantizationErrors, BadScalesAndAttributesNameTheNode) {
  runtime::Tensor x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  runtime::Tensor s3 = F32({3}, {1, 1, 1});
  runtime::Tensor s2 = F32({2}, {1, 1});
  runtime::Tensor z2 = MakeTensor(DataType::kUint8, {2}, std::vector<uint8_t>{0, 0});
  Status st = RunQuant("QuantizeLinear", 13, x, s2, nullptr);  // axis 1 has 3
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.summary().find("QuantizeLinear 'n'"), std::string::npos) << st.summary();
  EXPECT_TRUE(RunQuant("QuantizeLinear", 13, x, s3, nullptr).ok());
  EXPECT_FALSE(RunQuant("QuantizeLinear", 10, x, s3, nullptr).ok());  // per-axis needs opset 13
  EXPECT_FALSE(RunQuant("QuantizeLinear", 13, x, s3, &z2).ok());      // zero point shape differs
  EXPECT_FALSE(RunQuant("QuantizeLinear", 13, x, s3, nullptr, {IntAttr("axis", 2)}).ok());
  runtime::Tensor sb = F32({2, 2}, {1, 1, 1, 1});
  EXPECT_TRUE(RunQuant("QuantizeLinear", 21, x, sb, nullptr, {IntAttr("block_size", 2)}).ok());
  EXPECT_FALSE(RunQuant("QuantizeLinear", 21, x, sb, nullptr, {IntAttr("block_size", 3)}).ok());
  EXPECT_FALSE(RunQuant("QuantizeLinear", 21, x, sb, nullptr, {IntAttr("block_size", -1)}).ok());
  EXPECT_FALSE(RunQuant("QuantizeLinear", 19, x, sb, nullptr).ok());  // 2-D scale without blocks
  st = RunQuant("QuantizeLinear", 21, x, s3, nullptr, {IntAttr("output_dtype", static_cast<int64_t>(DataType::kInt4))});
  EXPECT_EQ(st.code(), ErrorCode::kUnsupported);
  runtime::Tensor z3 = MakeTensor(DataType::kUint8, {3}, std::vector<uint8_t>{0, 0, 0});
  EXPECT_FALSE(
      RunQuant("QuantizeLinear", 21, x, s3, &z3, {IntAttr("output_dtype", static_cast<int64_t>(DataType::kInt8))}).ok());
  runtime::Tensor xq = MakeTensor(DataType::kInt8, {2, 3}, std::vector<int8_t>(6, 1));
  EXPECT_FALSE(RunQuant("DequantizeLinear", 13, xq, s3, &z3).ok());  // zero point type differs from x
  EXPECT_EQ(RunQuant("DequantizeLinear", 13, x, s3, nullptr).code(), ErrorCode::kUnsupported);  // float x
}

// ---- shape inference ------------------------------------------------------------------

TEST(QuantizationInference, TypesAndSymbolicDims) {
  using ir::Dim;
  ir::TypeInfo x = ops::TensorType(DataType::kFloat16, std::vector<Dim>{Dim::Symbolic("N"), Dim::Known(3)});
  ir::TypeInfo s = ops::TensorType(DataType::kFloat16, std::vector<Dim>{Dim::Known(3)});
  ir::TypeInfo z = ops::TensorType(DataType::kInt8, std::vector<Dim>{Dim::Known(3)});
  auto out = InferNode(MakeNode("QuantizeLinear", {"x", "s", "z"}, {"y"}), 19, {&x, &s, &z});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ir::TypeToString((*out)[0]), "int8[N,3]");
  out = InferNode(MakeNode("QuantizeLinear", {"x", "s"}, {"y"}), 19, {&x, &s});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(ir::TypeToString((*out)[0]), "uint8[N,3]");
  out = InferNode(MakeNode("QuantizeLinear", {"x", "s"}, {"y"},
                           {IntAttr("output_dtype", static_cast<int64_t>(DataType::kInt16))}),
                  21, {&x, &s});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(ir::TypeToString((*out)[0]), "int16[N,3]");
  ir::TypeInfo q = ops::TensorType(DataType::kInt8, std::vector<Dim>{Dim::Symbolic("N"), Dim::Known(3)});
  out = InferNode(MakeNode("DequantizeLinear", {"q", "s", "z"}, {"y"}), 19, {&q, &s, &z});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ir::TypeToString((*out)[0]), "float16[N,3]");  // the scale's type from opset 19
  ir::TypeInfo s32 = ops::TensorType(DataType::kFloat32, std::vector<Dim>{Dim::Known(3)});
  out = InferNode(MakeNode("DequantizeLinear", {"q", "s"}, {"y"}), 13, {&q, &s32});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(ir::TypeToString((*out)[0]), "float32[N,3]");
  ir::TypeInfo unknown = ops::TensorTypeUnknownShape(DataType::kFloat32);
  out = InferNode(MakeNode("DynamicQuantizeLinear", {"x"}, {"y", "s", "z"}), 11, {&unknown});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].elem_type, DataType::kUint8);
  EXPECT_FALSE((*out)[0].shape.rank_known);
  EXPECT_EQ(ir::TypeToString((*out)[1]), "float32[]");
  EXPECT_EQ(ir::TypeToString((*out)[2]), "uint8[]");
}

TEST(QuantizationInference, DefiniteInconsistenciesFail) {
  using ir::Dim;
  ir::TypeInfo x = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{4, 6});
  ir::TypeInfo s5 = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{5});
  ir::TypeInfo s6 = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{6});
  ir::TypeInfo z4 = ops::TensorType(DataType::kUint8, std::vector<int64_t>{4});
  ir::Node n = MakeNode("QuantizeLinear", {"x", "s"}, {"y"});
  EXPECT_FALSE(InferNode(n, 13, {&x, &s5}).ok());
  EXPECT_TRUE(InferNode(n, 13, {&x, &s6}).ok());
  EXPECT_FALSE(InferNode(MakeNode("QuantizeLinear", {"x", "s", "z"}, {"y"}), 13, {&x, &s6, &z4}).ok());
  ir::TypeInfo sb = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{4, 2});
  ir::Node blocked = MakeNode("QuantizeLinear", {"x", "s"}, {"y"}, {IntAttr("block_size", 4)});
  EXPECT_TRUE(InferNode(blocked, 21, {&x, &sb}).ok());  // ceil(6/4) = 2
  blocked.attributes[0].i = 2;
  auto bad = InferNode(blocked, 21, {&x, &sb});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().summary().find("QuantizeLinear"), std::string::npos);
  ir::TypeInfo sym = ops::TensorType(DataType::kFloat32, std::vector<Dim>{Dim::Symbolic("C")});
  EXPECT_TRUE(InferNode(n, 13, {&x, &sym}).ok());  // unknown: not an error
}

}  // namespace
}  // namespace vigil::cpu::testing
