// Signal-processing ops: DFT (opsets 17 and 20), STFT, the Hann, Hamming and
// Blackman windows and MelWeightMatrix, against plain float64 references
// written from the ONNX definitions (the DFT as the naive double sum over
// exp(-2 pi i k t / n), the IRFFT through the full Hermitian spectrum), on
// odd sizes, plus their shape inference and error paths.
#include <cmath>
#include <complex>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/broadcast.h"
#include "backends/cpu/float_kernel_test_util.h"
#include "backends/cpu/kernel_test_util.h"

namespace vigil::cpu {
namespace {

namespace kt = vigil::cpu::testing;
using namespace vigil::cpu::float_testing;  // NOLINT: test helpers
using Cx = std::complex<double>;

constexpr double kPi = std::numbers::pi;

// The error summary of a run that must fail, checked to name the node.
std::string RunError(const ir::Node& node, int64_t opset, const std::vector<const runtime::Tensor*>& inputs,
                     ErrorCode code = ErrorCode::kInvalidInput) {
  auto r = kt::RunKernel(node, opset, inputs);
  EXPECT_FALSE(r.ok()) << "expected an error";
  if (r.ok()) return {};
  EXPECT_EQ(r.status().code(), code) << r.status().summary();
  EXPECT_NE(r.status().summary().find("node " + node.op_type + " 'n'"), std::string::npos) << r.status().summary();
  return r.status().summary();
}

#define EXPECT_HAS(haystack, needle) EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

// --- DFT reference ---------------------------------------------------------------------------

struct DftCase {
  Shape in;  // [..., 1 or 2]
  int64_t axis;
  std::optional<int64_t> length;
  bool inverse = false;
  bool onesided = false;
  DataType dtype = DataType::kFloat32;
};

// The reference over one line of the axis: `in` is the line's values
// (complex), n the transform length. Returns the output line (complex; the
// IRFFT's imaginary parts are 0).
std::vector<Cx> ReferenceLine(const std::vector<Cx>& in, int64_t n, bool inverse, bool onesided) {
  std::vector<Cx> x(static_cast<size_t>(n), 0.0);
  if (inverse && onesided) {
    // Full spectrum: X[k] = in[k] for k <= n/2, conj(X[n-k]) above; X[0] and
    // (even n) X[n/2] are real.
    for (int64_t k = 0; k <= n / 2; ++k) {
      Cx v = k < static_cast<int64_t>(in.size()) ? in[static_cast<size_t>(k)] : 0.0;
      if (k == 0 || 2 * k == n) v = v.real();
      x[static_cast<size_t>(k)] = v;
      if (k > 0 && 2 * k != n) x[static_cast<size_t>(n - k)] = std::conj(v);
    }
  } else {
    for (int64_t t = 0; t < n && t < static_cast<int64_t>(in.size()); ++t) x[static_cast<size_t>(t)] = in[static_cast<size_t>(t)];
  }
  const double sign = inverse ? 1.0 : -1.0;
  const int64_t out_len = onesided && !inverse ? n / 2 + 1 : n;
  std::vector<Cx> out(static_cast<size_t>(out_len));
  for (int64_t k = 0; k < out_len; ++k) {
    Cx sum = 0;
    for (int64_t t = 0; t < n; ++t) {
      sum += x[static_cast<size_t>(t)] * std::polar(1.0, sign * 2 * kPi * static_cast<double>(k * t) / n);
    }
    out[static_cast<size_t>(k)] = inverse ? sum / static_cast<double>(n) : sum;
  }
  if (inverse && onesided) {
    for (Cx& v : out) v = v.real();
  }
  return out;
}

// The whole reference output and its shape.
std::vector<double> ReferenceDft(const DftCase& c, const std::vector<double>& x, Shape* out_shape) {
  const int64_t rank = static_cast<int64_t>(c.in.size());
  const int64_t axis = c.axis < 0 ? c.axis + rank : c.axis;
  const int64_t parts = c.in.back();
  const int64_t len = c.in[axis];
  const int64_t n = c.length ? *c.length : (c.inverse && c.onesided ? 2 * (len - 1) : len);
  *out_shape = c.in;
  (*out_shape)[axis] = c.onesided && !c.inverse ? n / 2 + 1 : n;
  out_shape->back() = c.inverse && c.onesided ? 1 : 2;
  std::vector<double> out(static_cast<size_t>(Product(*out_shape)));
  // Every line: fix all indices but the axis and the last.
  Shape lines = c.in;
  lines[axis] = 1;
  lines.back() = 1;
  Shape in_strides(rank, 1), out_strides(rank, 1);
  for (int64_t d = rank - 1; d-- > 0;) {
    in_strides[d] = in_strides[d + 1] * c.in[d + 1];
    out_strides[d] = out_strides[d + 1] * (*out_shape)[d + 1];
  }
  for (int64_t l = 0; l < Product(lines); ++l) {
    Shape idx = Unravel(l, lines);
    int64_t in_base = 0, out_base = 0;
    for (int64_t d = 0; d < rank; ++d) {
      in_base += idx[d] * in_strides[d];
      out_base += idx[d] * out_strides[d];
    }
    std::vector<Cx> line;
    for (int64_t t = 0; t < len; ++t) {
      const double* v = x.data() + in_base + t * in_strides[axis];
      line.emplace_back(v[0], parts == 2 ? v[1] : 0.0);
    }
    std::vector<Cx> res = ReferenceLine(line, n, c.inverse, c.onesided);
    for (int64_t k = 0; k < static_cast<int64_t>(res.size()); ++k) {
      double* o = out.data() + out_base + k * out_strides[axis];
      o[0] = res[static_cast<size_t>(k)].real();
      if (out_shape->back() == 2) o[1] = res[static_cast<size_t>(k)].imag();
    }
  }
  return out;
}

// Runs the case at opset 17 (axis attribute) and 20 (axis input) and checks
// both against the reference.
void CheckDft(const DftCase& c) {
  SCOPED_TRACE(::testing::Message() << "DFT " << ShapeString(c.in) << " axis " << c.axis << " length "
                                    << (c.length ? std::to_string(*c.length) : "-") << " inverse " << c.inverse
                                    << " onesided " << c.onesided << " " << ir::DataTypeName(c.dtype));
  std::vector<double> x = RoundTo(c.dtype, Random(Product(c.in), 11, -2, 2));
  Shape want_shape;
  std::vector<double> want = ReferenceDft(c, x, &want_shape);
  runtime::Tensor xt = MakeFloat(c.dtype, c.in, x);
  runtime::Tensor length = kt::I64({}, {c.length.value_or(0)});
  runtime::Tensor axis = kt::I64({}, {c.axis});
  // The kernel sums in double and rounds once: the output's own rounding,
  // plus double round-off for values near 0.
  const double rtol = Tolerance(c.dtype), atol = 1e-9;
  for (int64_t opset : {17, 20}) {
    SCOPED_TRACE(::testing::Message() << "opset " << opset);
    std::vector<ir::Attribute> attrs = {kt::IntAttr("inverse", c.inverse), kt::IntAttr("onesided", c.onesided)};
    std::vector<std::string> inputs = {"x", c.length ? "len" : ""};
    if (opset == 17) {
      attrs.push_back(kt::IntAttr("axis", c.axis));
    } else {
      inputs.push_back("axis");
    }
    ir::Node node = kt::MakeNode("DFT", inputs, {"y"}, attrs);
    std::vector<const runtime::Tensor*> in = {&xt, c.length ? &length : nullptr};
    if (opset == 20) in.push_back(&axis);
    auto r = kt::RunKernel(node, opset, in);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->at(0).dtype(), c.dtype);
    ASSERT_EQ(r->at(0).shape(), want_shape);
    ExpectClose(ReadFloat(r->at(0)), want, rtol, atol);
    // Shape inference agrees when the axis and length are known.
    ir::TypeInfo xtype = Type(c.dtype, [&] {
      std::vector<ir::Dim> d;
      for (int64_t v : c.in) d.push_back(K(v));
      return d;
    }());
    ir::TypeInfo itype = Type(DataType::kInt64, {});
    ir::Tensor len_value = length.AsConstant("len"), axis_value = axis.AsConstant("axis");
    auto inferred = kt::InferNode(node, opset, {&xtype, &itype, &itype}, {nullptr, &len_value, &axis_value});
    ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
    EXPECT_EQ(DimsOf(inferred->at(0)), ShapeString(want_shape));
  }
}

TEST(Dft, ForwardRealAndComplexOnOddSizes) {
  CheckDft({{2, 13, 3, 1}, 1, std::nullopt});
  CheckDft({{2, 13, 3, 2}, -3, std::nullopt});
  CheckDft({{3, 127, 2}, 1, std::nullopt});
  CheckDft({{5, 7, 1}, 0, std::nullopt});  // the "batch" dim is a valid axis too
}

TEST(Dft, LengthPadsOrTruncates) {
  CheckDft({{2, 13, 1}, 1, int64_t{20}});
  CheckDft({{2, 13, 2}, 1, int64_t{7}});
  CheckDft({{2, 3, 13, 2}, 2, int64_t{1}});
  CheckDft({{1, 0, 2}, 1, int64_t{5}});  // an empty axis padded to 5 zeros
}

TEST(Dft, OnesidedForward) {
  CheckDft({{2, 13, 1}, 1, std::nullopt});
  CheckDft({{2, 13, 1}, 1, std::nullopt, false, true});
  CheckDft({{3, 127, 4, 1}, -3, std::nullopt, false, true});
  CheckDft({{2, 13, 1}, 1, int64_t{16}, false, true});
}

TEST(Dft, Inverse) {
  CheckDft({{2, 13, 2}, 1, std::nullopt, true, false});
  CheckDft({{2, 127, 1}, 1, std::nullopt, true, false});
  CheckDft({{3, 13, 5, 2}, 1, int64_t{17}, true, false});
}

TEST(Dft, InverseOnesidedGivesTheRealSignal) {
  CheckDft({{2, 7, 3, 2}, 1, std::nullopt, true, true});  // n = 12
  CheckDft({{2, 7, 2}, 1, int64_t{13}, true, true});      // odd n: no Nyquist bin
  CheckDft({{2, 64, 2}, 1, int64_t{127}, true, true});
  CheckDft({{2, 7, 2}, 1, int64_t{30}, true, true});      // input shorter than n/2+1: zero padded
}

TEST(Dft, HalfAndDouble) {
  CheckDft({{2, 13, 2}, 1, std::nullopt, false, false, DataType::kFloat64});
  CheckDft({{2, 13, 1}, 1, std::nullopt, false, true, DataType::kFloat16});
  CheckDft({{2, 7, 2}, 1, int64_t{13}, true, true, DataType::kFloat64});
  CheckDft({{2, 13, 2}, 1, std::nullopt, true, false, DataType::kBfloat16});
}

TEST(Dft, RealForwardThenInverseRoundTrips) {
  std::vector<double> x = RoundTo(DataType::kFloat64, Random(3 * 13, 5));
  runtime::Tensor xt = MakeFloat(DataType::kFloat64, {3, 13, 1}, x);
  ir::Node rfft = kt::MakeNode("DFT", {"x"}, {"y"}, {kt::IntAttr("onesided", 1)});
  auto spectrum = kt::RunKernel(rfft, 20, {&xt});
  ASSERT_TRUE(spectrum.ok()) << spectrum.status().ToString();
  EXPECT_EQ(spectrum->at(0).shape(), (Shape{3, 7, 2}));
  runtime::Tensor n = kt::I64({}, {13});
  ir::Node irfft = kt::MakeNode("DFT", {"y", "n"}, {"x"}, {kt::IntAttr("onesided", 1), kt::IntAttr("inverse", 1)});
  auto back = kt::RunKernel(irfft, 20, {&spectrum->at(0), &n});
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->at(0).shape(), (Shape{3, 13, 1}));
  ExpectClose(ReadFloat(back->at(0)), x, 1e-12, 1e-12);
}

TEST(Dft, ShapeInferenceWithUnknownValues) {
  ir::TypeInfo x = Type(DataType::kFloat32, {S("B"), K(13), K(1)});
  ir::TypeInfo i64 = Type(DataType::kInt64, {});
  ir::Node plain = kt::MakeNode("DFT", {"x", "", "axis"}, {"y"});
  auto r = kt::InferNode(plain, 20, {&x, nullptr, &i64});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(DimsOf(r->at(0)), "[B,13,2]");  // the axis is unknown, but no size changes
  ir::Node onesided = kt::MakeNode("DFT", {"x", "", "axis"}, {"y"}, {kt::IntAttr("onesided", 1)});
  r = kt::InferNode(onesided, 20, {&x, nullptr, &i64});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->at(0).shape.dims.size(), 3u);
  EXPECT_FALSE(r->at(0).shape.dims[1].value.has_value());
  ir::Node with_length = kt::MakeNode("DFT", {"x", "n"}, {"y"}, {kt::IntAttr("inverse", 1)});
  r = kt::InferNode(with_length, 17, {&x, &i64});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->at(0).shape.dims[1].value.has_value());
  ir::TypeInfo bad = Type(DataType::kFloat32, {K(2), K(13), K(3)});
  r = kt::InferNode(plain, 20, {&bad});
  ASSERT_FALSE(r.ok());
  EXPECT_HAS(r.status().summary(), "last dim 3, expected 1 (real) or 2 (complex)");
  ir::TypeInfo ints = Type(DataType::kInt32, {K(2), K(13), K(1)});
  r = kt::InferNode(plain, 20, {&ints});
  ASSERT_FALSE(r.ok());
  EXPECT_HAS(r.status().summary(), "input 0 (input) is int32");
}

TEST(Dft, BadInputIsAnErrorNamingTheNode) {
  runtime::Tensor x = kt::F32({2, 3, 1}, {1, 2, 3, 4, 5, 6});
  ir::Node last = kt::MakeNode("DFT", {"x"}, {"y"}, {kt::IntAttr("axis", -1)});
  EXPECT_HAS(RunError(last, 17, {&x}), "axis is -1, expected a value in [-3, -2] or [0, 1]");
  ir::Node far = kt::MakeNode("DFT", {"x"}, {"y"}, {kt::IntAttr("axis", 2)});
  EXPECT_HAS(RunError(far, 17, {&x}), "axis is 2");
  runtime::Tensor axis = kt::I64({}, {-4});
  ir::Node by_input = kt::MakeNode("DFT", {"x", "", "a"}, {"y"});
  EXPECT_HAS(RunError(by_input, 20, {&x, nullptr, &axis}), "axis is -4");
  runtime::Tensor zero = kt::I64({}, {0});
  ir::Node with_length = kt::MakeNode("DFT", {"x", "n"}, {"y"});
  EXPECT_HAS(RunError(with_length, 20, {&x, &zero}), "input dft_length is 0, expected a value in [1, ");
  runtime::Tensor two = kt::I64({2}, {4, 4});
  EXPECT_HAS(RunError(with_length, 20, {&x, &two}), "input 1 (dft_length) is");
  runtime::Tensor three_parts = kt::F32({2, 1, 3}, {1, 2, 3, 4, 5, 6});
  ir::Node plain = kt::MakeNode("DFT", {"x"}, {"y"});
  EXPECT_HAS(RunError(plain, 20, {&three_parts}), "last dim 3, expected 1 (real) or 2 (complex)");
  runtime::Tensor rank1 = kt::F32({2}, {1, 2});
  EXPECT_HAS(RunError(plain, 20, {&rank1}), "rank 1, expected at least 2");
  // IRFFT of a one-bin spectrum: the default length 2 * (1 - 1) is 0.
  runtime::Tensor one_bin = kt::F32({2, 1, 2}, {1, 0, 2, 0});
  ir::Node irfft = kt::MakeNode("DFT", {"x"}, {"y"}, {kt::IntAttr("inverse", 1), kt::IntAttr("onesided", 1)});
  EXPECT_HAS(RunError(irfft, 20, {&one_bin}), "transform length of 0");
  ir::Node flag = kt::MakeNode("DFT", {"x"}, {"y"}, {kt::IntAttr("inverse", 2)});
  EXPECT_HAS(RunError(flag, 20, {&x}, ErrorCode::kInvalidModel), "attribute inverse is 2, expected 0 or 1");
  runtime::Tensor ints = kt::I64({2, 3, 1}, {1, 2, 3, 4, 5, 6});
  auto r = kt::RunKernel(plain, 20, {&ints});
  ASSERT_FALSE(r.ok());
  EXPECT_HAS(r.status().summary(), "node DFT 'n'");
}

// --- STFT --------------------------------------------------------------------------------------

struct StftCase {
  Shape signal;  // [batch, length, 1 or 2]
  int64_t step;
  bool window;
  std::optional<int64_t> frame_length;
  bool onesided = true;
  int64_t window_length = 0;  // when `window`
};

void CheckStft(const StftCase& c) {
  SCOPED_TRACE(::testing::Message() << "STFT " << ShapeString(c.signal) << " step " << c.step);
  std::vector<double> x = RoundTo(DataType::kFloat32, Random(Product(c.signal), 3, -1, 1));
  std::vector<double> w = RoundTo(DataType::kFloat32, Random(c.window_length, 4, 0, 1));
  const int64_t fl = c.frame_length ? *c.frame_length : c.window ? c.window_length : c.signal[1];
  const int64_t frames = (c.signal[1] - fl) / c.step + 1, bins = c.onesided ? fl / 2 + 1 : fl;
  const int64_t parts = c.signal[2];
  std::vector<double> want;
  for (int64_t b = 0; b < c.signal[0]; ++b) {
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t k = 0; k < bins; ++k) {
        Cx sum = 0;
        for (int64_t t = 0; t < fl; ++t) {
          const double* v = x.data() + (b * c.signal[1] + f * c.step + t) * parts;
          const double wt = c.window ? w[static_cast<size_t>(t)] : 1.0;
          sum += Cx(v[0], parts == 2 ? v[1] : 0.0) * wt * std::polar(1.0, -2 * kPi * static_cast<double>(k * t) / fl);
        }
        want.push_back(sum.real());
        want.push_back(sum.imag());
      }
    }
  }
  runtime::Tensor st = MakeFloat(DataType::kFloat32, c.signal, x);
  runtime::Tensor step = kt::I64({}, {c.step});
  runtime::Tensor wt = MakeFloat(DataType::kFloat32, {c.window_length}, w);
  runtime::Tensor lt = kt::I64({}, {c.frame_length.value_or(0)});
  ir::Node node = kt::MakeNode("STFT", {"s", "step", c.window ? "w" : "", c.frame_length ? "l" : ""}, {"y"},
                               {kt::IntAttr("onesided", c.onesided)});
  auto r = kt::RunKernel(node, 17, {&st, &step, c.window ? &wt : nullptr, c.frame_length ? &lt : nullptr});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Shape want_shape = {c.signal[0], frames, bins, 2};
  ASSERT_EQ(r->at(0).shape(), want_shape);
  ExpectClose(ReadFloat(r->at(0)), want, Tolerance(DataType::kFloat32), 1e-9);
  // Shape inference with the scalars known.
  std::vector<ir::Dim> sd;
  for (int64_t v : c.signal) sd.push_back(K(v));
  ir::TypeInfo stype = Type(DataType::kFloat32, sd), i64 = Type(DataType::kInt64, {}),
               wtype = Type(DataType::kFloat32, {K(c.window_length)});
  ir::Tensor step_value = step.AsConstant("step"), length_value = lt.AsConstant("l");
  auto inferred = kt::InferNode(node, 17, {&stype, &i64, &wtype, &i64}, {nullptr, &step_value, nullptr, &length_value});
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(DimsOf(inferred->at(0)), ShapeString(want_shape));
}

TEST(Stft, FramesOfRealAndComplexSignals) {
  CheckStft({{2, 127, 1}, 5, true, std::nullopt, true, 13});
  CheckStft({{2, 127, 1}, 7, true, int64_t{13}, false, 13});
  CheckStft({{1, 50, 2}, 3, false, int64_t{13}, false});
  CheckStft({{3, 13, 1}, 1, false, std::nullopt, true});  // one frame: the whole signal
  CheckStft({{1, 127, 2}, 127, false, int64_t{127}, false});
}

TEST(Stft, BadInputIsAnErrorNamingTheNode) {
  runtime::Tensor s = kt::F32({1, 8, 1}, {0, 1, 2, 3, 4, 5, 6, 7});
  runtime::Tensor step = kt::I64({}, {2});
  runtime::Tensor zero_step = kt::I64({}, {0});
  runtime::Tensor length = kt::I64({}, {9});
  runtime::Tensor w4 = kt::F32({4}, {1, 1, 1, 1});
  runtime::Tensor l5 = kt::I64({}, {5});
  ir::Node node = kt::MakeNode("STFT", {"s", "step", "w", "l"}, {"y"});
  ir::Node no_window = kt::MakeNode("STFT", {"s", "step", "", "l"}, {"y"});
  EXPECT_HAS(RunError(no_window, 17, {&s, &zero_step, nullptr, &l5}), "input frame_step is 0");
  EXPECT_HAS(RunError(no_window, 17, {&s, &step, nullptr, &length}),
             "the frame length (input frame_length) is 9 but the signal has only 8 samples");
  EXPECT_HAS(RunError(node, 17, {&s, &step, &w4, &l5}), "input window has 4 values but input frame_length is 5");
  runtime::Tensor w64 = MakeFloat(DataType::kFloat64, {4}, {1, 1, 1, 1});
  EXPECT_HAS(RunError(node, 17, {&s, &step, &w64, nullptr}), "input 2 (window) is float64, expected float32");
  runtime::Tensor rank2 = kt::F32({1, 8}, {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_HAS(RunError(no_window, 17, {&rank2, &step, nullptr, &l5}), "expected rank 3");
  ir::TypeInfo stype = Type(DataType::kFloat32, {K(1), K(8), K(1)}), i64 = Type(DataType::kInt64, {});
  ir::Tensor big = length.AsConstant("l"), two = step.AsConstant("step");
  auto r = kt::InferNode(no_window, 17, {&stype, &i64, nullptr, &i64}, {nullptr, &two, nullptr, &big});
  ASSERT_FALSE(r.ok());
  EXPECT_HAS(r.status().summary(), "is 9 but the signal has only 8 samples");
}

// --- Windows ------------------------------------------------------------------------------------

double WindowReference(const std::string& op, int64_t n, int64_t size, bool periodic) {
  const double big_n = periodic ? size : size - 1;
  if (big_n == 0) return 1.0;
  const double x = kPi * static_cast<double>(n) / big_n;
  if (op == "HannWindow") return std::sin(x) * std::sin(x);
  if (op == "HammingWindow") return 0.54347826086956521 - 0.45652173913043478 * std::cos(2 * x);
  return 0.42 - 0.5 * std::cos(2 * x) + 0.08 * std::cos(4 * x);
}

TEST(Windows, PeriodicAndSymmetricOnOddSizes) {
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) {
    for (int64_t size : {0, 1, 2, 13, 127}) {
      for (bool periodic : {true, false}) {
        SCOPED_TRACE(::testing::Message() << op << " size " << size << " periodic " << periodic);
        std::vector<ir::Attribute> attrs;
        if (!periodic) attrs.push_back(kt::IntAttr("periodic", 0));
        if (size == 13) attrs.push_back(kt::IntAttr("output_datatype", static_cast<int64_t>(DataType::kFloat64)));
        ir::Node node = kt::MakeNode(op, {"size"}, {"w"}, attrs);
        runtime::Tensor s = kt::MakeTensor(DataType::kInt32, {}, std::vector<int32_t>{static_cast<int32_t>(size)});
        auto r = kt::RunKernel(node, 17, {&s});
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        const DataType dt = size == 13 ? DataType::kFloat64 : DataType::kFloat32;
        EXPECT_EQ(r->at(0).dtype(), dt);
        ASSERT_EQ(r->at(0).shape(), Shape{size});
        std::vector<double> want;
        for (int64_t n = 0; n < size; ++n) want.push_back(WindowReference(op, n, size, periodic));
        ExpectClose(ReadFloat(r->at(0)), RoundTo(dt, want), 1e-15, 1e-15);
      }
    }
  }
}

TEST(Windows, KnownValuesAndIntegerOutput) {
  runtime::Tensor five = kt::I64({}, {5});
  auto r = kt::RunKernel(kt::MakeNode("HannWindow", {"s"}, {"w"}, {kt::IntAttr("periodic", 0)}), 17, {&five});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectClose(ReadFloat(r->at(0)), {0, 0.5, 1, 0.5, 0}, 1e-7, 1e-7);
  // Integer outputs truncate: only the symmetric window's peak of 1 survives.
  ir::Node ints = kt::MakeNode("HannWindow", {"s"}, {"w"},
                               {kt::IntAttr("periodic", 0), kt::IntAttr("output_datatype", 7)});
  r = kt::RunKernel(ints, 17, {&five});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->at(0).dtype(), DataType::kInt64);
  EXPECT_EQ(kt::Values<int64_t>(r->at(0)), (std::vector<int64_t>{0, 0, 1, 0, 0}));
}

TEST(Windows, ShapeInferenceAndErrors) {
  ir::Node node = kt::MakeNode("BlackmanWindow", {"s"}, {"w"}, {kt::IntAttr("output_datatype", 11)});
  ir::TypeInfo i64 = Type(DataType::kInt64, {});
  runtime::Tensor thirteen = kt::I64({}, {13});
  ir::Tensor value = thirteen.AsConstant("s");
  auto r = kt::InferNode(node, 17, {&i64}, {&value});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ir::TypeToString(r->at(0)), ir::TypeToString(Type(DataType::kFloat64, {K(13)})));
  r = kt::InferNode(node, 17, {&i64});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->at(0).shape.dims.size(), 1u);

  runtime::Tensor negative = kt::I64({}, {-1});
  EXPECT_HAS(RunError(node, 17, {&negative}), "input size is -1, expected a value in [0, ");
  runtime::Tensor vec = kt::I64({2}, {3, 3});
  EXPECT_HAS(RunError(node, 17, {&vec}), "input 0 (size) is");
  runtime::Tensor floats = kt::F32({}, {3});
  EXPECT_HAS(RunError(node, 17, {&floats}), "it must be int64 or int32");
  ir::Node bool_out = kt::MakeNode("HammingWindow", {"s"}, {"w"}, {kt::IntAttr("output_datatype", 9)});
  EXPECT_HAS(RunError(bool_out, 17, {&thirteen}, ErrorCode::kInvalidModel), "attribute output_datatype is 9");
  ir::Node periodic = kt::MakeNode("HannWindow", {"s"}, {"w"}, {kt::IntAttr("periodic", -1)});
  EXPECT_HAS(RunError(periodic, 17, {&thirteen}, ErrorCode::kInvalidModel), "attribute periodic is -1");
}

// --- MelWeightMatrix ----------------------------------------------------------------------------

// ONNX's definition: band edges evenly spaced in mel, mapped to spectrogram
// bins; triangle i rises over [edge i, edge i+1] and falls over [edge i+1,
// edge i+2).
std::vector<double> MelReference(int64_t mel, int64_t dft, int64_t rate, double lo, double hi) {
  auto to_mel = [](double f) { return 2595 * std::log10(1 + f / 700); };
  const int64_t bins = dft / 2 + 1;
  const double step = (to_mel(hi) - to_mel(lo)) / (mel + 2);
  std::vector<int64_t> edge;
  for (int64_t i = 0; i < mel + 2; ++i) {
    const double hz = 700 * (std::pow(10.0, (to_mel(lo) + i * step) / 2595) - 1);
    edge.push_back(static_cast<int64_t>(std::floor((dft + 1) * hz / rate)));
  }
  std::vector<double> m(static_cast<size_t>(bins * mel), 0.0);
  for (int64_t i = 0; i < mel; ++i) {
    for (int64_t j = 0; j < bins; ++j) {
      const int64_t l = edge[i], c = edge[i + 1], r = edge[i + 2];
      double v = 0;
      if (j == c) {
        v = 1;
      } else if (j >= l && j < c) {
        v = static_cast<double>(j - l) / (c - l);
      } else if (j > c && j < r) {
        v = static_cast<double>(r - j) / (r - c);
      }
      m[j * mel + i] = v;
    }
  }
  return m;
}

runtime::Tensor I32(int32_t v) { return kt::MakeTensor(DataType::kInt32, {}, std::vector<int32_t>{v}); }

TEST(MelWeightMatrix, TheOnnxExampleAndOddSizes) {
  // num_mel_bins 8, dft_length 16, 8 kHz up to Nyquist: each triangle is one
  // or two bins wide (the matrix listed in ONNX's test).
  {
    runtime::Tensor mel = I32(8), dft = I32(16), rate = I32(8192), lo = kt::F32({}, {0}), hi = kt::F32({}, {4096});
    ir::Node node = kt::MakeNode("MelWeightMatrix", {"m", "d", "r", "lo", "hi"}, {"w"});
    auto r = kt::RunKernel(node, 17, {&mel, &dft, &rate, &lo, &hi});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->at(0).shape(), (Shape{9, 8}));
    std::vector<double> want(72, 0.0);
    for (auto [row, col] : std::vector<std::pair<int, int>>{{0, 0}, {0, 1}, {1, 2}, {1, 3}, {2, 4}, {3, 5}, {4, 6},
                                                            {5, 7}}) {
      want[row * 8 + col] = 1;
    }
    ExpectClose(ReadFloat(r->at(0)), want, 0, 0);
  }
  struct Case {
    int64_t mel, dft, rate;
    double lo, hi;
  };
  for (const Case& c : {Case{13, 127, 16000, 20, 7900}, Case{40, 512, 16000, 0, 8000}, Case{5, 13, 22050, 300, 4000},
                        Case{3, 1, 100, 0, 40}}) {
    SCOPED_TRACE(::testing::Message() << "mel " << c.mel << " dft " << c.dft << " rate " << c.rate);
    runtime::Tensor mel = kt::I64({}, {c.mel}), dft = kt::I64({}, {c.dft}), rate = kt::I64({}, {c.rate});
    runtime::Tensor lo = MakeFloat(DataType::kFloat64, {}, {c.lo}), hi = MakeFloat(DataType::kFloat64, {}, {c.hi});
    ir::Node node = kt::MakeNode("MelWeightMatrix", {"m", "d", "r", "lo", "hi"}, {"w"},
                                 {kt::IntAttr("output_datatype", 11)});
    auto r = kt::RunKernel(node, 17, {&mel, &dft, &rate, &lo, &hi});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->at(0).dtype(), DataType::kFloat64);
    ASSERT_EQ(r->at(0).shape(), (Shape{c.dft / 2 + 1, c.mel}));
    ExpectClose(ReadFloat(r->at(0)), MelReference(c.mel, c.dft, c.rate, c.lo, c.hi), 1e-15, 1e-15);
  }
}

TEST(MelWeightMatrix, ShapeInferenceAndErrors) {
  runtime::Tensor mel = kt::I64({}, {13}), dft = kt::I64({}, {127}), rate = kt::I64({}, {16000});
  runtime::Tensor lo = kt::F32({}, {0}), hi = kt::F32({}, {8000});
  ir::Node node = kt::MakeNode("MelWeightMatrix", {"m", "d", "r", "lo", "hi"}, {"w"});
  ir::TypeInfo i64 = Type(DataType::kInt64, {}), f32 = Type(DataType::kFloat32, {});
  ir::Tensor mv = mel.AsConstant("m"), dv = dft.AsConstant("d"), rv = rate.AsConstant("r");
  auto r = kt::InferNode(node, 17, {&i64, &i64, &i64, &f32, &f32}, {&mv, &dv, &rv});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ir::TypeToString(r->at(0)), ir::TypeToString(Type(DataType::kFloat32, {K(64), K(13)})));

  runtime::Tensor zero_rate = kt::I64({}, {0});
  EXPECT_HAS(RunError(node, 17, {&mel, &dft, &zero_rate, &lo, &hi}), "input sample_rate is 0");
  runtime::Tensor zero_dft = kt::I64({}, {0});
  EXPECT_HAS(RunError(node, 17, {&mel, &zero_dft, &rate, &lo, &hi}), "input dft_length is 0");
  runtime::Tensor negative_mel = kt::I64({}, {-2});
  EXPECT_HAS(RunError(node, 17, {&negative_mel, &dft, &rate, &lo, &hi}), "input num_mel_bins is -2");
  runtime::Tensor below = kt::F32({}, {-5});
  EXPECT_HAS(RunError(node, 17, {&mel, &dft, &rate, &below, &hi}), "input 3 (lower_edge_hertz) is -5");
  EXPECT_HAS(RunError(node, 17, {&mel, &dft, &rate, &hi, &lo}), "input 4 (upper_edge_hertz) is 0");
  runtime::Tensor nan = kt::F32({}, {std::nanf("")});
  EXPECT_HAS(RunError(node, 17, {&mel, &dft, &rate, &lo, &nan}), "input 4 (upper_edge_hertz) is nan");
  runtime::Tensor huge = kt::F32({}, {3e38f});
  EXPECT_HAS(RunError(node, 17, {&mel, &dft, &rate, &lo, &huge}), "expected far fewer bins");
  runtime::Tensor big_dft = kt::I64({}, {int64_t{1} << 30});
  runtime::Tensor many = kt::I64({}, {1000});
  EXPECT_HAS(RunError(node, 17, {&many, &big_dft, &rate, &lo, &hi}), "more than");
}

}  // namespace
}  // namespace vigil::cpu
