// ai.vigil.ConvNhwc on the CPU: its reference code against the ONNX Conv
// reference on the same data laid out NCHW (odd channel counts, groups,
// strides, pads, dilations, auto_pad), its residual Z and Relu/Relu6
// activations (against ONNX Add, Relu and Clip run after the Conv), its
// input_activation (against Relu/Clip run on X before), and its shape
// inference and errors; and its optimised float32 path (oneDNN in NHWC, the
// epilogue as post-ops) against that reference, NaN included. Then
// ai.vigil.FusedConv, its NCHW sibling of any rank, against the same
// reference, on its reference and optimised paths.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>

#include <algorithm>

#include "backends/cpu/conv_pool_kernels.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/fast/dnnl_library.h"
#include "backends/cpu/fast/kernel_cache.h"
#include "backends/cpu/float_kernel_test_util.h"
#include "backends/cpu/kernel_test_util.h"
#include "ir/fuse_conv_epilogue.h"
#include "ir/layout_nhwc.h"

namespace vigil::cpu {
namespace {

namespace kt = vigil::cpu::testing;
using namespace vigil::cpu::float_testing;  // NOLINT: test helpers
using ir::DataType;

struct NhwcCase {
  Shape x;  // NCHW
  Shape w;  // OIHW
  std::vector<ir::Attribute> attrs;
  bool bias = true;
  DataType dtype = DataType::kFloat32;
};

// The reference after the Conv: Add(y, z) when `z`, then Relu or Clip(0, 6)
// for `act`, each an ONNX kernel.
runtime::Tensor Reference(runtime::Tensor y, const runtime::Tensor* z, const std::string& act) {
  if (z) {
    auto sum = kt::RunKernel(kt::MakeNode("Add", {"a", "b"}, {"s"}), 17, {&y, z});
    EXPECT_TRUE(sum.ok()) << sum.status().ToString();
    y = std::move((*sum)[0]);
  }
  if (act == "Relu") {
    auto r = kt::RunKernel(kt::MakeNode("Relu", {"a"}, {"r"}), 17, {&y});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    y = std::move((*r)[0]);
  } else if (act == "Relu6") {
    runtime::Tensor lo = MakeFloat(y.dtype(), {}, {0}), hi = MakeFloat(y.dtype(), {}, {6});
    auto r = kt::RunKernel(kt::MakeNode("Clip", {"a", "lo", "hi"}, {"r"}), 17, {&y, &lo, &hi});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    y = std::move((*r)[0]);
  }
  return y;
}

// The optimised path on `inputs` against `expected` (the reference's
// result): its own summation order, so within float32 rounding of sums of
// `terms` products of magnitude <= 1 (Z and B add a few more); oneDNN plans
// it (the cache holds one plan) wherever the library loads.
void CheckOptimised(const ir::Node& nhwc, const std::vector<const runtime::Tensor*>& inputs,
                    const std::vector<double>& expected, int64_t terms) {
  fast::KernelCache cache;
  std::vector<runtime::Tensor> out(1);
  kt::HeapAllocator alloc;
  KernelContext ctx(nhwc, 1, inputs, out, alloc);
  ctx.set_cache(&cache);
  ASSERT_TRUE(ConvNhwcKernel(ctx).ok());
  ExpectClose(ReadFloat(out[0]), expected, 1e-5, 1e-5 * std::sqrt(static_cast<double>(terms)));
  if (fast::DnnlLoaded()) {
    EXPECT_EQ(cache.counts().conv_plans, 1u) << "the optimised path did not take it";
  }
}

// Runs Conv (then Add Z and the activation) on NCHW data and ConvNhwc on the
// same data in NHWC/KRSC, and expects the same result (transposed), and the
// shape inference's dims.
void Check(const NhwcCase& c, bool relu = false, bool residual = false, bool relu6 = false) {
  SCOPED_TRACE(::testing::Message() << "x " << ::testing::PrintToString(c.x) << " w "
                                    << ::testing::PrintToString(c.w) << " relu " << relu << " residual " << residual
                                    << " relu6 " << relu6);
  const std::string act = relu6 ? "Relu6" : relu ? "Relu" : "";
  std::vector<double> x = RoundTo(c.dtype, Random(Product(c.x), 1));
  std::vector<double> w = RoundTo(c.dtype, Random(Product(c.w), 2));
  std::vector<double> b = RoundTo(c.dtype, Random(c.w[0], 3));
  runtime::Tensor xt = MakeFloat(c.dtype, c.x, x), wt = MakeFloat(c.dtype, c.w, w), bt = MakeFloat(c.dtype, {c.w[0]}, b);
  ir::Node conv = kt::MakeNode("Conv", {"x", "w", "b"}, {"y"}, c.attrs);
  auto want = kt::RunKernel(conv, 17, {&xt, &wt, c.bias ? &bt : nullptr}, /*optimised=*/false);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  const Shape y_shape = (*want)[0].shape();
  // Z with values of the conv's magnitude (x4: some sums pass 6).
  std::vector<double> z = RoundTo(c.dtype, Random(Product(y_shape), 4));
  for (double& v : z) v = static_cast<double>(RoundTo(c.dtype, {v * 4})[0]);
  runtime::Tensor zt = MakeFloat(c.dtype, y_shape, z);
  runtime::Tensor y = Reference(std::move((*want)[0]), residual ? &zt : nullptr, act);
  std::vector<double> expected = Permute(ReadFloat(y), y.shape(), ir::kToNhwc);
  runtime::Tensor zn = MakeFloat(c.dtype, PermuteShape(y_shape, ir::kToNhwc), Permute(z, y_shape, ir::kToNhwc));

  runtime::Tensor xn = MakeFloat(c.dtype, PermuteShape(c.x, ir::kToNhwc), Permute(x, c.x, ir::kToNhwc));
  runtime::Tensor wn = MakeFloat(c.dtype, PermuteShape(c.w, ir::kToNhwc), Permute(w, c.w, ir::kToNhwc));
  std::vector<ir::Attribute> attrs = c.attrs;
  if (!act.empty()) attrs.push_back(kt::StringAttr("activation", act));
  ir::Node nhwc = kt::MakeNode("ConvNhwc", {"x", "w", c.bias ? "b" : ""}, {"y"}, attrs);
  if (residual) nhwc.inputs.push_back("z");
  nhwc.domain = ir::kVigilDomain;
  std::vector<const runtime::Tensor*> inputs{&xn, &wn, c.bias ? &bt : nullptr, residual ? &zn : nullptr};
  auto got = kt::RunKernel(nhwc, 1, inputs, /*optimised=*/false);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ((*got)[0].shape(), PermuteShape(y.shape(), ir::kToNhwc));
  EXPECT_EQ((*got)[0].dtype(), c.dtype);
  ExpectClose(ReadFloat((*got)[0]), expected, 0, 0);  // the same arithmetic, moved bytes
  if (c.dtype == DataType::kFloat32) {
    CheckOptimised(nhwc, inputs, expected, c.w[1] * c.w[2] * c.w[3]);
  }

  ir::TypeInfo tx = ops::TensorType(c.dtype, xn.shape()), tw = ops::TensorType(c.dtype, wn.shape()),
               tb = ops::TensorType(c.dtype, Shape{c.w[0]}), tz = ops::TensorType(c.dtype, zn.shape());
  auto inferred = kt::InferNode(nhwc, 1, {&tx, &tw, c.bias ? &tb : nullptr, residual ? &tz : nullptr});
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(DimsOf((*inferred)[0]), DimsOf(ops::TensorType(c.dtype, (*got)[0].shape())));
}

TEST(ConvNhwc, MatchesConvOnOddChannelCounts) {
  Check({{2, 13, 9, 7}, {127, 13, 3, 3}, {kt::IntsAttr("pads", {1, 1, 1, 1})}});
  Check({{1, 127, 5, 6}, {13, 127, 1, 1}, {}});
  Check({{1, 3, 11, 10}, {5, 3, 2, 3}, {}, /*bias=*/false});
}

TEST(ConvNhwc, MatchesConvWithStridesPadsDilations) {
  Check({{1, 3, 31, 29}, {8, 3, 7, 7}, {kt::IntsAttr("pads", {3, 2, 1, 3}), kt::IntsAttr("strides", {2, 2})}});
  Check({{2, 8, 19, 17}, {16, 8, 3, 3}, {kt::IntsAttr("dilations", {2, 3}), kt::IntsAttr("strides", {1, 2})}});
  Check({{1, 4, 10, 13}, {6, 4, 3, 3}, {kt::StringAttr("auto_pad", "SAME_UPPER"), kt::IntsAttr("strides", {2, 2})}});
}

TEST(ConvNhwc, MatchesConvWithGroups) {
  Check({{1, 32, 15, 15}, {32, 1, 3, 3}, {kt::IntAttr("group", 32), kt::IntsAttr("pads", {1, 1, 1, 1})}});
  Check({{2, 12, 9, 11}, {18, 4, 3, 3}, {kt::IntAttr("group", 3)}});
}

TEST(ConvNhwc, HalfPrecisionAndRelu) {
  NhwcCase c{{2, 13, 9, 7}, {21, 13, 3, 3}, {kt::IntsAttr("pads", {1, 1, 1, 1})}};
  Check(c, /*relu=*/true);
  c.dtype = DataType::kFloat16;
  Check(c);
  Check(c, /*relu=*/true);
  c.dtype = DataType::kBfloat16;
  Check(c, /*relu=*/true);
}

TEST(ConvNhwc, ResidualAndRelu6MatchAddReluClip) {
  NhwcCase c{{2, 13, 9, 7}, {21, 13, 3, 3}, {kt::IntsAttr("pads", {1, 1, 1, 1})}};
  for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kBfloat16}) {
    c.dtype = t;
    c.bias = true;
    Check(c, /*relu=*/false, /*residual=*/true);
    Check(c, /*relu=*/true, /*residual=*/true);
    Check(c, false, false, /*relu6=*/true);
    Check(c, false, /*residual=*/true, /*relu6=*/true);
    c.bias = false;  // Z with an empty B slot
    Check(c, /*relu=*/true, /*residual=*/true);
  }
}

// ConvNhwc with input_activation `act` against Relu/Clip(0, 6) run on X
// first and then ConvNhwc without it; X in [-8, 8] so that both bounds clip.
void CheckInputActivation(const Shape& x_nhwc, const Shape& w_krsc, int64_t group, DataType t, const std::string& act,
                          const std::string& out_act) {
  SCOPED_TRACE(::testing::Message() << "x " << ::testing::PrintToString(x_nhwc) << " group " << group << " "
                                    << ir::DataTypeName(t) << " input " << act << " output '" << out_act << "'");
  runtime::Tensor x = MakeFloat(t, x_nhwc, RoundTo(t, Random(Product(x_nhwc), 5, -8, 8)));
  runtime::Tensor w = MakeFloat(t, w_krsc, RoundTo(t, Random(Product(w_krsc), 6)));
  runtime::Tensor b = MakeFloat(t, {w_krsc[0]}, RoundTo(t, Random(w_krsc[0], 7)));
  std::vector<ir::Attribute> attrs = {kt::IntAttr("group", group), kt::IntsAttr("pads", {1, 1, 1, 1}),
                                      kt::IntsAttr("strides", {2, 1})};
  if (!out_act.empty()) attrs.push_back(kt::StringAttr("activation", out_act));
  ir::Node plain = kt::MakeNode("ConvNhwc", {"x", "w", "b"}, {"y"}, attrs);
  plain.domain = ir::kVigilDomain;
  ir::Node fused = plain;
  fused.attributes.push_back(kt::StringAttr(ir::kConvNhwcInputActivation, act));

  runtime::Tensor lo = MakeFloat(t, {}, {0}), hi = MakeFloat(t, {}, {6});
  auto clipped = act == "Relu" ? kt::RunKernel(kt::MakeNode("Relu", {"a"}, {"r"}), 17, {&x})
                               : kt::RunKernel(kt::MakeNode("Clip", {"a", "lo", "hi"}, {"r"}), 17, {&x, &lo, &hi});
  ASSERT_TRUE(clipped.ok()) << clipped.status().ToString();
  auto want = kt::RunKernel(plain, 1, {&(*clipped)[0], &w, &b}, /*optimised=*/false);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  auto got = kt::RunKernel(fused, 1, {&x, &w, &b}, /*optimised=*/false);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ((*got)[0].shape(), (*want)[0].shape());
  ExpectClose(ReadFloat((*got)[0]), ReadFloat((*want)[0]), 0, 0);  // the same arithmetic
  // ... and it does change the result: without it, X's clipped values count.
  auto unclipped = kt::RunKernel(plain, 1, {&x, &w, &b}, /*optimised=*/false);
  ASSERT_TRUE(unclipped.ok());
  EXPECT_NE(ReadFloat((*unclipped)[0]), ReadFloat((*want)[0]));

  ir::TypeInfo tx = ops::TensorType(t, x.shape()), tw = ops::TensorType(t, w.shape()),
               tb = ops::TensorType(t, Shape{w_krsc[0]});
  EXPECT_TRUE(kt::InferNode(fused, 1, {&tx, &tw, &tb}).ok());
}

TEST(ConvNhwc, InputActivationMatchesClipThenConv) {
  for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kBfloat16}) {
    for (const char* act : {"Relu6", "Relu"}) {
      CheckInputActivation({2, 9, 7, 13}, {13, 3, 3, 1}, 13, t, act, "");       // depthwise
      CheckInputActivation({1, 7, 6, 32}, {32, 3, 3, 1}, 32, t, act, "Relu6");  // with its own activation
      CheckInputActivation({1, 7, 6, 12}, {9, 3, 3, 4}, 3, t, act, "Relu");     // any ConvNhwc on the CPU
    }
  }
}

// NaN in X reaches every output whose window reads it, through the fused
// residual and activations too (Relu and Clip keep NaN), on the optimised
// path as on the reference.
TEST(ConvNhwc, OptimisedPathKeepsNaNThroughItsEpilogue) {
  const Shape x_shape{1, 6, 7, 13}, w_shape{13, 3, 3, 1}, y_shape{1, 6, 7, 13};
  std::vector<double> x = RoundTo(DataType::kFloat32, Random(Product(x_shape), 21, -8, 8));
  x[3 * 7 * 13 + 4 * 13 + 5] = std::numeric_limits<double>::quiet_NaN();
  runtime::Tensor xn = MakeFloat(DataType::kFloat32, x_shape, x);
  runtime::Tensor wn = MakeFloat(DataType::kFloat32, w_shape, RoundTo(DataType::kFloat32, Random(Product(w_shape), 22)));
  runtime::Tensor bt = MakeFloat(DataType::kFloat32, {13}, Random(13, 23));
  runtime::Tensor zn = MakeFloat(DataType::kFloat32, y_shape, Random(Product(y_shape), 24, -8, 8));
  for (const char* act : {"", "Relu", "Relu6"}) {
    for (bool residual : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "activation '" << act << "' residual " << residual);
      std::vector<ir::Attribute> attrs = {kt::IntAttr("group", 13), kt::IntsAttr("pads", {1, 1, 1, 1})};
      if (*act) attrs.push_back(kt::StringAttr("activation", act));
      ir::Node n = kt::MakeNode("ConvNhwc", {"x", "w", "b"}, {"y"}, attrs);
      if (residual) n.inputs.push_back("z");
      n.domain = ir::kVigilDomain;
      std::vector<const runtime::Tensor*> inputs{&xn, &wn, &bt, residual ? &zn : nullptr};
      auto want = kt::RunKernel(n, 1, inputs, /*optimised=*/false);
      ASSERT_TRUE(want.ok()) << want.status().ToString();
      const std::vector<double> expected = ReadFloat((*want)[0]);
      // The 3x3 neighbourhood of the NaN, in each of its 13 channels: one channel.
      EXPECT_EQ(std::count_if(expected.begin(), expected.end(), [](double v) { return std::isnan(v); }), 9);
      CheckOptimised(n, inputs, expected, 9);
    }
  }
}

// The CPU backend asks the session for channels-last convolutions only
// where the optimised path runs them: float32 with oneDNN, no
// input_activation, not a reference-kernels backend.
TEST(ConvNhwc, CpuBackendPrefersChannelsLastWhereItIsFast) {
  ir::Node n = kt::MakeNode("ConvNhwc", {"x", "w"}, {"y"}, {kt::IntsAttr("pads", {1, 1, 1, 1})});
  n.domain = ir::kVigilDomain;
  ir::TypeInfo x32 = Type(DataType::kFloat32, {K(1), K(5), K(5), K(3)});
  ir::TypeInfo w32 = Type(DataType::kFloat32, {K(4), K(3), K(3), K(3)});
  ir::TypeInfo x16 = Type(DataType::kFloat16, {K(1), K(5), K(5), K(3)});
  ir::TypeInfo w16 = Type(DataType::kFloat16, {K(4), K(3), K(3), K(3)});
  runtime::NodeTypes f32{{&x32, &w32}, {nullptr}}, f16{{&x16, &w16}, {nullptr}};
  auto fast_backend = MakeCpuBackend(CpuOptions{1, false});
  auto reference = MakeCpuBackend(CpuOptions{1, true});
  EXPECT_EQ(fast_backend->PrefersChannelsLast(n, 1, f32), fast::DnnlLoaded());
  EXPECT_FALSE(fast_backend->PrefersChannelsLast(n, 1, f16));
  EXPECT_FALSE(reference->PrefersChannelsLast(n, 1, f32));
  ir::Node clipped = n;
  clipped.attributes.push_back(kt::StringAttr(ir::kConvNhwcInputActivation, "Relu6"));
  EXPECT_FALSE(fast_backend->PrefersChannelsLast(clipped, 1, f32));
  ir::Node pool = kt::MakeNode(ir::kGlobalAveragePoolNhwcOp, {"x"}, {"y"});
  pool.domain = ir::kVigilDomain;
  runtime::NodeTypes p32{{&x32}, {nullptr}};
  EXPECT_TRUE(fast_backend->PrefersChannelsLast(pool, 1, p32));
  pool.op_type = ir::kAveragePoolNhwcOp;  // reference only: it transposes
  EXPECT_FALSE(fast_backend->PrefersChannelsLast(pool, 1, p32));
}

TEST(ConvNhwc, RefusesAnUnknownInputActivation) {
  runtime::Tensor x = MakeFloat(DataType::kFloat32, {1, 5, 5, 3}, Random(75, 1));
  runtime::Tensor w = MakeFloat(DataType::kFloat32, {4, 3, 3, 3}, Random(108, 2));
  ir::Node n = kt::MakeNode("ConvNhwc", {"x", "w"}, {"y"}, {kt::StringAttr(ir::kConvNhwcInputActivation, "Tanh")});
  n.domain = ir::kVigilDomain;
  auto bad = kt::RunKernel(n, 1, {&x, &w});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().summary().find("input_activation"), std::string::npos) << bad.status().ToString();
  ir::TypeInfo tx = Type(DataType::kFloat32, {K(1), K(5), K(5), K(3)});
  ir::TypeInfo tw = Type(DataType::kFloat32, {K(4), K(3), K(3), K(3)});
  EXPECT_FALSE(kt::InferNode(n, 1, {&tx, &tw}).ok());
}

TEST(ConvNhwc, RefusesAResidualOfAnotherShape) {
  runtime::Tensor x = MakeFloat(DataType::kFloat32, {1, 5, 5, 3}, Random(75, 1));
  runtime::Tensor w = MakeFloat(DataType::kFloat32, {4, 3, 3, 3}, Random(108, 2));
  runtime::Tensor z = MakeFloat(DataType::kFloat32, {1, 3, 3, 1}, Random(9, 3));  // Y is [1, 3, 3, 4]
  ir::Node n = kt::MakeNode("ConvNhwc", {"x", "w", "", "z"}, {"y"});
  n.domain = ir::kVigilDomain;
  auto bad = kt::RunKernel(n, 1, {&x, &w, nullptr, &z});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().summary().find("Z"), std::string::npos) << bad.status().ToString();
  ir::TypeInfo tx = Type(DataType::kFloat32, {K(1), K(5), K(5), K(3)});
  ir::TypeInfo tw = Type(DataType::kFloat32, {K(4), K(3), K(3), K(3)});
  ir::TypeInfo tz = Type(DataType::kFloat32, {K(1), K(3), K(3), K(1)});
  EXPECT_FALSE(kt::InferNode(n, 1, {&tx, &tw, nullptr, &tz}).ok());
  ir::TypeInfo tz16 = Type(DataType::kFloat16, {K(1), K(3), K(3), K(4)});
  EXPECT_FALSE(kt::InferNode(n, 1, {&tx, &tw, nullptr, &tz16}).ok());
  ir::TypeInfo good = Type(DataType::kFloat32, {K(1), K(3), K(3), K(4)});
  EXPECT_TRUE(kt::InferNode(n, 1, {&tx, &tw, nullptr, &good}).ok());
}

TEST(ConvNhwc, RefusesBadOperandsAndAttributes) {
  runtime::Tensor x3 = MakeFloat(DataType::kFloat32, {1, 5, 3}, Random(15, 1));
  runtime::Tensor x = MakeFloat(DataType::kFloat32, {1, 5, 5, 3}, Random(75, 1));
  runtime::Tensor w = MakeFloat(DataType::kFloat32, {4, 3, 3, 3}, Random(108, 2));
  ir::Node n = kt::MakeNode("ConvNhwc", {"x", "w"}, {"y"});
  n.domain = ir::kVigilDomain;
  EXPECT_FALSE(kt::RunKernel(n, 1, {&x3, &w}).ok());
  n.attributes.push_back(kt::StringAttr("activation", "Tanh"));
  auto bad = kt::RunKernel(n, 1, {&x, &w});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().summary().find("activation"), std::string::npos);

  // Shape inference: W's last dim must be C / group; X must be 4-D.
  ir::Node plain = kt::MakeNode("ConvNhwc", {"x", "w"}, {"y"});
  plain.domain = ir::kVigilDomain;
  ir::TypeInfo tx = Type(DataType::kFloat32, {K(1), K(5), K(5), K(4)});
  ir::TypeInfo tw = Type(DataType::kFloat32, {K(4), K(3), K(3), K(3)});
  EXPECT_FALSE(kt::InferNode(plain, 1, {&tx, &tw}).ok());
  ir::TypeInfo tx3 = Type(DataType::kFloat32, {K(1), K(5), K(3)});
  EXPECT_FALSE(kt::InferNode(plain, 1, {&tx3, &tw}).ok());
  // Symbolic batch and unknown spatial dims carry through.
  ir::TypeInfo tsym = Type(DataType::kFloat32, {S("N"), K(7), S("W"), K(3)});
  auto out = kt::InferNode(plain, 1, {&tsym, &tw});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->at(0).shape.dims.size(), 4u);
  EXPECT_EQ(out->at(0).shape.dims[0].param, "N");
  EXPECT_EQ(*out->at(0).shape.dims[1].value, 5);
  EXPECT_EQ(*out->at(0).shape.dims[3].value, 4);
}

// FusedConv on X [x] and W [w] (NCHW, any rank), with Z and `act` as
// given, against ONNX Conv, Add, Relu/Clip run one after the other: bit for
// bit on the reference path, within float32 rounding of the sums on the
// optimised one (oneDNN where loaded).
void CheckFused(const Shape& xs, const Shape& ws, std::vector<ir::Attribute> attrs, DataType dtype, bool bias,
                bool residual, const std::string& act) {
  SCOPED_TRACE(::testing::Message() << "x " << ::testing::PrintToString(xs) << " w " << ::testing::PrintToString(ws)
                                    << " " << ir::DataTypeName(dtype) << " bias " << bias << " residual " << residual
                                    << " act '" << act << "'");
  runtime::Tensor x = MakeFloat(dtype, xs, RoundTo(dtype, Random(Product(xs), 11)));
  runtime::Tensor w = MakeFloat(dtype, ws, RoundTo(dtype, Random(Product(ws), 12)));
  runtime::Tensor b = MakeFloat(dtype, {ws[0]}, RoundTo(dtype, Random(ws[0], 13)));
  auto conv = kt::RunKernel(kt::MakeNode("Conv", {"x", "w", "b"}, {"y"}, attrs), 17, {&x, &w, bias ? &b : nullptr},
                            /*optimised=*/false);
  ASSERT_TRUE(conv.ok()) << conv.status().ToString();
  const Shape y_shape = (*conv)[0].shape();
  std::vector<double> zv = Random(Product(y_shape), 14);
  for (double& v : zv) v *= 4;  // some sums pass 6
  runtime::Tensor z = MakeFloat(dtype, y_shape, RoundTo(dtype, zv));
  const std::vector<double> expected = ReadFloat(Reference(std::move((*conv)[0]), residual ? &z : nullptr, act));

  if (!act.empty()) attrs.push_back(kt::StringAttr("activation", act));
  ir::Node fused = kt::MakeNode(ir::kFusedConvOp, {"x", "w", bias ? "b" : ""}, {"y"}, attrs);
  fused.domain = ir::kVigilDomain;
  if (residual) fused.inputs.push_back("z");
  const std::vector<const runtime::Tensor*> inputs{&x, &w, bias ? &b : nullptr, residual ? &z : nullptr};
  auto got = kt::RunKernel(fused, 1, inputs, /*optimised=*/false);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ((*got)[0].shape(), y_shape);
  ExpectClose(ReadFloat((*got)[0]), expected, 0, 0);  // the same operations in the same order
  auto fast = kt::RunKernel(fused, 1, inputs, /*optimised=*/true);
  ASSERT_TRUE(fast.ok()) << fast.status().ToString();
  int64_t terms = 1;
  for (size_t i = 1; i < ws.size(); ++i) terms *= ws[i];
  const double tol = dtype == DataType::kFloat32 ? 1e-5 : 0;  // other dtypes run the reference either way
  ExpectClose(ReadFloat((*fast)[0]), expected, tol, tol * std::sqrt(static_cast<double>(terms)));

  std::vector<ir::TypeInfo> types;
  for (const runtime::Tensor* t : inputs) types.push_back(t ? ops::TensorType(dtype, t->shape()) : ir::TypeInfo{});
  auto inferred = kt::InferNode(fused, 1, {&types[0], &types[1], bias ? &types[2] : nullptr,
                                           residual ? &types[3] : nullptr});
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(DimsOf((*inferred)[0]), DimsOf(ops::TensorType(dtype, y_shape)));
}

TEST(FusedConv, MatchesConvAddActivationOnOddSizes) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16}) {
    // 2D, 13 -> 127 channels, padded; 1D 127 -> 13 strided; 3D; grouped.
    CheckFused({2, 13, 9, 7}, {127, 13, 3, 3}, {kt::IntsAttr("pads", {1, 1, 1, 1})}, dtype, true, true, "Relu");
    CheckFused({3, 127, 17}, {13, 127, 3}, {kt::IntsAttr("strides", {2})}, dtype, true, true, "Relu6");
    CheckFused({1, 5, 6, 7, 5}, {13, 5, 3, 3, 3}, {}, dtype, false, true, "");
    CheckFused({2, 12, 9, 11}, {18, 4, 3, 3}, {kt::IntAttr("group", 3)}, dtype, true, false, "Relu");
  }
}

// One set of inputs for a convolution node (X, W, B and Z from `seed`) and
// the reference path's output for them.
struct ConvRun {
  std::vector<runtime::Tensor> tensors;
  std::vector<const runtime::Tensor*> inputs;
  std::vector<double> expected;
};

ConvRun MakeConvRun(const ir::Node& node, const Shape& xs, const Shape& ws, const Shape& zs, uint32_t seed) {
  ConvRun r;
  r.tensors = {MakeFloat(DataType::kFloat32, xs, Random(Product(xs), seed)),
               MakeFloat(DataType::kFloat32, ws, Random(Product(ws), seed + 1)),
               MakeFloat(DataType::kFloat32, {ws[0]}, Random(ws[0], seed + 2)),
               MakeFloat(DataType::kFloat32, zs, Random(Product(zs), seed + 3, -4, 4))};
  r.inputs = {&r.tensors[0], &r.tensors[1], &r.tensors[2], &r.tensors[3]};
  auto want = kt::RunKernel(node, 1, r.inputs, /*optimised=*/false);
  EXPECT_TRUE(want.ok()) << want.status().ToString();
  if (want.ok()) r.expected = ReadFloat((*want)[0]);
  return r;
}

// The optimised path keeps one plan per shape and, per run in flight, the
// oneDNN memory objects it points at that run's buffers. Runs from four
// threads at once, each on its own buffers and values, through one cache:
// a channels-last convolution with bias, Z and Relu (no reorders) and an
// NCHW FusedConv (oneDNN's blocked layout, so X and Y are reordered in and
// out), 13 -> 127 channels. Each output must be its own inputs' result.
TEST(ConvNhwc, OptimisedPlansServeRepeatedAndConcurrentRuns) {
  ir::Node nhwc = kt::MakeNode("ConvNhwc", {"x", "w", "b", "z"}, {"y"},
                               {kt::IntsAttr("pads", {1, 1, 1, 1}), kt::StringAttr("activation", "Relu")});
  nhwc.domain = ir::kVigilDomain;
  ir::Node nchw = kt::MakeNode(ir::kFusedConvOp, {"x", "w", "b", "z"}, {"y"},
                               {kt::IntsAttr("pads", {1, 1, 1, 1}), kt::StringAttr("activation", "Relu6")});
  nchw.domain = ir::kVigilDomain;
  constexpr int kThreads = 4, kRunsEach = 6;
  std::vector<ConvRun> runs;
  std::vector<const ir::Node*> nodes;
  for (int i = 0; i < kThreads * kRunsEach; ++i) {
    const bool last = i % 2 == 0;
    nodes.push_back(last ? &nhwc : &nchw);
    runs.push_back(last ? MakeConvRun(nhwc, {2, 9, 7, 13}, {127, 3, 3, 13}, {2, 9, 7, 127}, 100 + 4 * i)
                        : MakeConvRun(nchw, {2, 13, 9, 7}, {127, 13, 3, 3}, {2, 127, 9, 7}, 100 + 4 * i));
  }
  fast::KernelCache cache;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < kRunsEach; ++k) {
        const int i = t * kRunsEach + k;
        std::vector<runtime::Tensor> out(1);
        kt::HeapAllocator alloc;
        KernelContext ctx(*nodes[i], 1, runs[i].inputs, out, alloc);
        ctx.set_cache(&cache);
        const Status st = nodes[i] == &nhwc ? ConvNhwcKernel(ctx) : FusedConvKernel(ctx);
        EXPECT_TRUE(st.ok()) << st.ToString();
        if (st.ok()) ExpectClose(ReadFloat(out[0]), runs[i].expected, 1e-5, 1e-5 * std::sqrt(13.0 * 9 + 4));
      }
    });
  }
  for (std::thread& th : threads) th.join();
  if (fast::DnnlLoaded()) {
    EXPECT_EQ(cache.counts().conv_plans, 2u) << "every run of a shape should share its plan";
  }
}

TEST(FusedConv, RefusesABadResidualOrActivation) {
  runtime::Tensor x = MakeFloat(DataType::kFloat32, {1, 3, 5, 5}, Random(75, 1));
  runtime::Tensor w = MakeFloat(DataType::kFloat32, {4, 3, 3, 3}, Random(108, 2));
  runtime::Tensor z = MakeFloat(DataType::kFloat32, {1, 1, 3, 3}, Random(9, 3));  // Y is [1, 4, 3, 3]
  ir::Node n = kt::MakeNode(ir::kFusedConvOp, {"x", "w", "", "z"}, {"y"});
  n.domain = ir::kVigilDomain;
  auto bad = kt::RunKernel(n, 1, {&x, &w, nullptr, &z});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().summary().find("Z"), std::string::npos) << bad.status().ToString();
  ir::TypeInfo tx = Type(DataType::kFloat32, {K(1), K(3), K(5), K(5)});
  ir::TypeInfo tw = Type(DataType::kFloat32, {K(4), K(3), K(3), K(3)});
  ir::TypeInfo tz = Type(DataType::kFloat32, {K(1), K(1), K(3), K(3)});
  auto inferred = kt::InferNode(n, 1, {&tx, &tw, nullptr, &tz});
  ASSERT_FALSE(inferred.ok());
  EXPECT_NE(inferred.status().summary().find("input 3 (Z)"), std::string::npos) << inferred.status().ToString();
  ir::TypeInfo tz16 = Type(DataType::kFloat16, {K(1), K(4), K(3), K(3)});
  EXPECT_FALSE(kt::InferNode(n, 1, {&tx, &tw, nullptr, &tz16}).ok());
  ir::TypeInfo good = Type(DataType::kFloat32, {K(1), K(4), K(3), K(3)});
  EXPECT_TRUE(kt::InferNode(n, 1, {&tx, &tw, nullptr, &good}).ok());

  ir::Node tanh = kt::MakeNode(ir::kFusedConvOp, {"x", "w"}, {"y"}, {kt::StringAttr("activation", "Tanh")});
  tanh.domain = ir::kVigilDomain;
  auto refused = kt::RunKernel(tanh, 1, {&x, &w});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().summary().find("activation"), std::string::npos);
  EXPECT_FALSE(kt::InferNode(tanh, 1, {&tx, &tw}).ok());
}

}  // namespace
}  // namespace vigil::cpu
